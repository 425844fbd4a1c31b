package bench

import "time"

// Budget shares a time limit among the points of a calibration suite.
// Each point gets an equal share of what is left: the iterations it runs
// are as many as its share holds, between MinIters and MaxIters. A
// budget without a limit always gives MaxIters. A limit is a promise:
// a point that would overrun what is left is left out, whatever it is.
type Budget struct {
	Limit              time.Duration // 0 = no limit
	MinIters, MaxIters int
	// Reserve is held back for work after the points (the overlap runs).
	Reserve time.Duration
	// PerPoint is what each point costs besides its calls (a power
	// window): it is held back for every point not yet measured.
	PerPoint time.Duration
	// Since is when the limit started counting (the command's start, so
	// set-up counts too); zero means at Start.
	Since time.Time

	start time.Time
	left  int // points not yet measured
	now   func() time.Time
}

// endMargin is the part of a limit kept for what follows the last point:
// gathering, fitting and writing the results.
const endMargin = 0.03

// Start begins the clock for points points.
func (b *Budget) Start(points int) {
	if b.now == nil {
		b.now = time.Now
	}
	b.start, b.left = b.now(), points
	if !b.Since.IsZero() {
		b.start = b.Since
	}
}

// Elapsed is the time since Start.
func (b *Budget) Elapsed() time.Duration { return b.now().Sub(b.start) }

// Remaining is the time left for points, 0 when spent; a very large
// value without a limit.
func (b *Budget) Remaining() time.Duration {
	if b.Limit <= 0 {
		return 1 << 62
	}
	return max(b.Left()-b.Reserve, 0)
}

// usable is the limit less the end margin kept for gathering, fitting and
// writing.
func (b *Budget) usable() time.Duration {
	return b.Limit - time.Duration(endMargin*float64(b.Limit))
}

// share is one remaining point's slice of the time left for its calls.
func (b *Budget) share() time.Duration {
	n := time.Duration(max(b.left, 1))
	return max(b.Remaining()-n*b.PerPoint, 0) / n
}

// Iters is the timed iterations for the next point, given its time per
// call measured in the warm-up.
func (b *Budget) Iters(perCall time.Duration) int {
	if b.Limit <= 0 || perCall <= 0 {
		return b.MaxIters
	}
	n := int(b.share() / perCall)
	return min(max(n, b.MinIters), b.MaxIters)
}

// TooLong says whether a point whose calls take perCall, with extra
// calls still to run before the timed ones (its warm-up, when asked before
// it), overruns its share more than threefold even at MinIters, or what
// is left of the whole budget: the suite then drops it and the larger
// sizes after it.
func (b *Budget) TooLong(perCall time.Duration, extra int) bool {
	cost := perCall * time.Duration(b.MinIters+extra)
	return b.Limit > 0 && (cost > 3*b.share() || cost+b.PerPoint > b.Remaining())
}

// Overruns says whether a point whose calls take perCall, with extra
// calls before the timed ones, cannot fit in what is left of the whole
// budget even at MinIters: the promise alone, for points the suite keeps
// unless the promise forbids them (a curve's first sizes).
func (b *Budget) Overruns(perCall time.Duration, extra int) bool {
	return b.Limit > 0 && perCall*time.Duration(b.MinIters+extra)+b.PerPoint > b.Remaining()
}

// Left is what is left of the whole limit, less the end margin, for the
// work the reserve was held back for; a very large value without a limit.
func (b *Budget) Left() time.Duration {
	if b.Limit <= 0 {
		return 1 << 62
	}
	return max(b.usable()-b.Elapsed(), 0)
}

// Holds says whether the whole limit, less the end margin, holds d at
// all: a limit that cannot hold its own reserve breaks its promise
// before the first point.
func (b *Budget) Holds(d time.Duration) bool {
	return b.Limit <= 0 || d <= b.usable()
}

// LimitFor is the smallest limit that holds d once its end margin is
// kept.
func LimitFor(d time.Duration) time.Duration { return time.Duration(float64(d) / (1 - endMargin)) }

// Spent says whether nothing is left for further points.
func (b *Budget) Spent() bool { return b.Limit > 0 && b.Remaining() <= 0 }

// Done counts n points as measured or dropped.
func (b *Budget) Done(n int) { b.left = max(b.left-n, 0) }
