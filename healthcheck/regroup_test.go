package healthcheck

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/host"
	"github.com/collbench/collbench/bench/numeric"
	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/health"
	"github.com/collbench/collbench/run"
)

// regroupLog counts what a regrouping backend was asked to do.
type regroupLog struct {
	mu                      sync.Mutex
	opens, regroups, closes int
	joint                   int // CloseWith calls
	aborts                  int
	live, mostLive          int // regrouped sets not closed yet, now and at most
}

// regroupingHost is the host backend with communicators that regroup, as
// the nccl backend's do (there by ncclCommSplit; here by opening the
// grouping through the host backend) and, when joint, close together (as
// one NCCL group destroys them), so that what a health check asks of them
// can be watched without a GPU.
type regroupingHost struct {
	host.Backend
	log   *regroupLog
	joint bool
	free  int64 // what the job's communicators say their devices have free
	fail  int   // the regroup that fails, counting from 1; 0: none
}

func (b regroupingHost) Open(ctx context.Context, s bench.Setup) (bench.Comm, error) {
	c, err := b.Backend.Open(ctx, s)
	if err != nil {
		return nil, err
	}
	b.log.mu.Lock()
	b.log.opens++
	b.log.mu.Unlock()
	return &regroupingComm{Comm: c, b: b, setup: s}, nil
}

type regroupingComm struct {
	bench.Comm
	b     regroupingHost
	setup bench.Setup
}

func (c *regroupingComm) MemoryUse() (bench.MemoryUse, error) {
	return bench.MemoryUse{Free: c.b.free}, nil
}

func (c *regroupingComm) Regroup(g bench.Grouping) (bench.Comm, error) {
	l := c.b.log
	l.mu.Lock()
	l.regroups++
	if l.regroups == c.b.fail {
		l.mu.Unlock()
		return nil, errors.New("no memory left for the wave")
	}
	l.live++
	l.mostLive = max(l.mostLive, l.live)
	l.mu.Unlock()
	s := c.setup
	s.Groups = g
	sub, err := c.b.Backend.Open(context.Background(), s)
	if err != nil {
		return nil, err
	}
	counted := &closeCounted{Comm: sub, log: l}
	if c.b.joint {
		return &jointlyClosed{counted}, nil
	}
	return counted, nil
}

type closeCounted struct {
	bench.Comm
	log    *regroupLog
	closed bool
}

func (c *closeCounted) Close() error {
	c.log.mu.Lock()
	if !c.closed {
		c.closed = true
		c.log.closes++
		c.log.live--
	}
	c.log.mu.Unlock()
	return c.Comm.Close()
}

func (c *closeCounted) Abort() {
	c.log.mu.Lock()
	c.log.aborts++
	c.log.mu.Unlock()
	c.Comm.Abort()
}

type jointlyClosed struct{ *closeCounted }

func (c *jointlyClosed) CloseWith(others []bench.Comm) error {
	c.log.mu.Lock()
	c.log.joint++
	c.log.mu.Unlock()
	first := c.Close()
	for _, o := range others {
		if err := o.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// A health check on a backend that regroups opens the job's communicators
// once and splits every wave's from them. Each wave's are closed before
// the next is made, or, where the backend closes several together, up to
// idleWaves of them at once and the rest at the end of the phase, unless
// a device has less than idleFloor free; the record counts the waves
// opened and the closings.
func TestHealthRegroupsEveryWave(t *testing.T) {
	// Four ranks in one process: every GPU pair is a wave of its own, 3
	// rounds of 2 pairs, in each of 2 passes.
	type counts struct{ closings, joint, mostLive int }
	for _, c := range []struct {
		name  string
		joint bool
		free  int64
		want  counts
	}{
		{"one by one", false, 1 << 40, counts{12, 0, 1}},
		{"together", true, 1 << 40, counts{2, 2, idleWaves}}, // 8, then the 4 left at the phase's end
		{"together, short of memory", true, idleFloor - 1, counts{12, 12, 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			joint, want := c.joint, c.want
			j, err := run.NewJob(run.Settings{RanksPerProc: 4, Backend: "host", Version: "test"}, noEnv, t.Logf)
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			log := &regroupLog{}
			j.UseBackend(regroupingHost{log: log, joint: joint, free: c.free})
			var rec *document.Health
			_, err = Run(t.Context(), j, Spec{PairBytes: 16 << 10, ARBytes: 16 << 10, Type: numeric.Float32, Iters: 5, Passes: 2,
				Criteria: health.Criteria{MinDrop: 0.5, Z: 10}}, Hooks{Write: func(d *document.Health, err error) error {
				rec = d
				return err
			}})
			if err != nil {
				t.Fatal(err)
			}
			if rec == nil || len(rec.Setup) != 1 {
				t.Fatalf("record's communicator set-up: %+v", rec)
			}
			if log.opens != 1 || log.regroups != 12 || log.closes != 12 || log.live != 0 || log.joint != want.joint || log.mostLive != want.mostLive {
				t.Errorf("opened %d time(s), regrouped %d, closed %d (%d still open), %d time(s) together, at most %d open at once; want 1, 12, 12 (0), %d, %d",
					log.opens, log.regroups, log.closes, log.live, log.joint, log.mostLive, want.joint, want.mostLive)
			}
			s := rec.Setup[0]
			if s.Phase != "GPU pairs" || s.Waves != 12 || s.Closes != want.closings || s.MaxS <= 0 || s.TotalS < s.MaxS || s.CloseTotalS < s.CloseMaxS {
				t.Errorf("recorded set-up %+v, want 12 waves closed %d time(s)", s, want.closings)
			}
		})
	}
}

// When a wave fails, the waves' communicators left idle are aborted, not
// destroyed (a destroy waits for peers that may be gone), then closed, and
// the error names the phase.
func TestHealthAbortsIdleWavesOnFailure(t *testing.T) {
	j, err := run.NewJob(run.Settings{RanksPerProc: 4, Backend: "host", Version: "test"}, noEnv, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	log := &regroupLog{}
	j.UseBackend(regroupingHost{log: log, joint: true, free: 1 << 40, fail: 4})
	_, err = Run(t.Context(), j, Spec{PairBytes: 16 << 10, ARBytes: 16 << 10, Type: numeric.Float32, Iters: 5, Passes: 2,
		Criteria: health.Criteria{MinDrop: 0.5, Z: 10}}, Hooks{Write: func(*document.Health, error) error { return nil }})
	if err == nil || !strings.Contains(err.Error(), "no memory left for the wave") || !strings.Contains(err.Error(), "GPU pairs") {
		t.Fatalf("got %v, want the failed wave's error naming its phase", err)
	}
	if log.regroups != 4 || log.aborts != 3 || log.closes != 3 || log.live != 0 {
		t.Errorf("regrouped %d, aborted %d, closed %d, %d left open; want 4, 3, 3, 0", log.regroups, log.aborts, log.closes, log.live)
	}
}

// noEnv is an environment without any launcher: a job of one process.
func noEnv(string) string { return "" }
