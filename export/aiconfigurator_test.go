package export

import (
	"context"
	"encoding/csv"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/internal/fixture"
	"github.com/collbench/collbench/model/profiled"
)

// aiconfiguratorTable is nccl_perf.txt as AIConfigurator's load_nccl_data
// reads it: op, number of GPUs, message size in elements → latency in ms.
func aiconfiguratorTable(t *testing.T, path string) map[string]map[int]map[int64]float64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	out := map[string]map[int]map[int64]float64{}
	for _, r := range rows[1:] {
		n, _ := strconv.Atoi(r[col["num_gpus"]])
		size, _ := strconv.ParseInt(r[col["message_size"]], 10, 64)
		lat, err := strconv.ParseFloat(r[col["latency"]], 64)
		if err != nil || r[col["nccl_dtype"]] != "half" {
			t.Fatalf("row %v", r)
		}
		op := r[col["op_name"]]
		if out[op] == nil {
			out[op] = map[int]map[int64]float64{}
		}
		if out[op][n] == nil {
			out[op][n] = map[int64]float64{}
		}
		out[op][n][size] = lat
	}
	return out
}

// aiconfiguratorCharge is AIConfigurator's charge for a call of elems
// half elements (NCCL._query_nccl_table's silicon path: the two nearest
// rows, nearest_1d_point_helper with inner_only=False, and interp_1d's
// line through them, held flat where it would fall outside).
func aiconfiguratorCharge(rows map[int64]float64, elems int64) float64 {
	sizes := make([]int64, 0, len(rows))
	for s := range rows {
		sizes = append(sizes, s)
	}
	slices.Sort(sizes)
	var x0, x1 int64
	switch {
	case elems < sizes[0]:
		x0, x1 = sizes[0], sizes[1]
	case elems > sizes[len(sizes)-1]:
		x0, x1 = sizes[len(sizes)-2], sizes[len(sizes)-1]
	default:
		i, _ := slices.BinarySearch(sizes, elems)
		if i == len(sizes)-1 || sizes[i] != elems {
			x0, x1 = sizes[max(i-1, 0)], sizes[i]
		} else {
			x0, x1 = sizes[i], sizes[i+1]
		}
	}
	y0, y1 := rows[x0], rows[x1]
	v := float64(elems)
	if float64(x0-x1)*(y0-y1) < 0 && (v-float64(x0))*(v-float64(x1)) > 0 {
		y1 = y0
	}
	if y0 == y1 {
		return y0
	}
	return y0 + (y1-y0)/float64(x1-x0)*(v-float64(x0))
}

// AIConfigurator charges what collbench measured, at every size, inside
// the collector's range and beyond it. The transcription of its reader
// is pinned by figures from running AIConfigurator's own load_nccl_data,
// nearest_1d_point_helper and interp_1d (ai-dynamo/aiconfigurator at the
// parent of 12dca98b8) on this export of the fixture profile.
func TestAIConfiguratorChargesTheCurve(t *testing.T) {
	p := fixture.Profile(t, 2, 4)
	dir := t.TempDir()
	if _, err := Write(context.Background(), p, "aiconfigurator", dir, Options{}); err != nil {
		t.Fatal(err)
	}
	table := aiconfiguratorTable(t, filepath.Join(dir, "nccl_perf.txt"))
	for _, pin := range []struct {
		op    string
		n     int
		elems int64
		ms    float64
	}{
		{"all_gather", 8, 1048576, 0.16233386666666666},
		{"alltoall", 8, 1572864, 0.2235008},
		{"reduce_scatter", 4, 5242880, 0.0724288},
		{"all_reduce", 8, 3000, 0.0407},
		{"all_reduce", 8, 805306368, 187.94481919999998},
		{"all_gather", 2, 32, 0.020000213333333332},
	} {
		if got := aiconfiguratorCharge(table[pin.op][pin.n], pin.elems); !within(got, pin.ms, 1e-12) {
			t.Errorf("%s over %d, %d elements: the transcription charges %v ms, AIConfigurator %v", pin.op, pin.n, pin.elems, got, pin.ms)
		}
	}
	for _, op := range aiconfiguratorOps {
		for _, n := range []int{2, 4, 8} {
			c, err := p.Curve(op.coll, n, "consecutive")
			if err != nil {
				t.Fatal(err)
			}
			m, err := profiled.Curve(c)
			if err != nil {
				t.Fatal(err)
			}
			for _, bytes := range []int64{64, 512, 768, 6000, 1 << 20, 3 << 20, 10 << 20, 512 << 20, 1536 << 20, 2 << 30} {
				got, want := aiconfiguratorCharge(table[op.name][n], bytes/2), m.Time(float64(bytes))/1e3
				if !within(got, want, 1e-9) {
					t.Errorf("%s over %d, %d bytes: AIConfigurator charges %v ms, the curve %v", op.name, n, bytes, got, want)
				}
			}
		}
	}
}

// On the kept host and H100 profiles too, AIConfigurator charges the
// curve at every size: their sizes are powers of two apart, each in the
// rows, and their fits one line, which the rows' chords follow exactly
// below and above the measured sizes. Figures from AIConfigurator's own
// reader on these exports pin the transcription again.
func TestAIConfiguratorChargesKeptProfiles(t *testing.T) {
	type pin struct {
		op    string
		n     int
		elems int64
		ms    float64
	}
	for _, c := range []struct {
		path string
		pins []pin
	}{
		{"../docs/measured/host-2026-11-26/profile-4ranks.json", []pin{{"all_gather", 4, 3145728, 5.661573499999999}, {"all_reduce", 2, 100, 0.0011313957885888428}}},
		{"../docs/measured/h100-2026-11-26/profile-g2-float.json", []pin{{"all_reduce", 2, 3145728, 0.068032}, {"alltoall", 2, 100, 0.020280474875788126},
			{"reduce_scatter", 2, 805306368, 2.940938814828435}}},
	} {
		t.Run(filepath.Base(filepath.Dir(c.path)), func(t *testing.T) {
			p := readProfile(t, c.path)
			dir := t.TempDir()
			if _, err := Write(context.Background(), p, "aiconfigurator", dir, Options{}); err != nil {
				t.Fatal(err)
			}
			table := aiconfiguratorTable(t, filepath.Join(dir, "nccl_perf.txt"))
			for _, pin := range c.pins {
				if got := aiconfiguratorCharge(table[pin.op][pin.n], pin.elems); !within(got, pin.ms, 1e-12) {
					t.Errorf("%s over %d, %d elements: the transcription charges %v ms, AIConfigurator %v", pin.op, pin.n, pin.elems, got, pin.ms)
				}
			}
			worst := 0.0
			for _, op := range aiconfiguratorOps {
				for _, n := range halvings(p.Meta.WorldSize) {
					c, err := p.Curve(op.coll, n, "consecutive")
					if err != nil {
						continue
					}
					m, err := profiled.Curve(c)
					if err != nil {
						t.Fatal(err)
					}
					for bytes := int64(256); bytes <= 4<<30; bytes = bytes * 3 / 2 &^ 1 {
						got, want := aiconfiguratorCharge(table[op.name][n], bytes/2), m.Time(float64(bytes))/1e3
						worst = max(worst, got/want-1, want/got-1)
						if !within(got, want, 1e-9) {
							t.Errorf("%s over %d, %d bytes: AIConfigurator charges %v ms, the curve %v", op.name, n, bytes, got, want)
						}
					}
				}
			}
			t.Logf("largest difference %.2g", worst)
		})
	}
}

// readProfile reads a kept profile.
func readProfile(t *testing.T, path string) *document.Profile {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := document.DecodeProfile(f)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
