package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"
)

// PowerMeter reads the power draw of the devices this process drives
// (package power, over NVML) between Start and Stop.
type PowerMeter interface {
	Start() error
	Stop() (PowerDraw, error)
}

// PowerDraw is what the devices drew while one size ran for a power
// window, per device, in W; zero where none was measured.
type PowerDraw struct {
	// W is the mean of the sampled power readings: what NVIDIA
	// AIConfigurator's collector records as a size's power.
	W float64
	// LimitW is the devices' mean power-management limit.
	LimitW float64
	// CounterW is the mean from the energy counters over the window; 0
	// where any device has none.
	CounterW float64
	// Samples is how many readings W averages, over every process.
	Samples int
	// Calls is how many calls ran in the window, Window its wall time
	// (the longest process's).
	Calls  int
	Window time.Duration
}

// powerChunk is how long, at most, one batch of a power window is
// expected to run: the window is issued in batches that each wait under
// the watchdog and see a cancellation.
const powerChunk = 100 * time.Millisecond

// maxPowerCalls bounds a window's calls, whatever a size's time.
const maxPowerCalls = 1 << 24

// PowerCalls is how many calls of perCall each keep the devices busy for
// window: at least one, at most maxPowerCalls.
func PowerCalls(window, perCall time.Duration) int {
	if perCall <= 0 {
		return maxPowerCalls
	}
	return int(min(max(math.Ceil(window.Seconds()/perCall.Seconds()), 1), maxPowerCalls))
}

// errPowerElsewhere is the error of a process whose own reading worked
// when another's did not.
var errPowerElsewhere = errors.New("another process could not read its devices' power")

// powerDraw runs op, whose calls take perCall µs, for window while every
// process's meter reads its devices, and combines the readings: the mean
// over the processes that hold ranks. Every process issues the same
// calls, whatever its meter said, so that none waits for a peer that
// stopped; a meter that failed anywhere fails the size everywhere.
func (e *Engine) powerDraw(ctx context.Context, op Op, perCall float64, meter PowerMeter, window time.Duration) (PowerDraw, error) {
	got, err := e.peers().AllReduce(ctx, []float64{perCall}, ReduceMax)
	if err != nil {
		return PowerDraw{}, err
	}
	per := time.Duration(got[0] * float64(time.Microsecond))
	calls, chunk := PowerCalls(window, per), PowerCalls(powerChunk, per)
	if err := e.peers().Barrier(ctx); err != nil {
		return PowerDraw{}, err
	}
	active := e.active()
	var startErr error
	if active {
		startErr = meter.Start()
	}
	began := time.Now()
	for left := calls; left > 0; left -= chunk {
		if err := e.launch(ctx, Batch{Op: op, Iters: min(chunk, left), Agg: 1}, op.Footprint()); err != nil {
			if active && startErr == nil {
				meter.Stop()
			}
			return PowerDraw{}, err
		}
	}
	took := time.Since(began)
	var d PowerDraw
	var mine error
	if active {
		mine = startErr
		if startErr == nil {
			d, mine = meter.Stop()
		}
	}
	// failed, processes, W, limit, counter, counters, samples, window
	v := make([]float64, 8)
	switch {
	case mine != nil:
		v[0] = 1
	case active:
		v[1], v[2], v[3], v[4], v[6], v[7] = 1, d.W, d.LimitW, d.CounterW, float64(d.Samples), took.Seconds()
		if d.CounterW > 0 {
			v[5] = 1
		}
	}
	sum, err := e.peers().AllReduce(ctx, v, ReduceSum)
	if err != nil {
		return PowerDraw{}, err
	}
	win, err := e.peers().AllReduce(ctx, []float64{v[7]}, ReduceMax)
	if err != nil {
		return PowerDraw{}, err
	}
	switch {
	case mine != nil:
		return PowerDraw{}, fmt.Errorf("reading the power draw: %w", mine)
	case sum[0] > 0:
		return PowerDraw{}, errPowerElsewhere
	case sum[1] == 0:
		return PowerDraw{}, errors.New("no process holds a device to read the power of")
	}
	n := sum[1]
	out := PowerDraw{W: sum[2] / n, LimitW: sum[3] / n, Samples: int(sum[6]), Calls: calls,
		Window: time.Duration(win[0] * float64(time.Second))}
	if sum[5] == n {
		out.CounterW = sum[4] / n
	}
	return out, nil
}
