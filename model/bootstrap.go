package model

import (
	"math/rand/v2"
	"sort"
)

// bootstrapRounds is how many resampled fits an interval rests on: enough
// for the 2.5th and 97.5th percentiles to settle to a few per cent.
const bootstrapRounds = 500

// Bootstrap gives 95 % intervals of l's α and β on pts by the residual
// bootstrap: each round puts the relative residuals back on the line in a
// random order (drawn with replacement), refits, and the intervals are the
// 2.5th and 97.5th percentiles of the refitted α and β. Residuals, not
// sizes, are resampled because a profile has few sizes, each measured
// once. The generator is seeded, so a profile's intervals are the same on
// every read. Fewer than three sizes leave no residuals to resample: the
// intervals are then the point values.
func Bootstrap(pts []Point, l Line) (alpha, beta [2]float64) {
	alpha, beta = [2]float64{l.Alpha, l.Alpha}, [2]float64{l.Beta, l.Beta}
	if len(pts) < 3 {
		return alpha, beta
	}
	res := make([]float64, len(pts))
	for i, p := range pts {
		res[i] = (p.Time - l.At(p.Bytes)) / l.At(p.Bytes)
	}
	rng := rand.New(rand.NewPCG(0x636f6c6c, 0x62656e63))
	as, bs := make([]float64, 0, bootstrapRounds), make([]float64, 0, bootstrapRounds)
	draw := make([]Point, len(pts))
	for range bootstrapRounds {
		for i, p := range pts {
			m := l.At(p.Bytes)
			draw[i] = Point{Bytes: p.Bytes, Time: max(m*(1+res[rng.IntN(len(res))]), m*1e-3)}
		}
		if f, _, err := fitLine(draw); err == nil {
			as, bs = append(as, f.Alpha), append(bs, f.Beta)
		}
	}
	if len(as) == 0 {
		return alpha, beta
	}
	return percentiles(as), percentiles(bs)
}

// percentiles returns the 2.5th and 97.5th percentiles of v (reordered).
func percentiles(v []float64) [2]float64 {
	sort.Float64s(v)
	at := func(q float64) float64 { return v[int(q*float64(len(v)-1)+0.5)] }
	return [2]float64{at(0.025), at(0.975)}
}

// lastSegment is the points the large-message line was fitted on: all of
// them, or those of a piecewise fit's last segment.
func lastSegment(pts []Point, f Fit) []Point {
	if len(f.Segments) == 0 {
		return pts
	}
	from := f.Segments[len(f.Segments)-1].From
	for i, p := range pts {
		if p.Bytes >= from {
			return pts[i:]
		}
	}
	return nil
}
