package healthcheck

import (
	"context"
	"fmt"
	"slices"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/health"
)

// measure runs the plan, the bisection when it is called for, and records
// every figure in the document.
func (c *healthCheck) measurePlan(ctx context.Context, p healthPlan) error {
	sendrecv, _ := bench.LookupCollective("sendrecv")
	allreduce, _ := bench.LookupCollective("allreduce")
	units, figs, err := c.phase(ctx, p.intra, sendrecv, c.spec.PairBytes, "GPU pairs")
	for i, u := range units {
		c.doc.Intra = append(c.doc.Intra, document.PairFigure{Node: u.node, A: u.pair.A, B: u.pair.B, BusBW: best(figs[i]), Passes: figs[i]})
	}
	if err != nil || c.spent {
		return err
	}
	units, figs, err = c.phase(ctx, p.nodeAR, allreduce, c.spec.ARBytes, "node all-reduce")
	for i, u := range units {
		c.doc.NodeAR = append(c.doc.NodeAR, document.NodeFigure{Node: u.node, BusBW: best(figs[i]), Passes: figs[i]})
	}
	if err != nil || c.spent {
		return err
	}
	units, figs, err = c.phase(ctx, p.inter, sendrecv, c.spec.PairBytes, "node pairs")
	for i, u := range units {
		c.doc.Inter = append(c.doc.Inter, document.PairFigure{Node: -1, A: u.pair.A, B: u.pair.B, BusBW: best(figs[i]), Passes: figs[i]})
	}
	if err != nil || c.spent {
		return err
	}
	if err := c.confirm(ctx, sendrecv); err != nil || c.spent || !p.job {
		return err
	}
	all := make([]int, len(c.doc.Nodes))
	for i := range all {
		all[i] = i
	}
	job, err := c.blocks(ctx, 0, [][]int{all}, allreduce)
	if err != nil || len(job) == 0 {
		return err
	}
	c.doc.Job = &job[0]
	if err := c.arrivals(ctx, allreduce); err != nil || c.spent {
		return err
	}
	if c.spec.Bisect || c.jobSlow() {
		return c.bisect(ctx, all, allreduce)
	}
	return nil
}

// phase measures waves of units, pass after pass (each pass runs every
// wave, so that what differs between passes is time, as it is between
// waves), and returns the units measured and each one's figure per pass.
// When the budget runs out it returns what was measured.
func (c *healthCheck) phase(ctx context.Context, waves [][]unit, coll *bench.Collective, bytes int64, what string) (_ []unit, _ [][]float64, err error) {
	// The waves' communicators still open close with the phase, their
	// time counted as the waves' overhead. After a failure they are
	// aborted first: a destroy waits for every peer, and one may be gone.
	defer func() {
		if err != nil {
			for _, comm := range c.idle {
				comm.Abort()
			}
		}
		began := time.Now()
		if cerr := c.closeIdle(what); cerr != nil && err == nil {
			err = fmt.Errorf("closing the groups of %s: %w", what, cerr)
		}
		c.overhead += time.Since(began)
	}()
	var units []unit
	for _, w := range waves {
		units = append(units, w...)
	}
	figs := make([][]float64, len(units))
	keep := func() ([]unit, [][]float64) {
		var us []unit
		var fs [][]float64
		for i, f := range figs {
			if len(f) > 0 {
				us, fs = append(us, units[i]), append(fs, f)
			}
		}
		return us, fs
	}
	defer func() {
		if c.out != nil && len(waves) > 0 {
			us, _ := keep()
			c.out.Phase(what, attribute.Int("collbench.health.waves", len(waves)), attribute.Int("collbench.health.figures", len(us)))
		}
	}()
	for pass := 0; pass < c.spec.Passes; pass++ {
		k := 0
		for _, wave := range waves {
			live, at := c.liveUnits(wave, what)
			if len(live) == 0 {
				c.skipWave(what)
				k += len(wave)
				continue
			}
			per, err := c.wave(ctx, live, coll, bytes, what)
			if err != nil || per == nil {
				us, fs := keep()
				return us, fs, err
			}
			for j, i := range at {
				figs[k+i] = append(figs[k+i], per[j])
			}
			k += len(wave)
		}
	}
	us, fs := keep()
	return us, fs, nil
}

// jobSlow says whether the job's all-reduce falls short of its
// expectation.
func (c *healthCheck) jobSlow() bool {
	_, short := c.spec.Criteria.Short(c.doc.Job.BusBW, c.spec.Expect["job"])
	return short
}

// bisect measures the halves of block at once, and keeps halving the
// slower while it is slower than the other by the criteria's drop and
// still has two nodes or more on each side.
func (c *healthCheck) bisect(ctx context.Context, block []int, coll *bench.Collective) error {
	for level := 1; len(block) >= 4; level++ {
		a, b := health.Halves(block)
		figs, err := c.blocks(ctx, level, [][]int{a, b}, coll)
		if err != nil || len(figs) < 2 {
			return err
		}
		c.doc.Bisection = append(c.doc.Bisection, figs...)
		slow, fast := figs[0], figs[1]
		if slow.BusBW > fast.BusBW {
			slow, fast = fast, slow
		}
		if _, short := c.spec.Criteria.Short(slow.BusBW, fast.BusBW); !short {
			return nil
		}
		block = slow.Nodes
	}
	return nil
}

// blocks measures an all-reduce over each block of nodes (all at once
// where their rank counts match).
func (c *healthCheck) blocks(ctx context.Context, level int, blocks [][]int, coll *bench.Collective) ([]document.BlockFigure, error) {
	units := make([]unit, len(blocks))
	for i, blk := range blocks {
		units[i] = unit{groups: [][]int{c.blockRanks(blk)}, node: i, span: blk}
	}
	what := "job all-reduce"
	if level > 0 {
		what = fmt.Sprintf("bisection level %d", level)
	}
	measured, figs, err := c.phase(ctx, c.blockWaves(units), coll, c.spec.ARBytes, what)
	if err != nil || c.spent {
		return nil, err
	}
	out := make([]document.BlockFigure, len(blocks))
	for i, blk := range blocks {
		out[i] = document.BlockFigure{Level: level, Nodes: blk}
	}
	for i, u := range measured {
		out[u.node].BusBW, out[u.node].Passes = best(figs[i]), figs[i]
	}
	return out, nil
}

// blockRanks lists the ranks of a block of nodes in ascending order.
func (c *healthCheck) blockRanks(block []int) []int {
	var ranks []int
	for _, n := range block {
		ranks = append(ranks, c.doc.Nodes[n].Ranks...)
	}
	slices.Sort(ranks)
	return ranks
}

// best is the highest of a figure's passes: a slowdown must show in every
// pass to count.
func best(passes []float64) float64 {
	if len(passes) == 0 {
		return 0
	}
	return slices.Max(passes)
}
