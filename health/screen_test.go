package health

import (
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

// simTrials is the trials a fleet size gets: COLLBENCH_SIM_TRIALS for all
// (docs/health.md's tables used 200 and 1,000), else fewer for the larger
// fleets, whose every trial judges up to 100,000 pairs.
func simTrials(t *testing.T, n int) int {
	if s := os.Getenv("COLLBENCH_SIM_TRIALS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("COLLBENCH_SIM_TRIALS=%q", s)
		}
		return v
	}
	trials := 200
	switch {
	case n >= 10000:
		trials = 6
	case n >= 1000:
		trials = 30
	}
	if testing.Short() || raceEnabled {
		trials = max(trials/6, 2)
	}
	return trials
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
	for _, c := range []struct{ n, rounds, want int }{{1000, 20, 20}, {9, 20, 9}, {10, 20, 9}, {64, 5, 5}, {7919, 20, 20}} {
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
