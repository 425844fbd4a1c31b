package compare

import (
	"math"
	"sync"
)

// exactLimit bounds the samples whose rank-sum distribution is counted
// exactly: C(40, 20) ≈ 1.4e11 arrangements are still exact in a float64.
const exactLimit = 20

// exactRankSumP is the two-sided p-value of U = u for samples of n1 and n2
// without ties, from the exact distribution of U: what the normal
// approximation overstates for the handful of rounds an A/B run has (at 5
// against 5 the approximation cannot go below 0.012, the exact test
// reaches 0.0079).
func exactRankSumP(u float64, n1, n2 int) float64 {
	counts := cachedCounts(n1, n2)
	var total, below, above float64
	for v, c := range counts {
		total += c
		if float64(v) <= u+1e-9 {
			below += c
		}
		if float64(v) >= u-1e-9 {
			above += c
		}
	}
	return math.Min(1, 2*math.Min(below, above)/total)
}

// countsCache holds rankSumCounts by sample sizes: a table of many arms
// tests the same sizes thousands of times.
var countsCache sync.Map // [2]int → []float64

func cachedCounts(n1, n2 int) []float64 {
	key := [2]int{n1, n2}
	if c, ok := countsCache.Load(key); ok {
		return c.([]float64)
	}
	c := rankSumCounts(n1, n2)
	countsCache.Store(key, c)
	return c
}

// rankSumCounts returns, for every U from 0 to n1·n2, the number of
// arrangements of n1 and n2 distinct values with that U: f(m, n, u) =
// f(m−1, n, u−n) + f(m, n−1, u), the largest value of the first sample
// being above all n of the second or not.
func rankSumCounts(n1, n2 int) []float64 {
	// prev[n][u] holds f(m−1, n, u) while row m is built.
	prev := make([][]float64, n2+1)
	for n := range prev {
		prev[n] = []float64{1} // f(0, n, 0) = 1
	}
	for m := 1; m <= n1; m++ {
		cur := make([][]float64, n2+1)
		cur[0] = []float64{1} // f(m, 0, 0) = 1
		for n := 1; n <= n2; n++ {
			row := make([]float64, m*n+1)
			for u := range row {
				if u-n >= 0 && u-n < len(prev[n]) {
					row[u] += prev[n][u-n]
				}
				if u < len(cur[n-1]) {
					row[u] += cur[n-1][u]
				}
			}
			cur[n] = row
		}
		prev = cur
	}
	return prev[n2]
}

// SmallestRankSumP is the lowest two-sided p-value the rank-sum test can
// give samples of n1 and n2: the two samples wholly apart. Fewer rounds
// than reach a significance level can never show a difference at it.
func SmallestRankSumP(n1, n2 int) float64 {
	if n1 < 1 || n2 < 1 {
		return 1
	}
	if n1 <= exactLimit && n2 <= exactLimit {
		return exactRankSumP(0, n1, n2)
	}
	x := make([]float64, n1)
	y := make([]float64, n2)
	for i := range y {
		y[i] = float64(n1 + i)
	}
	for i := range x {
		x[i] = float64(i)
	}
	return RankSumP(x, y)
}
