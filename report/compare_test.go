package report

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/compare"
	"github.com/collbench/collbench/document"
)

// runWith is a one-size run whose per-iteration times are base×scale with
// a small deterministic wobble.
func runWith(scale, noise float64) *document.Run {
	times := make([]float64, 40)
	for i := range times {
		times[i] = 100 * scale * (1 + noise*math.Sin(float64(i)*1.7))
	}
	st := bench.Summarize(times)
	return &document.Run{Collective: "allreduce", Results: []document.Result{{Size: 1 << 20, Type: "float", RedOp: "sum", Root: -1,
		OutOfPlace: document.Measure{Time: st.Mean, BusBW: 1e-3 * (1 << 20) / st.Mean}, OOPIter: document.StatsOf(st)}}}
}

func TestCompareVerdicts(t *testing.T) {
	o := compare.Options{Threshold: 0.05, Alpha: 0.05}
	cases := []struct {
		name    string
		scale   float64
		noise   float64
		verdict string
	}{
		{"identical", 1, 0.01, compare.Same},
		{"10% slower, low noise", 1.10, 0.01, compare.Regression},
		{"3% slower, low noise", 1.03, 0.005, compare.Slower},
		{"10% faster", 0.90, 0.01, compare.Faster},
		{"10% slower in heavy noise", 1.10, 0.5, compare.Same},
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
			cs, _ := compare.Runs(base, next, o)
			if len(cs) != 1 || cs[0].Verdict != c.verdict {
				t.Fatalf("got %+v, want %s", cs, c.verdict)
			}
			var b bytes.Buffer
			n := CompareTable(&b, cs, o)
			if (n == 1) != (c.verdict == compare.Regression) || !strings.Contains(b.String(), c.verdict) {
				t.Errorf("table (%d regressions):\n%s", n, b.String())
			}
		})
	}
}

func TestCompareWithoutSamples(t *testing.T) {
	base, next := runWith(1, 0.01), runWith(1.5, 0.01)
	next.Results[0].OOPIter.Times = nil
	cs, _ := compare.Runs(base, next, compare.Options{Threshold: 0.05, Alpha: 0.05})
	if len(cs) != 1 || cs[0].Verdict != compare.NoSamples || !math.IsNaN(cs[0].P) {
		t.Errorf("%+v", cs)
	}
}

// Figures from a document can be anything a float holds: the table stays
// a table (no 309-digit bandwidth, no "+Inf%").
func TestCompareFigures(t *testing.T) {
	for _, tc := range []struct {
		v          float64
		fix, delta string
	}{
		{12.345, "12.35", "+1234.5%"},
		{1e308, "1e+308", "-"},
		{2e7, "20000000.00", "+2e+09%"},
		{math.Inf(1), "-", "-"},
		{math.NaN(), "-", "-"},
		{-0.05, "-0.05", "-5.0%"},
	} {
		if got := fixed(tc.v); got != tc.fix {
			t.Errorf("fixed(%g) = %q, want %q", tc.v, got, tc.fix)
		}
		if got := change(tc.v); got != tc.delta {
			t.Errorf("change(%g) = %q, want %q", tc.v, got, tc.delta)
		}
	}
}
