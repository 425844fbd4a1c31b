package bench

import (
	"math"
	"testing"
	"time"

	"github.com/collbench/collbench/bench/numeric"
)

// Each derived figure from synthetic timings, exactly.
func TestDeriveOverlap(t *testing.T) {
	cases := []struct {
		name                                     string
		commAlone, commOver, compAlone, compOver float64
		wall, busy                               float64
		commSlow, compSlow, coe, usage, exposed  float64
	}{
		{"both slowed", 100, 150, 200, 250, 1000, 800, 1.5, 1.25, 1.5, 0.2, 0.2},
		{"compute suffers more", 100, 110, 200, 400, 1000, 1000, 1.1, 2, 2, 0.5, 0},
		{"perfect overlap", 100, 100, 200, 200, 500, 500, 1, 1, 1, 0, 0},
		{"faster together (noise)", 100, 95, 200, 190, 400, 500, 0.95, 0.95, 1, 0, 0},
		{"comm exposed", 100, 120, 50, 60, 1000, 250, 1.2, 1.2, 1.2, 1 - 1/1.2, 0.75},
	}
	for _, c := range cases {
		f := DeriveOverlap(c.commAlone, c.commOver, c.compAlone, c.compOver, c.wall, c.busy)
		got := []float64{f.CommSlowdown, f.ComputeSlowdown, f.OverlapCoe, f.ProcessorUsage, f.ExposedComm}
		want := []float64{c.commSlow, c.compSlow, c.coe, c.usage, c.exposed}
		for i := range got {
			if math.Abs(got[i]-want[i]) > 1e-12 {
				t.Errorf("%s: figure %d = %v, want %v (%+v)", c.name, i, got[i], want[i], f)
			}
		}
	}
}

func TestRuns(t *testing.T) {
	for _, c := range []struct {
		target, per float64
		want        int
	}{{1e6, 1000, 1000}, {1e6, 3e5, 5}, {1e6, 0, 5}, {1e6, 1e-3, maxRuns}, {1000, 300, 5}, {10000, 300, 34}} {
		if got := runs(c.target, c.per); got != c.want {
			t.Errorf("runs(%v, %v) = %d, want %d", c.target, c.per, got, c.want)
		}
	}
}

func TestParseGEMM(t *testing.T) {
	w, err := ParseGEMM("1024, 4096,4096", numeric.Float32)
	if err != nil || w.M != 1024 || w.N != 4096 || w.K != 4096 || w.FLOPs() != 2*1024*4096*4096 {
		t.Fatalf("%+v %v", w, err)
	}
	if w.String() != "gemm 1024x4096x4096 float" || w.Footprint() != 4*(1024*4096+4096*4096+1024*4096) {
		t.Errorf("%q %d", w.String(), w.Footprint())
	}
	for _, bad := range []string{"", "1,2", "1,2,3,4", "0,1,1", "a,b,c", "1,2,-3", "1,1,2000000"} {
		if _, err := ParseGEMM(bad, numeric.Float32); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// FuzzParseGEMM: any text parses to a valid shape or fails, never panics.
func FuzzParseGEMM(f *testing.F) {
	for _, s := range []string{"4096,4096,4096", "1,2,3", " 7, 8 ,9", "1,2", "-1,2,3", "9999999999,1,1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		w, err := ParseGEMM(s, numeric.Bfloat16)
		if err != nil {
			return
		}
		if w.M < 1 || w.N < 1 || w.K < 1 || w.M > 1<<20 || w.N > 1<<20 || w.K > 1<<20 || w.FLOPs() <= 0 {
			t.Fatalf("%q parsed to %+v", s, w)
		}
	})
}

// A probe's reserve counts every phase Measure runs: 33 targets at
// Galvatron's cover of 4.
func TestOverlapDuration(t *testing.T) {
	o := OverlapOptions{Target: 100 * time.Millisecond, Cover: 4}
	if got := o.Duration(); got != 3300*time.Millisecond {
		t.Errorf("Duration = %v, want 3.3s", got)
	}
}
