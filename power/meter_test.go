package power

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// board is one simulated H100's power: its reading in mW, its limit and
// its energy counter in mJ, which the test moves on.
type board struct {
	mw, limit uint32
	mj        atomic.Uint64
	reads     atomic.Int64
	noPower   bool
	noCounter bool
}

// dgx is NVML's own simulated DGX H100 (go-nvml's mock server), its
// first GPUs drawing what boards say.
func dgx(t *testing.T, boards ...*board) *server.Server {
	t.Helper()
	s := dgxh100.New()
	for i, b := range boards {
		d := s.Devices[i].(*server.Device)
		d.GetPowerUsageFunc = func() (uint32, nvml.Return) {
			if b.noPower {
				return 0, nvml.ERROR_NOT_SUPPORTED
			}
			b.reads.Add(1)
			return b.mw, nvml.SUCCESS
		}
		d.GetPowerManagementLimitFunc = func() (uint32, nvml.Return) { return b.limit, nvml.SUCCESS }
		d.GetTotalEnergyConsumptionFunc = func() (uint64, nvml.Return) {
			if b.noCounter {
				return 0, nvml.ERROR_NOT_SUPPORTED
			}
			return b.mj.Load(), nvml.SUCCESS
		}
	}
	return s
}

func bus(i int) string { return dgxh100.NewDevice(i).PciBusID }

func TestMeterReadsWhatNVMLReports(t *testing.T) {
	a := &board{mw: 300_000, limit: 700_000}
	b := &board{mw: 500_000, limit: 600_000}
	a.mj.Store(1_000_000)
	b.mj.Store(5_000_000)
	s := dgx(t, a, b)
	m, err := open(s, []string{bus(0), bus(1), strings.ToUpper(bus(0))}, 5*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.GPUs() != 2 {
		t.Fatalf("reads %d GPUs, want 2 (one named twice)", m.GPUs())
	}
	clock := time.Unix(1000, 0)
	m.now = func() time.Time { return clock }
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	for a.reads.Load() < 5 { // Open read each GPU once
		time.Sleep(time.Millisecond)
	}
	// Two seconds pass on the clock: the boards' counters moved by
	// 2 s × 320 W and 2 s × 480 W.
	clock = clock.Add(2 * time.Second)
	a.mj.Add(640_000)
	b.mj.Add(960_000)
	r, err := m.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if r.MeanW != 400 || r.LimitW != 650 || r.CounterW != 400 || r.Window != 2*time.Second {
		t.Errorf("reading %+v, want mean 400 W, limit 650 W, counter 400 W over 2 s", r)
	}
	if r.Samples < 8 || r.Samples%2 != 0 {
		t.Errorf("%d samples, want one per GPU per tick, at least 4 ticks", r.Samples)
	}
	// A second window starts afresh.
	a.mw, b.mw = 100_000, 100_000
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	if r, err = m.Stop(); err != nil || r.MeanW != 100 || r.Samples != 2 {
		t.Errorf("second window %+v, %v: want 100 W from the one reading at Start", r, err)
	}
}

func TestMeterWithoutEnergyCounter(t *testing.T) {
	a := &board{mw: 250_000, limit: 700_000, noCounter: true}
	m, err := open(dgx(t, a), []string{bus(0)}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	r, err := m.Stop()
	if err != nil || r.MeanW != 250 || r.CounterW != 0 {
		t.Errorf("reading %+v, %v: want 250 W and no counter figure", r, err)
	}
}

func TestMeterRefuses(t *testing.T) {
	for _, c := range []struct {
		name  string
		buses []string
		board *board
		want  string
	}{
		{"no GPU", nil, &board{}, "no GPU"},
		{"unknown bus", []string{"0000:ee:00.0"}, &board{mw: 1}, "no GPU at bus 0000:ee:00.0"},
		{"no power reading", []string{bus(0)}, &board{noPower: true}, "reports no power draw: ERROR_NOT_SUPPORTED"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := dgx(t, c.board)
			var shut int
			s.ShutdownFunc = func() nvml.Return { shut++; return nvml.SUCCESS }
			_, err := open(s, c.buses, time.Hour)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("open: %v, want %q", err, c.want)
			}
			if c.buses != nil && shut != 1 {
				t.Errorf("NVML shut down %d times after a refusal, want once", shut)
			}
		})
	}
}

func TestMeterOutOfTurn(t *testing.T) {
	m, err := open(dgx(t, &board{mw: 1}), []string{bus(0)}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := m.Stop(); err == nil {
		t.Error("Stop before Start succeeded")
	}
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	if err := m.Start(); err == nil {
		t.Error("a second Start succeeded")
	}
}

// TestOpenWithoutNVML runs the real library lookup: on a machine without
// libnvidia-ml the meter says so, and nothing else in NVML is called.
func TestOpenWithoutNVML(t *testing.T) {
	if ret := nvml.New().Init(); ret == nvml.SUCCESS {
		nvml.New().Shutdown()
		t.Skip("NVML starts here")
	}
	_, err := Open([]string{"0000:18:00.0"})
	if err == nil || !strings.HasPrefix(err.Error(), "NVML unavailable: ") {
		t.Fatalf("Open without NVML: %v", err)
	}
	t.Log(err)
}
