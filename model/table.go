package model

import (
	"fmt"
	"sort"
)

// Curve is one collective's measured times at one group size and layout,
// with its fit. The table is the ground truth inside the measured range;
// the fit carries it beyond.
type Curve struct {
	Op        string // collbench collective name: allreduce, allgather, …
	GroupSize int
	Layout    string // consecutive or strided
	BusFactor float64
	Bytes     []float64 // ascending
	Times     []float64 // µs, made non-decreasing
	Fit       Fit
}

// NewCurve builds a curve from measured points: it sorts them, makes the
// times non-decreasing in size (a larger message never takes less time;
// a dip is noise) and fits them.
func NewCurve(op string, groupSize int, layout string, busFactor float64, pts []Point) (*Curve, error) {
	pts = append([]Point(nil), pts...)
	sort.Slice(pts, func(i, j int) bool { return pts[i].Bytes < pts[j].Bytes })
	fit, err := FitCurve(pts, busFactor)
	if err != nil {
		return nil, fmt.Errorf("%s over %d ranks (%s): %w", op, groupSize, layout, err)
	}
	c := &Curve{Op: op, GroupSize: groupSize, Layout: layout, BusFactor: busFactor, Fit: fit}
	floor := 0.0
	for _, p := range pts {
		floor = max(floor, p.Time)
		c.Bytes = append(c.Bytes, p.Bytes)
		c.Times = append(c.Times, floor)
	}
	return c, nil
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
