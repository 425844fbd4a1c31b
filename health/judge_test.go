package health

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestMedianMAD(t *testing.T) {
	m, mad := MedianMAD([]float64{1, 2, 3, 4, 100})
	if m != 3 || mad != 1 {
		t.Errorf("MedianMAD = %g, %g; want 3, 1", m, mad)
	}
	m, mad = MedianMAD([]float64{4, 1, 3, 2})
	if m != 2.5 || mad != 1 {
		t.Errorf("MedianMAD = %g, %g; want 2.5, 1", m, mad)
	}
}

func TestBelow(t *testing.T) {
	c := DefaultCriteria
	cases := []struct {
		name   string
		values []float64
		want   []int
	}{
		{"one slow", []float64{10, 10.1, 9.9, 10.05, 6}, []int{4}},
		{"within the scatter", []float64{10, 14, 6, 12, 8, 7.5}, nil},
		{"too small to matter", []float64{10, 10, 10, 9.5}, nil},
		{"exact peers", []float64{10, 10, 10, 8}, []int{3}},
		{"two are no peers", []float64{10, 2}, nil},
		{"faster is never slow", []float64{10, 10, 10, 20}, nil},
	}
	for _, tc := range cases {
		got := c.Below(tc.values, 0)
		if len(got) != len(tc.want) {
			t.Errorf("%s: %+v, want indexes %v", tc.name, got, tc.want)
			continue
		}
		for i, o := range got {
			if o.Index != tc.want[i] {
				t.Errorf("%s: flagged %d, want %d", tc.name, o.Index, tc.want[i])
			}
		}
	}
	if got := c.Below([]float64{10, 10, 10, 8}, 0); !math.IsInf(got[0].Z, 1) || math.Abs(got[0].Drop-0.2) > 1e-12 {
		t.Errorf("exact peers: %+v, want drop 0.2 and an infinite z", got[0])
	}
}

// allPairs is the figures of n members, every pair at base bandwidth with
// noise, times slow(pair).
func allPairs(n int, rng *rand.Rand, noise float64, slow func(Pair) float64) []PairFigure {
	var figs []PairFigure
	for _, round := range Rounds(n) {
		for _, p := range round {
			figs = append(figs, PairFigure{Pair: p, Value: 10 * (1 + noise*rng.NormFloat64()) * slow(p)})
		}
	}
	return figs
}

// A member slow with every partner is a slow member and not a set of
// slow links; one slow link is a link and neither of its ends; a healthy
// matrix flags nothing. Noise of 1 % as on a quiet fabric, 20 % slowdowns
// (50 % with three members, where a member's own pairs are half of its
// partners' and its slowdown shows at about half its size).
func TestJudge(t *testing.T) {
	c := DefaultCriteria
	for _, n := range []int{3, 4, 5, 8, 16} {
		factor := 0.8
		if n == 3 {
			factor = 0.5
		}
		rng := rand.New(rand.NewPCG(uint64(n), 1))
		for trial := 0; trial < 50; trial++ {
			v := c.Judge(allPairs(n, rng, 0.01, func(Pair) float64 { return 1 }), 0)
			if len(v.Members)+len(v.Links) != 0 {
				t.Fatalf("n=%d healthy: flagged %+v", n, v)
			}
			bad := rng.IntN(n)
			v = c.Judge(allPairs(n, rng, 0.01, func(p Pair) float64 {
				if p.A == bad || p.B == bad {
					return factor
				}
				return 1
			}), 0)
			if len(v.Members) != 1 || v.Members[0].Member != bad || len(v.Links) != 0 {
				t.Fatalf("n=%d member %d slow: %+v", n, bad, v)
			}
			if n == 3 {
				continue // three pairs: the MAD is the two healthy pairs' own difference, too few to judge a link by
			}
			link := Rounds(n)[rng.IntN(len(Rounds(n)))][0]
			v = c.Judge(allPairs(n, rng, 0.01, func(p Pair) float64 {
				if p == link {
					return 0.8
				}
				return 1
			}), 0)
			if len(v.Members) != 0 || len(v.Links) != 1 || v.Links[0].Pair != link {
				t.Fatalf("n=%d link %v slow: %+v", n, link, v)
			}
		}
	}
}

func TestShort(t *testing.T) {
	c := DefaultCriteria
	if d, short := c.Short(8, 10); !short || math.Abs(d-0.2) > 1e-12 {
		t.Errorf("Short(8, 10) = %g, %v", d, short)
	}
	if _, short := c.Short(9.5, 10); short {
		t.Error("5 % short flagged at a 10 % threshold")
	}
	if _, short := c.Short(1, 0); short {
		t.Error("no expectation flagged")
	}
}

// A measurement's own repeatability is a floor under the peers' scatter:
// three peers that agree closely do not make a 20 % difference
// significant when the same figure varies by 15 % from pass to pass.
func TestNoiseFloor(t *testing.T) {
	c := DefaultCriteria
	vals := []float64{0.61, 0.61, 0.49}
	if got := c.Below(vals, 0); len(got) != 1 {
		t.Fatalf("without a noise floor: %+v, want the 0.49 flagged", got)
	}
	if got := c.Below(vals, 0.15); len(got) != 0 {
		t.Errorf("with 15 %% noise: %+v, want nothing", got)
	}
	noise := Noise([][]float64{{1, 1.2}, {2, 2}, {1, 1.1}, {3}})
	// Relative deviations 0.129, 0 and 0.067: median 0.067, over 0.6745.
	if math.Abs(noise-0.0674/0.6745) > 0.002 {
		t.Errorf("Noise = %g, want about %g", noise, 0.0674/0.6745)
	}
	if Noise([][]float64{{1}, {2}}) != 0 {
		t.Error("single passes gave a noise")
	}
}

func TestZFor(t *testing.T) {
	c := DefaultCriteria
	if got := c.ZFor(6); got != c.Z {
		t.Errorf("ZFor(6) = %g, want Z %g", got, c.Z)
	}
	if got := c.ZFor(2016); math.Abs(got-4.42) > 0.01 {
		t.Errorf("ZFor(2016) = %g, want 4.42", got)
	}
}

// Four members, one slow: the three pairs left are too few to judge a
// link by, however closely two of them happen to agree (a run on four
// namespaced hosts flagged 0.324 against 0.432 and 0.451 this way).
func TestTooFewPairsForLinks(t *testing.T) {
	figs := []PairFigure{{Pair{0, 1}, 0.324}, {Pair{0, 2}, 0.012}, {Pair{0, 3}, 0.432},
		{Pair{1, 2}, 0.012}, {Pair{1, 3}, 0.451}, {Pair{2, 3}, 0.012}}
	v := DefaultCriteria.Judge(figs, 0.065)
	if len(v.Members) != 1 || v.Members[0].Member != 2 || len(v.Links) != 0 {
		t.Errorf("verdict %+v; want member 2 and no link", v)
	}
}

// Three members: the two healthy ones score with the same pair, so the
// peers' MAD is always 0 and the pass-to-pass noise alone is the scatter.
// The median they give is one figure, as noisy as the figure judged, so a
// member 23 % down at 7.5 % noise (3.5 σ of one figure, 2.5 σ of the
// difference of two; a CI run on a busy 2-core machine) is not flagged,
// while one at half its partners' bandwidth still is.
func TestThreeMembersMedianNoise(t *testing.T) {
	figs := []PairFigure{{Pair{0, 1}, 0.707}, {Pair{0, 2}, 0.503}, {Pair{1, 2}, 0.542}}
	if v := DefaultCriteria.Judge(figs, 0.075); len(v.Members)+len(v.Links) != 0 {
		t.Errorf("23 %% down at 7.5 %% noise: %+v; want nothing flagged", v)
	}
	figs = []PairFigure{{Pair{0, 1}, 0.707}, {Pair{0, 2}, 0.33}, {Pair{1, 2}, 0.35}}
	if v := DefaultCriteria.Judge(figs, 0.075); len(v.Members) != 1 || v.Members[0].Member != 2 {
		t.Errorf("half its partners' bandwidth at 7.5 %% noise: %+v; want member 2", v)
	}
}
