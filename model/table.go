package model

import (
	"fmt"
	"math"
	"sort"
)

// Curve is one collective's measured times at one group size and layout,
// with its fit: the one curve every consumer charges (predict, and every
// export), so that one profile gives one time for one call everywhere.
// The table is the ground truth inside the measured range, with the sizes
// the fit sets aside as outliers given the fit's time; the fit carries it
// beyond.
type Curve struct {
	Op        string // collbench collective name: allreduce, allgather, …
	GroupSize int
	Layout    string // consecutive or strided
	BusFactor float64
	Bytes     []float64 // ascending
	// Times are µs: the measured medians, an outlier replaced by the
	// fit's time, then made non-decreasing (a larger message never takes
	// less time; a dip is noise) by the closest non-decreasing times in
	// relative terms (Monotone), not by carrying a high one forward.
	Times []float64
	Fit   Fit
	// Line is the one line t = α + β·S that stands for the curve in a
	// format with one latency and one bandwidth: the fit's own line, or
	// across a piecewise fit's segments the robust line through Times.
	Line Line
}

// NewCurve builds a curve from measured points: it sorts and fits them,
// replaces the outliers of the fit by its time, makes the times
// non-decreasing in size (Monotone), and finds the curve's single line.
func NewCurve(op string, groupSize int, layout string, busFactor float64, pts []Point) (*Curve, error) {
	pts = append([]Point(nil), pts...)
	sort.Slice(pts, func(i, j int) bool { return pts[i].Bytes < pts[j].Bytes })
	fit, err := FitCurve(pts, busFactor)
	if err != nil {
		return nil, fmt.Errorf("%s over %d ranks (%s): %w", op, groupSize, layout, err)
	}
	c := &Curve{Op: op, GroupSize: groupSize, Layout: layout, BusFactor: busFactor, Fit: fit, Line: fit.Line}
	got, fitted := make([]float64, len(pts)), make([]float64, len(pts))
	for i, p := range pts {
		got[i], fitted[i] = p.Time, fit.At(p.Bytes)
	}
	kept := make([]float64, len(pts))
	for i, out := range Outliers(got, fitted) {
		kept[i] = got[i]
		if out {
			kept[i] = fitted[i]
		}
		c.Bytes = append(c.Bytes, pts[i].Bytes)
	}
	c.Times = Monotone(kept)
	if len(fit.Segments) > 0 {
		if c.Line, err = FitLine(c.Points()); err != nil {
			return nil, fmt.Errorf("%s over %d ranks (%s): %w", op, groupSize, layout, err)
		}
	}
	return c, nil
}

// Monotone is the non-decreasing sequence closest to times in the least
// squares of their logarithms: adjacent sizes that disagree (a larger
// one measured faster) are pooled into their geometric mean, block by
// block (pool adjacent violators). A noisy size then moves its
// neighbours by the share its noise deserves, where carrying the
// highest time forward would charge every larger size the one noisy
// figure (a reduce-scatter of 4 MiB charged 73.3 ms for 36.6 measured).
// Times must be positive.
func Monotone(times []float64) []float64 {
	type block struct {
		sum float64 // of the logarithms
		n   int
	}
	mean := func(b block) float64 { return b.sum / float64(b.n) }
	var blocks []block
	for _, t := range times {
		blocks = append(blocks, block{math.Log(t), 1})
		for len(blocks) > 1 && mean(blocks[len(blocks)-2]) > mean(blocks[len(blocks)-1]) {
			last := blocks[len(blocks)-1]
			blocks = blocks[:len(blocks)-1]
			blocks[len(blocks)-1].sum += last.sum
			blocks[len(blocks)-1].n += last.n
		}
	}
	out := make([]float64, 0, len(times))
	for _, b := range blocks {
		if b.n == 1 { // as measured, to the last bit
			out = append(out, times[len(out)])
			continue
		}
		t := math.Exp(mean(b))
		for range b.n {
			out = append(out, t)
		}
	}
	return out
}

// Points is the curve's table as points.
func (c *Curve) Points() []Point {
	pts := make([]Point, len(c.Bytes))
	for i := range c.Bytes {
		pts[i] = Point{Bytes: c.Bytes[i], Time: c.Times[i]}
	}
	return pts
}

// LineBusBW is the bus bandwidth of the curve's line at large sizes
// (bus factor ÷ β), GB/s; 0 when the line's time does not grow.
func (c *Curve) LineBusBW() float64 {
	if !(c.Line.Beta > 0) {
		return 0
	}
	return c.BusFactor / c.Line.Beta * 1e-3
}

// Time is the expected µs per call for s bytes: linear interpolation
// between the measured sizes (monotone, since the table is), and outside
// them the fit scaled to meet the table's end, so the curve stays
// continuous.
func (c *Curve) Time(s float64) float64 {
	if s <= 0 {
		return 0
	}
	n := len(c.Bytes)
	if n == 0 {
		return c.Fit.At(s)
	}
	if s <= c.Bytes[0] {
		return c.Times[0] * c.Fit.At(s) / c.Fit.At(c.Bytes[0])
	}
	if s >= c.Bytes[n-1] {
		return c.Times[n-1] * c.Fit.At(s) / c.Fit.At(c.Bytes[n-1])
	}
	i := sort.SearchFloat64s(c.Bytes, s) // c.Bytes[i-1] < s <= c.Bytes[i]
	x0, x1, y0, y1 := c.Bytes[i-1], c.Bytes[i], c.Times[i-1], c.Times[i]
	return y0 + (y1-y0)*(s-x0)/(x1-x0)
}

// BusBW is the bus bandwidth in GB/s at s bytes.
func (c *Curve) BusBW(s float64) float64 {
	t := c.Time(s)
	if t <= 0 {
		return 0
	}
	return c.BusFactor * s / t * 1e-3
}
