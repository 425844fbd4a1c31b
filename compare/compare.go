// Package compare tells a real change between two runs from noise: it
// matches their rows and tests each pair's per-iteration times with the
// Mann-Whitney rank-sum test. It renders nothing (report does).
package compare

import (
	"fmt"
	"math"
	"sort"

	"github.com/collbench/collbench/document"
)

// Verdicts of a comparison.
const (
	Same       = "~"      // within noise, or below the threshold
	Faster     = "faster" // significantly faster
	Slower     = "slower" // significantly slower, less than the threshold
	Regression = "REGRESSION"
	NoSamples  = "?" // no per-iteration samples to test
)

// Options tune the comparison.
type Options struct {
	Threshold float64 // relative slowdown that counts as a regression, e.g. 0.05
	Alpha     float64 // significance level of the rank-sum test, e.g. 0.05
}

// Comparison is one size of one collective in both runs.
type Comparison struct {
	Key               string  // collective, type, op, root, placement
	Size              int64   // bytes
	BaseTime, NewTime float64 // µs: medians of the per-iteration samples, else the runs' times
	BaseBW, NewBW     float64 // busbw at those times, GB/s
	TimeChange        float64 // new/base − 1
	BWChange          float64
	P                 float64 // two-sided p-value; NaN without samples
	Verdict           string
}

// Runs matches the rows of two runs by collective, type, reduction,
// root, placement and size, and tests each pair's per-iteration times
// with the Mann-Whitney rank-sum test. It also returns, one line each,
// the rows it could not compare: without a time or a size, or in one run
// only.
func Runs(base, next *document.Run, o Options) ([]Comparison, []string) {
	type key struct {
		name string
		size int64
	}
	var left []string
	rows := func(r *document.Run, which string) map[key]sample {
		m := map[key]sample{}
		for _, res := range r.Results {
			for _, pl := range []struct {
				name string
				m    document.Measure
				it   []float64
			}{{"out-of-place", res.OutOfPlace, res.OOPIter.Times}, {"in-place", res.InPlace, res.IPIter.Times}} {
				name := fmt.Sprintf("%s %s %s", r.Collective, res.Type, res.RedOp)
				if res.Root >= 0 {
					name += fmt.Sprintf(" root %d", res.Root)
				}
				name += " " + pl.name
				switch {
				case res.Size <= 0:
					left = append(left, fmt.Sprintf("%s at %d bytes: no size in %s", name, res.Size, which))
					continue
				case !(pl.m.Time > 0):
					if pl.name == "out-of-place" || pl.m.Time != 0 { // in place, 0 is a row measured out of place only
						left = append(left, fmt.Sprintf("%s at %d bytes: no time in %s", name, res.Size, which))
					}
					continue
				}
				m[key{name, res.Size}] = sample{time: pl.m.Time, bw: pl.m.BusBW, times: pl.it}
			}
		}
		return m
	}
	a, b := rows(base, "base"), rows(next, "new")
	var out []Comparison
	for k, x := range a {
		y, ok := b[k]
		if !ok {
			left = append(left, fmt.Sprintf("%s at %d bytes: not in new", k.name, k.size))
			continue
		}
		c := Comparison{Key: k.name, Size: k.size, BaseTime: x.center(), NewTime: y.center(), BaseBW: x.centerBW(), NewBW: y.centerBW(), P: math.NaN()}
		c.TimeChange = c.NewTime/c.BaseTime - 1
		if c.BaseBW > 0 {
			c.BWChange = c.NewBW/c.BaseBW - 1
		}
		c.Verdict = NoSamples
		if len(x.times) >= 2 && len(y.times) >= 2 {
			c.P = RankSumP(x.times, y.times)
			c.Verdict = verdict(c, o)
		}
		out = append(out, c)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			left = append(left, fmt.Sprintf("%s at %d bytes: not in base", k.name, k.size))
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Key != out[j].Key {
			return out[i].Key < out[j].Key
		}
		return out[i].Size < out[j].Size
	})
	sort.Strings(left)
	return out, left
}

type sample struct {
	time, bw float64
	times    []float64
}

// centerBW is the bus bandwidth at the centre: the run's, scaled from its
// time to the centre, so that a change of bandwidth is the change of time
// seen the other way round.
func (s sample) centerBW() float64 {
	if c := s.center(); c > 0 {
		return s.bw * s.time / c
	}
	return s.bw
}

// center is the median of the samples, or the run's time without them.
func (s sample) center() float64 {
	if len(s.times) == 0 {
		return s.time
	}
	v := append([]float64(nil), s.times...)
	sort.Float64s(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

func verdict(c Comparison, o Options) string {
	switch {
	case c.P >= o.Alpha:
		return Same
	case c.TimeChange > o.Threshold:
		return Regression
	case c.TimeChange > 0:
		return Slower
	case c.TimeChange < 0:
		return Faster
	}
	return Same
}

// RankSumP is the two-sided p-value of the Mann-Whitney U test that x and
// y come from the same distribution: exact for samples of up to 20
// without ties, else the normal approximation with the tie correction and
// a continuity correction. Identical samples give 1.
func RankSumP(x, y []float64) float64 {
	n1, n2 := float64(len(x)), float64(len(y))
	type obs struct {
		v     float64
		first bool
	}
	all := make([]obs, 0, len(x)+len(y))
	for _, v := range x {
		all = append(all, obs{v, true})
	}
	for _, v := range y {
		all = append(all, obs{v, false})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].v < all[j].v })
	var r1, ties float64
	for i := 0; i < len(all); {
		j := i
		for j < len(all) && all[j].v == all[i].v {
			j++
		}
		rank := float64(i+j+1) / 2 // ranks i+1 … j share their mean
		for k := i; k < j; k++ {
			if all[k].first {
				r1 += rank
			}
		}
		t := float64(j - i)
		ties += t*t*t - t
		i = j
	}
	n := n1 + n2
	u := r1 - n1*(n1+1)/2
	if ties == 0 && len(x) <= exactLimit && len(y) <= exactLimit {
		return exactRankSumP(u, len(x), len(y))
	}
	mu := n1 * n2 / 2
	sigma := math.Sqrt(n1 * n2 / 12 * ((n + 1) - ties/(n*(n-1))))
	if sigma == 0 {
		return 1
	}
	z := (math.Abs(u-mu) - 0.5) / sigma
	if z < 0 {
		z = 0
	}
	return math.Erfc(z / math.Sqrt2)
}
