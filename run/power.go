package run

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/power"
)

// maxPowerWindow bounds a profile's power window: every size of every
// curve runs on for it.
const maxPowerWindow = time.Minute

// minPowerWindow is the shortest power window: one sampling period of
// AIConfigurator's collector (a reading every 100 ms), below which the mean
// is one reading.
const minPowerWindow = 100 * time.Millisecond

// powerWindowError refuses a power window outside its bounds.
func powerWindowError(seconds float64) error {
	return Usagef("{PowerWindow} must be 0 (not read) or between %g and %g seconds (got %g)", minPowerWindow.Seconds(), maxPowerWindow.Seconds(), seconds)
}

// powerMeter is a power.Meter as the suite reads it.
type powerMeter struct{ *power.Meter }

func (p powerMeter) Stop() (bench.PowerDraw, error) {
	r, err := p.Meter.Stop()
	return bench.PowerDraw{W: r.MeanW, LimitW: r.LimitW, CounterW: r.CounterW, Samples: r.Samples, Window: r.Window}, err
}

// openMeter opens NVML on the GPUs of this process's ranks. Every process
// opens its own and they agree: one that cannot read its GPUs fails the
// profile on every process, before any curve, each saying whose failed.
func openMeter(ctx context.Context, sess *Session) (*powerMeter, error) {
	host, ids := sess.localGPUs()
	m, err := power.Open(ids)
	failed := 0.0
	if err != nil {
		failed = 1
		err = fmt.Errorf("reading the power draw of the GPUs on %s: %w", host, err)
	}
	got, aerr := sess.job.Peers().AllReduce(ctx, []float64{failed}, bench.ReduceSum)
	switch {
	case err != nil:
		return nil, err
	case aerr != nil:
		m.Close()
		return nil, aerr
	case got[0] > 0:
		m.Close()
		return nil, errors.New("another process could not read its GPUs' power draw")
	}
	return &powerMeter{m}, nil
}

// localGPUs is this process's host and the PCI bus ids of its ranks'
// GPUs, as CUDA writes them.
func (s *Session) localGPUs() (host string, busIDs []string) {
	per := s.job.Settings.RanksPerProc
	first := s.job.Rank * per
	for _, d := range s.Devices {
		if d.Rank >= first && d.Rank < first+per {
			host = d.Hostname
			busIDs = append(busIDs, fmt.Sprintf("%04x:%02x:%02x.0", d.BusID[0], d.BusID[1], d.BusID[2]))
		}
	}
	return host, busIDs
}
