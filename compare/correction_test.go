package compare

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// The adjusted p-values R's p.adjust gives for the same inputs.
func TestAdjust(t *testing.T) {
	five := []float64{0.01, 0.02, 0.03, 0.04, 0.05}
	ten := []float64{0.001, 0.008, 0.039, 0.041, 0.042, 0.06, 0.074, 0.205, 0.212, 0.216}
	nan := math.NaN()
	cases := []struct {
		name string
		ps   []float64
		c    Correction
		want []float64
	}{
		{"holm, five", five, Holm, []float64{0.05, 0.08, 0.09, 0.09, 0.09}},
		{"bh, five", five, BH, []float64{0.05, 0.05, 0.05, 0.05, 0.05}},
		{"holm, ten", ten, Holm, []float64{0.01, 0.072, 0.312, 0.312, 0.312, 0.312, 0.312, 0.615, 0.615, 0.615}},
		{"bh, ten", ten, BH, []float64{0.01, 0.04, 0.084, 0.084, 0.084, 0.1, 0.10571428571428572, 0.216, 0.216, 0.216}},
		{"none", ten, NoCorrection, ten},
		{"order kept, NaN not a test", []float64{0.04, nan, 0.01}, Holm, []float64{0.04, nan, 0.02}},
		{"capped at 1", []float64{0.6, 0.7}, Holm, []float64{1, 1}},
		{"empty", nil, BH, []float64{}},
	}
	for _, c := range cases {
		got := Adjust(c.ps, c.c)
		if len(got) != len(c.want) {
			t.Fatalf("%s: %v", c.name, got)
		}
		for i := range got {
			if math.IsNaN(c.want[i]) != math.IsNaN(got[i]) || (!math.IsNaN(got[i]) && math.Abs(got[i]-c.want[i]) > 1e-12) {
				t.Errorf("%s: %v, want %v", c.name, got, c.want)
				break
			}
		}
	}
}

func TestRoundsNeeded(t *testing.T) {
	cases := []struct {
		alpha float64
		tests int
		c     Correction
		from  int
		want  int
	}{
		{0.01, 1, Holm, 1, 5},  // 5 a side: 0.0079
		{0.01, 24, Holm, 7, 8}, // 7 a side: 0.00058 × 24 = 0.014; 8: 0.00016 × 24
		{0.01, 24, BH, 7, 8},   // a lone difference is adjusted alike
		{0.01, 24, NoCorrection, 7, 7},
		{0.01, 600, Holm, 1, 10}, // 2/C(20,10) = 1.1e-5 × 600
		{0.05, 1, Holm, 9, 9},    // never below from
	}
	for _, c := range cases {
		if got := RoundsNeeded(c.alpha, c.tests, c.c, c.from); got != c.want {
			t.Errorf("RoundsNeeded(%g, %d, %s, %d) = %d, want %d", c.alpha, c.tests, c.c, c.from, got, c.want)
		}
	}
}

// A hundred arms that change nothing, twenty sizes, ten rounds each, under
// noise of several shapes (a machine's: skewed, heavy-tailed, drifting
// over the rounds, quantised into ties): with the table's tests adjusted,
// no arm is called faster or slower in at least 19 of 20 repetitions,
// by either method; unadjusted, about 20 are in every table.
func TestManyIdenticalArmsAgree(t *testing.T) {
	noises := map[string]func(r *rand.Rand, round int) float64{
		"normal":       func(r *rand.Rand, _ int) float64 { return 100 + 3*r.NormFloat64() },
		"log-normal":   func(r *rand.Rand, _ int) float64 { return 100 * math.Exp(0.05*r.NormFloat64()) },
		"heavy tail":   func(r *rand.Rand, _ int) float64 { return 100 + math.Abs(r.NormFloat64()/r.NormFloat64()) },
		"drift":        func(r *rand.Rand, round int) float64 { return 100 + 2*float64(round) + r.NormFloat64() },
		"ties (0.1µs)": func(r *rand.Rand, _ int) float64 { return math.Round(10*(10+0.3*r.NormFloat64())) / 10 },
	}
	const arms, sizes, rounds, reps = 100, 20, 10, 20
	for name, noise := range noises {
		for _, c := range []Correction{Holm, BH} {
			r := rand.New(rand.NewPCG(1, uint64(len(name))))
			told := 0
			raw := 0
			for rep := 0; rep < reps; rep++ {
				table := simulate(r, arms, sizes, rounds, func(arm, round int) float64 { return noise(r, round) })
				rows := Arms(table, 0, ArmOptions{Threshold: 0, Alpha: 0.01, Correction: c})
				if n := verdicts(rows); n > 0 {
					told++
				}
				for _, row := range rows {
					for _, f := range row.Figures {
						if f.P < 0.01 {
							raw++
						}
					}
				}
			}
			if told > 1 {
				t.Errorf("%s, %s: identical arms told apart in %d of %d tables", name, c, told, reps)
			}
			t.Logf("%s, %s: %d of %d tables with a verdict; unadjusted %.1f verdicts a table", name, c, told, reps, float64(raw)/reps)
		}
	}
}

// Among thirty arms, one 20 % slower and one 20 % faster at every size
// are still found, with the right sign, and nothing else is.
func TestDifferentArmsStillFound(t *testing.T) {
	const arms, sizes = 30, 20
	for _, c := range []Correction{Holm, BH} {
		r := rand.New(rand.NewPCG(7, 7))
		rounds := RoundsNeeded(0.01, (arms-1)*sizes, c, 7)
		table := simulate(r, arms, sizes, rounds, func(arm, round int) float64 {
			f := 1.0
			switch arm {
			case 5:
				f = 1.2
			case 9:
				f = 0.8
			}
			return f * (100 + 2*r.NormFloat64())
		})
		rows := Arms(table, 0, ArmOptions{Threshold: 0.05, Alpha: 0.01, Correction: c})
		for _, row := range rows {
			for _, f := range row.Figures {
				want := ArmSame
				switch f.Arm {
				case 0:
					want = ArmBase
				case 5:
					want = ArmSlower
				case 9:
					want = ArmFaster
				}
				if f.Verdict != want {
					t.Errorf("%s, %d rounds, size %d, arm %d: %s (ratio %.3f, p %.2g, adjusted %.2g), want %s",
						c, rounds, row.Size, f.Arm, f.Verdict, f.Ratio, f.P, f.Adjusted, want)
				}
			}
		}
	}
}

// simulate makes arms × rounds runs of sizes rows, each time drawn by
// time(arm, round), the arms taking turns round after round.
func simulate(r *rand.Rand, arms, sizes, rounds int, time func(arm, round int) float64) [][]map[Row][2]float64 {
	table := make([][]map[Row][2]float64, arms)
	for round := 0; round < rounds; round++ {
		for a := 0; a < arms; a++ {
			run := map[Row][2]float64{}
			for s := 0; s < sizes; s++ {
				t := time(a, round)
				run[Row{"allreduce float sum", int64(1024) << s}] = [2]float64{t, 1000 / t}
			}
			table[a] = append(table[a], run)
		}
	}
	_ = r
	return table
}

// verdicts counts the figures called faster or slower.
func verdicts(rows []ArmRow) int {
	n := 0
	for _, row := range rows {
		for _, f := range row.Figures {
			if f.Verdict == ArmFaster || f.Verdict == ArmSlower {
				n++
			}
		}
	}
	return n
}

func ExampleAdjust() {
	fmt.Println(Adjust([]float64{0.004, 0.03, 0.5}, Holm))
	// Output: [0.012 0.06 0.5]
}
