package health

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
)

// screenFigures draws a screening's pair figures over n members: base
// bandwidth 10 with normal noise (relative σ) times slow(pair).
func screenFigures(pairs [][]Pair, rng *rand.Rand, noise float64, slow func(Pair) float64) []PairFigure {
	var figs []PairFigure
	for _, round := range pairs {
		for _, p := range round {
			figs = append(figs, PairFigure{Pair: p, Value: 10 * (1 + noise*rng.NormFloat64()) * slow(p)})
		}
	}
	return figs
}

// screenRates simulates trials fleets of n members screened in
// MaxScreenRounds rounds and confirmed, and counts how often one member,
// or one link the screening measures, slow by the factor slow is missed
// or mis-named, and how often a healthy fleet names anything.
func screenRates(n int, noise, slow float64, trials int) (missMember, missLink, falseAlarm float64) {
	c := DefaultCriteria
	rng := rand.New(rand.NewPCG(uint64(n), uint64(noise*1e4)+7))
	var mm, ml, fa int
	for i := 0; i < trials; i++ {
		rounds := Screening(n, MaxScreenRounds, rng.Uint64())
		run := func(f func(Pair) float64) Verdict {
			figs := screenFigures(rounds, rng, noise, f)
			return c.Screen(n, figs, noise, func(pairs []Pair) []float64 {
				out := make([]float64, len(pairs))
				for k, p := range pairs {
					out[k] = 10 * (1 + noise*rng.NormFloat64()) * f(p)
				}
				return out
			})
		}
		bad := rng.IntN(n)
		v := run(func(p Pair) float64 {
			if p.A == bad || p.B == bad {
				return slow
			}
			return 1
		})
		if len(v.Members) != 1 || v.Members[0].Member != bad || len(v.Links) != 0 {
			mm++
		}
		r := rounds[rng.IntN(len(rounds))]
		link := r[rng.IntN(len(r))]
		v = run(func(p Pair) float64 {
			if p == link {
				return slow
			}
			return 1
		})
		if len(v.Links) != 1 || v.Links[0].Pair != link || len(v.Members) != 0 {
			ml++
		}
		if v = run(func(Pair) float64 { return 1 }); len(v.Members)+len(v.Links) != 0 {
			fa++
		}
	}
	f := float64(trials)
	return float64(mm) / f, float64(ml) / f, float64(fa) / f
}

// simTrials is the trials a fleet size gets: COLLBENCH_SIM_TRIALS for all
// (docs/health.md's table used 1,000), else fewer for the larger fleets,
// whose every trial judges up to 100,000 pairs.
func simTrials(t *testing.T, n int) int {
	if s := os.Getenv("COLLBENCH_SIM_TRIALS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("COLLBENCH_SIM_TRIALS=%q", s)
		}
		return v
	}
	trials := map[int]int{64: 1000, 1000: 100, 10000: 10}[n]
	if testing.Short() || raceEnabled {
		trials = max(trials/10, 3)
	}
	return trials
}

// Screening 64, 1,000 and 10,000 members in 20 rounds finds one member
// or one measured link 20 % slow at 2 % noise with at least 95 % power,
// and names nothing on at most 1 % of healthy fleets (go test ./health
// -run TestScreeningRates -v; docs/health.md).
func TestScreeningRates(t *testing.T) {
	for _, n := range []int{64, 1000, 10000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			trials := simTrials(t, n)
			mm, ml, fa := screenRates(n, 0.02, 0.8, trials)
			t.Logf("n=%-5d noise 2%%, %d trials: slow member missed %5.1f%%, slow link missed %5.1f%%, healthy flagged %5.1f%%",
				n, trials, 100*mm, 100*ml, 100*fa)
			// With few trials one miss is a large share: allow one.
			limit := func(rate float64) float64 { return max(rate, 1.0/float64(trials)) }
			if mm > limit(0.05) || ml > limit(0.05) || fa > limit(0.01) {
				t.Errorf("miss rates %.3f (member), %.3f (link) or false alarms %.3f above 5 %%, 5 %%, 1 %%", mm, ml, fa)
			}
		})
	}
}

// A screened member's figure (the median of its pairs but the slowest)
// lies within ±3 % of what a full round robin gives it, at 2 % noise with
// one member 20 % slow.
func TestScreenedMedianMatchesFull(t *testing.T) {
	for _, n := range []int{64, 1000} {
		rng := rand.New(rand.NewPCG(uint64(n), 3))
		score := func(figs []PairFigure) map[int]float64 {
			by := map[int][]float64{}
			for _, f := range figs {
				by[f.A] = append(by[f.A], f.Value)
				by[f.B] = append(by[f.B], f.Value)
			}
			out := map[int]float64{}
			for m, v := range by {
				slices.Sort(v)
				out[m] = quantile50(v[1:])
			}
			return out
		}
		// 2 % noise, and one member 20 % slow whose figure must say so in
		// both.
		pair := func(p Pair) float64 {
			if p.A == 5 || p.B == 5 {
				return 0.8
			}
			return 1
		}
		full := score(screenFigures(Rounds(n), rng, 0.02, pair))
		screened := score(screenFigures(Screening(n, MaxScreenRounds, 11), rng, 0.02, pair))
		worst := 0.0
		for m, s := range screened {
			worst = max(worst, math.Abs(s/full[m]-1))
		}
		t.Logf("n=%d: a screened member's figure is within %.2f%% of the full round robin's", n, 100*worst)
		if worst > 0.03 {
			t.Errorf("n=%d: a screened figure %.1f%% from the full one", n, 100*worst)
		}
	}
}

// Screening gives every member a different partner each round, pairs
// disjoint within a round, and no more rounds than asked or a round robin
// has.
func TestScreening(t *testing.T) {
	for _, c := range []struct{ n, rounds, want int }{{1000, 20, 20}, {9, 20, 9}, {10, 20, 9}, {64, 5, 5}} {
		got := Screening(c.n, c.rounds, 1)
		if len(got) != c.want {
			t.Errorf("n=%d: %d rounds, want %d", c.n, len(got), c.want)
		}
		met := map[Pair]bool{}
		for _, r := range got {
			busy := map[int]bool{}
			for _, p := range r {
				if busy[p.A] || busy[p.B] || met[p] || p.A >= p.B || p.B >= c.n {
					t.Fatalf("n=%d: pair %v repeats a member or a meeting", c.n, p)
				}
				busy[p.A], busy[p.B], met[p] = true, true, true
			}
		}
	}
}
