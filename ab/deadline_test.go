package ab

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestTurnLimit(t *testing.T) {
	c := &turnClock{}
	if got := c.limit("a"); got != FirstTurnLimit {
		t.Errorf("before any turn: %v, want %v", got, FirstTurnLimit)
	}
	c.observe("a", 2*time.Second)
	c.observe("a", 10*time.Second)
	c.observe("a", 3*time.Second)
	c.observe("b", time.Second)
	for _, tc := range []struct {
		arm  string
		want time.Duration
	}{
		{"a", 100 * time.Second}, // 10× its slowest
		{"b", TurnFloor},         // 10 s is under the floor
		{"c", 300 * time.Second}, // a first turn: 30× any arm's slowest
	} {
		if got := c.limit(tc.arm); got != tc.want {
			t.Errorf("arm %s: %v, want %v", tc.arm, got, tc.want)
		}
	}
	fixed := &turnClock{fixed: 3 * time.Second}
	fixed.observe("a", time.Hour)
	if got := fixed.limit("a"); got != 3*time.Second {
		t.Errorf("a fixed limit: %v", got)
	}
}

func TestCulpritPrefersTheStoppedProcess(t *testing.T) {
	for _, tc := range []struct {
		name string
		reps []report
		want int
		ok   bool
	}{
		{"none failed", []report{{}, {}}, 0, false},
		{"own failure before a consequence", []report{{Code: 1}, {Code: 2}}, 1, true},
		{"the stopped one, whatever came first", []report{{Code: 130, Stall: stallRunning}, {Code: 1}, {Code: 137, Stall: stallStopped}}, 2, true},
		{"an own failure before one ended waiting", []report{{Code: 130, Stall: stallRunning}, {Code: 3}}, 1, true},
		{"a stall before a consequence", []report{{Code: 1}, {Code: 130, Stall: stallRunning}}, 1, true},
		{"only consequences: the first", []report{{}, {Code: 4}, {Code: 1}}, 1, true},
	} {
		got, _, ok := culprit(tc.reps)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: %d %v, want %d %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

// A turn whose process stops itself, or sleeps past the deadline, ends at
// the deadline with one line that says how the process stood.
func TestTurnDeadline(t *testing.T) {
	for _, tc := range []struct {
		script, want string
	}{
		{"kill -STOP $$", "stopped by a signal); killed it"},
		{"exec sleep 60", "sleeping"},
	} {
		r, err := NewRunner(Options{Processes: Processes{Exe: "/bin/sh", Command: []string{"-c", tc.script}, Rank: 0, Size: 1,
			Place: func(string, string) []string { return nil }, TurnLimit: time.Second}})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		doc, failed, err := r.Turn(context.Background(), Arm{Label: "x"}, 0, 1)
		took := time.Since(start)
		r.Close()
		if err != nil || doc != nil {
			t.Fatalf("%s: %v %v", tc.script, doc, err)
		}
		if !strings.HasPrefix(failed, "stalled in round 1: no end within 1s (process ") || !strings.Contains(failed, tc.want) {
			t.Errorf("%s: %q, want it to say %q", tc.script, failed, tc.want)
		}
		if took > 8*time.Second {
			t.Errorf("%s: the turn took %v past a deadline of 1 s", tc.script, took)
		}
	}
}

// An interrupted ab is no stall: the turn returns the interruption.
func TestTurnInterruptedIsNoStall(t *testing.T) {
	r, err := NewRunner(Options{Processes: Processes{Exe: "/bin/sh", Command: []string{"-c", "exec sleep 60"}, Size: 1,
		Place: func(string, string) []string { return nil }, TurnLimit: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, failed, err := r.Turn(ctx, Arm{}, 0, 1)
	if err == nil || failed != "" {
		t.Errorf("interrupted: failed %q, err %v; want the interruption", failed, err)
	}
}

// A crash is reported by its panic's line, not by the last stack frame.
func TestLastLineOfACrash(t *testing.T) {
	for _, tc := range []struct{ said, want string }{
		{"collbench allreduce: bad\n", "collbench allreduce: bad"},
		{"starting\npanic: runtime error: index out of range [3] with length 2\n\ngoroutine 1 [running]:\nmain.main()\n\t/src/main.go:12 +0x1d\nexit status 2\n",
			"panic: runtime error: index out of range [3] with length 2"},
		{"fatal error: all goroutines are asleep - deadlock!\n\ngoroutine 1 [chan receive]:\n", "fatal error: all goroutines are asleep - deadlock!"},
	} {
		var tl tail
		tl.Write([]byte(tc.said))
		if got := string(tl.lastLine()); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.said, got, tc.want)
		}
	}
}

// On the host backend, with no NCCL named, arms that differ only in NCCL's
// own settings are one arm; nccl-tests' NCCL_TESTS_* and other settings
// still tell arms apart, and so does a GPU machine's backend.
func TestDistinctOnTheHostBackend(t *testing.T) {
	arm := func(backend string, env ...string) ArmOutcome {
		return ArmOutcome{Arm: Arm{Label: strings.Join(env, " "), Env: env}, Backend: backend}
	}
	for _, tc := range []struct {
		arms []ArmOutcome
		want string
	}{
		{[]ArmOutcome{arm("host", "NCCL_PROTO=LL"), arm("host", "NCCL_PROTO=Simple")}, "differ only in NCCL settings"},
		{[]ArmOutcome{arm("host"), arm("host", "NCCL_ALGO=Ring")}, "differ only in NCCL settings"},
		{[]ArmOutcome{arm("host", "NCCL_TESTS_ALLTOALLV_SPREAD=0"), arm("host", "NCCL_TESTS_ALLTOALLV_SPREAD=1")}, ""},
		{[]ArmOutcome{arm("host", "COLLBENCH_HOST_ALGO=ring"), arm("host", "COLLBENCH_HOST_ALGO=doubling")}, ""},
		{[]ArmOutcome{arm("nccl", "NCCL_PROTO=LL"), arm("nccl", "NCCL_PROTO=Simple")}, ""},
		{[]ArmOutcome{arm("host", "X=1"), arm("host", "X=1")}, "with the same settings"},
	} {
		err := Distinct(&Outcome{Arms: tc.arms})
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s / %s on %s: %v, want %q", tc.arms[0].Label, tc.arms[1].Label, tc.arms[0].Backend, err, tc.want)
		}
	}
}
