package bench

import (
	"context"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/collbench/collbench/bench/numeric"
)

// OverlapFigures are the overlap experiment's results for one collective,
// size and workload. Times are per call (collective) or per run (compute),
// in µs.
type OverlapFigures struct {
	CommAlone, CommOverlapped       float64
	ComputeAlone, ComputeOverlapped float64
	// CommSlowdown and ComputeSlowdown are overlapped ÷ alone.
	CommSlowdown, ComputeSlowdown float64
	// OverlapCoe is max(1, CommSlowdown, ComputeSlowdown): Galvatron's
	// overlap_coe.
	OverlapCoe float64
	// ProcessorUsage is 1 − 1/ComputeSlowdown: Calculon's share of the
	// processor that communication takes from compute (0 when the
	// compute was not slowed).
	ProcessorUsage float64
	// ExposedComm is the share of the wall time of a run where both sides
	// were given equal work alone, during which communication ran with no
	// compute beside it: max(0, wall − compute busy) ÷ wall.
	ExposedComm float64
}

// DeriveOverlap computes the figures from measured times: the collective
// and the compute alone and each while covered by the other, and the wall
// and compute-busy times of the balanced run.
func DeriveOverlap(commAlone, commOver, compAlone, compOver, wall, compBusy float64) OverlapFigures {
	f := OverlapFigures{CommAlone: commAlone, CommOverlapped: commOver, ComputeAlone: compAlone, ComputeOverlapped: compOver}
	if commAlone > 0 {
		f.CommSlowdown = commOver / commAlone
	}
	if compAlone > 0 {
		f.ComputeSlowdown = compOver / compAlone
	}
	f.OverlapCoe = math.Max(1, math.Max(f.CommSlowdown, f.ComputeSlowdown))
	if f.ComputeSlowdown > 1 { // a slowdown below 1 is noise: no processor taken
		f.ProcessorUsage = 1 - 1/f.ComputeSlowdown
	}
	if wall > 0 {
		f.ExposedComm = math.Max(0, wall-compBusy) / wall
	}
	return f
}

// OverlapOptions configure the experiment.
type OverlapOptions struct {
	Coll  *Collective
	Type  numeric.DataType // the collective's data type
	RedOp numeric.RedOp
	// Target is how long the measured side runs in each overlapped run
	// (Galvatron aims at one second).
	Target time.Duration
	// Cover is how many times longer the covering side runs, so that the
	// measured side is overlapped from its first call to its last
	// (Galvatron uses 4).
	Cover   float64
	Timeout time.Duration // per phase; 0 = none
	// StallFloor turns on the stall watchdog, as Options.StallFloor.
	StallFloor time.Duration
}

// Duration is about how long one Measure runs, for budgets to reserve:
// the estimate (a target per side), repeats times the four measured
// phases (each side alone for a target, then each covered by the other
// running Cover times longer) and the equal-work run: 33 targets with
// Galvatron's cover of 4.
func (o OverlapOptions) Duration() time.Duration {
	cover := max(o.Cover, 1)
	targets := 2 + repeats*(2+2*cover) + 1
	return time.Duration(targets * float64(o.Target))
}

// Overlap runs the experiment on a Comm that is also a Computer.
type Overlap struct {
	Comm      Comm
	Peers     Peers
	CommRanks int // ranks in each communicator
	Opts      OverlapOptions

	watch   StallWatch // the collective's measured calls, to bound waits
	compRun float64    // seconds a compute run took alone, once measured
}

// peers is the job's other processes; none when Peers is not set.
func (x *Overlap) peers() Peers { return orSolo(x.Peers) }

// maxRuns bounds how many calls or runs one phase enqueues.
const maxRuns = 100000

// Measure runs the experiment for one size and workload: the collective
// alone, the compute alone, each covered by the other, and both with
// equal work. Every process derives the same call counts from times
// combined across processes, as collectives need.
func (x *Overlap) Measure(ctx context.Context, size int64, w Workload) (OverlapFigures, error) {
	c, ok := x.Comm.(Computer)
	if !ok {
		return OverlapFigures{}, fmt.Errorf("this backend cannot run compute next to collectives")
	}
	if err := c.SetWorkload(w); err != nil {
		return OverlapFigures{}, err
	}
	elt := x.Opts.Type.Size()
	op := Op{Coll: x.Opts.Coll, Type: x.Opts.Type, RedOp: x.Opts.RedOp, Root: 0,
		Counts: x.Opts.Coll.Counts(size/int64(elt), elt, x.CommRanks)}
	if op.Counts.Empty() {
		return OverlapFigures{}, fmt.Errorf("%d bytes is too small for %s on %d ranks", size, op.Coll.Name, x.CommRanks)
	}
	target := x.Opts.Target.Seconds() * 1e6

	// Warm-up; then the cost of one call and one run, roughly and then
	// over the target, which fixes every phase's counts.
	if _, _, err := x.synced(ctx, c, op, 2, 2); err != nil {
		return OverlapFigures{}, err
	}
	comm1, comp1, err := x.alone(ctx, c, op, 3, 3)
	if err != nil {
		return OverlapFigures{}, err
	}
	x.watch.Observe(op.Footprint(), comm1/1e6)
	x.compRun = comp1 / 1e6
	estComm, estComp, err := x.alone(ctx, c, op, runs(target, comm1), runs(target, comp1))
	if err != nil {
		return OverlapFigures{}, err
	}
	cover := max(x.Opts.Cover, 1)
	nComm, nComp := runs(target, estComm), runs(target, estComp)
	// The collective covered by compute that lasts cover times longer,
	// and the compute covered by collectives that last cover times longer.
	coverComp := runs(cover*float64(nComm)*estComm, estComp)
	coverComm := runs(cover*float64(nComp)*estComp, estComm)

	// The four measured phases run in turn, repeats times over, and each
	// keeps its median: load that comes and goes on a shared machine then
	// falls on the alone and the overlapped phases alike, not on one.
	var phases [4][repeats]float64 // comm alone, compute alone, comm covered, compute covered
	for i := 0; i < repeats; i++ {
		for p, counts := range [4][2]int{{nComm, 0}, {0, nComp}, {nComm, coverComp}, {coverComm, nComp}} {
			comm, comp, err := x.synced(ctx, c, op, counts[0], counts[1])
			if err != nil {
				return OverlapFigures{}, err
			}
			phases[p][i] = comm
			if p%2 == 1 {
				phases[p][i] = comp
			}
		}
	}
	// Equal work on both sides, for the exposed share.
	if err := x.peers().Barrier(ctx); err != nil {
		return OverlapFigures{}, err
	}
	start := time.Now()
	_, busy, err := x.run(ctx, c, op, nComm, nComp)
	if err != nil {
		return OverlapFigures{}, err
	}
	wall := time.Since(start).Seconds() * 1e6
	v, err := x.peers().AllReduce(ctx, []float64{median(phases[0]), median(phases[1]), median(phases[2]), median(phases[3]),
		wall, busy * float64(nComp)}, ReduceMax)
	if err != nil {
		return OverlapFigures{}, err
	}
	return DeriveOverlap(v[0], v[2], v[1], v[3], v[4], v[5]), nil
}

// runs is how many calls of t µs fill target µs, at least 5 (as Galvatron).
func runs(target, t float64) int {
	if t <= 0 {
		return 5
	}
	return int(min(max(math.Ceil(target/t), 5), maxRuns))
}

// alone times nComm calls, then nComp compute runs, each by itself, and
// returns the per-call and per-run times, the slowest process's.
func (x *Overlap) alone(ctx context.Context, c Computer, op Op, nComm, nComp int) (comm, comp float64, err error) {
	if comm, _, err = x.synced(ctx, c, op, nComm, 0); err != nil {
		return 0, 0, err
	}
	if _, comp, err = x.synced(ctx, c, op, 0, nComp); err != nil {
		return 0, 0, err
	}
	v, err := x.peers().AllReduce(ctx, []float64{comm, comp}, ReduceMax)
	if err != nil {
		return 0, 0, err
	}
	return v[0], v[1], nil
}

// repeats is how many times each measured phase runs; the median is kept.
const repeats = 3

func median(v [repeats]float64) float64 {
	sort.Float64s(v[:])
	return v[repeats/2]
}

// synced runs a phase after a barrier, so every process starts it
// together.
func (x *Overlap) synced(ctx context.Context, c Computer, op Op, nComm, nComp int) (comm, comp float64, err error) {
	if err := x.peers().Barrier(ctx); err != nil {
		return 0, 0, err
	}
	return x.run(ctx, c, op, nComm, nComp)
}

// run enqueues nComp compute runs and nComm collective calls at once (the
// compute first, so that a covering compute is already running when the
// first call starts) and returns the time per call and per run measured on
// each stream, averaged over the local ranks.
func (x *Overlap) run(ctx context.Context, c Computer, op Op, nComm, nComp int) (comm, comp float64, err error) {
	x.Comm.IterTimes()
	if nComp > 0 {
		if err := c.EnqueueCompute(nComp); err != nil {
			return 0, 0, abortOn(x.Comm, err)
		}
	}
	if nComm > 0 {
		if err := x.Comm.Enqueue(Batch{Op: op, Iters: nComm, Agg: 1, Record: true}); err != nil {
			return 0, 0, abortOn(x.Comm, err)
		}
	}
	// Side by side, either may slow the other down; the watchdog's
	// factor covers that.
	x.watch.Floor = x.Opts.StallFloor
	limit, stalled := limitFor(x.Comm, &x.watch, x.Opts.Timeout,
		max(float64(nComm)*x.watch.Predict(op.Footprint()), float64(nComp)*x.compRun))
	wctx := ctx
	if limit > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, limit)
		defer cancel()
	}
	if nComm > 0 {
		if err := waitBounded(ctx, x.Comm, op, op.Footprint(), limit, stalled); err != nil {
			return 0, 0, fmt.Errorf("overlapped with compute: %w", err)
		}
		comm = meanPerRun(sumTimes(x.Comm.IterTimes()), nComm)
	}
	if nComp > 0 {
		times, err := c.WaitCompute(wctx)
		if err != nil {
			x.Comm.Abort()
			return 0, 0, fmt.Errorf("compute next to %s: %w", op.Coll.Name, err)
		}
		comp = meanPerRun(times, nComp)
	}
	return comm, comp, nil
}

// sumTimes adds up each local rank's recorded iterations.
func sumTimes(per [][]time.Duration) []time.Duration {
	out := make([]time.Duration, len(per))
	for i, times := range per {
		for _, d := range times {
			out[i] += d
		}
	}
	return out
}

// meanPerRun is the mean over local ranks of each rank's time per run, µs.
func meanPerRun(times []time.Duration, n int) float64 {
	if len(times) == 0 || n == 0 {
		return 0
	}
	var sum float64
	for _, d := range times {
		sum += d.Seconds() * 1e6
	}
	return sum / float64(len(times)) / float64(n)
}
