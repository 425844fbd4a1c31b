package compare

import (
	"math"
	"testing"
)

func TestRankSumP(t *testing.T) {
	cases := []struct {
		x, y []float64
		want float64
	}{
		// scipy.stats.mannwhitneyu(x, y, method="asymptotic") gives 0.01219.
		{[]float64{1, 2, 3, 4, 5}, []float64{6, 7, 8, 9, 10}, 0.012186},
		{[]float64{1, 2, 3}, []float64{1, 2, 3}, 1},
		{[]float64{5, 5, 5}, []float64{5, 5, 5}, 1},
	}
	for _, c := range cases {
		if got := RankSumP(c.x, c.y); math.Abs(got-c.want) > 1e-4 {
			t.Errorf("RankSumP(%v, %v) = %v, want %v", c.x, c.y, got, c.want)
		}
	}
}
