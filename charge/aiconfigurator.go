package charge

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/parquet-go/parquet-go"

	"github.com/collbench/collbench/export"
)

// aiconfigurator is NVIDIA AIConfigurator's NCCL table: op, number of
// GPUs, message size in elements of its dtype → latency in ms.
type aiconfigurator struct {
	rows map[string]map[int]map[int64]float64
	elem map[string]int // bytes per element of each op's rows' dtype
}

func (aiconfigurator) Name() string { return "aiconfigurator" }

// aiconfiguratorRow is one row of the table, the columns its loader
// reads.
type aiconfiguratorRow struct {
	Dtype   string  `parquet:"nccl_dtype,optional"`
	Op      string  `parquet:"op_name,optional"`
	GPUs    int64   `parquet:"num_gpus,optional"`
	Elems   int64   `parquet:"message_size,optional"`
	Latency float64 `parquet:"latency,optional"` // ms
}

// readAIConfigurator reads the table as load_nccl_parquet reads
// nccl_perf.parquet (and load_nccl_data nccl_perf.txt before it): keyed
// by nccl_dtype, op_name, num_gpus and message_size, the first row of a
// key kept.
func readAIConfigurator(path string) (Planner, error) {
	var rows []aiconfiguratorRow
	var err error
	if strings.HasSuffix(path, ".parquet") {
		var data []byte
		if data, err = readExport(path); err == nil {
			rows, err = parquet.Read[aiconfiguratorRow](bytes.NewReader(data), int64(len(data)))
		}
	} else {
		rows, err = readAIConfiguratorCSV(path)
	}
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("no rows")
	}
	a := aiconfigurator{rows: map[string]map[int]map[int64]float64{}, elem: map[string]int{}}
	for i, r := range rows {
		width := map[string]int{"half": 2, "int8": 1, "fp8": 1}[r.Dtype]
		if width == 0 {
			return nil, fmt.Errorf("row %d: nccl_dtype %q is none of AIConfigurator's (half, int8, fp8)", i+1, r.Dtype)
		}
		if w, ok := a.elem[r.Op]; ok && w != width {
			continue // another dtype's table: collbench charges the first
		}
		a.elem[r.Op] = width
		if a.rows[r.Op] == nil {
			a.rows[r.Op] = map[int]map[int64]float64{}
		}
		n := int(r.GPUs)
		if a.rows[r.Op][n] == nil {
			a.rows[r.Op][n] = map[int64]float64{}
		}
		if _, dup := a.rows[r.Op][n][r.Elems]; !dup {
			a.rows[r.Op][n][r.Elems] = r.Latency
		}
	}
	return a, nil
}

// readAIConfiguratorCSV reads nccl_perf.txt, the collector's CSV with a
// header.
func readAIConfiguratorCSV(path string) ([]aiconfiguratorRow, error) {
	data, err := readExport(path)
	if err != nil {
		return nil, err
	}
	rows, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
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
	out := make([]aiconfiguratorRow, 0, len(rows)-1)
	for i, r := range rows[1:] {
		if len(r) != len(rows[0]) {
			return nil, fmt.Errorf("row %d has %d fields, the header %d", i+2, len(r), len(rows[0]))
		}
		n, err1 := strconv.ParseInt(r[col["num_gpus"]], 10, 64)
		size, err2 := strconv.ParseInt(r[col["message_size"]], 10, 64)
		ms, err3 := strconv.ParseFloat(r[col["latency"]], 64)
		if err1 != nil || err2 != nil || err3 != nil {
			return nil, fmt.Errorf("row %d: num_gpus, message_size and latency must be numbers", i+2)
		}
		out = append(out, aiconfiguratorRow{Dtype: r[col["nccl_dtype"]], Op: r[col["op_name"]], GPUs: n, Elems: size, Latency: ms})
	}
	return out, nil
}

// Charge is AIConfigurator's query_nccl: the table of the call's number
// of GPUs (the largest table's, scaled by its system's bandwidths, for
// more GPUs than any: not charged here), looked up at the call's elements
// by its one-axis curve (LeafAxisCurve::query with the size as its speed
// of light): a row's own latency at a row's size, the line between the
// two rows around a size between them, and outside the rows the nearest
// row's latency scaled in proportion to the size (its "boundary util
// hold"). It knows no layout: a strided group is charged the table of its
// size.
func (a aiconfigurator) Charge(c Call) (float64, error) {
	op := export.AIConfiguratorOp(c.Coll)
	if op == "" {
		return 0, fmt.Errorf("AIConfigurator's NCCL table has no %s", c.Coll)
	}
	rows := a.rows[op][c.Group]
	if len(rows) == 0 {
		return 0, fmt.Errorf("AIConfigurator's NCCL table has no %s over %d GPUs", op, c.Group)
	}
	sizes := make([]int64, 0, len(rows))
	for s := range rows {
		sizes = append(sizes, s)
	}
	slices.Sort(sizes)
	x := c.Bytes / float64(a.elem[op])
	if ms, ok := rows[int64(x)]; ok && float64(int64(x)) == x {
		return ms * 1e3, nil
	}
	upper, _ := slices.BinarySearchFunc(sizes, x, func(s int64, x float64) int {
		if float64(s) < x {
			return -1
		}
		return 1
	})
	if upper == 0 || upper == len(sizes) {
		anchor := sizes[0]
		if upper > 0 {
			anchor = sizes[len(sizes)-1]
		}
		ms := rows[anchor]
		if !(ms > 0) || !(x > 0) {
			return 0, fmt.Errorf("AIConfigurator cannot charge %v elements of %s over %d GPUs from its row at %d (%v ms)", x, op, c.Group, anchor, ms)
		}
		return x / (float64(anchor) / ms) * 1e3, nil
	}
	lo, hi := sizes[upper-1], sizes[upper]
	w := (x - float64(lo)) / float64(hi-lo)
	return (rows[lo] + (rows[hi]-rows[lo])*w) * 1e3, nil
}
