package run

import (
	"testing"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/export"
)

// The plan a budget follows for --export all on 2 nodes of 4 ranks,
// sweeping 1 KiB to 1 GiB: which curves come first, and how many sizes
// each keeps (Galvatron's tables up to their eighth whole MiB, 128 MiB,
// the 18th size; the suite keeps at least 8 of every curve).
func TestExportAllBudgetPlan(t *testing.T) {
	var sizes []int64
	for s := int64(1 << 10); s <= 1<<30; s *= 2 {
		sizes = append(sizes, s)
	}
	wanted := wantedBy(export.Needs(export.Targets, 8, 4), 8, sizes)
	for _, c := range []struct {
		coll   string
		n      int
		layout string
		wanted bool
		keep   int
	}{
		{"allreduce", 8, "consecutive", true, 18},
		{"allreduce", 8, "strided", true, 18}, // one group of everybody
		{"alltoall", 2, "consecutive", true, 18},
		{"allreduce", 2, "strided", true, 1},      // Galvatron's DP bandwidth and Calculon's inter-node tier
		{"allgather", 4, "consecutive", true, 18}, // Galvatron's TP table: all-gather + reduce-scatter
		{"reducescatter", 4, "consecutive", true, 18},
		{"reducescatter", 2, "strided", true, 1},
		{"pipeline", 4, "strided", true, 1},
		{"sendrecv", 4, "strided", true, 1},       // read when the pipeline is missing
		{"allgather", 2, "consecutive", true, 18}, // AIConfigurator's table of 2 GPUs, and Galvatron's
		{"alltoall", 2, "strided", false, 0},
		{"broadcast", 8, "consecutive", false, 0},
	} {
		w, keep := wanted(c.coll, c.n, c.layout)
		if w != c.wanted || keep != c.keep {
			t.Errorf("%s over %d (%s): wanted %v keeping %d, want %v keeping %d", c.coll, c.n, c.layout, w, keep, c.wanted, c.keep)
		}
	}
	if wantedBy(nil, 8, sizes) != nil {
		t.Error("without exports every curve is alike")
	}
}

// The request is checked against the exports before anything runs: the
// default suite gives every export what it reads; leaving out the strided
// layout, or the probe, does not.
func TestExportsUnmet(t *testing.T) {
	spec := func(layouts []string, noOverlap bool) ProfileSpec {
		s := ProfileSpec{Sweep: bench.Sweep{Min: 1 << 20, Max: 128 << 20, Factor: 2}, Layout: layouts, NoOverlap: noOverlap, Iters: 1, MinIters: 1}
		for _, name := range []string{"allreduce", "allgather", "reducescatter", "alltoall", "broadcast", "sendrecv", "pipeline"} {
			c, _ := bench.LookupCollective(name)
			s.Colls = append(s.Colls, c)
		}
		return s
	}
	for _, c := range []struct {
		spec ProfileSpec
		want string
	}{
		{spec([]string{"consecutive", "strided"}, false), ""},
		{spec([]string{"consecutive"}, false), "the galvatron export reads allreduce over groups of 4 (strided), which this profile does not measure"},
		{spec([]string{"consecutive", "strided"}, true), "the galvatron export reads the overlap probe, which this profile leaves out"},
	} {
		p, err := c.spec.Plan(8, false)
		if err != nil {
			t.Fatal(err)
		}
		if got := exportsUnmet(export.Targets, export.Needs(export.Targets, 8, 4), c.spec, p, 8); got != c.want {
			t.Errorf("layouts %v, no overlap %v: %q, want %q", c.spec.Layout, c.spec.NoOverlap, got, c.want)
		}
	}
}
