package model

import (
	"math"
	"math/rand/v2"
	"testing"
)

// One wild size (a neighbour's burst, a stalled iteration) must not move
// the line: the robust fit keeps the others' α and β.
func TestFitIgnoresOneWildSize(t *testing.T) {
	alpha, beta := 30.0, 1e-3/50 // 50 GB/s
	for _, wild := range []int{0, 4, 9} {
		for _, factor := range []float64{0.3, 4} {
			var pts []Point
			for i, s := range sizes(10) {
				tm := noisy(alpha+beta*s, i, 0.01)
				if i == wild {
					tm *= factor
				}
				pts = append(pts, Point{Bytes: s, Time: tm})
			}
			f, err := FitCurve(pts, 1)
			if err != nil {
				t.Fatal(err)
			}
			if f.Model != "alpha_beta" || !within(f.Beta, beta, 0.03) || !within(f.Alpha, alpha, 0.15) {
				t.Errorf("size %d ×%g: %s α=%.4g β=%.4g, want α=%.4g β=%.4g", wild, factor, f.Model, f.Alpha, f.Beta, alpha, beta)
			}
		}
	}
}

// Whenever the largest size took longer than the smallest, the fit has a
// bandwidth term, however the sizes between wander: a profile never
// fails an export on "no bandwidth term" because of noise.
func TestFitAlwaysFindsBandwidthWhenTimeGrows(t *testing.T) {
	fixed := map[string][]Point{
		"middle slow":     {{512 << 10, 400}, {1 << 20, 2000}, {2 << 20, 450}},
		"middle fast":     {{512 << 10, 400}, {1 << 20, 10}, {2 << 20, 410}},
		"first two slow":  {{512 << 10, 900}, {1 << 20, 950}, {2 << 20, 300}, {4 << 20, 1000}},
		"latency bound":   {{8, 20}, {64, 20.1}, {512, 19.9}, {4096, 20.3}},
		"two sizes":       {{1 << 20, 100}, {2 << 20, 101}},
		"falls then jump": {{1, 50}, {2, 40}, {4, 30}, {8, 20}, {16, 60}},
	}
	rng := rand.New(rand.NewPCG(7, 11))
	for i := 0; i < 600; i++ {
		n := 2 + rng.IntN(8)
		var pts []Point
		for j := 0; j < n; j++ {
			pts = append(pts, Point{Bytes: float64(int64(512<<10) << j), Time: 10 + 1000*rng.Float64()})
		}
		if pts[n-1].Time > pts[0].Time {
			fixed[string(rune('a'+i%26))+string(rune('0'+i/26%10))+string(rune('0'+i/260))] = pts
		}
	}
	for name, pts := range fixed {
		f, err := FitCurve(pts, 1)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !(f.Beta > 0) || !(f.BusBWInf > 0) || f.Alpha < 0 || math.IsInf(f.BusBWInf, 0) {
			t.Errorf("%s %v: α=%g β=%g busbw∞=%g", name, pts, f.Alpha, f.Beta, f.BusBWInf)
		}
	}
}

// Time that does not grow has no bandwidth term, and the fit says so
// rather than inventing one.
func TestFitNoGrowthNoBandwidth(t *testing.T) {
	f, err := FitCurve([]Point{{1 << 20, 100}, {2 << 20, 90}, {4 << 20, 80}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if f.Beta != 0 || f.BusBWInf != 0 || f.Method != MethodTheilSen || !within(f.Alpha, 90, 1e-9) {
		t.Errorf("%+v", f)
	}
}

// The bootstrap interval holds the true α and β on noisy data, collapses
// to the point on exact data, and widens with the noise.
func TestBootstrapIntervals(t *testing.T) {
	alpha, beta := 40.0, 1e-3/20
	width := func(noise float64) (Fit, float64) {
		rng := rand.New(rand.NewPCG(3, 5))
		var pts []Point
		for _, s := range sizes(10) {
			pts = append(pts, Point{Bytes: s, Time: (alpha + beta*s) * (1 + noise*(2*rng.Float64()-1))})
		}
		f, err := FitCurve(pts, 1)
		if err != nil {
			t.Fatal(err)
		}
		return f, (f.BetaCI[1] - f.BetaCI[0]) / f.Beta
	}
	exact, w0 := width(0)
	if w0 > 1e-9 || !within(exact.AlphaCI[0], alpha, 1e-6) || !within(exact.AlphaCI[1], alpha, 1e-6) {
		t.Errorf("exact data: α CI %v, β CI %v", exact.AlphaCI, exact.BetaCI)
	}
	small, w1 := width(0.02)
	_, w2 := width(0.10)
	if !(w1 > 0 && w2 > w1) {
		t.Errorf("β interval widths %g at 2%% noise, %g at 10%%", w1, w2)
	}
	if !(small.BetaCI[0] <= beta && beta <= small.BetaCI[1]) || !(small.AlphaCI[0] <= alpha && alpha <= small.AlphaCI[1]) {
		t.Errorf("2%% noise: α %g not in %v or β %g not in %v", alpha, small.AlphaCI, beta, small.BetaCI)
	}
	again, _ := width(0.02)
	if again.AlphaCI != small.AlphaCI || again.BetaCI != small.BetaCI {
		t.Error("the intervals differ between two fits of the same data")
	}
}

// A protocol switch under noise still gives two segments, and the
// interval belongs to the large-message line.
func TestFitNoisyProtocolSwitch(t *testing.T) {
	f, err := FitCurve(protocolSwitch(12, 0.01), 1)
	if err != nil {
		t.Fatal(err)
	}
	if f.Model != "piecewise" || !within(f.Beta, 1/150e3, 0.05) {
		t.Fatalf("%s β=%g", f.Model, f.Beta)
	}
	if !(f.BetaCI[0] <= f.Beta && f.Beta <= f.BetaCI[1]) || f.BetaCI[1]-f.BetaCI[0] > 0.2*f.Beta {
		t.Errorf("β %g, interval %v", f.Beta, f.BetaCI)
	}
}

func FuzzFitCurve(f *testing.F) {
	f.Add(100.0, 300.0, 120.0, 50.0)
	f.Add(1.0, 1.0, 1.0, 1.0)
	f.Fuzz(func(t *testing.T, a, b, c, d float64) {
		var pts []Point
		for i, tm := range []float64{a, b, c, d} {
			pts = append(pts, Point{Bytes: float64(int64(1) << (10 + 2*i)), Time: tm})
		}
		fit, err := FitCurve(pts, 1)
		if err != nil {
			return // not positive and finite: refused
		}
		if fit.Alpha < 0 || fit.Beta < 0 || math.IsNaN(fit.Alpha) || math.IsNaN(fit.Beta) {
			t.Fatalf("%v: α=%g β=%g", pts, fit.Alpha, fit.Beta)
		}
		if d > a && !(fit.Beta > 0) {
			t.Fatalf("%v grows but β=%g", pts, fit.Beta)
		}
	})
}
