package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
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

// A cost every point has besides its calls (a power window) is held back
// for every point not yet measured: 8 s for 8 points with 500 ms each
// leaves 500 ms of calls a point.
func TestBudgetPerPoint(t *testing.T) {
	now := time.Unix(0, 0)
	b := Budget{Limit: 10 * time.Second, MinIters: 3, MaxIters: 20, Reserve: 1700 * time.Millisecond,
		PerPoint: 500 * time.Millisecond, now: func() time.Time { return now }}
	b.Start(8)
	if got := b.Iters(50 * time.Millisecond); got != 10 {
		t.Errorf("Iters(50ms) = %d, want 10 (500 ms of calls)", got)
	}
	// 3 × 500 ms of calls is within 3× the share; with the window it is
	// still within the 8 s left.
	if b.TooLong(500*time.Millisecond, 0) || !b.TooLong(600*time.Millisecond, 0) {
		t.Error("the share of calls is not the time left less the windows")
	}
	now = now.Add(6 * time.Second)
	b.Done(7) // 2 s left for the last point: its window and 1.5 s of calls
	if b.Overruns(500*time.Millisecond, 0) || !b.Overruns(510*time.Millisecond, 0) {
		t.Error("the last point's window is not counted against what is left")
	}
}

// A curve's first MinCurveSizes sizes are kept whenever what is left holds
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
		{MinCurveSizes - 1, time.Second, false},
		{MinCurveSizes, time.Second, true}, // past the kept sizes: held to the share
		{MinCurveSizes, 50 * time.Millisecond, false},
		{0, 4 * time.Second, true}, // 12 s: more than is left
	}
	for _, c := range cases {
		if got := s.tooLong(c.index, MinCurveSizes, c.perCall, 0); got != c.drop {
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
	run := func(wanted func(string, int, string) (bool, int)) (order, opened []string) {
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
	order, opened = run(func(coll string, n int, layout string) (bool, int) {
		return coll == "allreduce" && layout == "strided" || coll == "alltoall" && n == 8, 0
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

// sleepComm takes a millisecond of real time per KiB per call, so that a
// budget runs short where a test wants it to.
type sleepComm struct {
	nullComm
	pending, perIter time.Duration
	// clock, when set, is advanced by what a call would sleep, instead
	// of sleeping: a budget read from it sees the calls' time and nothing
	// of how loaded the machine running the test is.
	clock *fakeClock
}

// fakeClock is a time that moves only when told.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func (c *sleepComm) Enqueue(b Batch) error {
	per := time.Duration(b.Agg) * time.Duration(b.Counts.Bytes(b.Type.Size())>>10) * time.Millisecond
	c.pending += time.Duration(b.Iters) * per
	if b.Record {
		c.perIter = per
	}
	return c.nullComm.Enqueue(b)
}

// IterTimes says each iteration took what it slept.
func (c *sleepComm) IterTimes() [][]time.Duration {
	out := c.nullComm.IterTimes()
	for _, rank := range out {
		for i := range rank {
			rank[i] = c.perIter
		}
	}
	return out
}

func (c *sleepComm) Wait(ctx context.Context) error {
	if c.clock != nil {
		c.clock.advance(c.pending)
	} else {
		time.Sleep(c.pending)
	}
	c.pending = 0
	return c.nullComm.Wait(ctx)
}

// A budget keeps the sizes a curve promises or leaves the whole curve
// out, saying so; only past them does it trim the largest sizes.
func TestSuiteKeepsPromiseOrDropsCurve(t *testing.T) {
	ar, _ := LookupCollective("allreduce")
	sizes := []int64{1 << 10, 2 << 10, 4 << 10, 8 << 10, 16 << 10, 32 << 10, 64 << 10, 128 << 10, 256 << 10}
	// A call at each size takes 1, 2, … 256 ms of a clock the calls
	// advance, which the budget reads; a point is one warm-up call and
	// one timed: the first 8 sizes take 0.51 s, the ninth 0.51 s more.
	run := func(limit time.Duration, keep int) CurveResult {
		clock := &fakeClock{t: time.Unix(0, 0)}
		s := Suite{World: 2, Colls: []*Collective{ar}, Sizes: sizes, Type: numeric.Float32, RedOp: numeric.Sum, Groupings: []Grouping{{}},
			Warmup: 1, Budget: Budget{Limit: limit, MinIters: 1, MaxIters: 1, now: clock.now},
			Wanted: func(string, int, string) (bool, int) { return true, keep },
			Open: func(context.Context, Grouping, int64) (Comm, int64, func(), error) {
				return &sleepComm{nullComm: nullComm{ranks: 2}, clock: clock}, 1 << 30, func() {}, nil
			}}
		var got CurveResult
		if err := s.Run(context.Background(), func(r CurveResult) { got = r }, func(ProbeResult) {}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if r := run(0, 0); len(r.Rows) != 9 || r.Note != "" {
		t.Errorf("no limit: %d sizes, note %q", len(r.Rows), r.Note)
	}
	// 0.9 s holds the first 8 sizes, not the ninth.
	if r := run(900*time.Millisecond, 0); len(r.Rows) != 8 || r.Note != "sizes from 256K up left out to stay within the time budget" {
		t.Errorf("0.9 s: %d sizes, note %q", len(r.Rows), r.Note)
	}
	// 0.2 s cannot hold the 8 promised: the curve is left out whole.
	want := "left out: the time budget could not hold its first 8 sizes (1K to 128K); it held "
	if r := run(200*time.Millisecond, 0); len(r.Rows) != 0 || !strings.HasPrefix(r.Note, want) {
		t.Errorf("0.2 s: %d sizes, note %q", len(r.Rows), r.Note)
	}
	// A curve an export reads 9 sizes of is not cut at 8.
	want = "left out: the time budget could not hold its first 9 sizes (1K to 256K); it held 8"
	if r := run(900*time.Millisecond, 9); len(r.Rows) != 0 || r.Note != want {
		t.Errorf("0.9 s, 9 kept: %d sizes, note %q", len(r.Rows), r.Note)
	}
}

// The estimate times one all-reduce of the whole job at the largest
// promised size and sums, for the promised curves of the whole job, the
// warm-up and fewest iterations at each promised size scaled from it;
// other collectives count at half their bus factor's share, and curves
// over smaller groups not at all. Without wanted curves, every curve
// promises MinCurveSizes.
func TestEstimate(t *testing.T) {
	ar, _ := LookupCollective("allreduce")
	ag, _ := LookupCollective("allgather")
	sizes := []int64{1 << 10, 2 << 10, 4 << 10, 8 << 10, 16 << 10, 32 << 10, 64 << 10, 128 << 10, 256 << 10}
	s := Suite{World: 4, Colls: []*Collective{ar, ag}, Sizes: sizes, Type: numeric.Float32, RedOp: numeric.Sum,
		Groupings: []Grouping{{}, {Size: 2}}, Warmup: 2, Budget: Budget{MinIters: 3, MaxIters: 5},
		Wanted: func(string, int, string) (bool, int) { return true, 0 }}
	if got := s.EstimateSize(true); got != 128<<10 {
		t.Errorf("estimate size %d, want the largest promised, 128 KiB", got)
	}
	e, err := s.Estimate(context.Background(), &sleepComm{nullComm: nullComm{ranks: 4}}, true)
	if err != nil {
		t.Fatal(err)
	}
	// 128 KiB at 1 ms a KiB; 1+2+…+128 KiB is 255 ms a call at full
	// share; 5 calls a size; all-gather's bus factor is half the
	// all-reduce's, then halved again.
	if e.Promised != 4 || e.Curves != 2 || e.Size != 128<<10 || e.PerCall < 128*time.Millisecond {
		t.Fatalf("estimate %+v", e)
	}
	want := 5 * 255.0 / 128 * 1.25 * float64(e.PerCall)
	if r := float64(e.Least) / want; r < 0.999 || r > 1.001 {
		t.Errorf("least %v, want %v", e.Least, time.Duration(want))
	}
	s.Wanted = func(c string, _ int, _ string) (bool, int) { return c == "allgather", 0 }
	if e, err := s.Estimate(context.Background(), &sleepComm{nullComm: nullComm{ranks: 4}}, true); err != nil || e.Promised != 2 || e.Curves != 1 {
		t.Errorf("only all-gather wanted: %+v, %v", e, err)
	}
	s.Wanted = nil
	if e, err := s.Estimate(context.Background(), &sleepComm{nullComm: nullComm{ranks: 4}}, true); err != nil || e.Least != 0 || e.Size != 0 {
		t.Errorf("none wanted, only the wanted asked for: %+v, %v", e, err)
	}
	// Every curve promises MinCurveSizes: 1 KiB to 128 KiB again.
	if e, err := s.Estimate(context.Background(), &sleepComm{nullComm: nullComm{ranks: 4}}, false); err != nil || e.Promised != 4 || e.Curves != 2 || e.Size != 128<<10 {
		t.Errorf("every curve promised: %+v, %v", e, err)
	}
}
