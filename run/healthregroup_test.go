package run

import (
	"context"
	"sync"
	"testing"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/host"
	"github.com/collbench/collbench/bench/numeric"
	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/health"
)

// regroupLog counts what a regrouping backend was asked to do.
type regroupLog struct {
	mu                      sync.Mutex
	opens, regroups, closes int
	live                    int // regrouped sets not closed yet
	overlapped              bool
}

// regroupingHost is the host backend with communicators that regroup, as
// the nccl backend's do (there by ncclCommSplit; here by opening the
// grouping through the host backend), so that what a health check asks of
// a Regrouper can be watched without a GPU.
type regroupingHost struct {
	host.Backend
	log *regroupLog
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

func (c *regroupingComm) Regroup(g bench.Grouping) (bench.Comm, error) {
	l := c.b.log
	l.mu.Lock()
	l.regroups++
	l.overlapped = l.overlapped || l.live > 0
	l.live++
	l.mu.Unlock()
	s := c.setup
	s.Groups = g
	sub, err := c.b.Backend.Open(context.Background(), s)
	if err != nil {
		return nil, err
	}
	return &closeCounted{Comm: sub, log: l}, nil
}

type closeCounted struct {
	bench.Comm
	log *regroupLog
}

func (c *closeCounted) Close() error {
	c.log.mu.Lock()
	c.log.closes++
	c.log.live--
	c.log.mu.Unlock()
	return c.Comm.Close()
}

// A health check on a backend that regroups opens the job's communicators
// once and splits every wave's from them, each wave's closed before the
// next is made, and its record counts the opening and the closing of
// every wave.
func TestHealthRegroupsEveryWave(t *testing.T) {
	j, err := NewJob(Settings{RanksPerProc: 4, Backend: "host", Version: "test"}, noEnv, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	log := &regroupLog{}
	j.picked = &pickedBackend{backend: regroupingHost{log: log}}
	var rec *document.Health
	_, err = j.Health(t.Context(), HealthSpec{PairBytes: 16 << 10, ARBytes: 16 << 10, Type: numeric.Float32, Iters: 5, Passes: 2,
		Criteria: health.Criteria{MinDrop: 0.5, Z: 10}}, HealthHooks{Write: func(d *document.Health, err error) error {
		rec = d
		return err
	}})
	if err != nil {
		t.Fatal(err)
	}
	if rec == nil || len(rec.Setup) != 1 {
		t.Fatalf("record's communicator set-up: %+v", rec)
	}
	s := rec.Setup[0]
	// Four ranks in one process: every GPU pair is a wave of its own, 3
	// rounds of 2 pairs, in each of 2 passes.
	if log.opens != 1 || log.regroups != 12 || log.closes != 12 || log.overlapped {
		t.Errorf("opened %d time(s), regrouped %d, closed %d, a wave open beside another: %v; want 1, 12, 12, false",
			log.opens, log.regroups, log.closes, log.overlapped)
	}
	if s.Phase != "GPU pairs" || s.Waves != 12 || s.MaxS <= 0 || s.TotalS < s.MaxS || s.CloseTotalS < s.CloseMaxS {
		t.Errorf("recorded set-up %+v", s)
	}
}
