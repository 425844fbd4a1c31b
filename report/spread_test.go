package report

import (
	"bytes"
	"testing"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/internal/golden"
)

func TestSpreadGolden(t *testing.T) {
	g := func(tm, bw float64) bench.GroupPlacement {
		return bench.GroupPlacement{Time: tm, AlgBW: bw, BusBW: bw * 1.5}
	}
	rows := []bench.Row{
		{Size: 1024,
			OutOfPlace: bench.Placement{Procs: []float64{10.5, 12.25, 30, 11}, Groups: []bench.GroupPlacement{g(11, 0.09), g(20, 0.05)}},
			InPlace:    bench.Placement{Procs: []float64{9, 9.5, 9.25, 10}, Groups: []bench.GroupPlacement{g(9, 0.11), g(9.5, 0.1)}}},
		{Size: 1 << 20,
			OutOfPlace: bench.Placement{Procs: []float64{400, -1, 420.5, 410}, Groups: []bench.GroupPlacement{g(405, 2.6), g(420, 2.5)}},
			InPlace:    bench.Placement{Procs: []float64{-1, -1, -1, -1}}},
	}
	var b bytes.Buffer
	(&Table{W: &b}).Spread(rows, ProcLabels(4, 1))
	golden.Check(t, "spread.golden", b.Bytes())
}

func TestSpreadSilentForOneProcess(t *testing.T) {
	var b bytes.Buffer
	(&Table{W: &b}).Spread([]bench.Row{{Size: 8}}, nil)
	if b.Len() != 0 {
		t.Errorf("wrote %q for a one-process run", b.String())
	}
}

func TestProcLabels(t *testing.T) {
	got := ProcLabels(2, 4)
	if got[0] != "ranks 0-3" || got[1] != "ranks 4-7" {
		t.Errorf("got %q", got)
	}
}
