package report

import (
	"bytes"
	"testing"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/numeric"
	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/internal/golden"
)

func sampleRun() (Info, []bench.Row, bench.Summary) {
	info := Info{Version: "1.2.3", Backend: "host", Notes: []string{"Backend: host (auto: no NVIDIA GPU driver found)"},
		TestName: "all_reduce_perf", NThreads: 1, NGPUs: 2, MinBytes: 8, MaxBytes: 134217728, StepFactor: 2,
		Warmup: 1, Iters: 20, Agg: 1, Check: 1,
		Devices: []bench.Device{{Rank: 0, Ordinal: 0, Hostname: "node1", PID: 4242, BusID: [3]int{0, 0x18, 0}, Name: "NVIDIA H100 80GB HBM3"},
			{Rank: 1, Ordinal: 1, Hostname: "node1", PID: 4242, BusID: [3]int{0, 0x2a, 0}, Name: "NVIDIA H100 80GB HBM3"}}}
	p := func(tm, alg, bus float64, wrong int64, checked bool) bench.Placement {
		return bench.Placement{Time: tm, AlgBW: alg, BusBW: bus, Wrong: wrong, Checked: checked,
			Iter: bench.Summarize([]float64{tm * 0.9, tm, tm * 1.2})}
	}
	rows := []bench.Row{
		{Size: 8, Count: 2, Type: numeric.Float32, Op: numeric.Sum, Root: -1, Iters: 20,
			OutOfPlace: p(12.34, 0.00065, 0.00065, 0, true), InPlace: p(11.5, 0.0007, 0.0007, 0, true)},
		{Size: 1048576, Count: 262144, Type: numeric.Float32, Op: numeric.Sum, Root: -1, Iters: 20,
			OutOfPlace: p(1234.567, 849.3, 849.3, 0, true), InPlace: p(123456789, 0.0085, 0.0085, 3, true)},
		{Size: 134217728, Count: 33554432, Type: numeric.Float32, Op: numeric.Sum, Root: -1, Iters: 20,
			OutOfPlace: p(523.4, 256.43, 448.75, 0, false), InPlace: p(521, 1234567.0, 450.8, 0, false)},
	}
	sum := bench.Summary{Rows: 3, AvgBusBW: 199.87654321, ErrorCases: 1}
	return info, rows, sum
}

func TestTableGolden(t *testing.T) {
	info, rows, sum := sampleRun()
	var buf bytes.Buffer
	tb := &Table{W: &buf, Info: info}
	tb.Preamble()
	for _, r := range rows {
		tb.Row(r)
	}
	tb.Footer(sum)
	golden.Check(t, "table.golden", buf.Bytes())
}

func TestJSONAndCSVGolden(t *testing.T) {
	info, rows, sum := sampleRun()
	doc := &document.Run{Schema: document.SchemaName, Version: document.SchemaVersion, Collbench: info.Version, Collective: "allreduce",
		Test: info.TestName, Backend: "host", StartTime: "2026-01-02T03:04:05Z", EndTime: "2026-01-02T03:04:06Z",
		Args: []string{"collbench", "allreduce", "-g", "2"}, Config: document.Config{NThreads: 1, NGPUs: 2, NRanks: 2,
			Devices: document.DeviceRecords(info.Devices)}}
	for _, r := range rows {
		doc.Results = append(doc.Results, document.MakeResult(r))
	}
	doc.Finish(sum)
	var js, cs bytes.Buffer
	if err := doc.Encode(&js); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "run.json.golden", js.Bytes())
	if err := WriteCSV(&cs, doc); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "run.csv.golden", cs.Bytes())
}

// The expected strings are what C's snprintf gives for nccl-tests'
// getFloatStr and "%g".
func TestFloatStr(t *testing.T) {
	tests := []struct {
		v     float64
		width int
		want  string
	}{
		{12.345, 7, "  12.35"},
		{1234.567, 7, "1234.57"},
		{12345.67, 7, "12345.7"},
		{123456.7, 7, " 123457"},
		{1234567.8, 7, "1234568"},
		{12345678.9, 7, "1.2e+07"},
		{849.3, 6, "849.30"},
		{1234.5, 6, "1234.5"},
		{123456, 6, "123456"},
		{1234567, 6, " 1e+06"},
		{0, 6, "  0.00"},
	}
	for _, tt := range tests {
		if got := FloatStr(tt.v, tt.width); got != tt.want {
			t.Errorf("FloatStr(%g, %d) = %q, want %q", tt.v, tt.width, got, tt.want)
		}
	}
	for v, want := range map[float64]string{0: "     0", 3: "     3", 1234567: "1.23457e+06", 199.87654321: "199.877", 0.00001: " 1e-05"} {
		if got := CFormatG(v, 6); got != want {
			t.Errorf("CFormatG(%g) = %q, want %q", v, got, want)
		}
	}
}

// Text from a document reaches the terminal with its control characters
// written out: an escape sequence or a new line in a record cannot act on
// the terminal or fake a line of output.
func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"H100 80GB":      "H100 80GB",
		"a\x1b[2Jb":      `a\x1b[2Jb`,
		"one\nFAKE line": `one\nFAKE line`,
		"tab\tand µs":    `tab\tand µs`,
	} {
		if got := Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
	}
}

// The live table and a saved run's are one printer: handed the results
// one by one and closed with the record, it prints what SavedTable
// prints, -M's line included; a record that ended in an error has no
// footer either way.
func TestLiveTableIsTheSavedOne(t *testing.T) {
	info, rows, sum := sampleRun()
	record := func(mem *document.MemoryUse, errs []string) *document.Run {
		doc := &document.Run{Schema: document.SchemaName, Version: document.SchemaVersion, Collbench: info.Version, Collective: "allreduce",
			Test: info.TestName, Backend: "host", Config: document.Config{NThreads: 1, NGPUs: 2, NRanks: 2, NProcs: 1,
				Devices: document.DeviceRecords(info.Devices)}, Memory: mem}
		for _, r := range rows {
			doc.Results = append(doc.Results, document.MakeResult(r))
		}
		doc.Finish(sum)
		doc.Errors = errs
		return doc
	}
	for _, c := range []struct {
		name       string
		doc        *document.Run
		has, lacks string
	}{
		{"memory", record(&document.MemoryUse{Init: 3 << 20, Buffers: 256 << 20, Collective: 1 << 30}, nil),
			"# GPU memory usage     : Initialization 3.00 MB | User-Allocated 256 MB | Collective 1.00 GB | Total  1.25 GB\n", ""},
		{"no memory", record(nil, nil), "# Avg bus bandwidth", "GPU memory usage"},
		{"an error", record(nil, []string{"rank 1 lost"}), "", "# Avg bus bandwidth"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var live, saved bytes.Buffer
			tb := TableOf(&live, c.doc)
			tb.Preamble()
			for _, r := range c.doc.Results {
				if err := tb.Result(r); err != nil {
					t.Fatal(err)
				}
			}
			if err := tb.End(c.doc); err != nil {
				t.Fatal(err)
			}
			if err := SavedTable(&saved, c.doc, false); err != nil {
				t.Fatal(err)
			}
			if live.String() != saved.String() {
				t.Errorf("live:\n%s\nsaved:\n%s", live.String(), saved.String())
			}
			if !bytes.Contains(saved.Bytes(), []byte(c.has)) || (c.lacks != "" && bytes.Contains(saved.Bytes(), []byte(c.lacks))) {
				t.Errorf("the table should have %q and not %q:\n%s", c.has, c.lacks, saved.String())
			}
		})
	}
}
