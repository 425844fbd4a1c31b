package bench

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"time"

	"github.com/collbench/collbench/bench/numeric"
)

// Engine runs the nccl-tests measurement loop over a Comm.
type Engine struct {
	Comm  Comm
	Peers Peers
	Opts  Options
	// CommRanks is the ranks in each measured communicator: the job's ranks,
	// or the group size when the job is split into groups.
	CommRanks int
	// Groups is how many groups run at once; with more than one, each
	// placement also reports every group's own figures.
	Groups int

	// cut is, for a process that Point's plan stopped after its first
	// call, that call's time in seconds (0: not cut): it calls no more,
	// joins the others' agreements, and its groups' figure is that call.
	cut     float64
	cutAll  bool       // every process was cut: the combined time is theirs
	rep     int        // verification repetition, varies the data between checks
	cycle   int        // the run cycle (-N) being measured, from 0
	watch   StallWatch // what the run has measured, to bound its waits
	scratch struct{ want, got []byte }
}

// peers is the job's other processes; none when Peers is not set.
func (e *Engine) peers() Peers { return orSolo(e.Peers) }

// PlannedRows is how many rows Run will hand over: one per data type,
// reduction, root and size.
func (e *Engine) PlannedRows() int { return e.Opts.PlannedRows(e.CommRanks) }

// Run measures every (type, op, root) combination over the sweep, calling
// onRow as each row completes.
func (e *Engine) Run(ctx context.Context, onRow func(Row)) (Summary, error) {
	// Every call of the run is issued from one OS thread, as nccl-tests
	// issues its from its main thread: a GPU backend's per-thread state
	// is then set up once, not on each thread the goroutine moves to.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	o := &e.Opts
	if err := o.Runs(e.Comm.Capabilities()); err != nil {
		return Summary{}, fmt.Errorf("this backend %w", err)
	}
	var sum Summary
	var bwTotal float64
	for _, t := range o.Types {
		for _, op := range o.runOps() {
			if o.skips(t, op) {
				continue
			}
			for _, root := range o.runRoots(e.CommRanks) {
				err := e.timeTest(ctx, t, op, root, func(r Row) {
					sum.Rows++
					bwTotal += r.OutOfPlace.BusBW + r.InPlace.BusBW
					onRow(r)
				}, &sum)
				if err != nil {
					return sum, err
				}
			}
		}
	}
	if sum.Rows > 0 {
		sum.AvgBusBW = bwTotal / float64(2*sum.Rows)
	}
	return sum, nil
}

func (e *Engine) op(size int64, t numeric.DataType, redop numeric.RedOp, root int, inPlace bool) Op {
	elt := t.Size()
	return Op{Coll: e.Opts.Coll, Type: t, RedOp: redop, Root: root, InPlace: inPlace,
		Counts: e.Opts.Coll.Counts(size/int64(elt), elt, e.CommRanks), Unalign: int64(e.Opts.Unalign) * int64(elt)}
}

func (e *Engine) timeTest(ctx context.Context, t numeric.DataType, redop numeric.RedOp, root int, onRow func(Row), sum *Summary) error {
	o := &e.Opts
	if err := e.peers().Barrier(ctx); err != nil {
		return err
	}
	for _, size := range o.Sweep.WarmupSizes() {
		op := e.op(size, t, redop, root, false)
		if err := e.launch(ctx, Batch{Op: op, Iters: o.Warmup, Agg: 1}, size); err != nil {
			return err
		}
	}
	for cycle := 0; o.Cycles == 0 || cycle < o.Cycles; cycle++ {
		e.cycle = cycle
		for _, size := range o.Sweep.Sizes() {
			oop := e.op(size, t, redop, root, false)
			row := Row{Size: oop.Footprint(), Count: oop.Counts.Param, Type: t, Op: redop, Root: root, Iters: o.Iters}
			var err error
			if row.OutOfPlace, err = e.benchTime(ctx, oop, sum); err != nil {
				return err
			}
			if row.InPlace, err = e.benchTime(ctx, e.op(size, t, redop, root, true), sum); err != nil {
				return err
			}
			onRow(row)
		}
	}
	return nil
}

// launch enqueues a batch and waits for it under the watchdog.
func (e *Engine) launch(ctx context.Context, b Batch, size int64) error {
	if b.Iters == 0 {
		return nil
	}
	e.doing(b.Op, size)
	if err := e.Comm.Enqueue(b); err != nil {
		return abortOn(e.Comm, err)
	}
	return e.wait(ctx, b.Op, size, b.Iters*b.Agg)
}

// abortOn aborts the communicators after a failed enqueue and returns its
// error: calls already queued on some ranks (a group half issued) would
// otherwise wait for peers forever, and destroying communicators with work
// in flight hangs on NCCL.
func abortOn(c Comm, err error) error {
	c.Abort()
	return err
}

// doing tells the job's watchdog which call this process is in.
func (e *Engine) doing(op Op, size int64) {
	if t, ok := e.peers().(Tracker); ok {
		place := "out-of-place"
		if op.InPlace {
			place = "in-place"
		}
		t.Doing(fmt.Sprintf("%s of %d bytes (%s)", op.Coll.Name, size, place))
	}
}

// wait drains the streams after calls calls of op at size, within -T
// or, on a backend whose calls can stall silently, the watchdog's bound
// from what the run has measured; on a timeout or cancellation it aborts
// the communicators so no rank is left blocked.
func (e *Engine) wait(ctx context.Context, op Op, size int64, calls int) error {
	e.watch.Floor = e.Opts.StallFloor
	limit, stalled := limitFor(e.Comm, &e.watch, e.Opts.Timeout, float64(calls)*e.watch.Predict(size))
	return waitBounded(ctx, e.Comm, op, size, limit, stalled)
}

// estimate is the backend's own estimate of one out-of-place call of op
// in µs, when asked for and the backend has one; 0 otherwise. Every rank
// asks at the same point (after the synchronising call), as the backend
// may connect what the call needs.
func (e *Engine) estimate(op Op) (float64, error) {
	est, ok := e.Comm.(Estimator)
	if !e.Opts.Estimate || !ok || op.InPlace {
		return 0, nil
	}
	us, ok, err := est.Estimate(op)
	if err != nil {
		return 0, abortOn(e.Comm, fmt.Errorf("estimating %s of %d bytes: %w", op.Coll.Name, op.Footprint(), err))
	}
	if !ok {
		return 0, nil
	}
	return us, nil
}

// benchTime measures one placement of one size: a synchronising call, the
// timed loop, the cross-process combination of the time, then the checks.
func (e *Engine) benchTime(ctx context.Context, op Op, sum *Summary) (Placement, error) {
	o := &e.Opts
	size := op.Footprint()
	if e.cut > 0 || e.cutAll {
		return e.cutTime(ctx, op, sum)
	}
	if o.Check > 0 {
		if err := e.fill(op, 99); err != nil {
			return Placement{}, err
		}
	}
	if err := e.launch(ctx, Batch{Op: op, Iters: 1, Agg: 1}, size); err != nil {
		return Placement{}, err
	}
	if err := e.peers().Barrier(ctx); err != nil {
		return Placement{}, err
	}
	estimate, err := e.estimate(op)
	if err != nil {
		return Placement{}, err
	}

	deltaSec, cpuSec, samples, err := e.timedLoop(ctx, op)
	if err != nil {
		return Placement{}, err
	}
	own := deltaSec
	e.watch.Observe(size, deltaSec)
	combined, err := e.combineTime(ctx, []float64{deltaSec, cpuSec})
	if err != nil {
		return Placement{}, err
	}
	deltaSec, cpuSec = combined[0], combined[1]
	if samples, err = e.maxSamples(ctx, samples); err != nil {
		return Placement{}, err
	}

	samples = samples[min(o.IterSkip, len(samples)):]
	p := Placement{Time: deltaSec * 1e6, Iter: Summarize(samples), Estimate: estimate}
	if o.CPUTime {
		p.Time = cpuSec * 1e6
	}
	p.AlgBW, p.BusBW = e.bandwidth(op, deltaSec*1e6)
	return e.settle(ctx, op, p, own*1e6, sum, func() (int64, error) {
		e.rep++
		if err := e.fill(op, uint64(e.rep)); err != nil {
			return 0, err
		}
		if err := e.launch(ctx, Batch{Op: op, Iters: 1, Agg: 1}, size); err != nil {
			return 0, err
		}
		return e.verify(op, uint64(e.rep))
	}, func(seed uint64, each func(local, rank int, out []byte)) error { return e.outputs(ctx, op, seed, each) })
}

// settle ends a placement alike on every process: each process's own
// time (ownUs) gathered into the spread, a barrier, then the checks, each
// counting this process's wrong elements with check (0 from a process that
// calls nothing) and stopping at the first that finds any, then the
// bitwise check, whose calls call makes (nil from a process that calls
// nothing).
func (e *Engine) settle(ctx context.Context, op Op, p Placement, ownUs float64, sum *Summary, check func() (int64, error),
	call func(seed uint64, each func(local, rank int, out []byte)) error) (Placement, error) {
	o := &e.Opts
	var err error
	if p.Procs, p.Groups, err = e.spread(ctx, op, ownUs); err != nil {
		return Placement{}, err
	}
	if err := e.peers().Barrier(ctx); err != nil {
		return Placement{}, err
	}
	if p, err = e.checks(ctx, op, p, sum, check); err != nil || o.Bitwise == 0 {
		return p, err
	}
	// The inputs of a seed of their own, the same for the reference and
	// every repeat.
	e.rep++
	seed := uint64(e.rep)
	var same func(each func(local, rank int, out []byte)) error
	if call != nil {
		same = func(each func(local, rank int, out []byte)) error { return call(seed, each) }
	}
	if p.Bitwise, err = e.bitwise(ctx, op, same); err != nil {
		return p, err
	}
	if !p.Bitwise.Repeated() {
		sum.BitwiseCases++
	}
	return p, nil
}

// checks runs the placement's verification passes (-c), each counting
// this process's wrong elements with check, and stops at the first that
// finds any.
func (e *Engine) checks(ctx context.Context, op Op, p Placement, sum *Summary, check func() (int64, error)) (Placement, error) {
	o := &e.Opts
	p.Checked = o.Check > 0 && (!op.InPlace || op.Coll.VerifyInPlace)
	if !p.Checked {
		return p, nil
	}
	for c := 0; c < o.Check; c++ {
		local, err := check()
		if err != nil {
			return p, err
		}
		caseFailed := 0.0
		if local > 0 {
			caseFailed = 1
		}
		tot, err := e.peers().AllReduce(ctx, []float64{float64(local), caseFailed}, ReduceSum)
		if err != nil {
			return p, err
		}
		p.Wrong = int64(tot[0])
		sum.ErrorCases += int(tot[1])
		if p.Wrong > 0 {
			break
		}
	}
	return p, nil
}

// cutTime is benchTime for a process that Point stopped after its first
// call: it joins every agreement the others make (barriers, the combined
// time as a process that measured nothing, the samples, the spread and the
// checks), calls nothing, and gives its first call's time as its own, so
// that its groups' figures are that call's.
func (e *Engine) cutTime(ctx context.Context, op Op, sum *Summary) (Placement, error) {
	o := &e.Opts
	if err := e.peers().Barrier(ctx); err != nil {
		return Placement{}, err
	}
	var p Placement
	var us float64 // the time the bandwidths come from
	if e.cutAll {
		// No process timed more: the slowest first call is the figure.
		got, err := e.peers().AllReduce(ctx, []float64{e.cut}, ReduceMax)
		if err != nil {
			return Placement{}, err
		}
		us = got[0] * 1e6
		p.Time = us
	} else {
		// The row is the others', as every process reports it.
		combined, err := e.combineTime(ctx, []float64{0, 0})
		if err != nil {
			return Placement{}, err
		}
		us = combined[0] * 1e6
		p.Time = us
		if o.CPUTime {
			p.Time = combined[1] * 1e6
		}
	}
	samples, err := e.maxSamples(ctx, nil)
	if err != nil {
		return Placement{}, err
	}
	p.Iter = Summarize(samples[min(o.IterSkip, len(samples)):])
	p.AlgBW, p.BusBW = e.bandwidth(op, us)
	return e.settle(ctx, op, p, e.cut*1e6, sum, func() (int64, error) { return 0, nil }, nil)
}

// timedLoop is nccl-tests' timed region: iters×agg calls enqueued back to
// back, then the drain; the time per call is the wall clock over both,
// divided by the number of calls. It returns that time, the enqueue-only
// time (-C) and per-iteration samples in µs.
func (e *Engine) timedLoop(ctx context.Context, op Op) (deltaSec, cpuSec float64, samples []float64, err error) {
	o := &e.Opts
	calls := o.Iters * o.Agg
	size := op.Footprint()
	if o.Graph > 0 {
		return e.graphLoop(ctx, op)
	}
	if o.Blocking == Async {
		e.Comm.IterTimes() // drop anything recorded by untimed calls
		record := o.PerIteration(e.Comm.Capabilities())
		deltaSec, cpuSec, err = e.clocked(ctx, op, calls, func() error {
			return e.Comm.Enqueue(Batch{Op: op, Iters: o.Iters, Agg: o.Agg, Record: record})
		})
		if err != nil {
			return 0, 0, nil, err
		}
		return deltaSec, cpuSec, e.iterSamples(), nil
	}

	// Blocking modes: every call is waited for; -z 1 adds a barrier after
	// each call, -z 3 one after each iteration that stays out of the time.
	samples = make([]float64, o.Iters)
	var collOnly time.Duration
	start := time.Now()
	for it := 0; it < o.Iters; it++ {
		t0 := time.Now()
		for a := 0; a < o.Agg; a++ {
			if err := e.launch(ctx, Batch{Op: op, Iters: 1, Agg: 1, FirstIter: it*o.Agg + a}, size); err != nil {
				return 0, 0, nil, err
			}
			if o.Blocking == SyncBarrierPerCall {
				if err := e.peers().Barrier(ctx); err != nil {
					return 0, 0, nil, err
				}
			}
		}
		d := time.Since(t0)
		samples[it] = d.Seconds() * 1e6 / float64(o.Agg)
		if o.Blocking == SyncPerCallBarrierPerIter {
			collOnly += d
			if err := e.peers().Barrier(ctx); err != nil {
				return 0, 0, nil, err
			}
		}
	}
	total := time.Since(start)
	if o.Blocking == SyncPerCallBarrierPerIter {
		total = collOnly
	}
	return total.Seconds() / float64(calls), total.Seconds() / float64(calls), samples, nil
}

// graphLoop is nccl-tests' -G timing: the iters×agg calls are captured
// into one CUDA graph per GPU, and after a barrier the clock runs over
// Graph launches of it plus the drain.
func (e *Engine) graphLoop(ctx context.Context, op Op) (deltaSec, cpuSec float64, samples []float64, err error) {
	o := &e.Opts
	g, ok := e.Comm.(Grapher)
	if !ok {
		return 0, 0, nil, fmt.Errorf("this backend %w", ErrNoGraphs)
	}
	graph, err := g.Capture(Batch{Op: op, Iters: o.Iters, Agg: o.Agg})
	if err != nil {
		return 0, 0, nil, abortOn(e.Comm, fmt.Errorf("capturing %s into a CUDA graph: %w", op.Coll.Name, err))
	}
	defer graph.Close()
	if err := e.peers().Barrier(ctx); err != nil {
		return 0, 0, nil, err
	}
	deltaSec, cpuSec, err = e.clocked(ctx, op, o.Iters*o.Agg*o.Graph, func() error { return graph.Launch(o.Graph) })
	return deltaSec, cpuSec, nil, err
}

// clocked is the timed region of the non-blocking modes: launch, then the
// drain of every stream, on one wall clock. It returns the time per call
// over both, and over the launch alone (-C).
func (e *Engine) clocked(ctx context.Context, op Op, calls int, launch func() error) (deltaSec, cpuSec float64, err error) {
	e.doing(op, op.Footprint())
	start := time.Now()
	if err := launch(); err != nil {
		return 0, 0, abortOn(e.Comm, err)
	}
	cpu := time.Since(start)
	if err := e.wait(ctx, op, op.Footprint(), calls); err != nil {
		return 0, 0, err
	}
	return time.Since(start).Seconds() / float64(calls), cpu.Seconds() / float64(calls), nil
}

// iterSamples turns the recorded iteration times into µs per call, taking
// the slowest local rank of each iteration; nil when nothing was recorded.
func (e *Engine) iterSamples() []float64 {
	per := e.Comm.IterTimes()
	var out []float64
	for _, times := range per {
		if len(times) > 0 && out == nil {
			out = make([]float64, e.Opts.Iters)
		}
		for i, d := range times {
			if i < len(out) {
				out[i] = max(out[i], d.Seconds()*1e6/float64(e.Opts.Agg))
			}
		}
	}
	return out
}

// active says whether any of this process's ranks is measured; in an
// isolated group run the others only keep step.
func (e *Engine) active() bool { return len(e.Comm.Devices()) > 0 }

// combineTime applies -a across the processes that measured something.
func (e *Engine) combineTime(ctx context.Context, v []float64) ([]float64, error) {
	active := e.active() && e.cut == 0
	switch e.Opts.Average {
	case AverageRank0: // rank 0 is always measured
		if e.peers().Proc() != 0 {
			v = make([]float64, len(v))
		}
		return e.peers().AllReduce(ctx, v, ReduceSum)
	case AverageMin:
		if !active {
			v = fillOf(len(v), math.Inf(1))
		}
		return e.peers().AllReduce(ctx, v, ReduceMin)
	case AverageMax:
		if !active {
			v = fillOf(len(v), 0)
		}
		return e.peers().AllReduce(ctx, v, ReduceMax)
	}
	// AverageMean: the processes that measured, each once.
	w := append([]float64{}, v...)
	w = append(w, 1)
	if !active {
		clear(w)
	}
	s, err := e.peers().AllReduce(ctx, w, ReduceSum)
	if err != nil {
		return nil, err
	}
	n := max(s[len(v)], 1)
	for i := range v {
		s[i] /= n
	}
	return s[:len(v)], nil
}

func fillOf(n int, x float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = x
	}
	return v
}

// maxSamples takes the slowest process's time for every iteration. A
// leading flag says who has samples, so processes without any (nothing
// recorded, or nothing measured) still agree on the length.
func (e *Engine) maxSamples(ctx context.Context, samples []float64) ([]float64, error) {
	if e.peers().NProcs() == 1 {
		return samples, nil
	}
	v := make([]float64, 1+e.Opts.Iters)
	if len(samples) > 0 {
		v[0] = 1
		copy(v[1:], samples)
	}
	got, err := e.peers().AllReduce(ctx, v, ReduceMax)
	if err != nil || got[0] == 0 {
		return nil, err
	}
	return got[1:], nil
}

// bandwidth is the algorithm and bus bandwidth of one call taking us µs.
func (e *Engine) bandwidth(op Op, us float64) (algBW, busBW float64) {
	if us <= 0 {
		return 0, 0
	}
	algBW = float64(op.Coll.AlgBytes(op.Counts, op.Type.Size(), e.CommRanks)) / 1e3 / us
	return algBW, algBW * op.Coll.BusFactor(e.CommRanks)
}

// spread gathers every process's own time (us µs) and, when several
// groups run at once, each group's mean over the processes holding its
// ranks. It is skipped in a single-process, single-group run.
func (e *Engine) spread(ctx context.Context, op Op, us float64) ([]float64, []GroupPlacement, error) {
	nprocs, ngroups := e.peers().NProcs(), max(e.Groups, 1)
	if nprocs == 1 && ngroups == 1 {
		return nil, nil, nil
	}
	v := make([]float64, nprocs+2*ngroups)
	v[e.peers().Proc()] = -1
	if e.active() {
		v[e.peers().Proc()] = us
		seen := map[int]bool{}
		for _, d := range e.Comm.Devices() {
			if !seen[d.Group] && d.Group < ngroups {
				seen[d.Group] = true
				v[nprocs+d.Group] += us
				v[nprocs+ngroups+d.Group]++
			}
		}
	}
	got, err := e.peers().AllReduce(ctx, v, ReduceSum)
	if err != nil {
		return nil, nil, err
	}
	var groups []GroupPlacement
	if ngroups > 1 {
		groups = make([]GroupPlacement, ngroups)
		for g := range groups {
			if n := got[nprocs+ngroups+g]; n > 0 {
				t := got[nprocs+g] / n
				a, b := e.bandwidth(op, t)
				groups[g] = GroupPlacement{Time: t, AlgBW: a, BusBW: b}
			}
		}
	}
	return got[:nprocs], groups, nil
}

func (e *Engine) pattern(op Op, seed uint64) Pattern {
	return Pattern{Type: op.Type, Op: op.RedOp, NRanks: e.CommRanks, Seed: seed}
}

func grow(b []byte, n int64) []byte {
	if int64(cap(b)) < n {
		return make([]byte, n)
	}
	return b[:n]
}

// fill writes every local rank's input and clears its receive area.
func (e *Engine) fill(op Op, seed uint64) error { return e.fillPattern(op, e.pattern(op, seed)) }

// fillPattern writes every local rank's input from pat and clears its
// receive area.
func (e *Engine) fillPattern(op Op, pat Pattern) error {
	elt := int64(op.Type.Size())
	sendBytes, recvBytes := op.Counts.Send*elt, op.Counts.Recv*elt
	for l, d := range e.Comm.Devices() {
		rank := d.GroupRank
		sendBuf, sendOff, recvOff := op.Regions(rank)
		area := recvBytes + recvOff
		if op.InPlace {
			area = max(area, sendOff+sendBytes)
		}
		e.scratch.got = grow(e.scratch.got, area)
		clear(e.scratch.got)
		if err := e.Comm.Write(l, RecvBuf, 0, e.scratch.got); err != nil {
			return fmt.Errorf("clearing receive buffer of rank %d: %w", rank, err)
		}
		e.scratch.want = grow(e.scratch.want, sendBytes)
		pat.Fill(rank, 0, e.scratch.want)
		if err := e.Comm.Write(l, sendBuf, sendOff, e.scratch.want); err != nil {
			return fmt.Errorf("writing input of rank %d: %w", rank, err)
		}
	}
	return nil
}

// verify counts the wrong elements over this process's ranks.
func (e *Engine) verify(op Op, seed uint64) (int64, error) {
	pat := e.pattern(op, seed)
	recvBytes := op.Counts.Recv * int64(op.Type.Size())
	var wrong int64
	for l, d := range e.Comm.Devices() {
		rank := d.GroupRank
		e.scratch.want = grow(e.scratch.want, recvBytes)
		if !op.Coll.Expected(pat, op.Counts, rank, op.Root, e.scratch.want) {
			continue
		}
		_, _, recvOff := op.Regions(rank)
		e.scratch.got = grow(e.scratch.got, recvBytes)
		if err := e.Comm.Read(l, RecvBuf, recvOff, e.scratch.got); err != nil {
			return 0, fmt.Errorf("reading result of rank %d: %w", rank, err)
		}
		wrong += pat.CountWrong(e.scratch.got, e.scratch.want)
	}
	return wrong, nil
}
