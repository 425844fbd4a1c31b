package run

import (
	"context"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/health"
)

// confirm measures again, after a screening, what its figures make
// suspect: each suspect node with fresh partners, each suspect link on
// its own (health.Suspects.Confirmation), in rounds of disjoint pairs.
// Every process holds the same figures, so every process finds the same
// suspects and lays out the same rounds. A full round robin needs no
// confirmation: it judged every pair.
func (c *healthCheck) confirm(ctx context.Context, sendrecv *bench.Collective) error {
	n := len(c.doc.Nodes)
	if c.spec.screenRounds(n) == 0 {
		return nil
	}
	pairs := c.suspects().Confirmation(n)
	if len(pairs) == 0 {
		return nil
	}
	units, figs, err := c.phase(ctx, c.nodePairWaves(health.Disjoint(pairs)), sendrecv, c.spec.PairBytes, "suspects again")
	for i, u := range units {
		c.doc.Confirmation = append(c.doc.Confirmation, document.PairFigure{Node: -1, A: u.pair.A, B: u.pair.B, BusBW: best(figs[i]), Passes: figs[i]})
	}
	return err
}

// suspects are the nodes and links the node pairs' figures flag.
func (c *healthCheck) suspects() health.Suspects {
	v := c.spec.Criteria.Judge(pairFigures(c.doc.Inter), pairNoise(c.doc.Inter))
	var s health.Suspects
	for _, m := range v.Members {
		s.Members = append(s.Members, m.Member)
	}
	for _, l := range v.Links {
		s.Links = append(s.Links, l.Pair)
	}
	return s
}

// interVerdict judges the node pairs: a screening confirmed by its
// measurement again (health.Criteria.Screen), a round robin on its own.
func (c *healthCheck) interVerdict() health.Verdict {
	d := c.doc
	figs, noise := pairFigures(d.Inter), pairNoise(d.Inter)
	if d.Config.ScreenRounds == 0 || len(d.Confirmation) == 0 {
		return c.spec.Criteria.Judge(figs, noise)
	}
	again := map[health.Pair]float64{}
	for _, p := range d.Confirmation {
		again[health.Pair{A: p.A, B: p.B}] = p.BusBW
	}
	for _, p := range c.suspects().Confirmation(len(d.Nodes)) {
		if _, ok := again[p]; !ok {
			// Cut short by the budget: the check is incomplete, and
			// judges what the screening saw.
			return c.spec.Criteria.Judge(figs, noise)
		}
	}
	return c.spec.Criteria.Screen(len(d.Nodes), figs, noise, func(pairs []health.Pair) []float64 {
		out := make([]float64, len(pairs))
		for i, p := range pairs {
			out[i] = again[p]
		}
		return out
	})
}

// pairFigures are pair figures as health judges them.
func pairFigures(pairs []document.PairFigure) []health.PairFigure {
	out := make([]health.PairFigure, len(pairs))
	for i, p := range pairs {
		out[i] = health.PairFigure{Pair: health.Pair{A: p.A, B: p.B}, Value: p.BusBW}
	}
	return out
}
