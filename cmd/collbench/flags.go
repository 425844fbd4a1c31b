package main

import (
	"fmt"
	"os"
	"strconv"

	"github.com/spf13/pflag"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/run"
)

// sizeFlag is a byte count that accepts nccl-tests' K/M/G suffixes.
type sizeFlag int64

func (s *sizeFlag) String() string { return bench.FormatSize(int64(*s)) }
func (s *sizeFlag) Type() string   { return "size" }
func (s *sizeFlag) Set(v string) error {
	n, err := bench.ParseSize(v)
	if err != nil {
		return err
	}
	*s = sizeFlag(n)
	return nil
}

// size binds a flag to a byte count.
func size(p *int64) *sizeFlag { return (*sizeFlag)(p) }

// jobFlags are the flags every measuring command shares: how many ranks a
// process runs, on which backend and devices, and how the job is formed.
type jobFlags struct {
	run.JobRequest
	quiet bool
	// getenv reads the environment the command will run in: the
	// process's own (nil), or, where ab and tune check an arm before
	// starting it, the arm's.
	getenv func(string) string
}

// env is the environment the checks read.
func (j *jobFlags) env() func(string) string {
	if j.getenv != nil {
		return j.getenv
	}
	return os.Getenv
}

// register adds the long-named job flags, with the library's defaults
// (run.DefaultJobRequest, which the command set before registering -g
// and -T where its help lists them).
func (j *jobFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&j.Backend, "backend", j.Backend, "auto, nccl or host")
	fs.StringVar(&j.NCCLLib, "nccl-lib", j.NCCLLib, "libnccl.so.2 to load, or its folder (also COLLBENCH_NCCL_LIB)")
	fs.StringVar(&j.Transport, "transport", j.Transport, "host backend, ranks of one host: auto (shared memory where it can be shared, else TCP), tcp or shm")
	fs.StringVar(&j.Devices, "devices", "", "GPU of each local rank, comma-separated (repeats allowed where NCCL permits); default NCCL_TESTS_DEVICE+i or 0..g-1")
	fs.StringVar(&j.Rendezvous, "rendezvous", "", "host:port rank 0 hosts the job's rendezvous at (default MASTER_ADDR:MASTER_PORT, the first Slurm node, or this host)")
	fs.IntVar(&j.GroupSize, "group-size", j.GroupSize, "split the job into groups of this many ranks, each its own communicator (default: one group of all ranks)")
	fs.StringVar(&j.Layout, "layout", j.Layout, "group layout: consecutive (adjacent ranks) or strided (ranks world/group-size apart)")
	fs.BoolVar(&j.Isolated, "isolated", false, "run only the first group; the other ranks wait")
	fs.StringVar(&j.OTLPEndpoint, "otlp-endpoint", "", "send metrics and spans over OTLP/HTTP to this collector, e.g. http://localhost:4318 (default OTEL_EXPORTER_OTLP_ENDPOINT; nothing is sent when neither is set)")
	fs.BoolVarP(&j.quiet, "quiet", "q", false, "no progress on stderr (it is shown only when stderr is a terminal)")
}

// registerRanks adds -g and -T as a command other than a collective's
// lists them (a collective keeps nccl-tests' order): what names the unit
// -T bounds ("call", "phase"), and whole the run it aborts.
func (j *jobFlags) registerRanks(fs *pflag.FlagSet, what, whole string) {
	fs.IntVarP(&j.NGPUs, "ngpus", "g", j.NGPUs, "GPUs (ranks) per process")
	fs.Float64VarP(&j.Timeout, "timeout", "T", 0, fmt.Sprintf("seconds a %s may take before the %s is aborted (0 = none fixed; on GPUs the stall watchdog gives up after 50× what the run has measured, at least 60 s)", what, whole))
}

// check validates the job flags; problems are usage errors.
func (j *jobFlags) check() error {
	_, err := j.settings()
	return err
}

// settings are the job flags as the run package takes them.
func (j *jobFlags) settings() (run.Settings, error) { return j.Settings(version, j.env()) }

// flags holds a collective subcommand's flags: nccl-tests' letters, long
// names and defaults, plus collbench's own.
type flags struct {
	jobFlags
	run.SweepRequest
	coll        *bench.Collective
	fs          *pflag.FlagSet
	jsonFile    string
	format      string
	unsupported map[string]*int
	// judge and references: --judge and the site's reference tables.
	judge      bool
	references []string
	// columns is --columns: a set of columns added to the table.
	columns string
}

// unsupportedFlags are nccl-tests options collbench recognises but does not
// implement; setting one to a non-zero value is refused rather than ignored.
var unsupportedFlags = []struct {
	short, long, why string
}{
	{"D", "device_implementation", "it selects nccl-tests' own CUDA kernels, and collbench carries no device code (docs/gpu.md)"},
	{"V", "device_cta_count", "it sizes nccl-tests' own CUDA kernels, and collbench carries no device code (docs/gpu.md)"},
}

func newFlags(coll *bench.Collective) *flags {
	f := &flags{coll: coll, fs: newFlagSet(coll.Name), SweepRequest: run.DefaultSweepRequest(), jobFlags: jobFlags{JobRequest: run.DefaultJobRequest()}}
	fs, r := f.fs, &f.SweepRequest
	fs.IntVarP(&f.Threads, "nthreads", "t", f.Threads, "threads per process, each with -g GPUs: ranks = processes × threads × GPUs")
	fs.IntVarP(&f.NGPUs, "ngpus", "g", f.NGPUs, "GPUs (ranks) per process")
	fs.VarP(size(&r.MinBytes), "minbytes", "b", "minimum size in bytes (K, M, G suffixes are binary)")
	fs.VarP(size(&r.MaxBytes), "maxbytes", "e", "maximum size in bytes")
	fs.VarP(size(&r.StepBytes), "stepbytes", "i", "size increment when the step factor is 1")
	fs.Int64VarP(&r.Factor, "stepfactor", "f", r.Factor, "size multiplier (an integer; 1 = use -i)")
	fs.IntVarP(&r.Iters, "iters", "n", r.Iters, "timed iterations per size")
	fs.IntVarP(&r.Warmup, "warmup_iters", "w", r.Warmup, "warm-up iterations per power-of-two size")
	fs.IntVarP(&r.Agg, "agg_iters", "m", r.Agg, "calls aggregated into one group per iteration")
	fs.IntVarP(&r.Cycles, "run_cycles", "N", r.Cycles, "times to repeat the sweep (0 = until interrupted)")
	fs.IntVarP(&r.Check, "check", "c", r.Check, "verification passes per size (0 = none; #wrong prints N/A)")
	fs.IntVarP(&r.Bitwise, "bitwise", "B", r.Bitwise, "calls compared bit for bit with a reference call per size and placement (0 = none; adds #bitdiff)")
	fs.StringVarP(&r.Op, "op", "o", r.Op, "reduction: sum, prod, max, min, avg, mulsum or all")
	fs.StringVarP(&r.DType, "datatype", "d", r.DType, "type: int8 uint8 int32 uint32 int64 uint64 half float double bfloat16 f8e4m3 f8e5m2, or all")
	fs.IntVarP(&r.Root, "root", "r", r.Root, "root rank (-1 = every root in turn)")
	fs.IntVarP(&r.Blocking, "blocking", "z", r.Blocking, "0 async; 1 sync+barrier per call; 2 sync per call; 3 sync per call, barrier per iteration outside the time")
	fs.IntVarP(&r.Graph, "cudagraph", "G", r.Graph, "capture iterations in a CUDA graph and launch it this many times")
	fs.IntVarP(&r.Average, "average", "a", r.Average, "combine times across processes: 0 rank 0, 1 mean, 2 min, 3 max")
	fs.Float64VarP(&f.Timeout, "timeout", "T", 0, "seconds a call may take before the run is aborted (0 = none fixed; on GPUs the stall watchdog gives up after 50× what the run has measured, at least 60 s)")
	fs.IntVarP(&r.CPUTime, "report_cputime", "C", 0, "report host enqueue time instead of completion time")
	fs.StringVarP(&f.jsonFile, "output_file", "J", "", "also write the results as JSON to this file")
	fs.IntVarP(&r.Register, "local_register", "R", 0, "register buffers with NCCL: 1 ncclCommRegister, 2 symmetric windows (nccl backend)")
	fs.IntVarP(&r.IterTiming, "per_iter_timing", "I", 0, "time every iteration with CUDA events for the statistics columns (always on for the host backend)")
	fs.IntVarP(&r.IterSkip, "per_iter_skip", "K", 0, "leading iterations left out of the per-iteration statistics")
	fs.IntVarP(&r.Unalign, "unalign", "u", 0, "move every call's send and receive data this many elements into their buffers")
	fs.IntVarP(&r.Timestamps, "report_timestamps", "S", 0, "end each row with the time it was measured (table output)")
	fs.IntVarP(&r.Parallel, "parallel_init", "p", 0, "1: each of the -t threads initialises its GPUs' communicators itself, all at once; nccl backend")
	fs.IntVarP(&r.MemoryReport, "memory", "M", 0, "1: end the table with the GPU memory the communicators, buffers and collectives took; nccl backend")
	fs.IntVarP(&r.StreamNull, "stream_null", "y", 0, "1: run the collectives on each GPU's NULL (legacy default) stream; nccl backend")
	fs.IntVarP(&r.CTAPolicy, "cta_policy", "x", 0, "NCCL's CTA policy: 0 default, 1 efficiency (NCCL 2.27), 2 zero (2.28); nccl backend")
	fs.IntVar(&r.MaxCTAs, "nccl-max-ctas", 0, "NCCL config maxCTAs: at most this many CTAs (channels) per collective (nccl backend; 0 = NCCL's default, or each rank's share of a GPU that several ranks use)")
	fs.IntVar(&r.MinCTAs, "nccl-min-ctas", 0, "NCCL config minCTAs: at least this many CTAs per collective (nccl backend; 0 = NCCL's default)")
	fs.BoolVar(&f.judge, "judge", false, "judge each size against the wire (NVLink, PCIe, NICs; memory copies on the host backend), published figures for this system and, with --nccl-estimate, NCCL's estimate: under the table and in the JSON (docs/judge.md)")
	fs.StringArrayVar(&f.references, "references", nil, "a site's reference table (JSON, as 'collbench references --json' prints) used beside the built-in one; repeat for more (implies --judge)")
	fs.StringVar(&f.columns, "columns", "", "add a set of columns after nccl-tests' own: judge (share of the wire, ratio to the published figure and its verdict, ratio to NCCL's estimate; implies --judge)")
	fs.BoolVar(&r.OrderInputs, "order-inputs", false, "with -B: inputs whose sum shows the order it was taken in, the same for an element at every size (as collbench audit runs it)")
	fs.StringVar(&r.KeepOutputs, "keep-outputs", "", "with -B: keep every rank's reference output per size and placement in this folder (new or empty; with -N, one folder per cycle), one file each, none overwritten (as collbench audit runs it)")
	fs.BoolVar(&r.Estimate, "nccl-estimate", false, "also ask NCCL's own model what each out-of-place call should take (ncclGroupSimulateEnd, NCCL 2.22+): in the JSON and under the table with the ratio (nccl backend)")
	if coll.Traffic != nil {
		t := run.DefaultTrafficRequest()
		r.Traffic = &t
		registerTraffic(fs, r.Traffic)
	}
	f.jobFlags.register(fs)
	fs.StringVar(&f.format, "format", "table", "stdout format: table, json or csv")
	f.unsupported = map[string]*int{}
	for _, u := range unsupportedFlags {
		v := new(int)
		fs.IntVarP(v, u.long, u.short, 0, "not supported: "+u.why)
		f.unsupported[u.long] = v
	}
	return f
}

func (f *flags) flags() (*pflag.FlagSet, *jobFlags) { return f.fs, &f.jobFlags }

// check refuses what the job's checks leave to the collective.
func (f *flags) check() error {
	for _, u := range unsupportedFlags {
		if v := *f.unsupported[u.long]; v != 0 {
			return usagef("-%s/--%s is not supported: %s", u.short, u.long, u.why)
		}
	}
	if f.Threads < 1 {
		return usagef("-t must be at least 1 (got %d)", f.Threads)
	}
	if err := checkFormat(f.format, "table", "json", "csv"); err != nil {
		return err
	}
	if !f.coll.Rooted && f.fs.Changed("root") && f.Root != 0 && f.Root != -1 {
		return usagef("-r %d: %s has no root (-r applies to broadcast, reduce, gather and scatter)", f.Root, f.coll.Name)
	}
	if t := f.Traffic; t != nil {
		if err := t.FromEnv(changed(f.fs), f.env()); err != nil {
			return err
		}
		if err := routingOnlyWithMoE(f.fs, t.MoE); err != nil {
			return err
		}
		if f.fs.Changed("matrix-scale") && t.Matrix == "" {
			return usagef("--matrix-scale scales a --matrix (or NCCL_TESTS_ALLTOALLV_MATRIX_FILE), and none is given")
		}
		if f.fs.Changed("spread") && t.Matrix != "" {
			return usagef("--spread shapes the traffic a --matrix (or NCCL_TESTS_ALLTOALLV_MATRIX_FILE) replaces; give one")
		}
		if t.MoE != "" {
			if err := f.checkMoE(); err != nil {
				return err
			}
		}
	}
	return f.SweepRequest.Validate()
}

// registerTraffic adds alltoallv's pattern flags; each defaults to the
// nccl-tests variable of the same meaning.
func registerTraffic(fs *pflag.FlagSet, t *run.TrafficRequest) {
	fs.Float64Var(&t.Spread, "spread", t.Spread, "share of each rank's bytes weighted by distance to the receiver, 0 (uniform) to 1 (default NCCL_TESTS_ALLTOALLV_SPREAD or 1)")
	fs.StringVar(&t.Matrix, "matrix", t.Matrix, "file of bytes each rank sends each rank, one row per sender; replaces the spread (default NCCL_TESTS_ALLTOALLV_MATRIX_FILE)")
	fs.Float64Var(&t.Scale, "matrix-scale", t.Scale, "factor applied to the matrix (default NCCL_TESTS_ALLTOALLV_MATRIX_SCALE or 1)")
	fs.BoolVar(&t.Summary, "rank-summary", t.Summary, "print each rank's bytes and bandwidth before each row (default NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY)")
	registerRouting(fs, t, "time a mixture-of-experts layer's dispatch and combine, routed as --routing says", "tokens per rank per step")
	fs.Int64Var(&t.Hidden, "hidden", t.Hidden, "with --moe: elements per token")
}

// registerRouting adds the flags that describe a mixture-of-experts
// layer's routing.
func registerRouting(fs *pflag.FlagSet, t *run.TrafficRequest, moeUsage, tokensUsage string) {
	fs.StringVar(&t.MoE, "moe", t.MoE, "EXPERTS,TOPK: "+moeUsage)
	fs.Int64Var(&t.Tokens, "tokens", t.Tokens, "with --moe: "+tokensUsage)
	fs.StringVar(&t.Routing, "routing", t.Routing, "with --moe: uniform, zipf:S (expert e chosen ∝ 1/(e+1)^S), or a file of counts per expert")
	fs.IntVar(&t.Draws, "draws", t.Draws, "with --moe: routing draws, one per call, cycled (default -n)")
	fs.Uint64Var(&t.Seed, "seed", t.Seed, "with --moe: seed of the routing draws")
}

// routingOnlyWithMoE refuses the routing flags without --moe, where
// nothing reads them.
func routingOnlyWithMoE(fs *pflag.FlagSet, moe string) error {
	if moe != "" {
		return nil
	}
	for _, name := range []string{"tokens", "hidden", "routing", "draws", "seed"} {
		if fs.Lookup(name) != nil && fs.Changed(name) {
			return usagef("--%s describes a --moe layer, and none is given", name)
		}
	}
	return nil
}

// finiteFlags refuses NaN and infinities in every floating-point flag that
// was set. A NaN compares false with everything, so a NaN threshold or
// floor silently turns its check off, and an infinite time never ends.
func finiteFlags(fs *pflag.FlagSet) error {
	var err error
	fs.Visit(func(f *pflag.Flag) {
		if err != nil || f.Value.Type() != "float64" {
			return
		}
		if v, perr := strconv.ParseFloat(f.Value.String(), 64); perr == nil && !run.Finite(v) {
			err = usagef("--%s must be a finite number (got %s)", f.Name, f.Value.String())
		}
	})
	return err
}

// checkMoE refuses the flags that --moe replaces or cannot honour.
func (f *flags) checkMoE() error {
	if f.format == "csv" {
		return usagef("--format csv is not available with --moe (table or json)")
	}
	for _, name := range moeReplaces {
		if f.fs.Changed(name) {
			return usagef("--%s does not apply with --moe: the routing sets who sends what", name)
		}
	}
	return f.CheckMoE()
}

// moeReplaces are the flags whose settings a MoE layer's routing replaces.
var moeReplaces = []string{"spread", "matrix", "matrix-scale", "rank-summary", "minbytes", "maxbytes", "stepbytes", "stepfactor", "root"}
