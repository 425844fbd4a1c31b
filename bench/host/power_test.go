package host

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/numeric"
	"github.com/collbench/collbench/cluster"
)

// countingComm counts the calls issued while its meter runs.
type countingComm struct {
	bench.Comm
	meter *steadyMeter
}

func (c countingComm) Enqueue(b bench.Batch) error {
	if c.meter.running.Load() {
		c.meter.calls.Add(int64(b.Iters * b.Agg))
	}
	return c.Comm.Enqueue(b)
}

// steadyMeter stands in for NVML on a host: its devices draw w watts.
type steadyMeter struct {
	w        float64
	startErr error
	running  atomic.Bool
	calls    atomic.Int64
	began    time.Time
	windows  []time.Duration
}

func (m *steadyMeter) Start() error {
	if m.startErr != nil {
		return m.startErr
	}
	m.began = time.Now()
	m.calls.Store(0)
	m.running.Store(true)
	return nil
}

func (m *steadyMeter) Stop() (bench.PowerDraw, error) {
	m.running.Store(false)
	took := time.Since(m.began)
	m.windows = append(m.windows, took)
	return bench.PowerDraw{W: m.w, LimitW: 700, CounterW: m.w + 1, Samples: int(took/(100*time.Millisecond)) + 1}, nil
}

// powerSuite runs an all-reduce profile suite over two processes of two
// ranks each, every point read by the process's meter for window.
func powerSuite(t *testing.T, meters []*steadyMeter, window time.Duration) ([][]bench.CurveResult, []error) {
	t.Helper()
	clients := procJob(t, 2)
	coll, _ := bench.LookupCollective("allreduce")
	curves := make([][]bench.CurveResult, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for p := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			s := bench.Suite{Colls: []*bench.Collective{coll}, Sizes: []int64{4 << 10, 64 << 10}, Type: numeric.Float32,
				RedOp: numeric.Sum, World: 4, Warmup: 1, Groupings: []bench.Grouping{{Size: 4}, {Size: 2, Isolated: true}},
				Budget: bench.Budget{MinIters: 2, MaxIters: 5}, Peers: cluster.Peers{C: clients[p]},
				Power: meters[p], PowerWindow: window,
				Open: func(ctx context.Context, g bench.Grouping, need int64) (bench.Comm, int64, func(), error) {
					comm, err := Backend{}.Open(ctx, bench.Setup{JobRanks: 4, FirstRank: 2 * p, LocalRanks: 2, BufBytes: need,
						Groups: g, Exchange: clients[p].AllGather})
					if err != nil {
						return nil, 0, nil, err
					}
					return countingComm{comm, meters[p]}, need, func() { comm.Close() }, nil
				}}
			errs[p] = s.Run(ctx, func(r bench.CurveResult) { curves[p] = append(curves[p], r) }, nil)
		}()
	}
	wg.Wait()
	return curves, errs
}

// Every point of a suite asked for power runs on for the window while
// each process's meter reads, the calls in the window are those the row
// reports, and every process hands over the same mean of the processes'
// readings. With isolated groups the process that holds no rank of the
// group measuring reads nothing.
func TestSuiteReadsPowerOverAWindow(t *testing.T) {
	const window = 30 * time.Millisecond
	meters := []*steadyMeter{{w: 300}, {w: 500}}
	curves, errs := powerSuite(t, meters, window)
	for p, err := range errs {
		if err != nil {
			t.Fatalf("process %d: %v", p, err)
		}
	}
	for p, cs := range curves {
		if len(cs) != 2 {
			t.Fatalf("process %d: %d curves, want 2", p, len(cs))
		}
		for _, c := range cs {
			for _, row := range c.Rows {
				d := row.Power
				want := 400.0 // both processes' meters
				if c.Grouping.Isolated {
					want = 300 // only process 0 holds ranks of the group measured
				}
				if d.W != want || d.LimitW != 700 || d.CounterW != want+1 || d.Calls < 1 || d.Samples < 1 || d.Window <= 0 {
					t.Errorf("process %d, %d ranks, %d B: %+v, want %v W", p, c.GroupSize, row.Size, d, want)
				}
				per := time.Duration(row.OutOfPlace.Time * float64(time.Microsecond))
				if d.Calls < bench.PowerCalls(window, per)/2 {
					t.Errorf("%d calls in a %v window of calls of %v", d.Calls, window, per)
				}
			}
		}
	}
	for p, m := range meters {
		if len(m.windows) == 0 {
			t.Errorf("process %d's meter never ran", p)
		}
	}
	last := curves[0][1].Rows[1].Power
	if got := meters[0].calls.Load(); got != int64(last.Calls) {
		t.Errorf("process 0 issued %d calls in its last window; the row says %d", got, last.Calls)
	}
}

// A meter that fails on one process fails the point on every process,
// each saying whose reading failed, and none waits for the other.
func TestSuitePowerFailureReachesEveryProcess(t *testing.T) {
	meters := []*steadyMeter{{w: 300}, {w: 500, startErr: errors.New("NVML gave no power reading")}}
	_, errs := powerSuite(t, meters, 10*time.Millisecond)
	if errs[1] == nil || !strings.Contains(errs[1].Error(), "reading the power draw: NVML gave no power reading") {
		t.Errorf("the failing process: %v", errs[1])
	}
	if errs[0] == nil || !strings.Contains(errs[0].Error(), "another process could not read its devices' power") {
		t.Errorf("its peer: %v", errs[0])
	}
}
