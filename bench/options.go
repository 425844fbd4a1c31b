package bench

import (
	"fmt"
	"slices"
	"time"

	"github.com/collbench/collbench/bench/numeric"
	"github.com/collbench/collbench/setting"
)

// Blocking is when the host waits for the calls it times (nccl-tests'
// -z); the numbers are nccl-tests'.
type Blocking int

const (
	// Async enqueues an iteration's calls and waits once, at the end.
	Async Blocking = iota
	// SyncBarrierPerCall waits for each call and then meets the other
	// processes at a barrier.
	SyncBarrierPerCall
	// SyncPerCall waits for each call, with no barrier.
	SyncPerCall
	// SyncPerCallBarrierPerIter waits for each call and meets the others
	// after each iteration, outside the time.
	SyncPerCallBarrierPerIter
)

// Average is how the processes' times combine into the one reported
// (nccl-tests' -a); the numbers are nccl-tests'.
type Average int

const (
	AverageRank0 Average = iota // the time of the process holding rank 0
	AverageMean                 // the mean over the processes
	AverageMin                  // the fastest process's
	AverageMax                  // the slowest process's
)

// ErrNoGraphs refuses CUDA graphs on a backend that cannot capture them;
// a caller says which backend ("the host backend " + ErrNoGraphs).
var ErrNoGraphs = setting.Errorf("cannot capture CUDA graphs ({Graph}); run without {Graph}")

// Runs says why a backend of these capabilities cannot run the options,
// nil when it can: the check the engine makes before it starts, for a
// caller to make before it opens its outputs.
func (o Options) Runs(caps Capabilities) error {
	if o.Graph > 0 && !caps.Graphs {
		return ErrNoGraphs
	}
	return nil
}

// Options are the engine's settings for one run, mirroring nccl-tests' flags.
type Options struct {
	Coll   *Collective
	Sweep  Sweep
	Iters  int // -n
	Warmup int // -w
	Agg    int // -m
	Cycles int // -N, 0 = until interrupted
	Check  int // -c
	// Bitwise is how many calls after a reference call each placement's
	// output is compared with it bit for bit (nccl-tests' -B); 0 none, at
	// most MaxBitwise.
	Bitwise int
	// OrderInputs gives the bitwise check's calls inputs that show the
	// order of a reduction (values of many magnitudes, the same for an
	// element at every size) instead of the checked inputs, which reduce
	// exactly in any order and so repeat whatever the order.
	OrderInputs bool
	// Reference, when set, hears every local rank's output of each
	// bitwise reference call: a caller keeps them to compare with
	// another run's.
	Reference func(Kept) error
	Types     []numeric.DataType
	Ops       []numeric.RedOp // ignored by collectives that do not reduce
	Root      int             // -r, -1 = every root in turn
	Blocking  Blocking        // -z
	Graph     int             // -G, CUDA graph launches (0 = off)
	Average   Average         // -a
	CPUTime   bool            // -C
	// Skip are the type and operator pairs left out of Types × Ops: the
	// backend cannot run them and they came from "all".
	Skip []TypeOp
	// IterTiming (-I) times every iteration on the device even where that
	// costs enqueue time; backends with free timestamps always do.
	IterTiming bool
	IterSkip   int           // -K: leading iterations left out of the statistics
	Unalign    int           // -u: elements by which every call's data is moved into its buffers
	Timeout    time.Duration // -T, 0 = none
	// StallFloor turns on the stall watchdog: on a backend whose calls
	// can wait for ever without an error (a Staller), every wait is
	// bounded by what the run has measured, never below this floor,
	// and within Timeout when that is set; 0 leaves waits to Timeout.
	StallFloor time.Duration
	// Estimate asks the backend, where it is an Estimator, for its own
	// estimate of every out-of-place call before timing it (NCCL's
	// model); the row carries it beside the measured time.
	Estimate bool
}

// MaxBitwise bounds the bitwise check's repeats: a million calls of every
// size already take minutes at the smallest; more is a typo, which would
// otherwise run silently for hours.
const MaxBitwise = 1 << 20

// Validate checks the options against communicators of nranks ranks and
// returns them as the engine runs them (nccl-tests' adjustments applied);
// o itself is left as it was.
func (o Options) Validate(nranks int) (Options, error) {
	if o.Coll == nil {
		return o, fmt.Errorf("no collective given")
	}
	if err := o.Sweep.Validate(); err != nil {
		return o, err
	}
	switch {
	case o.Iters < 1:
		return o, setting.Errorf("iterations ({Iters}) must be at least 1 (got %d)", o.Iters)
	case o.Warmup < 0:
		return o, setting.Errorf("warmup iterations ({Warmup}) cannot be negative (got %d)", o.Warmup)
	case o.Agg < 1:
		return o, setting.Errorf("aggregated iterations ({Agg}) must be at least 1 (got %d)", o.Agg)
	case o.Cycles < 0:
		return o, setting.Errorf("run cycles ({Cycles}) cannot be negative (got %d)", o.Cycles)
	case o.Check < 0:
		return o, setting.Errorf("check passes ({Check}) cannot be negative (got %d)", o.Check)
	case o.Bitwise < 0:
		return o, setting.Errorf("bitwise repeats ({Bitwise}) cannot be negative (got %d)", o.Bitwise)
	case o.Bitwise > MaxBitwise:
		return o, setting.Errorf("bitwise repeats ({Bitwise}) must be at most %d (got %d)", MaxBitwise, o.Bitwise)
	case o.Blocking < Async || o.Blocking > SyncPerCallBarrierPerIter:
		return o, setting.Errorf("blocking mode ({Blocking}) must be 0, 1, 2 or 3 (got %d)", o.Blocking)
	case o.Graph < 0:
		return o, setting.Errorf("graph launches ({Graph}) cannot be negative (got %d)", o.Graph)
	case o.Average < AverageRank0 || o.Average > AverageMax:
		return o, setting.Errorf("average mode ({Average}) must be 0 (rank 0), 1 (mean), 2 (min) or 3 (max) (got %d)", o.Average)
	case o.Unalign < 0:
		return o, setting.Errorf("unalign ({Unalign}) cannot be negative (got %d)", o.Unalign)
	case o.Timeout < 0:
		return o, setting.Errorf("timeout ({Timeout}) cannot be negative")
	case o.StallFloor < 0:
		return o, fmt.Errorf("the stall watchdog's floor cannot be negative")
	case len(o.Types) == 0:
		return o, fmt.Errorf("no data type given")
	case o.Coll.Reduces && len(o.Ops) == 0:
		return o, fmt.Errorf("no reduction op given")
	}
	if o.Coll.Rooted && (o.Root < -1 || o.Root >= nranks) {
		return o, fmt.Errorf("root %d is out of range for %d ranks (use 0..%d, or -1 for every root)", o.Root, nranks, nranks-1)
	}
	if err := o.Coll.Fits(nranks); err != nil {
		return o, err
	}
	if o.Coll.Traffic != nil {
		if err := o.Coll.Traffic.check(nranks, o.Sweep); err != nil {
			return o, err
		}
	}
	if o.Graph > 0 && o.Blocking == SyncPerCallBarrierPerIter {
		o.Blocking = Async // nccl-tests resets -z 3 under -G
	}
	return o, nil
}

// PerIteration says whether timed batches yield per-iteration samples on a
// backend with capabilities c: never under -G; always in the blocking modes
// (the host clock times each call) and where timestamps are free;
// otherwise only with -I.
func (o *Options) PerIteration(c Capabilities) bool {
	return o.Graph == 0 && (o.Blocking != Async || o.IterTiming || c.Timestamps)
}

// PlannedRows is how many rows a run of these options over communicators
// of nranks ranks hands over: one per data type, reduction, root and size.
func (o Options) PlannedRows(nranks int) int {
	pairs := 0
	for _, t := range o.Types {
		for _, op := range o.runOps() {
			if !o.skips(t, op) {
				pairs++
			}
		}
	}
	return pairs * len(o.runRoots(nranks)) * len(o.Sweep.Sizes())
}

func (o *Options) runOps() []numeric.RedOp {
	if !o.Coll.Reduces {
		return []numeric.RedOp{numeric.NoOp}
	}
	return o.Ops
}

// skips says whether the pair of t and op is left out.
func (o *Options) skips(t numeric.DataType, op numeric.RedOp) bool {
	return slices.Contains(o.Skip, TypeOp{t, op})
}

func (o *Options) runRoots(nranks int) []int {
	switch {
	case !o.Coll.Rooted:
		return []int{-1}
	case o.Root >= 0:
		return []int{o.Root}
	}
	roots := make([]int, nranks)
	for i := range roots {
		roots[i] = i
	}
	return roots
}
