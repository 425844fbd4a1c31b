package ab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/collbench/collbench/fileio"
)

// An arm's process can hang where nothing inside it watches: before main,
// in a library's initialiser, on an input that never comes, or stopped by
// a signal. Every turn therefore has a deadline of its own, set from what
// the arm's turns have taken so far, as the stall watchdog bounds a batch
// of calls by what the run has measured.
const (
	// FirstTurnLimit bounds a turn before any arm has finished one:
	// nothing is known yet of what the sweep takes.
	FirstTurnLimit = 10 * time.Minute
	// TurnFloor is the least time a turn is given once timings are known.
	TurnFloor = time.Minute
	// ProbeLimit bounds the probe of which NCCL an arm loads.
	ProbeLimit = 2 * time.Minute
	// ownFactor: a turn may take this many times the arm's slowest so far.
	ownFactor = 10
	// othersFactor: an arm's first turn may take this many times the
	// slowest turn of any other arm (another NCCL may well be slower).
	othersFactor = 30
)

// errStalled ends a turn whose deadline passed.
var errStalled = errors.New("the arm's turn passed its deadline")

// turnClock keeps the slowest turn of each arm and bounds the next.
type turnClock struct {
	fixed   time.Duration // Options.TurnLimit: when set, every turn's bound
	mu      sync.Mutex
	slowest map[string]time.Duration // by the arm's Changes
}

func (c *turnClock) observe(arm string, took time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.slowest == nil {
		c.slowest = map[string]time.Duration{}
	}
	c.slowest[arm] = max(c.slowest[arm], took)
}

// probe is how long the probe of an arm may take.
func (c *turnClock) probe() time.Duration {
	if c.fixed > 0 {
		return c.fixed
	}
	return ProbeLimit
}

// limit is how long the arm's next turn may take.
func (c *turnClock) limit(arm string) time.Duration {
	if c.fixed > 0 {
		return c.fixed
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if own, ok := c.slowest[arm]; ok {
		return max(TurnFloor, ownFactor*own)
	}
	var any time.Duration
	for _, d := range c.slowest {
		any = max(any, d)
	}
	if any == 0 {
		return FirstTurnLimit
	}
	return max(TurnFloor, othersFactor*any)
}

// procState is what Linux says of a process that outlived its deadline:
// whether it is stopped (by SIGSTOP or a debugger), and where in the
// kernel it waits.
type procState struct {
	stopped bool
	state   string // "stopped", "sleeping", … ; empty when unknown
	wchan   string // the kernel function it waits in; empty when unknown
}

var stateWords = map[byte]string{'R': "running", 'S': "sleeping", 'D': "in uninterruptible sleep", 'T': "stopped by a signal",
	't': "stopped by a debugger", 'Z': "a zombie"}

// readProcState reads the process's state (fileio.ProcState) and
// /proc/PID/wchan.
func readProcState(pid int) procState {
	var s procState
	c := fileio.ProcState(pid)
	if c == 0 {
		return s
	}
	s.state = stateWords[c]
	s.stopped = c == 'T' || c == 't'
	if w, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/wchan"); err == nil {
		if v := strings.TrimSpace(string(w)); v != "" && v != "0" {
			s.wchan = v
		}
	}
	return s
}

// describe says, in a few words, how the process stood at its deadline.
func (s procState) describe(pid int) string {
	switch {
	case s.state == "":
		return fmt.Sprintf("process %d", pid)
	case s.wchan != "" && !s.stopped:
		return fmt.Sprintf("process %d %s in %s", pid, s.state, s.wchan)
	}
	return fmt.Sprintf("process %d %s", pid, s.state)
}

// Kinds of stall in a report.
const (
	stallRunning = 1
	stallStopped = 2
)

// stalled is a process that outlived its turn's deadline, as it stood.
type stalled struct {
	pid   int
	state procState
}

func (s *stalled) kind() int {
	if s.state.stopped {
		return stallStopped
	}
	return stallRunning
}

// line is the one line that says so.
func (s *stalled) line(limit time.Duration, when string) string {
	what := "interrupted it"
	if s.state.stopped {
		what = "killed it" // a stopped process never sees SIGINT
	}
	return fmt.Sprintf("stalled in %s: no end within %s (%s); %s", when, limit.Round(time.Millisecond), s.state.describe(s.pid), what)
}

// watchStall makes cmd's cancellation tell a turn's own deadline from an
// interruption of ab (parent ended): at the deadline it notes how the
// process stood and kills a stopped one, which SIGINT cannot reach. The
// returned function says, once cmd has been waited for, whether the
// deadline ended it.
func watchStall(parent context.Context, cmd *exec.Cmd) func() *stalled {
	var mu sync.Mutex
	var st *stalled
	cmd.Cancel = func() error {
		if parent.Err() == nil {
			s := &stalled{pid: cmd.Process.Pid, state: readProcState(cmd.Process.Pid)}
			mu.Lock()
			st = s
			mu.Unlock()
			if s.state.stopped {
				return cmd.Process.Kill()
			}
		}
		return cmd.Process.Signal(os.Interrupt)
	}
	return func() *stalled {
		mu.Lock()
		defer mu.Unlock()
		return st
	}
}
