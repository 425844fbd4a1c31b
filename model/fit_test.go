package model

import (
	"math"
	"testing"
)

// sizes returns n powers of two from 1 MiB.
func sizes(n int) []float64 {
	var s []float64
	for i := 0; i < n; i++ {
		s = append(s, float64(int64(1)<<(20+i)))
	}
	return s
}

// noisy applies a fixed ±amp multiplicative wobble, the same every run.
func noisy(t float64, i int, amp float64) float64 {
	return t * (1 + amp*math.Sin(float64(i)*2.4))
}

func within(got, want, rel float64) bool { return math.Abs(got-want) <= rel*math.Abs(want) }

func TestFitRecoversAlphaBeta(t *testing.T) {
	cases := []struct {
		name        string
		alpha, gbps float64 // µs; algorithm GB/s
		n           int
		noise       float64
		busFactor   float64
	}{
		{"nvlink allreduce", 25, 180, 11, 0.003, 1.75},
		{"ib allgather", 40, 21, 11, 0.004, 0.875},
		{"latency bound", 300, 400, 8, 0.002, 1},
		{"exact", 12, 90, 8, 0, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			beta := 1e-3 / c.gbps // µs per byte
			var pts []Point
			for i, s := range sizes(c.n) {
				pts = append(pts, Point{Bytes: s, Time: noisy(c.alpha+beta*s, i, c.noise)})
			}
			f, err := FitCurve(pts, c.busFactor)
			if err != nil {
				t.Fatal(err)
			}
			if f.Model != "alpha_beta" || !within(f.Alpha, c.alpha, 0.01) || !within(f.Beta, beta, 0.01) {
				t.Errorf("fit %s α=%.4g β=%.4g, want α=%.4g β=%.4g within 1%%", f.Model, f.Alpha, f.Beta, c.alpha, beta)
			}
			if !within(f.BusBWInf, c.busFactor*c.gbps, 0.01) || !within(f.NHalf, c.alpha/beta, 0.02) {
				t.Errorf("busbw∞ %.4g (want %.4g), n½ %.4g (want %.4g)", f.BusBWInf, c.busFactor*c.gbps, f.NHalf, c.alpha/beta)
			}
			if f.R2 < 0.999 || f.MaxRel > 2*c.noise+1e-9 || f.Points != c.n || f.Range[0] != 1<<20 {
				t.Errorf("quality r2=%v maxRel=%v points=%d range=%v", f.R2, f.MaxRel, f.Points, f.Range)
			}
		})
	}
}

// Plain least squares is pulled by the largest sizes; the relative fit
// keeps the 1 MiB point right even where a line is only roughly right.
func TestFitWeightsSmallSizes(t *testing.T) {
	var pts []Point
	for _, s := range sizes(11) {
		// A mild curvature: bandwidth improves with size.
		pts = append(pts, Point{Bytes: s, Time: 20 + s/(150e3*(1+0.1*math.Log2(s/(1<<20))))})
	}
	f, err := FitLine(pts)
	if err != nil {
		t.Fatal(err)
	}
	if rel := math.Abs(f.At(pts[0].Bytes)-pts[0].Time) / pts[0].Time; rel > 0.15 {
		t.Errorf("1 MiB off by %.0f%%", rel*100)
	}
}

// protocolSwitch is n sizes from 1 MiB of a curve with a protocol
// switch at 16 MiB: small messages on a low-latency, low-bandwidth
// protocol, large ones on another; noise is a fixed wobble.
func protocolSwitch(n int, noise float64) []Point {
	var pts []Point
	for i, s := range sizes(n) {
		tm := 5 + s/20e3
		if s >= 16<<20 {
			tm = 400 + s/150e3
		}
		pts = append(pts, Point{Bytes: s, Time: noisy(tm, i, noise)})
	}
	return pts
}

// One line cannot hold a protocol switch: two segments do.
func TestFitPiecewise(t *testing.T) {
	pts := protocolSwitch(11, 0)
	f, err := FitCurve(pts, 1)
	if err != nil {
		t.Fatal(err)
	}
	if f.Model != "piecewise" || len(f.Segments) != 2 || f.MaxRel > 0.01 {
		t.Fatalf("want two segments fitting within 1%%: %+v", f)
	}
	if !within(f.Beta, 1/150e3, 0.01) || !within(f.BusBWInf, 150, 0.01) {
		t.Errorf("large-message line β=%g busbw∞=%g", f.Beta, f.BusBWInf)
	}
	if brk := f.Segments[0].To; brk <= 8<<20 || brk >= 16<<20 {
		t.Errorf("break at %g, want between 8 and 16 MiB", brk)
	}
	for _, p := range pts {
		if !within(f.At(p.Bytes), p.Time, 0.01) {
			t.Errorf("At(%g) = %g, measured %g", p.Bytes, f.At(p.Bytes), p.Time)
		}
	}
}

func TestFitRejects(t *testing.T) {
	for name, pts := range map[string][]Point{
		"one point":   {{1, 1}},
		"zero time":   {{1, 1}, {2, 0}},
		"negative":    {{-1, 1}, {2, 3}},
		"infinite":    {{1, 1}, {math.Inf(1), 3}},
		"nan":         {{1, 1}, {2, math.NaN()}},
		"same size":   {{4, 1}, {4, 2}},
		"empty slice": nil,
	} {
		if _, err := FitCurve(pts, 1); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestCurveTime(t *testing.T) {
	pts := []Point{{1 << 20, 30}, {2 << 20, 28}, {4 << 20, 50}, {8 << 20, 90}}
	c, err := NewCurve("allreduce", 4, "consecutive", 1.5, pts)
	if err != nil {
		t.Fatal(err)
	}
	pooled := math.Sqrt(30 * 28) // the dip is made flat
	for _, tc := range []struct{ s, want float64 }{
		{1 << 20, pooled}, {2 << 20, pooled},
		{3 << 20, (pooled + 50) / 2}, {8 << 20, 90},
	} {
		if got := c.Time(tc.s); !within(got, tc.want, 1e-9) {
			t.Errorf("Time(%g) = %g, want %g", tc.s, got, tc.want)
		}
	}
	// Beyond the table the fit carries on from the last point.
	if got := c.Time(16 << 20); got <= 90 || got > 200 {
		t.Errorf("Time(16 MiB) = %g", got)
	}
	if got := c.Time(512 << 10); got <= 0 || got > pooled {
		t.Errorf("Time(512 KiB) = %g", got)
	}
	prev := 0.0
	for s := 256.0 * 1024; s < 64<<20; s *= 1.3 {
		if got := c.Time(s); got < prev {
			t.Fatalf("not monotone at %g: %g < %g", s, got, prev)
		} else {
			prev = got
		}
	}
	if bw := c.BusBW(8 << 20); !within(bw, 1.5*float64(8<<20)/90*1e-3, 1e-9) {
		t.Errorf("BusBW = %g", bw)
	}
}

// A size measured slow among faster larger ones is noise either way: the
// curve pools the disagreeing sizes into their geometric mean rather than
// charge every larger size the high one (a running maximum doubled a
// reduce-scatter's 4 MiB, 36.6 → 73.3 ms).
func TestMonotonePoolsWhatDisagrees(t *testing.T) {
	for _, c := range []struct {
		name        string
		times, want []float64
	}{
		{"already", []float64{1, 2, 2, 5}, []float64{1, 2, 2, 5}},
		{"one dip", []float64{10, 73.3, 36.6, 80}, []float64{10, math.Sqrt(73.3 * 36.6), math.Sqrt(73.3 * 36.6), 80}},
		{"a block that grows", []float64{8, 4, 2, 16}, []float64{4, 4, 4, 16}},
		{"pooled twice", []float64{1, 9, 1, 9, 4}, []float64{1, 3, 3, 6, 6}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Monotone(c.times)
			for i := range got {
				if !within(got[i], c.want[i], 1e-12) || (i > 0 && got[i] < got[i-1]) {
					t.Fatalf("Monotone(%v) = %v, want %v", c.times, got, c.want)
				}
			}
		})
	}
}
