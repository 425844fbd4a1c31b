package export

import (
	"context"
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

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
		f, err := os.Open(filepath.Join(dir, "nccl_perf.txt"))
		if err != nil {
			t.Fatal(err)
		}
		lines, err := csv.NewReader(f).ReadAll()
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
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
