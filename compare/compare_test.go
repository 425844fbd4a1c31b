package compare

import (
	"math"
	"strings"
	"testing"

	"github.com/collbench/collbench/document"
)

func TestRankSumP(t *testing.T) {
	cases := []struct {
		x, y []float64
		want float64
	}{
		// Wholly apart, 5 against 5: 2 of the C(10, 5) = 252 arrangements
		// are as extreme (scipy.stats.mannwhitneyu, method="exact").
		{[]float64{1, 2, 3, 4, 5}, []float64{6, 7, 8, 9, 10}, 2.0 / 252},
		// One pair swapped: U = 1, 4 arrangements each side at most as far.
		{[]float64{1, 2, 3, 4, 6}, []float64{5, 7, 8, 9, 10}, 4.0 / 252},
		// A tie: the normal approximation with its corrections, by hand:
		// U = 0.5, σ = √(25/12 · (11 − 6/90)) = 4.7726, z = 11.5/σ.
		{[]float64{1, 2, 3, 4, 6}, []float64{6, 7, 8, 9, 10}, 0.015971},
		// More than 20 a side: the normal approximation.
		{seq(1, 25), seq(26, 50), 1.4e-9},
		{[]float64{1, 2, 3}, []float64{1, 2, 3}, 1},
		{[]float64{5, 5, 5}, []float64{5, 5, 5}, 1},
	}
	for _, c := range cases {
		if got := RankSumP(c.x, c.y); math.Abs(got-c.want) > 1e-4*math.Max(c.want, 1e-4) {
			t.Errorf("RankSumP(%v, %v) = %v, want %v", c.x, c.y, got, c.want)
		}
	}
}

func seq(from, to int) []float64 {
	var v []float64
	for i := from; i <= to; i++ {
		v = append(v, float64(i))
	}
	return v
}

// The exact distribution is checked against counting every arrangement.
func TestExactRankSumAgainstEnumeration(t *testing.T) {
	for _, n := range [][2]int{{1, 1}, {2, 3}, {4, 4}, {3, 6}, {6, 6}} {
		n1, n2 := n[0], n[1]
		counts := rankSumCounts(n1, n2)
		want := make([]float64, n1*n2+1)
		// Each subset of the n1+n2 ranks is a sample x; U counts the
		// pairs with x above y.
		for mask := 0; mask < 1<<(n1+n2); mask++ {
			if bits(mask) != n1 {
				continue
			}
			u, below := 0, 0
			for i := 0; i < n1+n2; i++ {
				if mask&(1<<i) != 0 {
					u += below
				} else {
					below++
				}
			}
			want[u]++
		}
		for u := range want {
			if counts[u] != want[u] {
				t.Fatalf("n1=%d n2=%d: %v arrangements with U=%d, want %v", n1, n2, counts[u], u, want[u])
			}
		}
	}
	if p := SmallestRankSumP(6, 6); math.Abs(p-2.0/924) > 1e-12 {
		t.Errorf("smallest p at 6 against 6 = %v, want 2/924", p)
	}
}

func bits(m int) int {
	n := 0
	for ; m > 0; m &= m - 1 {
		n++
	}
	return n
}

func run(coll string, rows ...document.Result) *document.Run {
	return &document.Run{Collective: coll, Results: rows}
}

func row(size int64, time, busbw float64, iters ...float64) document.Result {
	return document.Result{Size: size, Type: "float", RedOp: "sum", Root: -1,
		OutOfPlace: document.Measure{Time: time, BusBW: busbw}, OOPIter: document.Stats{Times: iters}}
}

// The change in bus bandwidth is the change in time seen the other way
// round: both come from the same centre (the median of the iterations
// where they were kept), not the median for one and the run's mean for
// the other.
func TestBandwidthFollowsTheMedian(t *testing.T) {
	base := run("allreduce", row(1<<20, 10, 100, 10, 10, 10, 10))
	// A mean of 27.5 µs (one slow iteration) but a median of 20 µs,
	// against a median of 10: the time doubles, the bandwidth halves.
	next := run("allreduce", row(1<<20, 27.5, 1000/27.5, 20, 20, 20, 50))
	cs, _ := Runs(base, next, Options{Threshold: 0.05, Alpha: 0.05})
	if len(cs) != 1 {
		t.Fatalf("%d comparisons", len(cs))
	}
	c := cs[0]
	if math.Abs(c.TimeChange-1) > 1e-9 || math.Abs(c.BWChange-(-0.5)) > 1e-9 {
		t.Errorf("Δtime %+.3f Δbusbw %+.3f, want +1.000 and -0.500", c.TimeChange, c.BWChange)
	}
	if math.Abs(c.NewBW-50) > 1e-9 || math.Abs(c.BaseBW-100) > 1e-9 {
		t.Errorf("busbw %v → %v, want 100 → 50 at the medians", c.BaseBW, c.NewBW)
	}
}

// Rows that cannot be compared are said, not dropped in silence: no time,
// no size, or a size in one run only.
func TestRowsLeftOutAreSaid(t *testing.T) {
	base := run("allreduce", row(0, 0, 0), row(1024, 0, 0), row(2048, 5, 1), row(4096, 6, 1))
	next := run("allreduce", row(0, 0, 0), row(1024, 3, 1), row(2048, 5, 1), row(8192, 7, 1))
	cs, left := Runs(base, next, Options{Threshold: 0.05, Alpha: 0.05})
	if len(cs) != 1 || cs[0].Size != 2048 {
		t.Fatalf("compared %+v", cs)
	}
	all := strings.Join(left, "\n")
	for _, want := range []string{"1024 bytes: no time in base", "4096 bytes: not in new", "8192 bytes: not in base", "0 bytes: no size"} {
		if !strings.Contains(all, want) {
			t.Errorf("notes lack %q:\n%s", want, all)
		}
	}
}
