package model

import (
	"errors"
	"fmt"
	"math"
	"sort"
)

// Point is one measured size: bytes and µs per call.
type Point struct {
	Bytes float64
	Time  float64
}

// Line is t(S) = Alpha + Beta·S in µs, with Beta in µs per byte.
type Line struct {
	Alpha float64 `json:"alpha_us"`
	Beta  float64 `json:"beta_us_per_byte"`
}

// At is the line's time for s bytes.
func (l Line) At(s float64) float64 { return l.Alpha + l.Beta*s }

// Segment is a line that holds from From bytes up to To bytes.
type Segment struct {
	From float64 `json:"from_bytes"`
	To   float64 `json:"to_bytes"`
	Line
}

// Fit is the cost model of one curve.
type Fit struct {
	// Model is "alpha_beta" (one line) or "piecewise" (Segments, split
	// where the curve bends, as NCCL's protocol switches make it).
	Model  string `json:"model"`
	Method string `json:"method"` // wls_relative: weights 1/t², so every size counts alike
	// Alpha and Beta are the large-message line: the only line, or the
	// last segment. Busbw∞ and n½ are derived from it.
	Line
	BusBWInf float64   `json:"busbw_inf_GBps"` // bus factor / Beta, in GB/s
	NHalf    float64   `json:"n_half_bytes"`   // Hockney's n½ = Alpha/Beta: half of the peak algbw
	R2       float64   `json:"r2"`             // coefficient of determination of t
	MaxRel   float64   `json:"max_rel_err"`    // largest |model−measured|/measured
	Range    [2]int64  `json:"range_bytes"`    // the sizes the fit saw
	Points   int       `json:"points"`
	Segments []Segment `json:"segments,omitempty"`
}

// At is the fitted time for s bytes.
func (f *Fit) At(s float64) float64 {
	if len(f.Segments) == 0 {
		return f.Line.At(s)
	}
	for _, seg := range f.Segments[:len(f.Segments)-1] {
		if s < seg.To {
			return seg.At(s)
		}
	}
	return f.Segments[len(f.Segments)-1].At(s)
}

// Tolerance is the largest relative error a single line may leave before
// a two-segment fit is tried.
const Tolerance = 0.05

// minSegment is the fewest points a segment of a piecewise fit rests on.
const minSegment = 3

// FitCurve fits t(S) = α + β·S to pts by relative-error-weighted least
// squares, and fits two segments instead when one line misses some size
// by more than Tolerance and two do markedly better. busFactor turns the
// algorithm bandwidth 1/β into bus bandwidth.
func FitCurve(pts []Point, busFactor float64) (Fit, error) {
	pts = append([]Point(nil), pts...)
	sort.Slice(pts, func(i, j int) bool { return pts[i].Bytes < pts[j].Bytes })
	if err := checkPoints(pts); err != nil {
		return Fit{}, err
	}
	line, err := FitLine(pts)
	if err != nil {
		return Fit{}, err
	}
	f := Fit{Model: "alpha_beta", Method: "wls_relative", Line: line, Points: len(pts),
		Range: [2]int64{int64(pts[0].Bytes), int64(pts[len(pts)-1].Bytes)}}
	f.R2, f.MaxRel = quality(pts, f.At)
	if f.MaxRel > Tolerance && len(pts) >= 2*minSegment {
		if pw, ok := fitTwo(pts); ok {
			r2, maxRel := quality(pts, pw.At)
			if maxRel < f.MaxRel/2 || maxRel <= Tolerance {
				pw.R2, pw.MaxRel = r2, maxRel
				pw.Method, pw.Points, pw.Range = f.Method, f.Points, f.Range
				f = pw
			}
		}
	}
	if f.Beta > 0 {
		f.BusBWInf = busFactor * 1e-3 / f.Beta // bytes/µs → GB/s is ×1e-3
		f.NHalf = f.Alpha / f.Beta
	}
	return f, nil
}

func checkPoints(pts []Point) error {
	if len(pts) < 2 {
		return fmt.Errorf("a fit needs at least 2 sizes (got %d)", len(pts))
	}
	for i, p := range pts {
		if !(p.Bytes > 0) || !(p.Time > 0) || math.IsInf(p.Bytes, 0) || math.IsInf(p.Time, 0) {
			return fmt.Errorf("size %g bytes, time %g µs: both must be positive and finite", p.Bytes, p.Time)
		}
		if i > 0 && p.Bytes == pts[i-1].Bytes {
			return fmt.Errorf("size %g bytes appears twice", p.Bytes)
		}
	}
	return nil
}

// ErrDegenerate means the sizes cannot determine a slope.
var ErrDegenerate = errors.New("the sizes are too few or too alike to fit a line")

// FitLine is the weighted least-squares line with weights 1/t², which
// minimises the relative error: plain least squares lets the largest
// sizes decide and overestimates small messages. A negative intercept is
// clamped to zero and the slope refitted through the origin.
func FitLine(pts []Point) (Line, error) {
	var sw, ss, st, sss, sst float64
	for _, p := range pts {
		w := 1 / (p.Time * p.Time)
		sw += w
		ss += w * p.Bytes
		st += w * p.Time
		sss += w * p.Bytes * p.Bytes
		sst += w * p.Bytes * p.Time
	}
	den := sw*sss - ss*ss
	if len(pts) < 2 || !(den > 1e-12*sw*sss) {
		return Line{}, ErrDegenerate
	}
	l := Line{Beta: (sw*sst - ss*st) / den}
	l.Alpha = (st - l.Beta*ss) / sw
	if l.Alpha < 0 {
		l = Line{Beta: sst / sss}
	}
	if l.Beta < 0 {
		// Time falling with size: no bandwidth term to speak of.
		l = Line{Alpha: st / sw}
	}
	return l, nil
}

// fitTwo splits the points where two lines leave the least weighted
// error; the break is where the lines cross if that lies between the two
// sizes around the split, else halfway (geometrically) between them.
func fitTwo(pts []Point) (Fit, bool) {
	best, bestErr := Fit{}, math.Inf(1)
	for k := minSegment; k <= len(pts)-minSegment; k++ {
		lo, err1 := FitLine(pts[:k])
		hi, err2 := FitLine(pts[k:])
		if err1 != nil || err2 != nil {
			continue
		}
		e := relSquares(pts[:k], lo) + relSquares(pts[k:], hi)
		if e >= bestErr {
			continue
		}
		a, b := pts[k-1].Bytes, pts[k].Bytes
		brk := math.Sqrt(a * b)
		if d := lo.Beta - hi.Beta; d != 0 {
			if x := (hi.Alpha - lo.Alpha) / d; x > a && x < b {
				brk = x
			}
		}
		bestErr = e
		best = Fit{Model: "piecewise", Line: hi, Segments: []Segment{
			{From: pts[0].Bytes, To: brk, Line: lo},
			{From: brk, To: pts[len(pts)-1].Bytes, Line: hi}}}
	}
	return best, !math.IsInf(bestErr, 1)
}

func relSquares(pts []Point, l Line) float64 {
	var e float64
	for _, p := range pts {
		r := (l.At(p.Bytes) - p.Time) / p.Time
		e += r * r
	}
	return e
}

// quality returns R² and the largest relative error of model on pts.
func quality(pts []Point, model func(float64) float64) (r2, maxRel float64) {
	var mean float64
	for _, p := range pts {
		mean += p.Time
	}
	mean /= float64(len(pts))
	var res, tot float64
	for _, p := range pts {
		m := model(p.Bytes)
		res += (m - p.Time) * (m - p.Time)
		tot += (p.Time - mean) * (p.Time - mean)
		maxRel = max(maxRel, math.Abs(m-p.Time)/p.Time)
	}
	r2 = 1.0
	if tot > 0 {
		r2 = 1 - res/tot
	}
	return r2, maxRel
}
