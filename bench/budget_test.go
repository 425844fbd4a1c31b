package bench

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/collbench/collbench/bench/numeric"
)

func TestBudget(t *testing.T) {
	now := time.Unix(0, 0)
	// 10 s less 3 % kept for the end, less the reserve: 8 s for 8
	// points, 1 s each.
	b := Budget{Limit: 10 * time.Second, MinIters: 3, MaxIters: 20, Reserve: 1700 * time.Millisecond, now: func() time.Time { return now }}
	b.Start(8)
	cases := []struct {
		perCall time.Duration
		iters   int
		tooLong bool
	}{
		{time.Millisecond, 20, false},       // capped at MaxIters
		{100 * time.Millisecond, 10, false}, // 1 s holds 10
		{500 * time.Millisecond, 3, false},  // floor of MinIters
		{1500 * time.Millisecond, 3, true},  // 4.5 s at MinIters: over 3× the share
	}
	for _, c := range cases {
		if got := b.Iters(c.perCall); got != c.iters {
			t.Errorf("Iters(%v) = %d, want %d", c.perCall, got, c.iters)
		}
		if got := b.TooLong(c.perCall, 0); got != c.tooLong {
			t.Errorf("TooLong(%v) = %v", c.perCall, got)
		}
	}
	// Asked before the warm-up, its calls count: 5 + 3 calls of 500 ms.
	if !b.TooLong(500*time.Millisecond, 5) || b.TooLong(300*time.Millisecond, 5) {
		t.Error("the warm-up is not counted")
	}
	now = now.Add(4 * time.Second)
	b.Done(6) // 4 s left for 2 points: 2 s each
	if got := b.Iters(100 * time.Millisecond); got != 20 {
		t.Errorf("after 4 s and 6 points: %d iterations", got)
	}
	if b.Spent() {
		t.Error("spent too early")
	}
	// The last point may not take 3× its share when that is more than is
	// left: 3 × 1.4 s is within 3 × 2 s but not within the 4 s left.
	if !b.TooLong(1400*time.Millisecond, 0) || b.TooLong(1300*time.Millisecond, 0) {
		t.Error("a point may overrun what is left")
	}
	now = now.Add(5 * time.Second) // past the limit less the reserve
	if !b.Spent() || b.Iters(time.Millisecond) != 3 {
		t.Errorf("spent %v, iters %d", b.Spent(), b.Iters(time.Millisecond))
	}
	free := Budget{MinIters: 1, MaxIters: 7}
	free.Start(100)
	if free.Iters(time.Hour) != 7 || free.TooLong(time.Hour, 5) || free.Spent() {
		t.Error("a budget without a limit trims")
	}
	// A limit counts from Since (the command's start), not from Start.
	early := Budget{Limit: 10 * time.Second, MinIters: 1, MaxIters: 7, Since: now.Add(-9 * time.Second), now: func() time.Time { return now }}
	early.Start(1)
	if early.Remaining() != 700*time.Millisecond {
		t.Errorf("remaining %v, want 700ms", early.Remaining())
	}
}

// A curve's first minCurveSizes sizes are kept whenever what is left holds
// them, even at more than three times a point's share; later sizes are
// held to the share, and nothing may overrun what is left.
func TestSuiteKeepsFirstSizes(t *testing.T) {
	now := time.Unix(0, 0)
	s := Suite{Budget: Budget{Limit: 10 * time.Second, MinIters: 3, MaxIters: 20, now: func() time.Time { return now }}}
	s.Budget.Start(100) // about 97 ms a point
	cases := []struct {
		index   int
		perCall time.Duration
		drop    bool
	}{
		{0, time.Second, false}, // 3 s: over the share, within the 9.7 s left
		{minCurveSizes - 1, time.Second, false},
		{minCurveSizes, time.Second, true}, // past the kept sizes: held to the share
		{minCurveSizes, 50 * time.Millisecond, false},
		{0, 4 * time.Second, true}, // 12 s: more than is left
	}
	for _, c := range cases {
		if got := s.tooLong(c.index, c.perCall, 0); got != c.drop {
			t.Errorf("size %d at %v a call: dropped %v, want %v", c.index, c.perCall, got, c.drop)
		}
	}
}

// Left and Holds ignore the reserve: they are what the reserved work
// itself may use.
func TestBudgetLeftAndHolds(t *testing.T) {
	now := time.Unix(0, 0)
	b := Budget{Limit: 10 * time.Second, Reserve: 5 * time.Second, now: func() time.Time { return now }}
	b.Start(1)
	now = now.Add(4 * time.Second)
	if got := b.Left(); got != 5700*time.Millisecond {
		t.Errorf("Left after 4 s of 10 s = %v, want 5.7 s (3 %% kept for the end)", got)
	}
	if !b.Holds(9700*time.Millisecond) || b.Holds(9701*time.Millisecond) {
		t.Errorf("Holds: 9.7 s is all of a 10 s limit less its end margin")
	}
	if unlimited := (Budget{}); !unlimited.Holds(time.Hour) || unlimited.Left() < time.Hour {
		t.Errorf("a budget without a limit holds everything")
	}
}

// With Wanted set, the wanted curves are measured first, grouping by
// grouping, then the others; a grouping is opened once per pass it has
// curves in. Without it the order is the suite's own.
func TestSuiteWantedFirst(t *testing.T) {
	ar, _ := LookupCollective("allreduce")
	ag, _ := LookupCollective("allgather")
	a2a, _ := LookupCollective("alltoall")
	run := func(wanted func(string, int, string) bool) (order, opened []string) {
		comm := &nullComm{ranks: 8}
		s := Suite{World: 8, Colls: []*Collective{ag, a2a, ar}, Sizes: []int64{1024}, Type: numeric.Float32, RedOp: numeric.Sum,
			Groupings: []Grouping{{}, {Size: 4}, {Size: 4, Strided: true}}, Budget: Budget{MinIters: 1, MaxIters: 1}, Wanted: wanted,
			Open: func(_ context.Context, g Grouping, _ int64) (Comm, int64, func(), error) {
				opened = append(opened, fmt.Sprintf("%d %s", g.Of(8), g.Layout()))
				return comm, 1024, func() {}, nil
			}}
		err := s.Run(context.Background(), func(r CurveResult) {
			order = append(order, fmt.Sprintf("%s %d %s", r.Coll.Name, r.GroupSize, r.Grouping.Layout()))
		}, func(ProbeResult) {})
		if err != nil {
			t.Fatal(err)
		}
		return order, opened
	}
	order, opened := run(nil)
	if order[0] != "allgather 8 consecutive" || order[8] != "allreduce 4 strided" || len(opened) != 3 {
		t.Errorf("without Wanted: %v, opened %v", order, opened)
	}
	order, opened = run(func(coll string, n int, layout string) bool {
		return coll == "allreduce" && layout == "strided" || coll == "alltoall" && n == 8
	})
	want := []string{"alltoall 8 consecutive", "allreduce 4 strided",
		"allgather 8 consecutive", "allreduce 8 consecutive", "allgather 4 consecutive", "alltoall 4 consecutive", "allreduce 4 consecutive",
		"allgather 4 strided", "alltoall 4 strided"}
	if !slices.Equal(order, want) {
		t.Errorf("order %v\nwant %v", order, want)
	}
	if want := []string{"8 consecutive", "4 strided", "8 consecutive", "4 consecutive", "4 strided"}; !slices.Equal(opened, want) {
		t.Errorf("opened %v, want %v", opened, want)
	}
}
