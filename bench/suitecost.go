package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/collbench/collbench/bench/numeric"
)

// Estimate is about the least time the wanted curves of a suite take at
// their promised sizes, found before any of them runs, so that a budget
// that cannot hold them is refused at once rather than spent on a profile
// its exports cannot read.
type Estimate struct {
	Wanted  int           // every wanted curve, over groups of any size
	Curves  int           // wanted curves over groups of the whole job, the ones estimated
	Size    int64         // the all-reduce timed
	PerCall time.Duration // its time per call
	Least   time.Duration // those curves' warm-up and fewest iterations at their promised sizes
}

// otherCollShare discounts curves of other collectives than the one timed:
// their bus bandwidth is taken as up to twice the all-reduce's, so that
// the estimate stays below what they really take.
const otherCollShare = 0.5

// EstimateWanted times one all-reduce over the whole job on comm, at the
// largest size a wanted curve of the whole job promises, and estimates
// from it what those curves take: each size's time scaled down from it
// in proportion (never more than a line with a latency gives), each
// collective by its bus factor. Curves over smaller groups are left out
// of the sum: their links may be much faster. Without Wanted, or a
// wanted curve of the whole job, it times nothing and returns zero.
func (s *Suite) EstimateWanted(ctx context.Context, comm Comm) (Estimate, error) {
	var e Estimate
	ar, err := LookupCollective("allreduce")
	if s.Wanted == nil || err != nil {
		return e, err
	}
	type curve struct {
		coll *Collective
		keep int
	}
	var wanted []curve
	keep := 0
	for _, g := range s.Groupings {
		for _, c := range s.Colls {
			if !s.wanted(c, g) || c.Fits(g.Of(s.World)) != nil {
				continue
			}
			e.Wanted++
			if g.Of(s.World) != s.World {
				continue
			}
			k := s.promised(c, g)
			wanted, keep = append(wanted, curve{c, k}), max(keep, k)
		}
	}
	if len(wanted) == 0 {
		return e, nil
	}
	e.Curves, e.Size = len(wanted), s.Sizes[keep-1]
	eng := &Engine{Comm: comm, Peers: s.peers(), CommRanks: s.World, Groups: 1, Opts: Options{Coll: ar,
		Iters: 1, Warmup: 1, Agg: 1, Types: []numeric.DataType{s.Type}, Ops: []numeric.RedOp{s.RedOp}, Root: -1,
		IterTiming: true, Timeout: s.Timeout, StallFloor: s.StallFloor}}
	row, err := eng.Point(ctx, s.Type, s.RedOp, -1, e.Size, PointPlan{})
	if err != nil {
		return e, fmt.Errorf("timing an all-reduce of %s to estimate the budget: %w", FormatSize(e.Size), err)
	}
	e.PerCall = time.Duration(row.OutOfPlace.Time * float64(time.Microsecond))
	calls := float64(max(s.Warmup, 1) + s.Budget.MinIters)
	for _, w := range wanted {
		share := w.coll.BusFactor(s.World) / ar.BusFactor(s.World)
		if w.coll.Name != ar.Name {
			share *= otherCollShare
		}
		for _, size := range s.Sizes[:w.keep] {
			e.Least += time.Duration(calls * share * float64(e.PerCall) * float64(size) / float64(e.Size))
		}
	}
	return e, nil
}
