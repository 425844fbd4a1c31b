package tune

import (
	"bytes"
	"fmt"
	"math"
	"sort"

	"github.com/collbench/collbench/ab"
	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/compare"
	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/tuner"
)

// verdict is one size's outcome of the search.
type verdict struct {
	size   int64
	win    bool
	arm    int // the winner, an index into tuning.arms
	choice tuner.Choice
	ratio  float64
	own    tuner.Choice // the library's own choice, as logged
	ownOK  bool
}

// band is a range of sizes with one choice.
type band struct {
	from, to  uint64
	sizes     []int64
	choice    tuner.Choice
	own       bool
	arm       int
	predicted float64
	realised  *float64
	held      *bool
	dropped   string
}

// judge gives every size its verdict (rank 0): among the settings
// significantly faster than the library's own beyond the threshold, the
// false discovery rate held over every size and setting, the previous
// size's winner, else the one with the lowest median, by the choice it
// was logged to make there.
func (t *tuning) judge(out *ab.Outcome) {
	arms := t.measuredArms()
	times := make([][]map[compare.Row][2]float64, len(arms))
	for i := range arms {
		if out.Arms[i].Failed == "" {
			times[i] = ab.Times(out.Arms[i])
		}
	}
	rows := compare.Arms(times, 0, compare.ArmOptions{Threshold: t.o.Threshold, Alpha: t.o.Alpha, Correction: compare.BH})
	bySize := map[int64]compare.ArmRow{}
	for _, r := range rows {
		if _, ok := bySize[r.Size]; !ok {
			bySize[r.Size] = r
		}
	}
	var vs []verdict
	prev := -1 // the previous size's winner, among the measured arms
	for _, size := range t.sizes {
		row, ok := bySize[size]
		if !ok {
			continue
		}
		v := verdict{size: size, arm: -1, ratio: 1}
		v.own, v.ownOK = t.arms[0].choices[size]
		ts := document.TuneSize{Size: size, Arms: []document.ABFigure{}, Winner: -1, Ratio: 1}
		var best *compare.ArmFigure
		for i, f := range row.Figures {
			fig := ab.Figure(f)
			fig.Arm = t.index(arms[f.Arm])
			ts.Arms = append(ts.Arms, fig)
			if f.Verdict == compare.ArmFaster && (best == nil || f.Median < best.Median) && (best == nil || best.Arm != prev) {
				best = &row.Figures[i]
			}
			// The previous size's winner stays the winner wherever it is
			// significantly faster too, so that a band is not cut in two
			// by settings the rounds cannot tell apart.
			if f.Verdict == compare.ArmFaster && f.Arm == prev {
				best = &row.Figures[i]
			}
		}
		prev = -1
		if best != nil {
			prev = best.Arm
		}
		if best != nil {
			w := arms[best.Arm]
			ch, logged := w.choices[size]
			switch {
			case !logged:
				ts.Note = fmt.Sprintf("%s was faster, but its log has no call of %d bytes to take its choice from", w.Label, size)
			case v.ownOK && ch == v.own:
				ts.Note = fmt.Sprintf("%s was faster making the library's own choice (%s): not a choice to write", w.Label, ch)
			default:
				v.win, v.arm, v.choice, v.ratio = true, t.index(w), ch, best.Ratio
				c := document.TuneChoice(ch)
				ts.Winner, ts.Choice, ts.Ratio = v.arm, &c, best.Ratio
			}
		}
		t.rec.Sizes = append(t.rec.Sizes, ts)
		vs = append(vs, v)
	}
	t.verdicts = vs
	t.bands = t.makeBands(vs)
}

// index is a's place among the tuning's arms.
func (t *tuning) index(a *arm) int {
	for i, b := range t.arms {
		if a == b {
			return i
		}
	}
	return -1
}

// makeBands merges consecutive sizes of one outcome into bands: a
// winner's choice, or the library's own (on NCCL, by its choice, which
// the file pins). A band ends half-way to the next size measured; a
// winner's stops at the first and last sizes measured, the library's own
// reach 0 and 2^64−1. On NCCL a winner's band at an end gets the
// library's own choice pinned beyond it: the example plugin runs a call
// no row matches on one channel.
func (t *tuning) makeBands(vs []verdict) []band {
	if len(vs) == 0 {
		return nil
	}
	key := func(v verdict) string {
		switch {
		case v.win:
			return "win " + v.choice.String()
		case t.backend == backendNCCL && v.ownOK:
			return "own " + v.own.String()
		case t.backend == backendNCCL:
			return "own unknown"
		}
		return "own"
	}
	last := len(vs) - 1
	var out []band
	for i := 0; i <= last; {
		j := i
		for j < last && key(vs[j+1]) == key(vs[i]) {
			j++
		}
		b := band{own: !vs[i].win, arm: vs[i].arm, choice: vs[i].choice, predicted: 1}
		if b.own {
			b.choice = vs[i].own
		}
		logSum := 0.0
		for k := i; k <= j; k++ {
			b.sizes = append(b.sizes, vs[k].size)
			logSum += math.Log(vs[k].ratio)
		}
		b.predicted = math.Exp(logSum / float64(j-i+1))
		switch {
		case i > 0:
			b.from = midpoint(vs[i-1].size, vs[i].size) + 1
		case b.own:
			b.from = 0
		default:
			b.from = uint64(vs[i].size)
		}
		switch {
		case j < last:
			b.to = midpoint(vs[j].size, vs[j+1].size)
		case b.own:
			b.to = math.MaxUint64
		default:
			b.to = uint64(vs[j].size)
		}
		out = append(out, b)
		i = j + 1
	}
	if t.backend == backendNCCL {
		if first := out[0]; !first.own && first.from > 0 && vs[0].ownOK {
			out = append([]band{{from: 0, to: first.from - 1, choice: vs[0].own, own: true, arm: -1, predicted: 1}}, out...)
		}
		if end := out[len(out)-1]; !end.own && end.to < math.MaxUint64 && vs[last].ownOK {
			out = append(out, band{from: end.to + 1, to: math.MaxUint64, choice: vs[last].own, own: true, arm: -1, predicted: 1})
		}
	}
	return out
}

// midpoint is half-way between two sizes, as optimize_config.py splits
// its ranges.
func midpoint(a, b int64) uint64 { return uint64(a) + uint64(b-a)/2 }

// fileRows are the bands as the tuner file's rows: every winner's band,
// and on NCCL every band of its own choice pinned (the example plugin
// would run those calls on one channel), where its choice is known.
func (t *tuning) fileRows(bands []band) []tuner.Row {
	var rows []tuner.Row
	for _, b := range bands {
		if b.own && (t.backend != backendNCCL || b.choice.Algorithm == "") {
			continue
		}
		ch := b.choice.Channels
		if t.backend == backendHost {
			ch = 1
		}
		rows = append(rows, tuner.Row{Collective: t.rec.Collective, MinBytes: b.from, MaxBytes: b.to, Algorithm: b.choice.Algorithm,
			Protocol: b.choice.Protocol, Channels: ch, Nodes: t.rec.Nodes, Ranks: t.rec.Ranks, PipeOps: tuner.Any,
			RegBuff: tuner.Any, Comment: t.why(b)})
	}
	return rows
}

// why is a row's comment: what was measured, or why it is pinned.
func (t *tuning) why(b band) string {
	span := sizeSpan(b)
	if b.own {
		return fmt.Sprintf("%s: the library's own choice, pinned (NCCL's example plugin runs a call no row matches on one channel)", span)
	}
	s := fmt.Sprintf("%s: %s, %.3f× the library's own time in the search", span, b.choice, b.predicted)
	if b.realised != nil {
		s += fmt.Sprintf(", %.3f× in the proof", *b.realised)
	}
	return s
}

// sizeSpan names a band's measured sizes.
func sizeSpan(b band) string {
	if len(b.sizes) == 0 {
		return fmt.Sprintf("%d–%d B (not measured)", b.from, b.to)
	}
	lo, hi := b.sizes[0], b.sizes[len(b.sizes)-1]
	if lo == hi {
		return "measured at " + bench.FormatSize(lo)
	}
	return fmt.Sprintf("measured at %s–%s", bench.FormatSize(lo), bench.FormatSize(hi))
}

// recordBands writes the bands and the file's rows into the record.
func (t *tuning) recordBands(rows []tuner.Row) {
	t.rec.Bands = t.rec.Bands[:0]
	for _, b := range t.bands {
		d := document.TuneBand{From: b.from, To: b.to, Sizes: b.sizes, Choice: document.TuneChoice(b.choice), Own: b.own,
			Predicted: b.predicted, Realised: b.realised, Held: b.held, Dropped: b.dropped}
		if d.Sizes == nil {
			d.Sizes = []int64{}
		}
		t.rec.Bands = append(t.rec.Bands, d)
	}
	t.rec.Rows = t.rec.Rows[:0]
	for _, r := range rows {
		t.rec.Rows = append(t.rec.Rows, document.TunerRow{Collective: r.Collective, MinBytes: r.MinBytes, MaxBytes: r.MaxBytes,
			TuneChoice: document.TuneChoice{Algorithm: r.Algorithm, Protocol: r.Protocol, Channels: r.Channels},
			Nodes:      r.Nodes, Ranks: r.Ranks, PipeOps: r.PipeOps, RegBuff: r.RegBuff, Why: r.Comment})
	}
}

// logged is an arm's choices in size order, as a record holds them.
func logged(m map[int64]tuner.Choice) []document.TuneLogged {
	out := []document.TuneLogged{}
	for size, c := range m {
		out = append(out, document.TuneLogged{Size: size, TuneChoice: document.TuneChoice(c)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Size < out[j].Size })
	return out
}

// measured is every measured arm at every size, as optimize_config.py's
// input: the choice it was logged to make, its median time and bus
// bandwidth, and its time ÷ the library's own as the cost.
func (t *tuning) measured() []byte {
	var rows []tuner.Measured
	for _, s := range t.rec.Sizes {
		for _, f := range s.Arms {
			a := t.arms[f.Arm]
			c, ok := a.choices[s.Size]
			if !ok {
				continue
			}
			if t.backend == backendHost {
				c.Channels = 1
			}
			rows = append(rows, tuner.Measured{Collective: t.rec.Collective, Bytes: uint64(s.Size), Choice: c, Nodes: t.rec.Nodes,
				Ranks: t.rec.Ranks, CostMetric: f.Ratio, BandwidthGB: f.BusBW, LatencyUS: f.Median})
		}
	}
	var b bytes.Buffer
	_ = tuner.WriteMeasured(&b, rows)
	return b.Bytes()
}
