package charge

import (
	"encoding/csv"
	"fmt"
	"os"
	"slices"
	"strconv"

	"github.com/collbench/collbench/export"
)

// aiconfigurator is NVIDIA AIConfigurator's NCCL table: op, number of
// GPUs, message size in elements of its dtype → latency in ms.
type aiconfigurator struct {
	rows map[string]map[int]map[int64]float64
	elem map[string]int // bytes per element of each op's rows' dtype
}

func (aiconfigurator) Name() string { return "aiconfigurator" }

// readAIConfigurator reads nccl_perf.txt as load_nccl_data does: a CSV
// with a header, keyed by nccl_dtype, op_name, num_gpus and message_size,
// the first row of a key kept.
func readAIConfigurator(path string) (Planner, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, err
	}
	if len(rows) < 2 {
		return nil, fmt.Errorf("no rows")
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	for _, need := range []string{"op_name", "nccl_dtype", "num_gpus", "message_size", "latency"} {
		if _, ok := col[need]; !ok {
			return nil, fmt.Errorf("no %s column", need)
		}
	}
	a := aiconfigurator{rows: map[string]map[int]map[int64]float64{}, elem: map[string]int{}}
	for i, r := range rows[1:] {
		if len(r) != len(rows[0]) {
			return nil, fmt.Errorf("row %d has %d fields, the header %d", i+2, len(r), len(rows[0]))
		}
		n, err1 := strconv.Atoi(r[col["num_gpus"]])
		size, err2 := strconv.ParseInt(r[col["message_size"]], 10, 64)
		ms, err3 := strconv.ParseFloat(r[col["latency"]], 64)
		if err1 != nil || err2 != nil || err3 != nil {
			return nil, fmt.Errorf("row %d: num_gpus, message_size and latency must be numbers", i+2)
		}
		width := map[string]int{"half": 2, "int8": 1, "fp8": 1}[r[col["nccl_dtype"]]]
		if width == 0 {
			return nil, fmt.Errorf("row %d: nccl_dtype %q is none of AIConfigurator's (half, int8, fp8)", i+2, r[col["nccl_dtype"]])
		}
		op := r[col["op_name"]]
		if w, ok := a.elem[op]; ok && w != width {
			continue // another dtype's table: collbench charges the first
		}
		a.elem[op] = width
		if a.rows[op] == nil {
			a.rows[op] = map[int]map[int64]float64{}
		}
		if a.rows[op][n] == nil {
			a.rows[op][n] = map[int64]float64{}
		}
		if _, dup := a.rows[op][n][size]; !dup {
			a.rows[op][n][size] = ms
		}
	}
	return a, nil
}

// Charge is NCCL._query_nccl_table's silicon path: the table of the
// call's number of GPUs (the largest table's, scaled by its bandwidth
// rule, for more GPUs than any: not charged here), the two rows nearest
// the call's elements (nearest_1d_point_helper, inner_only=False) and the
// line through them (interp_1d, held flat where it would turn back). It
// knows no layout: a strided group is charged the table of its size.
func (a aiconfigurator) Charge(c Call) (float64, error) {
	op := export.AIConfiguratorOp(c.Coll)
	if op == "" {
		return 0, fmt.Errorf("AIConfigurator's NCCL table has no %s", c.Coll)
	}
	rows := a.rows[op][c.Group]
	if len(rows) < 2 {
		return 0, fmt.Errorf("AIConfigurator's NCCL table has no %s over %d GPUs", op, c.Group)
	}
	sizes := make([]int64, 0, len(rows))
	for s := range rows {
		sizes = append(sizes, s)
	}
	slices.Sort(sizes)
	x := c.Bytes / float64(a.elem[op])
	var x0, x1 int64
	switch {
	case x < float64(sizes[0]):
		x0, x1 = sizes[0], sizes[1]
	case x > float64(sizes[len(sizes)-1]):
		x0, x1 = sizes[len(sizes)-2], sizes[len(sizes)-1]
	default:
		// The first size above x (or the last), and the one before it.
		i := 0
		for i < len(sizes)-1 && x >= float64(sizes[i]) {
			i++
		}
		x0, x1 = sizes[i-1], sizes[i]
	}
	y0, y1 := rows[x0], rows[x1]
	if float64(x0-x1)*(y0-y1) < 0 && (x-float64(x0))*(x-float64(x1)) > 0 {
		y1 = y0
	}
	if y0 == y1 {
		return y0 * 1e3, nil
	}
	return (y0 + (y1-y0)/float64(x1-x0)*(x-float64(x0))) * 1e3, nil
}
