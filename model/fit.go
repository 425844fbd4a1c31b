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
	Method string `json:"method"` // MethodHuber or MethodTheilSen: how the large-message line was found
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
	// AlphaCI and BetaCI are 95 % bootstrap intervals of Alpha and Beta
	// (see Bootstrap); equal ends mean too few sizes to tell.
	AlphaCI [2]float64 `json:"alpha_ci_us"`
	BetaCI  [2]float64 `json:"beta_ci_us_per_byte"`
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
	line, method, err := fitLine(pts)
	if err != nil {
		return Fit{}, err
	}
	f := Fit{Model: "alpha_beta", Method: method, Line: line, Points: len(pts),
		Range: [2]int64{int64(pts[0].Bytes), int64(pts[len(pts)-1].Bytes)}}
	f.R2, f.MaxRel = quality(pts, f.At)
	if one := robustMaxRel(pts, f.At); one > Tolerance && len(pts) >= 2*minSegment {
		if pw, ok := fitTwo(pts, f.Beta > 0); ok {
			r2, maxRel := quality(pts, pw.At)
			if two := robustMaxRel(pts, pw.At); two < one/2 || two <= Tolerance {
				pw.R2, pw.MaxRel = r2, maxRel
				pw.Points, pw.Range = f.Points, f.Range
				f = pw
			}
		}
	}
	f.AlphaCI, f.BetaCI = Bootstrap(lastSegment(pts, f), f.Line)
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

// FitLine fits t = α + β·S with α ≥ 0 and β ≥ 0 so that the relative
// error is small at every size: plain least squares lets the largest
// sizes decide and overestimates small messages. It is robust to a few
// bad sizes (a busy neighbour, a stalled iteration): see robustLine. Time
// that grows from the smallest size to the largest always gives β > 0;
// only time that does not grow leaves no bandwidth term (β = 0).
func FitLine(pts []Point) (Line, error) {
	l, _, err := fitLine(pts)
	return l, err
}

// fitLine is FitLine that also names the method that gave the line.
func fitLine(pts []Point) (Line, string, error) {
	if len(pts) < 2 {
		return Line{}, "", ErrDegenerate
	}
	l, err := robustLine(pts)
	if err != nil {
		return Line{}, "", err
	}
	if l.Beta > 0 {
		return l, MethodHuber, nil
	}
	// The weighted fit found time falling with size, which a few slow
	// small sizes can cause; the median of the pairwise slopes decides.
	return theilSen(pts), MethodTheilSen, nil
}

// The methods a fit records.
const (
	MethodHuber    = "huber_relative" // Huber-weighted least squares on relative errors
	MethodTheilSen = "theil_sen"      // median of pairwise slopes, when the former finds no slope
)

// huberK is Huber's tuning constant: 95 % efficiency on Gaussian noise,
// while a residual beyond k robust standard deviations loses weight.
const huberK = 1.345

// robustLine is iteratively reweighted least squares with weights
// h(r)/m², where m is the model's time, r the relative residual and h
// Huber's weight on the residual scaled by its median absolute deviation,
// started from the Theil–Sen line. One wild size then
// moves the line little, where plain 1/t² weighting would follow it.
func robustLine(pts []Point) (Line, error) {
	w := make([]float64, len(pts))
	for i, p := range pts {
		w[i] = 1 / (p.Time * p.Time)
	}
	l, err := weightedLine(pts, w)
	if err != nil {
		return Line{}, err
	}
	if ts := theilSen(pts); len(pts) > 2 && ts.Beta > 0 {
		// Start from the median-slope line: a wild size cannot pull it,
		// so the reweighting that follows finds that size and sets it
		// aside instead of starting out bent towards it.
		l = ts
	}
	res := make([]float64, len(pts))
	for iter := 0; iter < 30 && len(pts) > 2; iter++ {
		for i, p := range pts {
			res[i] = relResidual(p.Time, l.At(p.Bytes))
		}
		scale := 1.4826 * mad(res)
		if !(scale > 1e-12) {
			break
		}
		for i, p := range pts {
			// Weigh by the model's time, not the measured one: a size
			// measured far too fast would otherwise weigh the most.
			m := l.At(p.Bytes)
			if !(m > 0) {
				m = p.Time
			}
			w[i] = 1 / (m * m)
			if a := math.Abs(res[i]) / scale; a > huberK {
				w[i] *= huberK / a
			}
		}
		next, err := weightedLine(pts, w)
		if err != nil {
			break
		}
		done := math.Abs(next.Alpha-l.Alpha) <= 1e-9*(1+math.Abs(l.Alpha)) && math.Abs(next.Beta-l.Beta) <= 1e-9*math.Abs(l.Beta)
		l = next
		if done {
			break
		}
	}
	return l, nil
}

// relResidual is (measured − model)/model, the error relative to the
// model; a model time of zero compares with the measured time instead.
func relResidual(measured, model float64) float64 {
	if !(model > 0) {
		model = measured
	}
	return (measured - model) / model
}

// Outliers marks the measured times that sit far from the model: more
// than three robust standard deviations (1.4826 × the median absolute
// deviation of the relative residuals) and more than Tolerance away.
// Such a size is noise the fit has set aside, not the curve's shape.
func Outliers(measured, model []float64) []bool {
	res := make([]float64, len(measured))
	for i := range measured {
		res[i] = relResidual(measured[i], model[i])
	}
	c := append([]float64(nil), res...)
	mid, scale := median(c), 1.4826*mad(res)
	out := make([]bool, len(res))
	for i, r := range res {
		out[i] = math.Abs(r-mid) > 3*scale && math.Abs(r) > Tolerance
	}
	return out
}

// robustMaxRel is the largest relative error of model on pts, leaving
// out the outliers: whether one line is enough, or two segments are
// needed, is decided by the curve and not by one wild size.
func robustMaxRel(pts []Point, model func(float64) float64) float64 {
	measured, fitted := make([]float64, len(pts)), make([]float64, len(pts))
	for i, p := range pts {
		measured[i], fitted[i] = p.Time, model(p.Bytes)
	}
	var worst float64
	for i, out := range Outliers(measured, fitted) {
		if !out {
			worst = max(worst, math.Abs(fitted[i]-measured[i])/measured[i])
		}
	}
	return worst
}

// weightedLine is the weighted least-squares line under α ≥ 0: a negative
// intercept is clamped to zero and the slope refitted through the origin.
// A negative slope is returned as it is; the caller decides.
func weightedLine(pts []Point, w []float64) (Line, error) {
	var sw, ss, st, sss, sst float64
	for i, p := range pts {
		sw += w[i]
		ss += w[i] * p.Bytes
		st += w[i] * p.Time
		sss += w[i] * p.Bytes * p.Bytes
		sst += w[i] * p.Bytes * p.Time
	}
	den := sw*sss - ss*ss
	if !(den > 1e-12*sw*sss) {
		return Line{}, ErrDegenerate
	}
	l := Line{Beta: (sw*sst - ss*st) / den}
	l.Alpha = (st - l.Beta*ss) / sw
	if l.Alpha < 0 {
		l = Line{Beta: sst / sss}
	}
	return l, nil
}

// theilSen is the Theil–Sen line: the median of the slopes between every
// pair of sizes, and the median intercept under it (at least zero). When
// that median is not positive but the largest size still took longer than
// the smallest, the slope between those two is used: the time grows, so
// there is a bandwidth term. Only time that does not grow gives β = 0,
// with α the median time.
func theilSen(pts []Point) Line {
	var slopes []float64
	for i := range pts {
		for j := i + 1; j < len(pts); j++ {
			slopes = append(slopes, (pts[j].Time-pts[i].Time)/(pts[j].Bytes-pts[i].Bytes))
		}
	}
	beta := median(slopes)
	first, last := pts[0], pts[len(pts)-1]
	if !(beta > 0) && last.Time > first.Time {
		beta = (last.Time - first.Time) / (last.Bytes - first.Bytes)
	}
	beta = max(beta, 0)
	icpt := make([]float64, len(pts))
	for i, p := range pts {
		icpt[i] = p.Time - beta*p.Bytes
	}
	return Line{Alpha: max(median(icpt), 0), Beta: beta}
}

// median of v (v is reordered).
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	sort.Float64s(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// mad is the median absolute deviation from the median.
func mad(v []float64) float64 {
	c := append([]float64(nil), v...)
	m := median(c)
	for i, x := range v {
		c[i] = math.Abs(x - m)
	}
	return median(c)
}

// fitTwo splits the points where two lines leave the least weighted
// error (with needSlope, only where the last line has a bandwidth term); the break is where the lines cross if that lies between the two
// sizes around the split, else halfway (geometrically) between them.
func fitTwo(pts []Point, needSlope bool) (Fit, bool) {
	best, bestErr := Fit{}, math.Inf(1)
	for k := minSegment; k <= len(pts)-minSegment; k++ {
		lo, err1 := FitLine(pts[:k])
		hi, method, err2 := fitLine(pts[k:])
		if err1 != nil || err2 != nil || (needSlope && !(hi.Beta > 0)) {
			continue // a single line with a bandwidth term beats segments without one
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
		best = Fit{Model: "piecewise", Method: method, Line: hi, Segments: []Segment{
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
