package compare

import (
	"fmt"
	"math"
	"sort"

	"github.com/collbench/collbench/setting"
)

// Correction is how a table of many tests keeps its error rate: each
// p-value is adjusted for the others before it is held against alpha, so
// that a table of 100 arms that change nothing is not expected to call
// one of them slower.
type Correction string

const (
	// Holm is Holm's step-down method: the chance that any verdict of the
	// table is false stays below alpha (the family-wise error), whatever
	// the tests' dependence. For a gate that fails a job on one verdict.
	Holm Correction = "holm"
	// BH is the Benjamini–Hochberg step-up method: of the verdicts given,
	// the expected share that is false stays below alpha (the false
	// discovery rate; valid for tests that share the base arm, which are
	// positively dependent). For a search that is confirmed afterwards.
	BH Correction = "bh"
	// NoCorrection holds each p-value against alpha as it is.
	NoCorrection Correction = "none"
)

// Corrections are the methods, as ParseCorrection takes them.
var Corrections = []Correction{Holm, BH, NoCorrection}

// ParseCorrection reads a method's name.
func ParseCorrection(s string) (Correction, error) {
	for _, c := range Corrections {
		if string(c) == s {
			return c, nil
		}
	}
	return "", fmt.Errorf("unknown correction %q (holm, bh or none)", s)
}

// Describe names the method, over how many tests, and what it controls,
// for a table's header.
func (c Correction) Describe(tests int) string {
	switch c {
	case Holm:
		return fmt.Sprintf("Holm-adjusted over the table's %d tests (family-wise error)", tests)
	case BH:
		return fmt.Sprintf("Benjamini–Hochberg-adjusted over the table's %d tests (false discovery rate)", tests)
	}
	return "not adjusted for the table's other tests"
}

// Adjust returns the adjusted p-values of ps under c, in the same order;
// NaN entries (no test) stay NaN and do not count as tests.
func Adjust(ps []float64, c Correction) []float64 {
	out := make([]float64, len(ps))
	var idx []int
	for i, p := range ps {
		out[i] = p
		if !math.IsNaN(p) {
			idx = append(idx, i)
		}
	}
	m := len(idx)
	if m == 0 || c == NoCorrection {
		return out
	}
	sort.SliceStable(idx, func(a, b int) bool { return ps[idx[a]] < ps[idx[b]] })
	switch c {
	case Holm:
		// p(k) × (m − k + 1), made non-decreasing from the smallest up.
		run := 0.0
		for k, i := range idx {
			run = math.Max(run, math.Min(1, ps[i]*float64(m-k)))
			out[i] = run
		}
	case BH:
		// p(k) × m / k, made non-increasing from the largest down.
		run := 1.0
		for k := m - 1; k >= 0; k-- {
			i := idx[k]
			run = math.Min(run, math.Min(1, ps[i]*float64(m)/float64(k+1)))
			out[i] = run
		}
	}
	return out
}

// MaxRounds bounds the rounds a run may ask for: each round runs every
// arm once, and the rank-sum test of two arms already separates them at p
// below 1e-11 after 20.
const MaxRounds = 1000

// MinAlpha is the smallest significance a run may ask for. Below it the
// rounds that could show a difference grow past what anyone means to wait
// for (1e-320 asks for 980 rounds a side), which is a slip of the keyboard,
// not a plan.
const MinAlpha = 1e-6

// CheckAlpha refuses a significance that is not a number from MinAlpha up
// to, not including, 1.
func CheckAlpha(alpha float64) error {
	if !(alpha >= MinAlpha && alpha < 1) {
		return setting.Errorf("{Alpha} must be from %g up to 1 (got %g)", MinAlpha, alpha)
	}
	return nil
}

// RoundsNeeded is the least number of rounds a side, at least from, with
// which the rank-sum test can show one difference among tests comparisons
// at alpha: the two samples wholly apart give a p-value whose adjustment
// for the other tests is below alpha (for Holm and BH alike, a lone
// difference is multiplied by the number of tests). It is 0 when no number
// of rounds up to MaxRounds can.
func RoundsNeeded(alpha float64, tests int, c Correction, from int) int {
	if tests < 1 {
		tests = 1
	}
	if c == NoCorrection {
		tests = 1
	}
	n := max(from, 1)
	for ; n <= MaxRounds; n++ {
		if SmallestRankSumP(n, n)*float64(tests) < alpha {
			return n
		}
	}
	return 0
}
