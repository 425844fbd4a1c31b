package power

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Interval is how often a Meter reads each GPU's power: AIConfigurator's
// collector samples every 100 ms.
const Interval = 100 * time.Millisecond

// Reading is what a Meter saw between Start and Stop.
type Reading struct {
	// MeanW is the mean of every sample of every GPU, in W: per GPU,
	// the figure AIConfigurator's collector writes as power.
	MeanW float64
	// LimitW is the mean power-management limit of the GPUs, in W
	// (the collector's power_limit).
	LimitW float64
	// CounterW is the mean draw from the energy counters (energy over
	// the window's wall time), in W per GPU; 0 where a GPU has no
	// counter. NVML's power reading may itself be a moving average,
	// which the counter is not.
	CounterW float64
	// Samples is how many power readings MeanW averages.
	Samples int
	// Window is the wall time between Start and Stop.
	Window time.Duration
}

// Meter samples the power draw of a fixed set of GPUs. Start and Stop
// alternate; a Meter is used from one goroutine.
type Meter struct {
	lib      nvml.Interface
	devs     []nvml.Device
	limitW   float64
	interval time.Duration
	now      func() time.Time

	mu      sync.Mutex
	sumMW   float64
	samples int
	stop    chan struct{}
	done    chan struct{}
	began   time.Time
	energy  []uint64 // each GPU's counter at Start, in mJ
	counted bool     // every GPU has an energy counter
}

// Open starts NVML and finds the GPUs at the given PCI bus ids
// ("0000:18:00.0", as CUDA names them); a GPU named twice is read once.
// It fails, saying why, where NVML cannot start, a GPU is not found or
// does not report its power draw.
func Open(busIDs []string) (*Meter, error) {
	return open(nvml.New(), busIDs, Interval)
}

func open(lib nvml.Interface, busIDs []string, interval time.Duration) (*Meter, error) {
	if len(busIDs) == 0 {
		return nil, errors.New("no GPU to read the power of")
	}
	// Nothing else in NVML may be called unless Init succeeded: without
	// the library, any other call ends the process.
	if ret := lib.Init(); ret != nvml.SUCCESS {
		return nil, fmt.Errorf("NVML unavailable: %s", errorString(ret))
	}
	m := &Meter{lib: lib, interval: interval, now: time.Now}
	seen := map[string]bool{}
	for _, id := range busIDs {
		key := strings.ToLower(strings.TrimSpace(id))
		if seen[key] {
			continue
		}
		seen[key] = true
		d, ret := lib.DeviceGetHandleByPciBusId(id)
		if ret != nvml.SUCCESS {
			lib.Shutdown()
			return nil, fmt.Errorf("NVML has no GPU at bus %s: %s", id, errorString(ret))
		}
		if _, ret := d.GetPowerUsage(); ret != nvml.SUCCESS {
			lib.Shutdown()
			return nil, fmt.Errorf("the GPU at bus %s reports no power draw: %s", id, errorString(ret))
		}
		if mw, ret := d.GetPowerManagementLimit(); ret == nvml.SUCCESS {
			m.limitW += float64(mw) / 1e3
		}
		m.devs = append(m.devs, d)
	}
	m.limitW /= float64(len(m.devs))
	return m, nil
}

// errorString is NVML's message for ret, without calling into a library
// that may not be loaded.
func errorString(ret nvml.Return) string {
	if ret == nvml.ERROR_LIBRARY_NOT_FOUND {
		return "the NVML library (libnvidia-ml.so.1) was not found"
	}
	return ret.Error()
}

// GPUs is how many distinct GPUs the Meter reads.
func (m *Meter) GPUs() int { return len(m.devs) }

// Start begins sampling: one reading of every GPU now, then one every
// interval until Stop.
func (m *Meter) Start() error {
	if m.stop != nil {
		return errors.New("the power meter is already running")
	}
	m.mu.Lock()
	m.sumMW, m.samples = 0, 0
	m.mu.Unlock()
	m.energy, m.counted = make([]uint64, len(m.devs)), true
	for i, d := range m.devs {
		e, ret := d.GetTotalEnergyConsumption()
		if ret != nvml.SUCCESS {
			m.counted = false
		}
		m.energy[i] = e
	}
	m.began = m.now()
	m.stop, m.done = make(chan struct{}), make(chan struct{})
	m.sample()
	go m.loop(m.stop, m.done)
	return nil
}

func (m *Meter) loop(stop, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(m.interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			m.sample()
		}
	}
}

// sample adds one reading of every GPU; a failed reading is left out,
// as the collector leaves it out.
func (m *Meter) sample() {
	for _, d := range m.devs {
		mw, ret := d.GetPowerUsage()
		if ret != nvml.SUCCESS {
			continue
		}
		m.mu.Lock()
		m.sumMW += float64(mw)
		m.samples++
		m.mu.Unlock()
	}
}

// Stop ends sampling and returns what was read since Start. It fails
// when no reading succeeded.
func (m *Meter) Stop() (Reading, error) {
	if m.stop == nil {
		return Reading{}, errors.New("the power meter was not started")
	}
	m.halt()
	r := Reading{LimitW: m.limitW, Window: m.now().Sub(m.began)}
	if m.counted && r.Window > 0 {
		var mj uint64
		for i, d := range m.devs {
			e, ret := d.GetTotalEnergyConsumption()
			if ret != nvml.SUCCESS || e < m.energy[i] {
				mj, m.counted = 0, false
				break
			}
			mj += e - m.energy[i]
		}
		if m.counted {
			r.CounterW = float64(mj) / 1e3 / r.Window.Seconds() / float64(len(m.devs))
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.samples == 0 {
		return r, errors.New("NVML gave no power reading")
	}
	r.MeanW, r.Samples = m.sumMW/1e3/float64(m.samples), m.samples
	return r, nil
}

// Close stops sampling if it runs and shuts NVML down.
func (m *Meter) Close() {
	if m.stop != nil {
		m.halt()
	}
	m.lib.Shutdown()
}

// halt ends the sampling goroutine and waits for its last reading.
func (m *Meter) halt() {
	close(m.stop)
	<-m.done
	m.stop, m.done = nil, nil
}
