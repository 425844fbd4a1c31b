package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Staller is a Comm whose calls can wait for ever without an error (NCCL
// kernels spin until their peers arrive), so the engine bounds every wait
// on it even without a timeout; once a wait has run too long it says which
// ranks are still at work and what most likely holds them.
type Staller interface {
	// Waiting is the global ranks of this process whose work has not
	// completed.
	Waiting() []int
	// StallCause is the likeliest reason ranks stop making progress.
	StallCause() string
}

// DefaultStallFloor is the stall watchdog's floor: no wait is given up on
// sooner, whatever the run has measured.
const DefaultStallFloor = time.Minute

const (
	// stallFactor: a wait is given up on after this many times what the
	// run's measurements predict for it.
	stallFactor = 50
	// unmeasuredRate predicts, before anything has been measured, calls
	// that move their bytes at a slow network's rate (bytes per second),
	// so that a first large batch is not cut short.
	unmeasuredRate = 100e6
)

// StallWatch bounds how long a wait may run from what the run has measured
// so far; the zero value (no floor) bounds nothing.
type StallWatch struct {
	Floor time.Duration
	seen  map[int64]float64 // bytes: the least seconds a call of them took
}

// Observe records that calls of bytes took perCall seconds each. A size
// measured again keeps its quickest time, so a run that cycles (-N 0)
// holds one figure a size.
func (w *StallWatch) Observe(bytes int64, perCall float64) {
	if perCall <= 0 {
		return
	}
	if w.seen == nil {
		w.seen = map[int64]float64{}
	}
	if old, ok := w.seen[bytes]; !ok || perCall < old {
		w.seen[bytes] = perCall
	}
}

// Predict is how many seconds one call of bytes should take by the run's
// measurements: the least of every measurement scaled up to bytes (a call
// takes no less time than a smaller one, nor grows faster than its bytes),
// and before any, bytes at unmeasuredRate.
func (w *StallWatch) Predict(bytes int64) float64 {
	best := -1.0
	for b, perCall := range w.seen {
		t := perCall
		if bytes > b && b > 0 {
			t *= float64(bytes) / float64(b)
		}
		if best < 0 || t < best {
			best = t
		}
	}
	if best < 0 {
		best = float64(bytes) / unmeasuredRate
	}
	return best
}

// Bound is how long a wait for work expected to take expect seconds may
// run: stallFactor times that, at least the floor; 0 without a floor.
func (w *StallWatch) Bound(expect float64) time.Duration {
	if w.Floor <= 0 {
		return 0
	}
	return max(w.Floor, time.Duration(stallFactor*expect*float64(time.Second)))
}

// TimeoutError reports work that did not complete within its limit: -T,
// or the stall watchdog's bound. The communicators have been aborted.
type TimeoutError struct {
	Coll    string
	Size    int64
	InPlace bool
	After   time.Duration
	// Stalled says the limit was the watchdog's, derived from what the
	// run had measured, not -T.
	Stalled bool
	// Waiting is this process's ranks whose work had not completed, and
	// Cause the likeliest reason, where the backend knows them.
	Waiting []int
	Cause   string
}

func (e *TimeoutError) Error() string {
	place := "out-of-place"
	if e.InPlace {
		place = "in-place"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s of %d bytes (%s) did not complete within %v", e.Coll, e.Size, place, e.After)
	if e.Stalled {
		fmt.Fprintf(&b, " (the stall watchdog's bound: %d× what the run's timings so far predict, or its floor)", stallFactor)
	}
	if len(e.Waiting) > 0 {
		fmt.Fprintf(&b, "; %s still waiting", RankNames(e.Waiting))
	}
	if e.Cause != "" {
		fmt.Fprintf(&b, "; likely cause: %s", e.Cause)
	}
	b.WriteString("; communicators aborted")
	return b.String()
}

// waitBounded drains c's streams within limit (0: none) and, when the wait
// fails, aborts the communicators so that no rank is left blocked. On the
// limit's expiry it returns a TimeoutError for op at size naming the ranks
// still at work; stalled says the limit was the watchdog's.
func waitBounded(ctx context.Context, c Comm, op Op, size int64, limit time.Duration, stalled bool) error {
	wctx := ctx
	if limit > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, limit)
		defer cancel()
	}
	err := c.Wait(wctx)
	if err == nil {
		return nil
	}
	te := &TimeoutError{Coll: op.Coll.Name, Size: size, InPlace: op.InPlace, After: limit, Stalled: stalled}
	timedOut := errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil
	if s, ok := c.(Staller); ok && timedOut {
		te.Waiting, te.Cause = s.Waiting(), s.StallCause() // before the abort clears the streams
	}
	c.Abort()
	if timedOut {
		return te
	}
	if ctx.Err() != nil {
		// The job may have ended the wait on purpose (a lost rank); its
		// cause says why.
		if cause := context.Cause(ctx); cause != ctx.Err() {
			return fmt.Errorf("%s of %d bytes: aborted: %w", op.Coll.Name, size, cause)
		}
		return ctx.Err()
	}
	return fmt.Errorf("%s of %d bytes: %w", op.Coll.Name, size, err)
}

// limitFor is the limit of a wait for calls of bytes: -T (timeout), or
// the watchdog's bound where the comm can stall silently and that is
// sooner. stalled says the watchdog's bound was taken.
func limitFor(c Comm, w *StallWatch, timeout time.Duration, expect float64) (limit time.Duration, stalled bool) {
	if _, ok := c.(Staller); !ok {
		return timeout, false
	}
	if b := w.Bound(expect); b > 0 && (timeout == 0 || b < timeout) {
		return b, true
	}
	return timeout, false
}
