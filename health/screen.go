package health

import (
	"math"
	"math/rand/v2"
	"slices"
)

// MaxScreenRounds is the most rounds a screening measures, whatever the
// number of members: each member meets that many partners, so a fleet of
// 10,000 nodes is screened in 20 rounds where a full round robin takes
// 9,999.
const MaxScreenRounds = 20

// ScreenFrom is the number of members from which screening is the
// default: below it a full round robin takes no more rounds (n−1 ≤ 20)
// and judges every pair.
const ScreenFrom = MaxScreenRounds + 2

// ConfirmPartners is how many fresh partners a suspect member is measured
// with again before it is named.
const ConfirmPartners = 4

// Screening is rounds rounds of disjoint pairs over n members (at most
// the n−1 of a round robin) in which every member meets a different
// partner each round: rounds of the round-robin tournament over the
// members relabelled at random (seed), so that partners are spread over
// the fleet rather than neighbours.
func Screening(n, rounds int, seed uint64) [][]Pair {
	all := Rounds(n)
	rounds = min(rounds, len(all))
	perm := rand.New(rand.NewPCG(seed, 0x5c4ee9)).Perm(n)
	out := make([][]Pair, rounds)
	for r := range out {
		for _, p := range all[r] {
			a, b := perm[p.A], perm[p.B]
			out[r] = append(out[r], Pair{min(a, b), max(a, b)})
		}
	}
	return out
}

// Suspects is what a screening's verdict asks to look at again.
type Suspects struct {
	Members []int
	Links   []Pair
}

// Confirmation names the pairs that check the suspects once more: each
// suspect member with ConfirmPartners members that are no suspect (the
// next ones after it, so that partners differ from the screening's
// random ones), each suspect link on its own.
func (s Suspects) Confirmation(n int) []Pair {
	suspect := map[int]bool{}
	for _, m := range s.Members {
		suspect[m] = true
	}
	var out []Pair
	for _, m := range s.Members {
		found := 0
		for k := 1; k < n && found < ConfirmPartners; k++ {
			p := (m + k*7919) % n // a stride coprime to most n, away from m's neighbours
			if suspect[p] || p == m {
				continue
			}
			out = append(out, Pair{min(m, p), max(m, p)})
			found++
		}
	}
	return append(out, s.Links...)
}

// Screen judges a screening's pair figures (Judge), then confirms each
// suspect with the figures of its Confirmation pairs (again, in that
// order): a member stays named when the median of its new pairs is slow
// against the screening's typical pair, a link when its new figure is.
// Only what is slow twice is named, so one unlucky figure is not a
// finding, while a slow member or link is slow every time.
func (c Criteria) Screen(n int, figs []PairFigure, noise float64, again func([]Pair) []float64) Verdict {
	v := c.Judge(figs, noise)
	if len(v.Members)+len(v.Links) == 0 {
		return v
	}
	var s Suspects
	for _, m := range v.Members {
		s.Members = append(s.Members, m.Member)
	}
	for _, l := range v.Links {
		s.Links = append(s.Links, l.Pair)
	}
	pairs := s.Confirmation(n)
	values := again(pairs)
	all := make([]float64, len(figs))
	for i, f := range figs {
		all[i] = f.Value
	}
	typical := quantile50(all)
	slowAgain := func(vals []float64) bool {
		x := quantile50(vals)
		drop, short := c.Short(x, typical)
		// One σ of noise on the logarithm per figure, shrunk by the
		// median of several: the confirmation's own z, without the
		// screening's Bonferroni (few figures are judged here).
		sd := noise * math.Sqrt(math.Pi/(2*float64(len(vals))))
		return short && (sd == 0 || -math.Log1p(-drop)/sd >= c.Z)
	}
	var out Verdict
	i := 0
	for _, m := range v.Members {
		var vals []float64
		for ; i < len(pairs) && (pairs[i].A == m.Member || pairs[i].B == m.Member) && len(vals) < ConfirmPartners; i++ {
			vals = append(vals, values[i])
		}
		if len(vals) > 0 && slowAgain(vals) {
			out.Members = append(out.Members, m)
		}
	}
	for _, l := range v.Links {
		k := slices.Index(pairs[i:], l.Pair)
		if k >= 0 && slowAgain(values[i+k:i+k+1]) {
			out.Links = append(out.Links, l)
		}
	}
	return out
}
