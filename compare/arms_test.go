package compare

import (
	"math"
	"testing"
)

// rounds makes one arm's rounds of a single row from its times.
func rounds(size int64, times ...float64) []map[Row][2]float64 {
	var out []map[Row][2]float64
	for _, t := range times {
		out = append(out, map[Row][2]float64{{"allreduce float sum", size}: {t, 1000 / t}})
	}
	return out
}

func TestArmVerdicts(t *testing.T) {
	base := rounds(1024, 10, 10.2, 9.9, 10.1, 10, 9.8, 10.3)
	cases := []struct {
		name  string
		arm   []map[Row][2]float64
		want  string
		ratio float64
	}{
		{"slower, wholly apart", rounds(1024, 12, 12.1, 11.9, 12.2, 12, 11.8, 12.3), ArmSlower, 1.2},
		{"faster, wholly apart", rounds(1024, 8, 8.2, 7.9, 8.1, 8, 7.8, 8.3), ArmFaster, 0.8},
		{"apart but within the threshold", rounds(1024, 10.35, 10.45, 10.4, 10.5, 10.4, 10.45, 10.6), ArmSame, 1.04},
		{"beyond the threshold, not significant", rounds(1024, 9, 14, 9.5, 13, 10, 12, 9.7), ArmSame, 1.0},
	}
	for _, c := range cases {
		rows := Arms([][]map[Row][2]float64{base, c.arm}, 0, ArmOptions{Threshold: 0.05, Alpha: 0.01})
		if len(rows) != 1 || len(rows[0].Figures) != 2 {
			t.Fatalf("%s: rows %+v", c.name, rows)
		}
		a, b := rows[0].Figures[0], rows[0].Figures[1]
		if a.Verdict != ArmBase || !math.IsNaN(a.P) || a.Ratio != 1 {
			t.Errorf("%s: base figure %+v", c.name, a)
		}
		if b.Verdict != c.want {
			t.Errorf("%s: verdict %q (ratio %.3f, p %.3g), want %q", c.name, b.Verdict, b.Ratio, b.P, c.want)
		}
		if c.ratio != 1.0 && math.Abs(b.Ratio-c.ratio) > 0.01 {
			t.Errorf("%s: ratio %.3f, want %.2f", c.name, b.Ratio, c.ratio)
		}
		// busbw follows the median time: 1000/t for every round.
		if math.Abs(b.BusBW-1000/b.Median) > 1e-9 {
			t.Errorf("%s: busbw %v at a median of %v", c.name, b.BusBW, b.Median)
		}
	}
}

// A failed arm (no rounds) is absent from the rows; an arm without the
// base arm beside it has no ratio and no verdict.
func TestArmsWithoutRounds(t *testing.T) {
	rows := Arms([][]map[Row][2]float64{nil, rounds(64, 1, 2, 3)}, 0, ArmOptions{Threshold: 0.05, Alpha: 0.01})
	if len(rows) != 1 || len(rows[0].Figures) != 1 {
		t.Fatalf("rows %+v", rows)
	}
	if f := rows[0].Figures[0]; f.Arm != 1 || f.Ratio != 0 || f.Verdict != "" {
		t.Errorf("figure %+v, want arm 1 with neither ratio nor verdict", f)
	}
}

func TestMedianInterval(t *testing.T) {
	cases := []struct {
		v                []float64
		low, high, level float64
	}{
		// Five rounds cannot reach 95 %: the whole range, 1 − 2/32.
		{[]float64{5, 1, 4, 2, 3}, 1, 5, 0.9375},
		{[]float64{6, 1, 4, 2, 3, 5}, 1, 6, 0.96875},
		// Nine: the 2nd smallest to the 2nd largest, 1 − 2·10/512.
		{[]float64{9, 8, 7, 6, 5, 4, 3, 2, 1}, 2, 8, 1 - 20.0/512},
	}
	for _, c := range cases {
		low, high, level := medianInterval(c.v)
		if low != c.low || high != c.high || math.Abs(level-c.level) > 1e-12 {
			t.Errorf("medianInterval(%v) = %v–%v at %v, want %v–%v at %v", c.v, low, high, level, c.low, c.high, c.level)
		}
	}
}

func TestBestPerBand(t *testing.T) {
	// Arm 1 is twice as fast at small sizes, arm 2 at large ones.
	mk := func(small, large float64) []map[Row][2]float64 {
		var out []map[Row][2]float64
		for i := 0; i < 6; i++ {
			j := float64(i) * 0.01
			out = append(out, map[Row][2]float64{
				{"a", 1024}: {small + j, 1}, {"a", 4096}: {small + j, 1}, {"a", 64 << 20}: {large + j, 1}})
		}
		return out
	}
	rows := Arms([][]map[Row][2]float64{mk(10, 100), mk(5, 100), mk(10, 50)}, 0, ArmOptions{Threshold: 0.05, Alpha: 0.01})
	bands := BestPerBand(rows, 3)
	if len(bands) != 2 {
		t.Fatalf("bands %+v, want the small and the large one", bands)
	}
	if b := bands[0]; b.Best != 1 || math.Abs(b.Ratio-0.5) > 0.01 || b.Faster != 2 || b.Rows != 2 {
		t.Errorf("small band %+v, want arm 1 at 0.5×, faster at both sizes", b)
	}
	if b := bands[1]; b.Best != 2 || math.Abs(b.Ratio-0.5) > 0.01 || b.Faster != 1 {
		t.Errorf("large band %+v, want arm 2 at 0.5×", b)
	}
}

// With the first arm failed, the next one is the base of the ratios.
func TestArmsAgainstAnotherBase(t *testing.T) {
	rows := Arms([][]map[Row][2]float64{nil, rounds(64, 10, 10.1, 9.9, 10, 10.2, 9.8), rounds(64, 20, 20.1, 19.9, 20, 20.2, 19.8)}, 1,
		ArmOptions{Threshold: 0.05, Alpha: 0.01})
	if len(rows) != 1 || len(rows[0].Figures) != 2 {
		t.Fatalf("rows %+v", rows)
	}
	if f := rows[0].Figures[0]; f.Arm != 1 || f.Verdict != ArmBase || f.Ratio != 1 {
		t.Errorf("base figure %+v", f)
	}
	if f := rows[0].Figures[1]; f.Arm != 2 || f.Verdict != ArmSlower || math.Abs(f.Ratio-2) > 1e-9 {
		t.Errorf("figure %+v, want arm 2 slower at 2×", f)
	}
}
