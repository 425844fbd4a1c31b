package compare

import (
	"fmt"
	"math"
	"sort"

	"github.com/montanaflynn/stats"

	"github.com/collbench/collbench/document"
)

// Verdicts of an arm against the base arm of an A/B run: the first arm
// that ran.
const (
	ArmBase   = "base"   // the arm the others are measured against
	ArmSame   = "same"   // within the threshold, or not significant
	ArmFaster = "faster" // significantly faster by more than the threshold
	ArmSlower = "slower" // significantly slower by more than the threshold
)

// Row names one row of a run: the collective, type, reduction and root,
// and its size. Only the out-of-place time is judged.
type Row struct {
	Name string
	Size int64
}

// RowTimes is a run's out-of-place time (µs) and bus bandwidth (GB/s) by
// row; rows without a size or a time are left out.
func RowTimes(r *document.Run) map[Row][2]float64 {
	m := map[Row][2]float64{}
	for _, res := range r.Results {
		if res.Size <= 0 || !(res.OutOfPlace.Time > 0) {
			continue
		}
		name := fmt.Sprintf("%s %s %s", r.Collective, res.Type, res.RedOp)
		if res.Root >= 0 {
			name += fmt.Sprintf(" root %d", res.Root)
		}
		m[Row{name, res.Size}] = [2]float64{res.OutOfPlace.Time, res.OutOfPlace.BusBW}
	}
	return m
}

// ArmFigure is one arm at one row: its rounds' median with an interval,
// and how it stands against the first arm.
type ArmFigure struct {
	Arm       int     // index of the arm
	Rounds    int     // rounds that measured this row
	Median    float64 // µs, the median of the rounds' times
	Low, High float64 // the median's distribution-free interval, µs
	Level     float64 // that interval's confidence (at least 0.95 from 6 rounds)
	BusBW     float64 // GB/s at the median
	Ratio     float64 // Median ÷ the base arm's; 0 without the base arm
	P         float64 // rank-sum p-value against the base arm's rounds; NaN for the base arm
	// Adjusted is P adjusted for every other test of the table
	// (ArmOptions.Correction); the verdict holds it against alpha.
	Adjusted float64
	Verdict  string
}

// ArmRow is one row judged across the arms.
type ArmRow struct {
	Row
	Figures []ArmFigure // in arm order; arms without rounds at this row are absent
}

// ArmOptions set what counts as a difference: a change of time beyond
// Threshold (relative, e.g. 0.05) at a rank-sum p below Alpha once
// adjusted for the table's other tests by Correction (none when empty).
type ArmOptions struct {
	Threshold, Alpha float64
	Correction       Correction
}

// Arms judges each arm's rounds against the base arm's, row by row.
// rounds[a] holds arm a's rounds, each a run's RowTimes; a failed arm
// has none. The base arm's median is the base of every ratio. Every
// arm's test at every row is one of the table's tests: their p-values
// are adjusted together before any verdict is given.
func Arms(rounds [][]map[Row][2]float64, base int, o ArmOptions) []ArmRow {
	rows := map[Row]bool{}
	for _, arm := range rounds {
		for _, r := range arm {
			for k := range r {
				rows[k] = true
			}
		}
	}
	var out []ArmRow
	for k := range rows {
		ar := ArmRow{Row: k}
		var baseTimes []float64
		baseMedian := 0.0
		if base >= 0 && base < len(rounds) {
			for _, r := range rounds[base] {
				if v, ok := r[k]; ok {
					baseTimes = append(baseTimes, v[0])
				}
			}
			if len(baseTimes) > 0 {
				baseMedian = median(baseTimes)
			}
		}
		for a, arm := range rounds {
			var times, bws []float64
			for _, r := range arm {
				if v, ok := r[k]; ok {
					times = append(times, v[0])
					bws = append(bws, v[1]*v[0])
				}
			}
			if len(times) == 0 {
				continue
			}
			f := ArmFigure{Arm: a, Rounds: len(times), P: math.NaN(), Adjusted: math.NaN()}
			f.Median = median(times)
			f.Low, f.High, f.Level = medianInterval(times)
			if f.Median > 0 {
				// busbw × time is the same for every round of a row;
				// its mean over the figures, at the median time.
				f.BusBW = mean(bws) / f.Median
			}
			if a == base {
				f.Ratio, f.Verdict = 1, ArmBase
			} else if baseMedian > 0 {
				f.Ratio = f.Median / baseMedian
				f.P = RankSumP(baseTimes, times)
			}
			ar.Figures = append(ar.Figures, f)
		}
		out = append(out, ar)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].Size < out[j].Size
	})
	judgeAll(out, o)
	return out
}

// judgeAll adjusts every test of the table for the others and gives each
// figure beside the base its verdict.
func judgeAll(rows []ArmRow, o ArmOptions) {
	var ps []float64
	for _, r := range rows {
		for _, f := range r.Figures {
			if !math.IsNaN(f.P) {
				ps = append(ps, f.P)
			}
		}
	}
	adj := Adjust(ps, o.Correction)
	k := 0
	for i := range rows {
		for j := range rows[i].Figures {
			f := &rows[i].Figures[j]
			if math.IsNaN(f.P) {
				continue
			}
			f.Adjusted = adj[k]
			k++
			f.Verdict = armVerdict(*f, o)
		}
	}
}

// Tests counts the table's tests: the figures with a p-value.
func Tests(rows []ArmRow) int {
	n := 0
	for _, r := range rows {
		for _, f := range r.Figures {
			if !math.IsNaN(f.P) {
				n++
			}
		}
	}
	return n
}

func armVerdict(f ArmFigure, o ArmOptions) string {
	switch {
	case math.IsNaN(f.Adjusted) || f.Adjusted >= o.Alpha:
		return ArmSame
	case f.Ratio > 1+o.Threshold:
		return ArmSlower
	case f.Ratio < 1-o.Threshold:
		return ArmFaster
	}
	return ArmSame
}

// median and mean of a non-empty sample (montanaflynn/stats fails only
// on an empty one, which no caller passes).
func median(v []float64) float64 {
	m, _ := stats.Median(v)
	return m
}

func mean(v []float64) float64 {
	m, _ := stats.Mean(v)
	return m
}

// medianInterval is the distribution-free interval of the median from the
// order statistics: the k-th smallest to the k-th largest, with the
// largest k whose coverage 1 − 2·P(B < k), B ~ Binomial(n, ½), is at least
// 95 %; with too few values for that, the whole range and its coverage.
func medianInterval(v []float64) (low, high, level float64) {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	n := len(s)
	cover := func(k int) float64 { // P(s[k-1] ≤ median ≤ s[n-k])
		below := 0.0
		for i := 0; i < k; i++ {
			below += binomial(n, i)
		}
		return 1 - 2*below/math.Pow(2, float64(n))
	}
	k := 1
	for k+1 <= (n+1)/2 && cover(k+1) >= 0.95 {
		k++
	}
	return s[k-1], s[n-k], cover(k)
}

func binomial(n, k int) float64 {
	r := 1.0
	for i := 1; i <= k; i++ {
		r = r * float64(n-k+i) / float64(i)
	}
	return r
}

// Band is a range of sizes and the arm that did best in it.
type Band struct {
	Name     string
	From, To int64 // bytes, To exclusive; 0 = no upper end
	Best     int   // arm index; -1 when no arm has figures in the band
	// Ratio is the best arm's geometric mean ratio to the base arm
	// over the band's rows; Faster counts the rows where it was
	// significantly faster.
	Ratio  float64
	Faster int
	Rows   int
}

// Bands are the size ranges the footer names a best arm for: latency-bound
// calls, the middle where NCCL's protocols hand over, and bandwidth-bound
// calls.
var Bands = []Band{
	{Name: "below 64 KiB", From: 0, To: 64 << 10},
	{Name: "64 KiB to 16 MiB", From: 64 << 10, To: 16 << 20},
	{Name: "16 MiB and up", From: 16 << 20},
}

// BestPerBand names, for each band with rows, the arm whose times were
// lowest relative to the base arm (geometric mean of its ratios over the
// rows both measured); the base arm is best when no other is below 1.
func BestPerBand(rows []ArmRow, arms int) []Band {
	var out []Band
	for _, b := range Bands {
		logSum := make([]float64, arms)
		count := make([]int, arms)
		faster := make([]int, arms)
		n := 0
		for _, r := range rows {
			if r.Size < b.From || (b.To > 0 && r.Size >= b.To) {
				continue
			}
			n++
			for _, f := range r.Figures {
				if f.Ratio > 0 {
					logSum[f.Arm] += math.Log(f.Ratio)
					count[f.Arm]++
					if f.Verdict == ArmFaster {
						faster[f.Arm]++
					}
				}
			}
		}
		if n == 0 {
			continue
		}
		band := b
		band.Best, band.Rows = -1, n
		for a := 0; a < arms; a++ {
			if count[a] == 0 {
				continue
			}
			g := math.Exp(logSum[a] / float64(count[a]))
			if band.Best < 0 || g < band.Ratio {
				band.Best, band.Ratio, band.Faster = a, g, faster[a]
			}
		}
		out = append(out, band)
	}
	return out
}
