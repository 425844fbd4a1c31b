package health

// Pair is two members (nodes, or GPUs of one node), A < B.
type Pair struct{ A, B int }

// Rounds is a round-robin tournament over n members (the circle method):
// every pair exactly once, no member twice in one round, in n−1 rounds
// for even n and n for odd n (each round one member rests). Rounds of
// disjoint pairs can be measured at once, so N nodes take O(N) rounds of
// measurement, not O(N²).
func Rounds(n int) [][]Pair {
	rounds := make([][]Pair, RoundCount(n))
	for r := range rounds {
		rounds[r] = Round(n, r)
	}
	return rounds
}

// RoundCount is how many rounds Rounds(n) has, without building them.
func RoundCount(n int) int {
	switch {
	case n < 2:
		return 0
	case n%2 == 1:
		return n
	}
	return n - 1
}

// Round is round r (0 ≤ r < RoundCount(n)) of Rounds(n) alone: a
// screening measures a few rounds of a tournament whose whole would take
// O(N²) memory to build.
func Round(n, r int) []Pair {
	m := n
	if m%2 == 1 {
		m++ // a phantom member: its partner rests that round
	}
	round := make([]Pair, 0, m/2)
	// Member m−1 stays put; the others turn around the circle.
	add := func(a, b int) {
		if a >= n || b >= n {
			return
		}
		round = append(round, Pair{min(a, b), max(a, b)})
	}
	add(r, m-1)
	for i := 1; i < m/2; i++ {
		add((r+i)%(m-1), (r-i+m-1)%(m-1))
	}
	return round
}

// Waves splits a round's units (each a list of groups of global ranks)
// into waves that can run at once and still be told apart: a process
// times all its ranks together, so no process may hold ranks of two units
// in one wave. proc gives the process of a global rank. Units keep their
// order; each goes into the first wave it fits.
func Waves(units [][][]int, proc func(rank int) int) [][]int {
	var waves [][]int
	var busy []map[int]bool
	for u, groups := range units {
		procs := map[int]bool{}
		for _, g := range groups {
			for _, r := range g {
				procs[proc(r)] = true
			}
		}
		placed := false
		for w := range waves {
			if disjoint(busy[w], procs) {
				waves[w] = append(waves[w], u)
				for p := range procs {
					busy[w][p] = true
				}
				placed = true
				break
			}
		}
		if !placed {
			waves = append(waves, []int{u})
			busy = append(busy, procs)
		}
	}
	return waves
}

func disjoint(a, b map[int]bool) bool {
	for p := range b {
		if a[p] {
			return false
		}
	}
	return true
}

// Halves splits members into two blocks, the first the larger when the
// count is odd: one level of a bisection.
func Halves(members []int) (a, b []int) {
	h := (len(members) + 1) / 2
	return members[:h:h], members[h:]
}

// Disjoint lays pairs out in rounds of disjoint pairs, each pair in the
// first round that has neither of its members yet, keeping their order
// within a round: the rounds a list that is not a tournament (a
// confirmation's) is measured in.
func Disjoint(pairs []Pair) [][]Pair {
	var rounds [][]Pair
	var busy []map[int]bool
	for _, p := range pairs {
		r := 0
		for ; r < len(rounds); r++ {
			if !busy[r][p.A] && !busy[r][p.B] {
				break
			}
		}
		if r == len(rounds) {
			rounds, busy = append(rounds, nil), append(busy, map[int]bool{})
		}
		rounds[r] = append(rounds[r], p)
		busy[r][p.A], busy[r][p.B] = true, true
	}
	return rounds
}
