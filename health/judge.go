package health

import (
	"math"
	"slices"

	"github.com/montanaflynn/stats"
)

// Criteria say when a bandwidth is slow. Against its peers it must lie at
// least MinDrop below their median and at least Z robust standard
// deviations below it (of the logarithms: 1.4826·MAD, the modified
// z-score of Iglewicz and Hoaglin): the first ignores differences too
// small to matter, the second differences the peers' own scatter explains.
// Against an expectation MinDrop applies, and Z of the figures' own noise
// where it is known.
type Criteria struct {
	MinDrop float64 // fraction, e.g. 0.10
	Z       float64 // e.g. 3.5
}

// DefaultCriteria flag a figure 10 % or more below its peers' median and
// 3.5 robust standard deviations out (docs/health.md says why).
var DefaultCriteria = Criteria{MinDrop: 0.10, Z: 3.5}

// madScale turns a median absolute deviation into a standard deviation
// for normally distributed data.
const madScale = 1.4826

// Outlier is one figure found slow.
type Outlier struct {
	Index  int     // into the values judged
	Value  float64 // the figure
	Median float64 // its peers' median (or the expectation)
	Drop   float64 // (Median − Value) / Median
	Z      float64 // robust standard deviations below the median; +Inf when the peers agree exactly
}

// MedianMAD returns the median of values and their median absolute
// deviation from it; NaN for none.
func MedianMAD(values []float64) (median, mad float64) {
	median = quantile50(values)
	mad, err := stats.MedianAbsoluteDeviationPopulation(values)
	if err != nil {
		mad = math.NaN()
	}
	return median, mad
}

// quantile50 is the median of values (the mean of the middle two for an
// even count), NaN for none; values are left as they are.
func quantile50(values []float64) float64 {
	m, err := stats.Median(values)
	if err != nil {
		return math.NaN()
	}
	return m
}

// Below returns the values that are slow against the others: with fewer
// than three there is no telling which is the odd one, and none is. noise
// is the relative standard deviation of one figure measured again (see
// Noise; about the deviation of its logarithm), a floor (with the
// median's own share of it) under the peers' scatter: a few peers that
// happen to agree closely say little about how much a figure varies.
func (c Criteria) Below(values []float64, noise float64) []Outlier {
	if len(values) < 3 {
		return nil
	}
	// Bandwidth varies by factors, so the scatter is taken of logarithms:
	// a figure at a twentieth of its peers is far out however noisy they
	// are, which a linear scale (where no drop exceeds 100 %) would hide.
	logs := make([]float64, len(values))
	for i, v := range values {
		if !(v > 0) || math.IsInf(v, 0) {
			return nil
		}
		logs[i] = math.Log(v)
	}
	mid, mad := MedianMAD(logs)
	median := math.Exp(mid)
	// The median is measured too: of n figures with noise σ it varies by
	// about σ·sqrt(π/2n), so a figure's distance from it by
	// σ·sqrt(1+π/2n). With few peers this matters: among three members
	// two score with the same pair, their MAD is 0, and the median is one
	// figure as noisy as the one judged.
	sd := max(madScale*mad, noise*math.Sqrt(1+math.Pi/(2*float64(len(values)))))
	zmin := c.ZFor(len(values))
	var out []Outlier
	for i, v := range values {
		drop := (median - v) / median
		if drop < c.MinDrop {
			continue
		}
		z := math.Inf(1)
		if sd > 0 {
			z = (mid - logs[i]) / sd
		}
		if z >= zmin {
			out = append(out, Outlier{Index: i, Value: v, Median: median, Drop: drop, Z: z})
		}
	}
	return out
}

// familyRisk is the chance, for normal noise, that any of the figures
// judged together is flagged while healthy.
const familyRisk = 0.01

// ZFor is the threshold for n figures judged together: Z, or more where
// so many figures are judged that one of them would otherwise lie beyond
// Z by chance alone (Bonferroni: the one-sided normal quantile of
// 1 − 1 %/n; 4.4 σ for the 2,016 pairs of 64 nodes).
func (c Criteria) ZFor(n int) float64 {
	if n < 1 {
		return c.Z
	}
	return max(c.Z, math.Sqrt2*math.Erfinv(1-2*familyRisk/float64(n)))
}

// Short says whether value falls short of an expectation (> 0) by
// MinDrop or more, and by how much.
func (c Criteria) Short(value, expect float64) (drop float64, short bool) {
	if expect <= 0 {
		return 0, false
	}
	drop = (expect - value) / expect
	return drop, drop >= c.MinDrop
}

// minLinkPeers is the fewest pairs that links are judged among: three or
// four pairs give a MAD that is mostly chance (two of three that happen
// to agree make the third look far out), and a slow member's pairs are
// set aside first, so four nodes with one slow leave only three.
const minLinkPeers = 5

// PairFigure is the bandwidth measured between a pair of members.
type PairFigure struct {
	Pair
	Value float64
}

// MemberOutlier is a member slow with (most of) its partners.
type MemberOutlier struct {
	Member   int
	Partners int // pairs it was measured in
	Outlier      // Value is the median of its pairs, judged against the other members'
}

// PairOutlier is a pair slow where neither member is.
type PairOutlier struct {
	Pair
	Outlier // Index is into the figures given
}

// Verdict is what a matrix of pair figures says: slow members, slow
// links and, where racks are known, racks whose uplinks are slow.
type Verdict struct {
	Members []MemberOutlier
	Links   []PairOutlier
	Racks   []RackOutlier
}

// Judge tells a slow member from a slow link. A member's score is the
// median of its pairs but its slowest one: a member slow with every
// partner scores low, while one slow link leaves the scores of both its
// ends alone (it takes two partners or more to score a member). Members
// whose score is an outlier among the scores are slow; the pairs that touch no slow member
// are then judged among themselves (when there are minLinkPeers of them),
// and those found slow are slow links.
func (c Criteria) Judge(figs []PairFigure, noise float64) Verdict {
	byMember := map[int][]float64{}
	for _, f := range figs {
		byMember[f.A] = append(byMember[f.A], f.Value)
		byMember[f.B] = append(byMember[f.B], f.Value)
	}
	var members []int
	for m, vals := range byMember {
		if len(vals) >= 2 {
			members = append(members, m)
		}
	}
	slices.Sort(members)
	scores := make([]float64, len(members))
	for k, m := range members {
		vals := slices.Clone(byMember[m])
		slices.Sort(vals)
		scores[k] = quantile50(vals[1:]) // all but its slowest pair
	}
	var v Verdict
	slow := map[int]bool{}
	for _, o := range c.Below(scores, noise) {
		m := members[o.Index]
		slow[m] = true
		o.Index = m
		v.Members = append(v.Members, MemberOutlier{Member: m, Partners: len(byMember[m]), Outlier: o})
	}
	var rest []int
	var vals []float64
	for i, f := range figs {
		if !slow[f.A] && !slow[f.B] {
			rest = append(rest, i)
			vals = append(vals, f.Value)
		}
	}
	if len(vals) < minLinkPeers {
		return v
	}
	for _, o := range c.Below(vals, noise) {
		i := rest[o.Index]
		o.Index = i
		v.Links = append(v.Links, PairOutlier{Pair: figs[i].Pair, Outlier: o})
	}
	return v
}

// Noise estimates the relative standard deviation of one figure from
// figures measured several times each: the median over the figures of
// their passes' standard deviation over their mean, scaled so that for
// normal noise it estimates σ (for two passes the sample deviation is
// half-normal, whose median is 0.6745σ). Figures with one pass say
// nothing; without any the noise is 0.
func Noise(passes [][]float64) float64 {
	var rel []float64
	for _, p := range passes {
		if len(p) < 2 {
			continue
		}
		// Both only fail on fewer than two values, excluded above.
		mean, _ := stats.Mean(p)
		sd, _ := stats.StandardDeviationSample(p)
		if mean > 0 {
			rel = append(rel, sd/mean)
		}
	}
	if len(rel) == 0 {
		return 0
	}
	return quantile50(rel) / 0.6745
}
