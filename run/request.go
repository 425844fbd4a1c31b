package run

import (
	"math"
	"strconv"
	"time"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/host"
	"github.com/collbench/collbench/telemetry"
)

// JobRequest is a job as a person states it: counts, seconds and names,
// not yet checked. Settings checks it and gives what NewJob takes, so a
// command line and a Go program refuse the same things in the same words.
type JobRequest struct {
	NGPUs   int     // ranks (GPUs) per thread (-g)
	Threads int     // threads per process (-t); 0 counts as 1
	Timeout float64 // seconds a call may take (-T); 0 keeps the defaults
	Backend string  // auto, nccl or host
	NCCLLib string
	// Transport is how the host backend joins ranks of one host: auto,
	// tcp or shm (host.ParseTransport); empty is auto.
	Transport string
	// Devices and Rendezvous are as in Settings.
	Devices, Rendezvous string
	GroupSize           int    // ranks per communicator; 0 is the whole job
	Layout              string // consecutive or strided
	Isolated            bool
	OTLPEndpoint        string
}

// DefaultJobRequest is a job as nccl-tests forms it by default: one GPU
// per process and one thread, the backend and the host transport chosen
// by what the machine has, and (when groups are asked for) consecutive
// ranks in each.
func DefaultJobRequest() JobRequest {
	return JobRequest{NGPUs: 1, Threads: 1, Backend: "auto", Transport: "auto", Layout: "consecutive"}
}

// MaxLocalRanks bounds the ranks of one process: far above the GPUs of any
// host, far below what would exhaust a process before a sentence could
// say so.
const MaxLocalRanks = 1024

// PerProc is the ranks of one process: threads of NGPUs each.
func (r JobRequest) PerProc() int { return r.NGPUs * max(r.Threads, 1) }

// Grouping is the GroupSize/Layout/Isolated split.
func (r JobRequest) Grouping() bench.Grouping {
	return bench.Grouping{Size: r.GroupSize, Strided: r.Layout == "strided", Isolated: r.Isolated}
}

// Settings checks the request; its problems are usage errors.
func (r JobRequest) Settings(version string, getenv func(string) string) (Settings, error) {
	switch {
	case r.NGPUs < 1:
		return Settings{}, Usagef("{RanksPerProc} must be at least 1 (got %d)", r.NGPUs)
	case r.Threads < 0:
		return Settings{}, Usagef("{Threads} must be at least 1 (got %d)", r.Threads)
	case r.PerProc() > MaxLocalRanks:
		return Settings{}, Usagef("{Threads} × {RanksPerProc} = %d: at most %d ranks run in one process; launch more processes", r.PerProc(), MaxLocalRanks)
	case r.Layout != "consecutive" && r.Layout != "strided":
		return Settings{}, Usagef("unknown {Layout} %q (want consecutive or strided)", r.Layout)
	case r.GroupSize < 0:
		return Settings{}, Usagef("{GroupSize} cannot be negative (got %d)", r.GroupSize)
	}
	timeout, err := Seconds("{Timeout}", r.Timeout)
	if err != nil {
		return Settings{}, err
	}
	if err := telemetry.Check(r.OTLPEndpoint, getenv); err != nil {
		return Settings{}, UsageError{Err: err}
	}
	switch r.Backend {
	case "auto", "host", "nccl":
	default:
		return Settings{}, Usagef("unknown {Backend} %q (want auto, nccl or host)", r.Backend)
	}
	transport := host.TransportAuto
	if r.Transport != "" {
		if transport, err = host.ParseTransport(r.Transport); err != nil {
			return Settings{}, Usagef("{Transport}: %v", err)
		}
	}
	return Settings{RanksPerProc: r.PerProc(), Timeout: timeout, Backend: r.Backend, NCCLLib: r.NCCLLib, Transport: transport,
		Devices: r.Devices, Rendezvous: r.Rendezvous, Grouping: r.Grouping(), OTLPEndpoint: r.OTLPEndpoint,
		Version: version}, nil
}

// maxSeconds is the longest time a setting may give: what a
// time.Duration holds, so that a huge -T is refused instead of wrapping
// to a negative duration.
var maxSeconds = float64(math.MaxInt64) / float64(time.Second)

// minSeconds is the shortest time Seconds takes other than 0.
const minSeconds = 1e-6

// Seconds turns a setting's seconds into a duration, refusing NaN,
// infinities, negative values, more than a duration holds and less than
// a microsecond (other than 0); name is the setting as the user wrote it
// (-T, --grace).
func Seconds(name string, v float64) (time.Duration, error) {
	switch {
	case !Finite(v):
		return 0, Usagef("%s must be a finite number of seconds (got %g)", name, v)
	case v < 0:
		return 0, Usagef("%s cannot be negative (got %g)", name, v)
	case v >= maxSeconds:
		return 0, Usagef("%s %g is too long (at most %.0f seconds)", name, v, maxSeconds)
	case v > 0 && v < minSeconds:
		// Below a microsecond no call ends in time, and below a
		// nanosecond the duration would round to 0, which means none.
		return 0, Usagef("%s %g is too short (at least %g seconds, or 0 for none)", name, v, minSeconds)
	}
	return duration(v), nil
}

// duration is seconds a person gave as a duration, saturated beyond any
// limit instead of overflowing, so that the check that refuses a value out
// of range (in the spec, one layer) sees it out of range.
func duration(sec float64) time.Duration {
	switch {
	case sec >= maxSeconds:
		return time.Duration(math.MaxInt64)
	case sec <= -maxSeconds:
		return time.Duration(math.MinInt64)
	}
	return time.Duration(sec * float64(time.Second))
}

// Finite says v is neither NaN nor infinite. A NaN compares false with
// everything, so a NaN threshold silently turns its check off.
func Finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// EnvFloat reads a finite number from the environment variable name
// holding v.
func EnvFloat(name, v string) (float64, error) {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || !Finite(f) {
		return 0, Usagef("%s=%q is not a finite number", name, v)
	}
	return f, nil
}

// MinBusBW is the floor NCCL_TESTS_MIN_BW sets for the average bus
// bandwidth, in GB/s; 0 when it is unset.
func MinBusBW(getenv func(string) string) (float64, error) {
	v := getenv("NCCL_TESTS_MIN_BW")
	if v == "" {
		return 0, nil
	}
	bw, err := EnvFloat("NCCL_TESTS_MIN_BW", v)
	if err == nil && bw < 0 {
		err = Usagef("NCCL_TESTS_MIN_BW=%q cannot be negative", v)
	}
	return bw, err
}

// Split applies nccl-tests' NCCL_TESTS_SPLIT_MASK or NCCL_TESTS_SPLIT
// (colour = f(process)), read through lookup, to the job's grouping, in
// place of the one it has; grouped says the caller chose groups too,
// which is refused when a split is set.
func (j *Job) Split(lookup func(string) (string, bool), grouped bool) error {
	var sp bench.Split
	var err error
	if v, set := lookup("NCCL_TESTS_SPLIT_MASK"); set {
		sp, err = bench.ParseSplitMask(v)
	} else if v, set := lookup("NCCL_TESTS_SPLIT"); set {
		sp, err = bench.ParseSplit(v)
	} else {
		return nil
	}
	if err != nil {
		return UsageError{Err: err}
	}
	if grouped {
		return Usagef("%s and {GroupSize}/{Layout} both split the job; give one", sp.Text)
	}
	g, err := sp.Grouping(j.Size, j.Settings.RanksPerProc)
	if err != nil {
		return UsageError{Err: err}
	}
	g.Isolated = j.Settings.Grouping.Isolated
	j.Settings.Grouping = g
	return nil
}
