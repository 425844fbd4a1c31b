package report

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/collbench/collbench/bench"
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

// runWith is a one-size run whose per-iteration times are base×scale with
// a small deterministic wobble.
func runWith(scale, noise float64) *Run {
	times := make([]float64, 40)
	for i := range times {
		times[i] = 100 * scale * (1 + noise*math.Sin(float64(i)*1.7))
	}
	st := bench.Summarize(times)
	return &Run{Collective: "allreduce", Results: []Result{{Size: 1 << 20, Type: "float", RedOp: "sum", Root: -1,
		OutOfPlace: Measure{Time: st.Mean, BusBW: 1e-3 * (1 << 20) / st.Mean}, OOPIter: st}}}
}

func TestCompareVerdicts(t *testing.T) {
	o := CompareOptions{Threshold: 0.05, Alpha: 0.05}
	cases := []struct {
		name    string
		scale   float64
		noise   float64
		verdict string
	}{
		{"identical", 1, 0.01, Same},
		{"10% slower, low noise", 1.10, 0.01, Regression},
		{"3% slower, low noise", 1.03, 0.005, Slower},
		{"10% faster", 0.90, 0.01, Faster},
		{"10% slower in heavy noise", 1.10, 0.5, Same},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base := runWith(1, c.noise)
			next := runWith(c.scale, c.noise)
			if c.noise >= 0.5 {
				// Shuffle the slower run's wobble so the two overlap.
				for i := range next.Results[0].OOPIter.Times {
					next.Results[0].OOPIter.Times[i] = 110 * (1 + c.noise*math.Cos(float64(i)*2.9))
				}
			}
			cs := Compare(base, next, o)
			if len(cs) != 1 || cs[0].Verdict != c.verdict {
				t.Fatalf("got %+v, want %s", cs, c.verdict)
			}
			var b bytes.Buffer
			n := CompareTable(&b, cs, o)
			if (n == 1) != (c.verdict == Regression) || !strings.Contains(b.String(), c.verdict) {
				t.Errorf("table (%d regressions):\n%s", n, b.String())
			}
		})
	}
}

func TestCompareWithoutSamples(t *testing.T) {
	base, next := runWith(1, 0.01), runWith(1.5, 0.01)
	next.Results[0].OOPIter.Times = nil
	cs := Compare(base, next, CompareOptions{Threshold: 0.05, Alpha: 0.05})
	if len(cs) != 1 || cs[0].Verdict != NoSamples || !math.IsNaN(cs[0].P) {
		t.Errorf("%+v", cs)
	}
}
