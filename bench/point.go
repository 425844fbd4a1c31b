package bench

import (
	"context"
	"time"

	"github.com/collbench/collbench/bench/numeric"
)

// PointPlan decides how much of a Point runs. Every process must reach
// the same decisions, so Skip is taken if any process says so and Iters
// is the smallest over the processes.
type PointPlan struct {
	// Skip, asked before any call, leaves the size out at once (nil: never).
	Skip func() bool
	// Iters, given the warm-up's time per call (the slowest process's),
	// returns the timed iterations, or 0 to leave the size out; nil keeps
	// Opts.Iters.
	Iters func(perCall time.Duration) int
	// Cut, given each process's time per call over the first warm-up
	// call (0 for a process that holds no rank of the communicator),
	// names the processes that stop there: a measurement already far
	// below its peers' needs no more calls to be judged, and at its speed
	// they would take the longest. A cut process's one call is its
	// figure (in its group's, with Engine.Groups); the others warm up and
	// time on without it. Every process must name the same processes, and
	// with them every process of their groups. nil: none stops; ignored in
	// the blocking modes that barrier every process in the timed loop.
	Cut func(perCall []time.Duration) []bool
	// Power, with PowerWindow above zero, reads the devices' power draw
	// after the timed loop while the size runs on for PowerWindow
	// (Row.Power), so that the timed figures are those of any other
	// point. Every process must set both alike; nothing is read with
	// Cut.
	Power       PowerMeter
	PowerWindow time.Duration
}

// Point measures one size out of place, as a sweep measures each size,
// for callers that choose sizes and iterations one at a time (collbench
// profile) as plan says. Opts.Warmup calls (at least one) run first. The
// row's InPlace is left empty; a size left out comes back with Iters 0.
func (e *Engine) Point(ctx context.Context, t numeric.DataType, redop numeric.RedOp, root int, size int64, plan PointPlan) (Row, error) {
	op := e.op(size, t, redop, root, false)
	row := Row{Size: op.Footprint(), Count: op.Counts.Param, Type: t, Op: redop, Root: root}
	if plan.Skip != nil {
		skip := 0.0
		if plan.Skip() {
			skip = 1
		}
		any, err := e.peers().AllReduce(ctx, []float64{skip}, ReduceMax)
		if err != nil {
			return row, err
		}
		if any[0] > 0 {
			return row, nil
		}
	}
	if err := e.peers().Barrier(ctx); err != nil {
		return row, err
	}
	if e.Opts.Blocking == SyncBarrierPerCall || e.Opts.Blocking == SyncPerCallBarrierPerIter {
		plan.Cut = nil // their timed loops hold every process at barriers
	}
	warm := max(e.Opts.Warmup, 1)
	first := warm
	if plan.Cut != nil {
		first = 1
	}
	start := time.Now()
	if err := e.launch(ctx, Batch{Op: op, Iters: first, Agg: 1}, size); err != nil {
		return row, err
	}
	perCall := time.Since(start).Seconds() / float64(first)
	cut, allCut := 0.0, false
	if plan.Cut != nil {
		times, err := e.procTimes(ctx, perCall)
		if err != nil {
			return row, err
		}
		cuts := plan.Cut(times)
		allCut = true
		for p, t := range times {
			allCut = allCut && (t == 0 || p < len(cuts) && cuts[p])
		}
		if e.peers().Proc() < len(cuts) && cuts[e.peers().Proc()] {
			cut = perCall
		} else if warm > 1 {
			start = time.Now()
			if err := e.launch(ctx, Batch{Op: op, Iters: warm - 1, Agg: 1}, size); err != nil {
				return row, err
			}
			perCall = time.Since(start).Seconds() / float64(warm-1)
		}
	}
	mine := perCall
	if cut > 0 {
		mine = 0 // the others' iterations are not this process's to plan
	}
	got, err := e.peers().AllReduce(ctx, []float64{mine}, ReduceMax)
	if err != nil {
		return row, err
	}
	n := e.Opts.Iters
	if plan.Iters != nil {
		n = max(plan.Iters(time.Duration(got[0]*float64(time.Second))), 0)
		agreed, err := e.peers().AllReduce(ctx, []float64{float64(n)}, ReduceMin)
		if err != nil {
			return row, err
		}
		if n = int(agreed[0]); n == 0 {
			return row, nil
		}
	}
	// The size is measured by a copy of the engine with its own count, so
	// the caller's options are never rewritten; the copy's verification
	// state comes back, so the next check varies its data as before.
	sized := *e
	sized.Opts.Iters = n
	sized.cut, sized.cutAll = cut, allCut
	var sum Summary
	row.OutOfPlace, err = sized.benchTime(ctx, op, &sum)
	e.rep, e.scratch = sized.rep, sized.scratch
	row.Iters = n
	if err != nil || plan.Power == nil || plan.PowerWindow <= 0 || plan.Cut != nil {
		return row, err
	}
	row.Power, err = e.powerDraw(ctx, op, row.OutOfPlace.Time, plan.Power, plan.PowerWindow)
	return row, err
}

// procTimes gathers every process's time per call (seconds), 0 for a
// process that holds no rank of the communicator.
func (e *Engine) procTimes(ctx context.Context, perCall float64) ([]time.Duration, error) {
	v := make([]float64, e.peers().NProcs())
	if e.active() {
		v[e.peers().Proc()] = perCall
	}
	got, err := e.peers().AllReduce(ctx, v, ReduceSum)
	if err != nil {
		return nil, err
	}
	out := make([]time.Duration, len(got))
	for i, s := range got {
		out[i] = time.Duration(s * float64(time.Second))
	}
	return out, nil
}
