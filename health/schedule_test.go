package health

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// Every pair of N members is measured exactly once, in N−1 rounds (N for
// odd N), and no member is in two pairs of one round.
func TestRounds(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 5, 8, 64, 1000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			rounds := Rounds(n)
			want := n - 1
			if n%2 == 1 {
				want = n
			}
			if n < 2 {
				want = 0
			}
			if len(rounds) != want {
				t.Fatalf("%d rounds, want %d", len(rounds), want)
			}
			seen := map[Pair]int{}
			for r, round := range rounds {
				inRound := map[int]bool{}
				for _, p := range round {
					if p.A >= p.B || p.A < 0 || p.B >= n {
						t.Fatalf("round %d: bad pair %v", r, p)
					}
					if inRound[p.A] || inRound[p.B] {
						t.Fatalf("round %d: a member of %v is already in a pair", r, p)
					}
					inRound[p.A], inRound[p.B] = true, true
					seen[p]++
				}
				if len(round) != n/2 {
					t.Fatalf("round %d has %d pairs, want %d", r, len(round), n/2)
				}
			}
			if len(seen) != n*(n-1)/2 {
				t.Fatalf("%d distinct pairs measured, want %d", len(seen), n*(n-1)/2)
			}
			for p, k := range seen {
				if k != 1 {
					t.Fatalf("pair %v measured %d times", p, k)
				}
			}
		})
	}
}

// Units whose ranks live in different processes share a wave; units in
// one process (several GPUs of one process) take a wave each.
func TestWaves(t *testing.T) {
	units := [][][]int{{{0, 1}}, {{2, 3}}, {{4, 5}}}
	onePerProc := Waves(units, func(r int) int { return r })
	if fmt.Sprint(onePerProc) != "[[0 1 2]]" {
		t.Errorf("one rank per process: waves %v, want [[0 1 2]]", onePerProc)
	}
	shared := Waves(units, func(r int) int { return r / 4 }) // ranks 0-3 in process 0, 4-5 in 1
	if fmt.Sprint(shared) != "[[0 2] [1]]" {
		t.Errorf("ranks 0-3 in one process: waves %v, want [[0 2] [1]]", shared)
	}
}

func TestHalves(t *testing.T) {
	a, b := Halves([]int{0, 1, 2, 3, 4})
	if fmt.Sprint(a, b) != "[0 1 2] [3 4]" {
		t.Errorf("Halves = %v %v", a, b)
	}
}

// Disjoint puts every pair in exactly one round and no member twice in a
// round: a suspect's four confirmation partners take four rounds.
func TestDisjoint(t *testing.T) {
	pairs := []Pair{{0, 5}, {0, 6}, {0, 7}, {0, 8}, {3, 9}, {1, 2}, {2, 3}}
	rounds := Disjoint(pairs)
	if len(rounds) != 4 {
		t.Errorf("%d rounds %v, want 4", len(rounds), rounds)
	}
	seen := map[Pair]int{}
	for _, round := range rounds {
		used := map[int]bool{}
		for _, p := range round {
			if used[p.A] || used[p.B] {
				t.Errorf("round %v uses a member twice", round)
			}
			used[p.A], used[p.B] = true, true
			seen[p]++
		}
	}
	for _, p := range pairs {
		if seen[p] != 1 {
			t.Errorf("pair %v in %d rounds", p, seen[p])
		}
	}
	if Disjoint(nil) != nil {
		t.Error("no pairs, some rounds")
	}
}

// A unit is far below its peers when its first call takes more than
// CutFactor times their typical one, the lower median, which one slow
// unit of two cannot move.
func TestFarBelow(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	for _, c := range []struct {
		times, earlier []time.Duration
		want           []bool
	}{
		{ms(1, 100), nil, []bool{false, true}},
		{ms(100), ms(1, 1, 2), []bool{true}},
		{ms(5, 9), ms(1, 1), []bool{false, false}},
		{ms(100), nil, []bool{false}},
		{ms(100, 100, 1), nil, []bool{false, false, false}},
		{ms(11, 1), ms(1), []bool{true, false}},
	} {
		got, _ := FarBelow(c.times, c.earlier)
		if !slices.Equal(got, c.want) {
			t.Errorf("FarBelow(%v, %v) = %v, want %v", c.times, c.earlier, got, c.want)
		}
	}
}
