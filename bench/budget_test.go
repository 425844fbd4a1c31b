package bench

import (
	"testing"
	"time"
)

func TestBudget(t *testing.T) {
	now := time.Unix(0, 0)
	b := Budget{Limit: 10 * time.Second, MinIters: 3, MaxIters: 20, Reserve: 2 * time.Second, now: func() time.Time { return now }}
	b.Start(8) // 8 s for 8 points: 1 s each
	cases := []struct {
		perCall time.Duration
		iters   int
		tooLong bool
	}{
		{time.Millisecond, 20, false},       // capped at MaxIters
		{100 * time.Millisecond, 10, false}, // 1 s holds 10
		{500 * time.Millisecond, 3, false},  // floor of MinIters
		{1500 * time.Millisecond, 3, true},  // 4.5 s at MinIters: over 3× the share
	}
	for _, c := range cases {
		if got := b.Iters(c.perCall); got != c.iters {
			t.Errorf("Iters(%v) = %d, want %d", c.perCall, got, c.iters)
		}
		if got := b.TooLong(c.perCall); got != c.tooLong {
			t.Errorf("TooLong(%v) = %v", c.perCall, got)
		}
	}
	now = now.Add(4 * time.Second)
	b.Done(6) // 4 s left for 2 points: 2 s each
	if got := b.Iters(100 * time.Millisecond); got != 20 {
		t.Errorf("after 4 s and 6 points: %d iterations", got)
	}
	if b.Spent() {
		t.Error("spent too early")
	}
	now = now.Add(5 * time.Second) // past the limit less the reserve
	if !b.Spent() || b.Iters(time.Millisecond) != 3 {
		t.Errorf("spent %v, iters %d", b.Spent(), b.Iters(time.Millisecond))
	}
	free := Budget{MinIters: 1, MaxIters: 7}
	free.Start(100)
	if free.Iters(time.Hour) != 7 || free.TooLong(time.Hour) || free.Spent() {
		t.Error("a budget without a limit trims")
	}
}
