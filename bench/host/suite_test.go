package host

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/numeric"
)

func suiteFor(t *testing.T, world int, sizes []int64, budget time.Duration) *bench.Suite {
	t.Helper()
	var colls []*bench.Collective
	for _, name := range []string{"allreduce", "alltoall", "sendrecv"} {
		c, err := bench.LookupCollective(name)
		if err != nil {
			t.Fatal(err)
		}
		colls = append(colls, c)
	}
	return &bench.Suite{Colls: colls, Sizes: sizes, Type: numeric.Float32, RedOp: numeric.Sum, World: world, Warmup: 1, Check: 1,
		Groupings: []bench.Grouping{{Size: world}, {Size: world / 2}, {Size: world / 2, Strided: true}},
		Budget:    bench.Budget{Limit: budget, MinIters: 2, MaxIters: 5},
		Open: func(ctx context.Context, g bench.Grouping, need int64) (bench.Comm, int64, func(), error) {
			comm, err := Backend{}.Open(ctx, bench.Setup{JobRanks: world, LocalRanks: world, BufBytes: need, Groups: g})
			if err != nil {
				return nil, 0, nil, err
			}
			return comm, need, func() { comm.Close() }, nil
		}}
}

// The suite measures every collective at every grouping, checked, and
// hands over curves with per-iteration statistics.
func TestSuite(t *testing.T) {
	s := suiteFor(t, 4, []int64{4 << 10, 16 << 10, 64 << 10}, 0)
	var got []bench.CurveResult
	if err := s.Run(context.Background(), func(r bench.CurveResult) { got = append(got, r) }, nil); err != nil {
		t.Fatal(err)
	}
	if len(got) != 9 {
		t.Fatalf("%d curves, want 3 collectives × 3 groupings", len(got))
	}
	for _, r := range got {
		if len(r.Rows) != 3 || r.Note != "" {
			t.Errorf("%s over %d: %d rows, note %q", r.Coll.Name, r.GroupSize, len(r.Rows), r.Note)
		}
		for _, row := range r.Rows {
			p := row.OutOfPlace
			if row.Iters != 5 || p.Iter.N != 5 || p.Time <= 0 || !p.Checked || p.Wrong != 0 || row.InPlace.Time != 0 {
				t.Errorf("%s %d B: %+v", r.Coll.Name, row.Size, row)
			}
		}
		if r.GroupSize == 2 && r.Groups != 2 {
			t.Errorf("%d groups of 2", r.Groups)
		}
	}
}

// A budget is a promise: far too short (1 ms), it leaves sizes and then
// whole curves out, saying so each time, rather than run past it; a
// generous one trims nothing.
func TestSuiteBudget(t *testing.T) {
	var sizes []int64
	for s := int64(1 << 10); s <= 4<<20; s *= 2 {
		sizes = append(sizes, s)
	}
	for _, c := range []struct {
		limit time.Duration
		short bool
	}{{time.Millisecond, true}, {10 * time.Minute, false}} {
		s := suiteFor(t, 2, sizes, c.limit)
		s.Check = 0
		var got []bench.CurveResult
		start := time.Now()
		if err := s.Run(context.Background(), func(r bench.CurveResult) { got = append(got, r) }, nil); err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		trimmed := 0
		for _, r := range got {
			if len(r.Rows) < len(sizes) {
				trimmed++
				if !strings.Contains(r.Note, "time budget") {
					t.Errorf("%v: %s cut without saying why: %q", c.limit, r.Coll.Name, r.Note)
				}
			}
			for _, row := range r.Rows {
				if row.Iters < 2 || row.Iters > 5 {
					t.Errorf("%d iterations outside the budget's bounds", row.Iters)
				}
			}
		}
		if c.short && trimmed != len(got) {
			t.Errorf("a 1 ms budget for %d points left %d of %d curves whole (ran %v)", s.Points(), len(got)-trimmed, len(got), took)
		}
		if !c.short && trimmed != 0 {
			t.Errorf("a 10 min budget trimmed %d curves in %v", trimmed, took)
		}
		t.Logf("budget %v: %d of %d curves cut, %v", c.limit, trimmed, len(got), took)
	}
}

// The overlap probes are under the promise too: when what is left of the
// budget cannot hold a probe, the suite leaves it out and says so rather
// than run past the limit.
func TestSuiteBudgetLeavesProbesOut(t *testing.T) {
	s := suiteFor(t, 2, []int64{4 << 10}, time.Millisecond)
	allreduce, _ := bench.LookupCollective("allreduce")
	w, err := bench.ParseGEMM("64,64,64", numeric.Float32)
	if err != nil {
		t.Fatal(err)
	}
	s.Probes = []bench.Probe{{Name: "p", Coll: allreduce, Type: numeric.Float32, RedOp: numeric.Sum, Size: 64 << 10, Workload: w}}
	s.Overlap = bench.OverlapOptions{Target: 50 * time.Millisecond, Cover: 4}
	var logged []string
	s.Log = func(format string, a ...any) { logged = append(logged, fmt.Sprintf(format, a...)) }
	probed, leftOut := 0, ""
	err = s.Run(context.Background(), func(bench.CurveResult) {}, func(r bench.ProbeResult) {
		if r.LeftOut != "" {
			leftOut = r.Probe.Name + ": " + r.LeftOut
			return
		}
		probed++
	})
	if err != nil {
		t.Fatal(err)
	}
	if probed != 0 || !slices.ContainsFunc(logged, func(l string) bool { return strings.Contains(l, "overlap p left out: the time budget was spent") }) {
		t.Errorf("a 1 ms budget ran %d probe(s); log %q", probed, logged)
	}
	if leftOut != "p: the time budget was spent" {
		t.Errorf("the probe left out was handed over as %q", leftOut)
	}
}
