package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/collbench/collbench/bench/numeric"
)

// Estimate is about the least time the promised curves of a suite take
// at their promised sizes, found before any of them runs, so that a
// budget that cannot hold them is refused at once rather than spent on a
// profile that lacks what it promised.
type Estimate struct {
	Promised int           // every curve estimated, over groups of any size
	Curves   int           // those over groups of the whole job, the ones summed
	Size     int64         // the all-reduce timed
	PerCall  time.Duration // its time per call
	Least    time.Duration // those curves' warm-up, fewest iterations and power windows at their promised sizes
}

// otherCollShare discounts curves of other collectives than the one timed:
// their bus bandwidth is taken as up to twice the all-reduce's, so that
// the estimate stays below what they really take.
const otherCollShare = 0.5

// promisedCurve is a curve of the whole job and how many sizes it keeps.
type promisedCurve struct {
	coll *Collective
	keep int
}

// promisedCurves counts the curves an estimate covers (every curve the
// suite can run, or only the wanted ones) and lists those of the whole
// job with the sizes each keeps.
func (s *Suite) promisedCurves(wantedOnly bool) (count int, whole []promisedCurve) {
	for _, g := range s.Groupings {
		for _, c := range s.Colls {
			if wantedOnly && (s.Wanted == nil || !s.wanted(c, g)) || c.Fits(g.Of(s.World)) != nil {
				continue
			}
			count++
			if g.Of(s.World) == s.World {
				whole = append(whole, promisedCurve{c, s.promised(c, g)})
			}
		}
	}
	return count, whole
}

// EstimateSize is the size Estimate times, the largest a curve of the
// whole job promises; 0 when it would time nothing. A caller can size
// communicators for the estimate alone with it.
func (s *Suite) EstimateSize(wantedOnly bool) int64 {
	_, whole := s.promisedCurves(wantedOnly)
	return s.largestPromised(whole)
}

// largestPromised is the largest size any of whole keeps, 0 for none.
func (s *Suite) largestPromised(whole []promisedCurve) int64 {
	keep := 0
	for _, w := range whole {
		keep = max(keep, w.keep)
	}
	if keep == 0 {
		return 0
	}
	return s.Sizes[keep-1]
}

// Estimate times one all-reduce over the whole job on comm, at
// EstimateSize, and estimates from it what the promised curves of the
// whole job take (every curve, or with wantedOnly those Wanted names):
// each size's time scaled down from it in proportion (never more than a
// line with a latency gives), each collective by its bus factor. Curves
// over smaller groups are left out of the sum: their links may be much
// faster. Without a curve of the whole job it times nothing and returns
// zero.
func (s *Suite) Estimate(ctx context.Context, comm Comm, wantedOnly bool) (Estimate, error) {
	var e Estimate
	ar, err := LookupCollective("allreduce")
	if err != nil {
		return e, err
	}
	var whole []promisedCurve
	e.Promised, whole = s.promisedCurves(wantedOnly)
	if e.Size = s.largestPromised(whole); e.Size == 0 {
		return e, nil
	}
	e.Curves = len(whole)
	eng := &Engine{Comm: comm, Peers: s.peers(), CommRanks: s.World, Groups: 1, Opts: Options{Coll: ar,
		Iters: 1, Warmup: 1, Agg: 1, Types: []numeric.DataType{s.Type}, Ops: []numeric.RedOp{s.RedOp}, Root: -1,
		IterTiming: true, Timeout: s.Timeout, StallFloor: s.StallFloor}}
	row, err := eng.Point(ctx, s.Type, s.RedOp, -1, e.Size, PointPlan{})
	if err != nil {
		return e, fmt.Errorf("timing an all-reduce of %s to estimate the budget: %w", FormatSize(e.Size), err)
	}
	e.PerCall = time.Duration(row.OutOfPlace.Time * float64(time.Microsecond))
	calls := float64(max(s.Warmup, 1) + s.Budget.MinIters)
	for _, w := range whole {
		share := w.coll.BusFactor(s.World) / ar.BusFactor(s.World)
		if w.coll.Name != ar.Name {
			share *= otherCollShare
		}
		for _, size := range s.Sizes[:w.keep] {
			e.Least += time.Duration(calls*share*float64(e.PerCall)*float64(size)/float64(e.Size)) + s.Budget.PerPoint
		}
	}
	return e, nil
}
