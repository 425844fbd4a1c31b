package healthcheck

import (
	"context"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/health"
)

// confirm measures again, after a screening, what its figures make
// suspect (health.Criteria.Suspect): each suspect node with fresh
// partners, each suspect link a few times, in rounds of disjoint pairs
// (health.Suspects.Confirmation). Every process holds the same figures
// and seed, so every process finds the same suspects and lays out the
// same rounds. A full round robin needs no confirmation: it judged every
// pair.
func (c *healthCheck) confirm(ctx context.Context, sendrecv *bench.Collective) error {
	if c.spec.screenRounds(len(c.doc.Nodes)) == 0 {
		return nil
	}
	s := c.spec.Criteria.Suspect(c.fleet())
	c.suspected = &s
	rounds := s.Confirmation()
	if len(rounds) == 0 {
		return nil
	}
	units, figs, err := c.phase(ctx, c.nodePairWaves(rounds), sendrecv, c.spec.PairBytes, "suspects again")
	for i, u := range units {
		c.doc.Confirmation = append(c.doc.Confirmation, document.PairFigure{Node: -1, A: u.pair.A, B: u.pair.B, BusBW: best(figs[i]), Passes: figs[i]})
	}
	return err
}

// fleet is the node pairs' figures as health judges them: the nodes,
// their racks where every node's is known, the noise, the seed.
func (c *healthCheck) fleet() health.Fleet {
	d := c.doc
	f := health.Fleet{N: len(d.Nodes), Figs: pairFigures(d.Inter), Noise: pairNoise(d.Inter), Seed: c.seed}
	if d.Config.Racks >= 2 {
		f.Racks = nodeRacks(d.Nodes)
	}
	return f
}

// interVerdict judges the node pairs: a screening confirmed by its
// measurement again (health.Criteria.Confirm), every pair on its own
// (health.Criteria.JudgeFleet). Racks are judged first in both. A node
// set aside as far below its peers (liveUnits) is not measured again, and
// Confirm judges it on its screening.
func (c *healthCheck) interVerdict() health.Verdict {
	f := c.fleet()
	s := c.suspected
	switch {
	case c.doc.Config.ScreenRounds == 0 || s == nil:
		return c.spec.Criteria.JudgeFleet(f)
	case s.Empty():
		return health.Verdict{Racks: s.Racks}
	}
	again := map[health.Pair][]float64{}
	for _, p := range c.doc.Confirmation {
		pr := health.Pair{A: p.A, B: p.B}
		again[pr] = append(again[pr], p.BusBW)
	}
	for _, round := range s.Confirmation() {
		for _, p := range round {
			if len(again[p]) == 0 && !c.setAside[p.A] && !c.setAside[p.B] {
				// Cut short by the budget: the check is incomplete, and
				// judges what the screening saw.
				return c.spec.Criteria.JudgeFleet(f)
			}
		}
	}
	return c.spec.Criteria.Confirm(f, *s, again)
}

// pairFigures are pair figures as health judges them.
func pairFigures(pairs []document.PairFigure) []health.PairFigure {
	out := make([]health.PairFigure, len(pairs))
	for i, p := range pairs {
		out[i] = health.PairFigure{Pair: health.Pair{A: p.A, B: p.B}, Value: p.BusBW}
	}
	return out
}
