package bench

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/collbench/collbench/bench/numeric"
)

// nullComm does no work: it isolates what the engine itself costs, and it
// can be told to corrupt results or to hang.
type nullComm struct {
	ranks   int
	iters   int
	corrupt bool
	hang    bool
	aborted bool
	// failEnqueue makes the n-th Enqueue fail (1-based; 0: none).
	failEnqueue, enqueues int
	// costlyTimestamps makes the comm record iterations only when asked
	// (-I), as the nccl backend does.
	costlyTimestamps bool
}

func (c *nullComm) Capabilities() Capabilities { return Capabilities{Timestamps: !c.costlyTimestamps} }
func (c *nullComm) Devices() []Device          { return make([]Device, c.ranks) }
func (c *nullComm) Write(int, BufKind, int64, []byte) error {
	return nil
}
func (c *nullComm) Read(_ int, _ BufKind, _ int64, dst []byte) error {
	if c.corrupt && len(dst) > 0 {
		dst[0] ^= 0xff
	}
	return nil
}
func (c *nullComm) Enqueue(b Batch) error {
	if c.enqueues++; c.enqueues == c.failEnqueue {
		return errors.New("ncclAllReduce failed: unhandled cuda error")
	}
	if b.Record {
		c.iters = b.Iters
	}
	return nil
}
func (c *nullComm) Wait(ctx context.Context) error {
	if c.hang {
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}
func (c *nullComm) IterTimes() [][]time.Duration {
	if c.iters == 0 {
		return nil
	}
	out := make([][]time.Duration, c.ranks)
	for i := range out {
		out[i] = make([]time.Duration, c.iters)
	}
	c.iters = 0
	return out
}
func (c *nullComm) Abort()       { c.aborted = true }
func (c *nullComm) Close() error { return nil }

func testOptions(coll string) Options {
	c, _ := LookupCollective(coll)
	return Options{Coll: c, Sweep: Sweep{Min: 1024, Max: 4096, Factor: 2}, Iters: 5, Warmup: 1, Agg: 1, Cycles: 1,
		Check: 1, Types: []numeric.DataType{numeric.Float32}, Ops: []numeric.RedOp{numeric.Sum}, Average: 1}
}

func TestEngineCountsWrongResults(t *testing.T) {
	comm := &nullComm{ranks: 2, corrupt: true}
	e := Engine{Comm: comm, CommRanks: 2, Opts: testOptions("allreduce")}
	var rows []Row
	sum, err := e.Run(context.Background(), func(r Row) { rows = append(rows, r) })
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 {
		t.Fatalf("%d rows, want 3 (1K, 2K, 4K)", len(rows))
	}
	for _, r := range rows {
		if !r.OutOfPlace.Checked || r.OutOfPlace.Wrong == 0 || r.InPlace.Wrong == 0 {
			t.Errorf("size %d: corruption not counted: %+v", r.Size, r)
		}
	}
	if sum.ErrorCases != 6 {
		t.Errorf("ErrorCases = %d, want 6 (3 sizes × 2 placements)", sum.ErrorCases)
	}
}

func TestEngineTimeoutAborts(t *testing.T) {
	comm := &nullComm{ranks: 1, hang: true}
	o := testOptions("broadcast")
	o.Timeout = 50 * time.Millisecond
	e := Engine{Comm: comm, CommRanks: 1, Opts: o}
	_, err := e.Run(context.Background(), func(Row) {})
	var te *TimeoutError
	if !errors.As(err, &te) {
		t.Fatalf("err = %v, want a TimeoutError", err)
	}
	if !comm.aborted {
		t.Error("communicator not aborted on timeout")
	}
	if te.Coll != "broadcast" || te.Size != 1024 {
		t.Errorf("timeout names %s size %d, want broadcast 1024", te.Coll, te.Size)
	}
}

func TestEngineRefusesGraphsWithoutSupport(t *testing.T) {
	o := testOptions("allreduce")
	o.Graph = 1
	e := Engine{Comm: &nullComm{ranks: 1}, CommRanks: 1, Opts: o}
	if _, err := e.Run(context.Background(), func(Row) {}); err == nil {
		t.Fatal("-G accepted by a backend without graphs")
	}
}

// graphComm captures batches as graphs and counts the launches.
type graphComm struct {
	nullComm
	captured []Batch
	launched int
}

func (c *graphComm) Capabilities() Capabilities { return Capabilities{Graphs: true} }
func (c *graphComm) Capture(b Batch) (Graph, error) {
	c.captured = append(c.captured, b)
	return graphOf{c}, nil
}

type graphOf struct{ c *graphComm }

func (g graphOf) Launch(n int) error { g.c.launched += n; return nil }
func (g graphOf) Close() error       { return nil }

func TestEngineGraphMode(t *testing.T) {
	o := testOptions("allreduce")
	o.Graph, o.Iters, o.Agg = 3, 5, 2
	comm := &graphComm{nullComm: nullComm{ranks: 1}}
	e := Engine{Comm: comm, CommRanks: 1, Opts: o}
	var rows []Row
	if _, err := e.Run(context.Background(), func(r Row) { rows = append(rows, r) }); err != nil {
		t.Fatal(err)
	}
	placements := 2 * len(rows)
	if len(comm.captured) != placements || comm.launched != 3*placements {
		t.Errorf("%d captures and %d launches for %d timed placements, want one capture and 3 launches each",
			len(comm.captured), comm.launched, placements)
	}
	for _, b := range comm.captured {
		if b.Iters != 5 || b.Agg != 2 || b.Record {
			t.Errorf("captured batch %+v, want 5 iterations of 2 calls without events", b)
		}
	}
	if rows[0].OutOfPlace.Iter.N != 0 {
		t.Errorf("graph mode has no per-iteration samples, got %d", rows[0].OutOfPlace.Iter.N)
	}
}

// TestEngineIterTiming: a backend whose timestamps cost enqueue time
// records iterations only under -I, and -K drops the first ones.
func TestEngineIterTiming(t *testing.T) {
	tests := []struct {
		iterTiming bool
		skip       int
		want       int
	}{{false, 0, 0}, {true, 0, 5}, {true, 2, 3}}
	for _, tt := range tests {
		o := testOptions("allgather")
		o.IterTiming, o.IterSkip = tt.iterTiming, tt.skip
		e := Engine{Comm: &nullComm{ranks: 2, costlyTimestamps: true}, CommRanks: 2, Opts: o}
		var n []int
		if _, err := e.Run(context.Background(), func(r Row) { n = append(n, r.OutOfPlace.Iter.N, r.InPlace.Iter.N) }); err != nil {
			t.Fatal(err)
		}
		for _, got := range n {
			if got != tt.want {
				t.Errorf("-I %v -K %d: %d samples, want %d", tt.iterTiming, tt.skip, got, tt.want)
				break
			}
		}
	}
}

func TestEngineRowsAndRoots(t *testing.T) {
	o := testOptions("reduce")
	o.Root = -1
	o.Ops = numeric.AllOps()
	o.Types = []numeric.DataType{numeric.Int8, numeric.Float64}
	e := Engine{Comm: &nullComm{ranks: 3}, CommRanks: 3, Opts: o}
	var rows []Row
	if _, err := e.Run(context.Background(), func(r Row) { rows = append(rows, r) }); err != nil {
		t.Fatal(err)
	}
	if want := 2 * 6 * 3 * 3; len(rows) != want { // types × ops × roots × sizes
		t.Fatalf("%d rows, want %d", len(rows), want)
	}
	if rows[0].Type != numeric.Int8 || rows[0].Op != numeric.Sum || rows[0].Root != 0 || rows[3].Root != 1 {
		t.Errorf("loop order differs from nccl-tests (type, op, root, size): %+v %+v", rows[0], rows[3])
	}
}

func TestSummarize(t *testing.T) {
	s := Summarize([]float64{5, 1, 4, 2, 3, 6, 7, 8, 9, 10})
	if s.Min != 1 || s.Max != 10 || s.Mean != 5.5 || s.P50 != 5 || s.P95 != 10 || s.P99 != 10 {
		t.Errorf("Summarize = %+v", s)
	}
	if s.Stdev < 2.872 || s.Stdev > 2.873 {
		t.Errorf("population stdev = %g, want 2.8723", s.Stdev)
	}
	if z := Summarize(nil); z.N != 0 {
		t.Errorf("empty: %+v", z)
	}
}

// BenchmarkEngineOverhead measures what the engine adds per collective call
// in the timed loop, against a backend that does no work. Report ns/call.
func BenchmarkEngineOverhead(b *testing.B) {
	o := testOptions("allreduce")
	o.Check = 0
	o.Iters = 1000
	o.Sweep = Sweep{Min: 1024, Max: 1024, Factor: 2}
	e := Engine{Comm: &nullComm{ranks: 8}, CommRanks: 8, Opts: o}
	op := e.op(1024, numeric.Float32, numeric.Sum, -1, false)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, _, err := e.timedLoop(ctx, op); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*o.Iters), "ns/call")
}

// A suite that checks results stops at the first wrong one and says so,
// with the curve measured so far.
func TestSuiteStopsOnWrongResults(t *testing.T) {
	coll, _ := LookupCollective("allreduce")
	comm := &nullComm{ranks: 2, corrupt: true}
	s := Suite{Colls: []*Collective{coll}, Groupings: []Grouping{{}}, Sizes: []int64{1024, 2048}, Type: numeric.Float32,
		RedOp: numeric.Sum, World: 2, Check: 1, Budget: Budget{MinIters: 1, MaxIters: 2},
		Open: func(context.Context, Grouping, int64) (Comm, int64, func(), error) { return comm, 2048, func() {}, nil }}
	var got []CurveResult
	err := s.Run(context.Background(), func(r CurveResult) { got = append(got, r) }, nil)
	if !errors.Is(err, ErrWrongResults) || !strings.Contains(err.Error(), "allreduce over groups of 2") || !strings.Contains(err.Error(), "at 1K") {
		t.Fatalf("got %v", err)
	}
	if len(got) != 0 {
		t.Errorf("a curve with wrong results was handed over: %+v", got)
	}
}

// A failed enqueue, in the warm-up, the synchronising call or the timed
// loop, aborts the communicators before the error is returned: ranks
// that already queued their part must not wait for it forever.
func TestEnqueueFailureAborts(t *testing.T) {
	for _, n := range []int{1, 2, 3, 5} {
		comm := &nullComm{ranks: 2, failEnqueue: n}
		e := Engine{Comm: comm, CommRanks: 2, Opts: testOptions("allreduce")}
		_, err := e.Run(context.Background(), func(Row) {})
		if err == nil || !strings.Contains(err.Error(), "unhandled cuda error") {
			t.Errorf("enqueue %d failing: %v", n, err)
		}
		if !comm.aborted {
			t.Errorf("enqueue %d failing: the communicators were not aborted", n)
		}
	}
}

// Options are validated into a new value and the engine leaves its
// caller's fields alone: -z 3 under -G comes back as 0 without changing
// the original, and neither Run nor Point writes Peers or Iters.
func TestOptionsAreValues(t *testing.T) {
	o := testOptions("allreduce")
	o.Graph, o.Blocking = 1, 3
	v, err := o.Validate(2)
	if err != nil || v.Blocking != 0 || o.Blocking != 3 {
		t.Fatalf("Validate: got blocking %d (err %v), original now %d; want 0 and 3", v.Blocking, err, o.Blocking)
	}
	e := Engine{Comm: &nullComm{ranks: 2}, CommRanks: 2, Opts: testOptions("allreduce")}
	if _, err := e.Run(context.Background(), func(Row) {}); err != nil {
		t.Fatal(err)
	}
	iters := e.Opts.Iters
	row, err := e.Point(context.Background(), numeric.Float32, numeric.Sum, -1, 1024, PointPlan{Iters: func(time.Duration) int { return iters + 3 }})
	if err != nil || row.Iters != iters+3 {
		t.Fatalf("Point: %d iterations, %v", row.Iters, err)
	}
	if e.Peers != nil || e.Opts.Iters != iters {
		t.Errorf("the engine rewrote its caller's fields: Peers %v, Iters %d (was %d)", e.Peers, e.Opts.Iters, iters)
	}
}

// Pairs in Skip are neither planned nor run; the rest of Types × Ops is.
func TestEngineSkipsPairs(t *testing.T) {
	o := testOptions("allreduce")
	o.Types = []numeric.DataType{numeric.Float32, numeric.Float8e4m3}
	o.Ops = []numeric.RedOp{numeric.Sum, numeric.Avg}
	o.Skip = []TypeOp{{Type: numeric.Float8e4m3, Op: numeric.Avg}}
	o.Check = 0
	e := Engine{Comm: &nullComm{ranks: 1}, CommRanks: 1, Opts: o}
	seen := map[TypeOp]int{}
	if _, err := e.Run(context.Background(), func(r Row) { seen[TypeOp{r.Type, r.Op}]++ }); err != nil {
		t.Fatal(err)
	}
	sizes := len(o.Sweep.Sizes())
	if got := e.PlannedRows(); got != 3*sizes {
		t.Errorf("planned %d rows, want %d", got, 3*sizes)
	}
	if seen[TypeOp{numeric.Float8e4m3, numeric.Avg}] != 0 || len(seen) != 3 {
		t.Errorf("rows per pair %v: want three pairs and no f8e4m3 avg", seen)
	}
}

// stallComm is a GPU-like comm: its calls can wait for ever without an
// error, and from its hangAt-th wait on they do, as ranks crowding one GPU
// do once their channels no longer fit it.
type stallComm struct {
	nullComm
	waits, hangAt int
}

func (c *stallComm) Wait(ctx context.Context) error {
	if c.waits++; c.waits >= c.hangAt {
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}
func (c *stallComm) Waiting() []int     { return []int{0, 1, 2, 3} }
func (c *stallComm) StallCause() string { return "4 ranks share GPU 0" }

// TestEngineStallWatchdog: with no -T, a call that never completes on a
// backend that can stall silently ends at the watchdog's bound, the
// communicators aborted, with one line naming the collective, the size,
// the ranks still waiting and the likely cause.
func TestEngineStallWatchdog(t *testing.T) {
	comm := &stallComm{nullComm: nullComm{ranks: 4}, hangAt: 8} // 1 KiB out of place measures, then in place hangs
	o := testOptions("allreduce")
	o.StallFloor = 200 * time.Millisecond
	e := Engine{Comm: comm, CommRanks: 4, Opts: o}
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := e.Run(t.Context(), func(Row) {})
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the stalled call was not given up on")
	}
	var te *TimeoutError
	if !errors.As(err, &te) || !te.Stalled {
		t.Fatalf("err = %v, want a stall", err)
	}
	if took := time.Since(start); took < o.StallFloor {
		t.Errorf("given up after %v, before the floor %v", took, o.StallFloor)
	}
	if !comm.aborted {
		t.Error("communicators not aborted")
	}
	msg := err.Error()
	for _, want := range []string{"allreduce of 1024 bytes", "did not complete within 200ms", "stall watchdog",
		"ranks 0-3 still waiting", "likely cause: 4 ranks share GPU 0", "communicators aborted"} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("not one line: %q", msg)
	}
}

// Without a floor the watchdog is off and -T alone bounds a wait, as on a
// backend that cannot stall silently.
func TestEngineStallWatchdogOff(t *testing.T) {
	comm := &stallComm{nullComm: nullComm{ranks: 1}, hangAt: 1}
	o := testOptions("broadcast")
	o.Timeout = 100 * time.Millisecond
	e := Engine{Comm: comm, CommRanks: 1, Opts: o}
	_, err := e.Run(t.Context(), func(Row) {})
	var te *TimeoutError
	if !errors.As(err, &te) || te.Stalled || te.After != o.Timeout {
		t.Fatalf("err = %v, want -T's timeout", err)
	}
}

// The watchdog predicts a wait from the sizes measured so far: the
// tightest of them scaled up to the size, never below what a smaller size
// took; before any, at a slow network's rate. Its bound is 50 times that,
// never below the floor, and it bounds nothing without a floor.
func TestStallWatch(t *testing.T) {
	var w StallWatch
	if got := w.Predict(1e8); got != 1 {
		t.Errorf("nothing measured: 100 MB predicted at %v s, want 1 (100 MB/s)", got)
	}
	if w.Bound(1) != 0 {
		t.Error("a watch without a floor bounds waits")
	}
	w.Floor = time.Second
	w.Observe(1<<10, 10e-6) // 1 KiB: 10 µs, latency-bound
	w.Observe(1<<20, 1e-3)  // 1 MiB: 1 ms
	tests := []struct {
		bytes int64
		want  float64
	}{{8, 10e-6}, {1 << 10, 10e-6}, {1 << 15, 320e-6}, {1 << 20, 1e-3}, {1 << 30, 1.024}}
	for _, tt := range tests {
		if got := w.Predict(tt.bytes); math.Abs(got-tt.want) > 1e-9*max(1, tt.want) {
			t.Errorf("Predict(%d) = %v, want %v", tt.bytes, got, tt.want)
		}
	}
	if got := w.Bound(1e-3); got != time.Second {
		t.Errorf("Bound(1 ms) = %v, want the floor", got)
	}
	if got := w.Bound(1); got != 50*time.Second {
		t.Errorf("Bound(1 s) = %v, want 50 s", got)
	}
	// A run that cycles for ever (-N 0) measures its sizes again and
	// again: the watch holds one figure a size, the quickest.
	for i := 0; i < 1000; i++ {
		w.Observe(1<<20, 2e-3)
	}
	if len(w.seen) != 2 || w.Predict(1<<20) != 1e-3 {
		t.Errorf("after 1000 cycles: %d figures, 1 MiB predicted at %v s", len(w.seen), w.Predict(1<<20))
	}
}

// estimatingComm is a nullComm whose backend has its own model: each
// call's estimate is its size in µs.
type estimatingComm struct {
	nullComm
	asked []Op
}

func (c *estimatingComm) Estimate(op Op) (float64, bool, error) {
	c.asked = append(c.asked, op)
	return float64(op.Footprint()), true, nil
}

// With Options.Estimate every out-of-place placement carries the
// backend's estimate, asked once per size; in place and without the
// option nothing is asked.
func TestEngineEstimates(t *testing.T) {
	for _, asked := range []bool{true, false} {
		o := testOptions("allreduce")
		o.Estimate = asked
		c := &estimatingComm{nullComm: nullComm{ranks: 2}}
		e := Engine{Comm: c, CommRanks: 2, Opts: o}
		var rows []Row
		if _, err := e.Run(context.Background(), func(r Row) { rows = append(rows, r) }); err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			want := 0.0
			if asked {
				want = float64(r.Size)
			}
			if r.OutOfPlace.Estimate != want || r.InPlace.Estimate != 0 {
				t.Errorf("asked %v, %d bytes: estimates %v out of place, %v in place; want %v and 0", asked, r.Size,
					r.OutOfPlace.Estimate, r.InPlace.Estimate, want)
			}
		}
		if n := len(c.asked); (asked && n != len(rows)) || (!asked && n != 0) {
			t.Errorf("asked %v: %d estimates for %d rows", asked, n, len(rows))
		}
		for _, op := range c.asked {
			if op.InPlace {
				t.Errorf("estimate asked in place: %+v", op)
			}
		}
	}
}
