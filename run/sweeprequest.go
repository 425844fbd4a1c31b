package run

import (
	"strings"

	"github.com/collbench/collbench/audit/kept"
	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/numeric"
	"github.com/collbench/collbench/document"
)

// SweepRequest is a sweep as a person states it, in nccl-tests' terms
// (the letters name its flags): numbers and names, not yet checked.
// Validate refuses what no sweep can run; Spec builds the SweepSpec.
type SweepRequest struct {
	MinBytes, MaxBytes, StepBytes int64 // -b, -e, -i
	Factor                        int64 // -f; 1 steps by StepBytes
	Iters, Warmup, Agg            int   // -n, -w, -m
	Cycles, Check                 int   // -N, -c
	Bitwise                       int   // -B: repeats compared bit for bit
	// OrderInputs gives the bitwise check inputs that show a reduction's
	// order; KeepOutputs is a folder each rank's reference output of the
	// bitwise check is kept in (kept.Keep), "" none.
	OrderInputs           bool
	KeepOutputs           string
	Op, DType             string
	Root, Blocking, Graph int // -r, -z, -G
	Average               int // -a
	// The 0-or-1 switches: -C, -I, -S, -y, -M, -p.
	CPUTime, IterTiming, Timestamps        int
	StreamNull, MemoryReport, Parallel     int
	Register, IterSkip, Unalign, CTAPolicy int // -R, -K, -u, -x
	// MinCTAs and MaxCTAs bound NCCL's CTAs per collective (0: NCCL's
	// default, or the share of a GPU that several ranks use).
	MinCTAs, MaxCTAs int
	// Estimate records NCCL's own estimate of every out-of-place call
	// beside its measured time (ncclGroupSimulateEnd, NCCL 2.22 and later).
	Estimate bool
	// Traffic is an uneven all-to-all's pattern; nil for the others.
	Traffic *TrafficRequest
}

// DefaultSweepRequest is nccl-tests' defaults: 32 MiB once (1 MiB steps
// when a step is asked for), 20 timed iterations after one warm-up, one
// call per iteration, one cycle, one verification pass, a float sum to
// root 0, and the mean time over the processes.
func DefaultSweepRequest() SweepRequest {
	return SweepRequest{MinBytes: 32 << 20, MaxBytes: 32 << 20, StepBytes: 1 << 20, Factor: 1, Iters: 20, Warmup: 1, Agg: 1,
		Cycles: 1, Check: 1, Op: "sum", DType: "float", Average: 1}
}

// Validate refuses settings outside what the flags allow.
func (r *SweepRequest) Validate() error {
	switch {
	case r.CTAPolicy < 0 || r.CTAPolicy > 2:
		return Usagef("{CTAPolicy} must be 0, 1 or 2 (got %d)", r.CTAPolicy)
	case r.Register < 0 || r.Register > 2:
		return Usagef("{Register} must be 0, 1 or 2 (got %d)", r.Register)
	case r.Iters < 1:
		return Usagef("{Iters} must be at least 1 (got %d)", r.Iters)
	case r.IterSkip < 0 || r.IterSkip >= r.Iters:
		return Usagef("{IterSkip} must be between 0 and {Iters} minus 1 (got %d)", r.IterSkip)
	case r.Factor < 1:
		return Usagef("{StepFactor} must be at least 1 (got %d; 1 steps by {StepBytes})", r.Factor)
	case (r.OrderInputs || r.KeepOutputs != "") && r.Bitwise < 1:
		return Usagef("{OrderInputs} and {KeepOutputs} are about the bitwise check's calls: give {Bitwise} 1 or more")
	}
	for _, b := range []struct {
		name string
		v    int
	}{{"{IterTiming}", r.IterTiming}, {"{CPUTime}", r.CPUTime}, {"{Timestamps}", r.Timestamps}, {"{StreamNull}", r.StreamNull}, {"{MemoryReport}", r.MemoryReport}, {"{Parallel}", r.Parallel}} {
		if b.v != 0 && b.v != 1 {
			return Usagef("%s must be 0 or 1 (got %d)", b.name, b.v)
		}
	}
	return checkCTAs(r.MinCTAs, r.MaxCTAs)
}

// checkCTAs refuses CTA limits NCCL would refuse.
func checkCTAs(minCTAs, maxCTAs int) error {
	switch {
	case maxCTAs < 0 || minCTAs < 0:
		return Usagef("{MaxCTAs} and {MinCTAs} cannot be negative")
	case maxCTAs > 0 && minCTAs > maxCTAs:
		return Usagef("{MinCTAs} %d is above {MaxCTAs} %d", minCTAs, maxCTAs)
	}
	return nil
}

// Options builds the engine options for coll, with job's -T; an uneven
// all-to-all gets the traffic pattern.
func (r *SweepRequest) Options(coll *bench.Collective, job JobRequest, opChanged bool) (bench.Options, error) {
	if r.Traffic != nil && r.Traffic.MoE == "" {
		var err error
		if coll, err = r.Traffic.Apply(coll, r.Iters); err != nil {
			return bench.Options{}, err
		}
	}
	o := bench.Options{
		Coll:  coll,
		Sweep: bench.Sweep{Min: r.MinBytes, Max: r.MaxBytes, Factor: r.Factor, Step: r.StepBytes},
		Iters: r.Iters, Warmup: r.Warmup, Agg: r.Agg, Cycles: r.Cycles, Check: r.Check, Bitwise: r.Bitwise,
		Root: r.Root, Blocking: bench.Blocking(r.Blocking), Graph: r.Graph, Average: bench.Average(r.Average),
		CPUTime: r.CPUTime != 0, IterTiming: r.IterTiming != 0, IterSkip: r.IterSkip, Unalign: r.Unalign,
		Estimate: r.Estimate, OrderInputs: r.OrderInputs,
	}
	if r.KeepOutputs != "" {
		if err := kept.Prepare(r.KeepOutputs); err != nil {
			return o, Usagef("{KeepOutputs}: %v", err)
		}
		o.Reference = kept.Keep(r.KeepOutputs, r.Cycles != 1)
	}
	var err error
	if o.Timeout, err = Seconds("{Timeout}", job.Timeout); err != nil {
		return o, err
	}
	if o.Types, err = parseList(r.DType, numeric.AllTypes, numeric.ParseDataType); err != nil {
		return o, UsageError{Err: err}
	}
	if coll.Reduces {
		if o.Ops, err = parseList(r.Op, numeric.AllOps, numeric.ParseRedOp); err != nil {
			return o, opError(r.Op, err)
		}
	} else if opChanged {
		if _, err := numeric.ParseRedOp(r.Op); err != nil && r.Op != "all" {
			return o, opError(r.Op, err)
		}
	}
	return o, nil
}

// opError is a reduction op that could not be read; one that looks like
// a file name was most likely meant as the output, which nccl-tests'
// letters give to -J, not -o.
func opError(op string, err error) error {
	if strings.ContainsAny(op, "./") {
		return Usagef("{Op} %q: %v; {Op} is the reduction op, as in nccl-tests: to write the results to a file, give {JSONFile} %s", op, err, op)
	}
	return UsageError{Err: err}
}

// parseList reads a -d or -o value: one name, or "all".
func parseList[T any](s string, all func() []T, parse func(string) (T, error)) ([]T, error) {
	if strings.EqualFold(s, "all") {
		return all(), nil
	}
	v, err := parse(s)
	if err != nil {
		return nil, err
	}
	return []T{v}, nil
}

// Spec is the sweep of coll the request asks for, with the floor
// NCCL_TESTS_MIN_BW sets; args is the command line the document records.
func (r *SweepRequest) Spec(coll *bench.Collective, job JobRequest, opChanged bool, getenv func(string) string, args []string) (SweepSpec, error) {
	opts, err := r.Options(coll, job, opChanged)
	if err != nil {
		return SweepSpec{}, err
	}
	minBW, err := MinBusBW(getenv)
	if err != nil {
		return SweepSpec{}, err
	}
	initThreads := 0
	if r.Parallel != 0 {
		initThreads = job.Threads
	}
	return SweepSpec{InitThreads: initThreads, Opts: opts, Register: r.Register, CTAPolicy: r.CTAPolicy, MinCTAs: r.MinCTAs, MaxCTAs: r.MaxCTAs,
		StreamNull: r.StreamNull != 0, MemoryReport: r.MemoryReport != 0, MinBusBW: minBW,
		AllTypes: strings.EqualFold(r.DType, "all"), AllOps: strings.EqualFold(r.Op, "all"),
		Config: r.config(job), Args: args}, nil
}

// config is the run's configuration as the document records it.
func (r *SweepRequest) config(job JobRequest) document.Config {
	c := document.Config{NThreads: job.Threads, NGPUs: job.NGPUs, MinBytes: r.MinBytes, MaxBytes: r.MaxBytes,
		Warmup: r.Warmup, Iters: r.Iters, Agg: r.Agg, Validation: r.Check, BitwiseRepeats: r.Bitwise, Graph: r.Graph,
		Blocking: r.Blocking != 0, BlockMode: r.Blocking, Average: r.Average, CPUTime: r.CPUTime != 0}
	if r.Factor > 1 {
		factor := r.Factor
		c.StepFactor = &factor
	} else {
		step := r.StepBytes
		c.StepBytes = &step
	}
	return c
}
