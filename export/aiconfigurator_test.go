package export

import (
	"context"
	"encoding/csv"
	"fmt"
	"math/bits"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/internal/fixture"
)

// parquetText renders a parquet file as its schema and its rows, one
// per line, for a golden file.
func parquetText(t *testing.T, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var b strings.Builder
	fmt.Fprintln(&b, pf.Schema())
	for _, g := range pf.RowGroups() {
		rows := g.Rows()
		buf := make([]parquet.Row, 64)
		for {
			n, err := rows.ReadRows(buf)
			for _, r := range buf[:n] {
				var cells []string
				for _, v := range r {
					cells = append(cells, v.String())
				}
				fmt.Fprintln(&b, strings.Join(cells, ","))
			}
			if err != nil {
				break
			}
		}
		rows.Close()
	}
	return []byte(b.String())
}

// The parquet table has the columns, physical and logical types and
// optionality of the tables AIConfigurator ships (systems/data/*/comm/
// nccl/*/nccl_perf.parquet at 095f58a51, written by pandas through
// pyarrow), which its loader reads by name: get_string needs a UTF-8
// byte array, get_long an INT64, get_double a DOUBLE.
func TestAIConfiguratorParquetSchema(t *testing.T) {
	p := fixture.Profile(t, 1, 4)
	dir := t.TempDir()
	if _, err := Write(context.Background(), p, "aiconfigurator", dir, Options{}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, AIConfiguratorDir(p), AIConfiguratorTable)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	file, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"framework optional BYTE_ARRAY STRING",
		"version optional BYTE_ARRAY STRING",
		"device optional BYTE_ARRAY STRING",
		"op_name optional BYTE_ARRAY STRING",
		"kernel_source optional BYTE_ARRAY STRING",
		"nccl_dtype optional BYTE_ARRAY STRING",
		"num_gpus optional INT64 INT(64,true)",
		"message_size optional INT64 INT(64,true)",
		"latency optional DOUBLE",
	}
	var got []string
	for _, c := range file.Schema().Fields() {
		rep := "required"
		if c.Optional() {
			rep = "optional"
		}
		s := c.Name() + " " + rep + " " + c.Type().Kind().String()
		if lt := c.Type().LogicalType(); lt != nil {
			s += " " + lt.String()
		}
		got = append(got, s)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("columns:\n%s\nwant (AIConfigurator's own tables):\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The parquet table and nccl_perf.txt hold the same rows, value for
// value, so a release of either generation charges the same times.
func TestAIConfiguratorParquetHoldsTheCSVRows(t *testing.T) {
	for _, shape := range [][2]int{{1, 4}, {2, 4}} {
		p := fixture.Profile(t, shape[0], shape[1])
		dir := t.TempDir()
		if _, err := Write(context.Background(), p, "aiconfigurator", dir, Options{}); err != nil {
			t.Fatal(err)
		}
		rows, err := parquet.ReadFile[aiconfiguratorRow](filepath.Join(dir, AIConfiguratorDir(p), AIConfiguratorTable))
		if err != nil {
			t.Fatal(err)
		}
		lines := readCSV(t, filepath.Join(dir, "nccl_perf.txt"))
		if len(lines)-1 != len(rows) || len(rows) == 0 {
			t.Fatalf("%d parquet rows, %d CSV rows", len(rows), len(lines)-1)
		}
		for i, r := range rows {
			got := []string{*r.Framework, *r.Version, *r.Device, *r.OpName, *r.KernelSource, *r.NCCLDtype,
				strconv.FormatInt(*r.NumGPUs, 10), strconv.FormatInt(*r.MessageSize, 10), strconv.FormatFloat(*r.Latency, 'g', -1, 64)}
			if strings.Join(got, "|") != strings.Join(lines[i+1], "|") {
				t.Fatalf("row %d: parquet %v, CSV %v", i, got, lines[i+1])
			}
		}
	}
}

// readCSV is a CSV file's records, as Python's csv module reads them.
func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

// withPower gives every sample of p the power a GPU drew at its size, as
// a profile with a power window records it: w(bytes) W of a 700 W limit.
func withPower(p *document.Profile, w func(bytes int64) float64) {
	p.Suite.PowerWindowS = 1
	for i := range p.Curves {
		for j := range p.Curves[i].Samples {
			s := &p.Curves[i].Samples[j]
			s.Power = &document.SamplePower{W: w(s.Bytes), LimitW: 700, Samples: 10, Calls: 1000, WindowS: 1}
		}
	}
}

// A profile that read power gives the table the collector's two power
// columns, in the CSV and the parquet alike (DOUBLE, as pandas writes
// them; AIConfigurator's reader takes nothing else for a double): each
// row the power measured at the nearest size, the smaller of two as
// near, and the end sizes' power past the ends. A profile without power
// gives neither column, on no row.
func TestAIConfiguratorPowerColumns(t *testing.T) {
	p := fixture.Profile(t, 1, 4)
	measured := map[int64]bool{}
	for _, s := range p.Curves[0].Samples {
		measured[s.Bytes] = true
	}
	withPower(p, func(b int64) float64 { return 200 + float64(bits.Len64(uint64(b))) })
	first, last := p.Curves[0].Samples[0].Bytes, p.Curves[0].Samples[len(p.Curves[0].Samples)-1].Bytes
	dir := t.TempDir()
	if _, err := Write(context.Background(), p, "aiconfigurator", dir, Options{}); err != nil {
		t.Fatal(err)
	}
	lines := readCSV(t, filepath.Join(dir, "nccl_perf.txt"))
	if h := strings.Join(lines[0], ","); !strings.HasSuffix(h, ",latency,power,power_limit") {
		t.Fatalf("header %s: want power and power_limit after latency", h)
	}
	for _, l := range lines[1:] {
		bytes, _ := strconv.ParseInt(l[7], 10, 64)
		bytes *= 2 // message_size counts 2-byte elements
		near := min(max(bytes, first), last)
		for !measured[near] {
			near /= 2 // the fixture's sizes are powers of two, some measured
		}
		want := 200 + float64(bits.Len64(uint64(near)))
		if l[9] != strconv.FormatFloat(want, 'g', -1, 64) || l[10] != "700" {
			t.Fatalf("row %v: power %s W of %s, want %v W (measured at %d B) of 700", l, l[9], l[10], want, near)
		}
	}
	path := filepath.Join(dir, AIConfiguratorDir(p), AIConfiguratorTable)
	rows, err := parquet.ReadFile[aiconfiguratorPowerRow](path)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(lines)-1 {
		t.Fatalf("%d parquet rows, %d CSV rows", len(rows), len(lines)-1)
	}
	for i, r := range rows {
		if r.Power == nil || strconv.FormatFloat(*r.Power, 'g', -1, 64) != lines[i+1][9] || *r.PowerLimit != 700 {
			t.Fatalf("parquet row %d: power %v, CSV %v", i, r.Power, lines[i+1])
		}
	}
	schema := string(parquetText(t, path))
	if !strings.Contains(schema, "optional double power;") || !strings.Contains(schema, "optional double power_limit;") {
		t.Errorf("schema:\n%s", schema)
	}

	// One curve the table reads without power: no row has any.
	for i := range p.Curves[0].Samples {
		p.Curves[0].Samples[i].Power = nil
	}
	dir = t.TempDir()
	if _, err := Write(context.Background(), p, "aiconfigurator", dir, Options{}); err != nil {
		t.Fatal(err)
	}
	txt, err := os.ReadFile(filepath.Join(dir, "nccl_perf.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(txt), "power") {
		t.Errorf("a table with a curve without power has a power column:\n%.200s", txt)
	}
}
