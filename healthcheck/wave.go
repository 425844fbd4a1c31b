package healthcheck

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/numeric"
)

// idleWaves is how many waves' communicators wait, idle, to be closed
// together where the backend can (bench.JointCloser): on GPUs closing
// them costs about half a second whether one wave's or eight are closed.
// Idle communicators hold some device memory each, so they are not kept
// for the whole check.
const idleWaves = 8

// closeIdle closes the waves' communicators waiting to be closed, in one
// go, and adds the time to phase what's.
func (c *healthCheck) closeIdle(what string) error {
	if len(c.idle) == 0 {
		return nil
	}
	began := time.Now()
	err := bench.CloseAll(c.idle)
	c.idle = nil
	c.closed(what, time.Since(began))
	return err
}

// errBudget leaves the rest of a check out.
var errBudget = errors.New("the time budget is spent")

// wave measures one wave's units at once, one pass, and returns each
// unit's bus bandwidth: the slowest of its groups, as a node pair is only
// as fast as its slowest pair of ranks. It returns nil (and records why)
// when the budget is spent.
func (c *healthCheck) wave(ctx context.Context, wave []unit, coll *bench.Collective, bytes int64, what string) ([]float64, error) {
	began := time.Now()
	if spent, err := c.waveFits(ctx, coll, what); spent || err != nil {
		return nil, err
	}
	sets, owner := setsOf(wave)
	comm, closeWave, err := c.waveComm(ctx, sets, bytes, what)
	if err != nil {
		return nil, err
	}
	defer closeWave()
	row, err := c.timeWave(ctx, comm, wave, len(sets), len(sets[0]), coll, bytes, what)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if err := closeWave(); err != nil {
		return nil, fmt.Errorf("closing the groups of %s: %w", what, err)
	}
	c.spend(coll, row, time.Since(began))
	per := unitFigures(len(wave), owner, row)
	if err := measured(what, wave, per); err != nil {
		return nil, err
	}
	c.stepDone(what)
	return per, nil
}

// setsOf is a wave's groups of ranks, every unit's in turn, and the unit
// each belongs to: every process plans the same sets in the same order.
func setsOf(wave []unit) (sets [][]int, owner []int) {
	for i, u := range wave {
		for _, g := range u.groups {
			sets = append(sets, g)
			owner = append(owner, i)
		}
	}
	return sets, owner
}

// waveFits says, agreed by every process, whether the budget is spent
// before the wave (what is left must hold the warm-up and the fewest
// iterations at the last time per call of this collective, and what the
// waves so far took beyond their calls, for each wave to come); then the
// rest is recorded as left out. A GPU of the job short of memory closes
// the waves' idle communicators first.
func (c *healthCheck) waveFits(ctx context.Context, coll *bench.Collective, what string) (spent bool, err error) {
	if c.measured > 0 {
		c.budget.Reserve = c.overhead / time.Duration(c.measured) * time.Duration(max(c.left-1, 0))
	}
	over := c.budget.Spent()
	if last := c.perCall[coll.Name]; last > 0 && c.budget.Limit > 0 {
		over = over || last*time.Duration(c.spec.Warmup+c.budget.MinIters) > c.budget.Remaining()
	}
	agreed, err := c.agree(ctx, over, c.memoryLow())
	if err != nil {
		return false, err
	}
	if agreed[1] {
		if err := c.closeIdle(what); err != nil {
			return false, fmt.Errorf("closing the groups of %s: %w", what, err)
		}
	}
	if agreed[0] {
		c.spent = true
		c.doc.Skipped = append(c.doc.Skipped, what+" (from this wave on) and what follows: "+errBudget.Error())
	}
	return agreed[0], nil
}

// waveComm is the communicators a wave runs on: the session's own when
// its one set is the whole job, else the sets split from the session's
// (Regroup), timed as the phase's set-up. closeWave hands a split wave's
// communicators over to be closed, once: with later waves' where the
// backend closes several together (on GPUs NCCL's teardown takes longer
// than the set-up), else now.
func (c *healthCheck) waveComm(ctx context.Context, sets [][]int, bytes int64, what string) (comm bench.Comm, closeWave func() error, err error) {
	world := c.j.World()
	if len(sets) == 1 && len(sets[0]) == world {
		return c.sess.Comm, func() error { return nil }, nil
	}
	g := bench.Grouping{Sets: sets}
	if err := g.Validate(world); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", what, err)
	}
	opening := time.Now()
	opened, err := c.sess.Regroup(ctx, g, bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("opening the groups of %s: %w", what, err)
	}
	c.opened(what, time.Since(opening))
	closed := false
	return opened, func() error {
		if closed {
			return nil
		}
		closed = true
		c.idle = append(c.idle, opened)
		if _, joint := opened.(bench.JointCloser); joint && len(c.idle) < idleWaves {
			return nil
		}
		return c.closeIdle(what)
	}, nil
}

// timeWave times one call size of coll on every set of the wave at once,
// nsets sets of size ranks each, within the budget's iterations; a unit
// far below its peers after the first call is cut short (cut).
func (c *healthCheck) timeWave(ctx context.Context, comm bench.Comm, wave []unit, nsets, size int, coll *bench.Collective, bytes int64, what string) (bench.Row, error) {
	op := numeric.NoOp
	if coll.Reduces {
		op = numeric.Sum
	}
	opts, err := bench.Options{Coll: coll, Sweep: bench.Sweep{Min: bytes, Max: bytes, Factor: 2}, Iters: c.spec.Iters,
		Warmup: c.spec.Warmup, Agg: 1, Types: []numeric.DataType{c.spec.Type}, Ops: []numeric.RedOp{op}, Root: -1,
		Average: 3, Timeout: c.j.Limits.Collective, StallFloor: c.j.Limits.Watchdog}.Validate(size)
	if err != nil {
		return bench.Row{}, err
	}
	eng := &bench.Engine{Comm: comm, Peers: c.j.Peers(), Opts: opts, CommRanks: size, Groups: nsets}
	return eng.Point(ctx, c.spec.Type, op, -1, bytes, bench.PointPlan{Iters: c.budget.Iters,
		Cut: func(per []time.Duration) []bool { return c.cut(wave, what, bytes, per) }})
}

// spend counts a wave measured against the budget: its time per call
// (which tells whether the next wave of this collective fits) and what
// it took beyond its timed calls.
func (c *healthCheck) spend(coll *bench.Collective, row bench.Row, took time.Duration) {
	c.budget.Done(1)
	c.perCall[coll.Name] = time.Duration(row.OutOfPlace.Time * float64(time.Microsecond))
	c.overhead += max(took-c.perCall[coll.Name]*time.Duration(row.Iters), 0)
	c.measured++
	c.left = max(c.left-1, 0)
}

// unitFigures is each of n units' figure from the wave's row: the
// slowest of its sets' bus bandwidths (each set's own where the backend
// times the groups apart, else the row's).
func unitFigures(n int, owner []int, row bench.Row) []float64 {
	per := make([]float64, n)
	for i := range per {
		per[i] = -1
	}
	groups := row.OutOfPlace.Groups
	for s, u := range owner {
		bw := row.OutOfPlace.BusBW
		if len(groups) == len(owner) {
			bw = groups[s].BusBW
		}
		if per[u] < 0 || bw < per[u] {
			per[u] = bw
		}
	}
	return per
}

// stepDone counts a wave done and hands its name over.
func (c *healthCheck) stepDone(what string) {
	c.out.Hand(what, what)
}

// measured refuses a wave whose figures include a zero: a timed call
// always moves bytes at some speed, so 0 GB/s means the backend timed
// nothing (communicators without devices), and a level of zeros has no
// outlier to flag, which would read as healthy.
func measured(what string, wave []unit, per []float64) error {
	for i, bw := range per {
		if bw <= 0 || math.IsNaN(bw) || math.IsInf(bw, 0) {
			return fmt.Errorf("%s: ranks %v measured %v GB/s: the backend timed nothing", what, wave[i].groups, bw)
		}
	}
	return nil
}

// agree makes a decision every process takes alike: true if any says so.
func (c *healthCheck) agree(ctx context.Context, yes ...bool) ([]bool, error) {
	v := make([]float64, len(yes))
	for i, y := range yes {
		if y {
			v[i] = 1
		}
	}
	got, err := c.j.Peers().AllReduce(ctx, v, bench.ReduceMax)
	if err != nil {
		return nil, err
	}
	out := make([]bool, len(got))
	for i, g := range got {
		out[i] = g > 0
	}
	return out, nil
}

// idleFloor is the free memory below which a GPU keeps no idle waves'
// communicators: on an H100 four ranks shared, one round's pairs held
// 0.9 GiB of it after a send/receive, 2.4 GiB after an all-reduce as well
// (docs/health.md).
const idleFloor = 4 << 30

// memoryLow says whether idle communicators are waiting and a GPU of this
// process has less than idleFloor free.
func (c *healthCheck) memoryLow() bool {
	if len(c.idle) == 0 {
		return false
	}
	r, ok := c.sess.Comm.(bench.MemoryReporter)
	if !ok {
		return false
	}
	u, err := r.MemoryUse()
	return err == nil && u.Free < idleFloor
}
