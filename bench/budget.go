package bench

import "time"

// Budget shares a time limit among the points of a calibration suite.
// Each point gets an equal share of what is left: the iterations it runs
// are as many as its share holds, between MinIters and MaxIters. A
// budget without a limit always gives MaxIters.
type Budget struct {
	Limit              time.Duration // 0 = no limit
	MinIters, MaxIters int
	// Reserve is held back for work after the points (the overlap runs).
	Reserve time.Duration

	start time.Time
	left  int // points not yet measured
	now   func() time.Time
}

// Start begins the clock for points points.
func (b *Budget) Start(points int) {
	if b.now == nil {
		b.now = time.Now
	}
	b.start, b.left = b.now(), points
}

// Elapsed is the time since Start.
func (b *Budget) Elapsed() time.Duration { return b.now().Sub(b.start) }

// Remaining is the time left for points, 0 when spent; a very large
// value without a limit.
func (b *Budget) Remaining() time.Duration {
	if b.Limit <= 0 {
		return 1 << 62
	}
	return max(b.Limit-b.Reserve-b.Elapsed(), 0)
}

// share is one remaining point's slice of the time left.
func (b *Budget) share() time.Duration {
	return b.Remaining() / time.Duration(max(b.left, 1))
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

// TooLong says whether a point whose calls take perCall overruns its
// share more than threefold even at MinIters: the suite then drops it and
// the larger sizes after it.
func (b *Budget) TooLong(perCall time.Duration) bool {
	return b.Limit > 0 && perCall*time.Duration(b.MinIters) > 3*b.share()
}

// Spent says whether nothing is left for further points.
func (b *Budget) Spent() bool { return b.Limit > 0 && b.Remaining() <= 0 }

// Done counts n points as measured or dropped.
func (b *Budget) Done(n int) { b.left = max(b.left-n, 0) }
