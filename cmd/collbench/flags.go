package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/numeric"
	"github.com/collbench/collbench/telemetry"
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

// jobFlags are the flags every measuring command shares: how many ranks a
// process runs, on which backend and devices, and how the job is formed.
type jobFlags struct {
	ngpus               int
	threads             int // -t: threads per process, each with -g GPUs (collective commands)
	timeout             float64
	backend, ncclLib    string
	devices, rendezvous string
	groupSize           int
	layout              string
	isolated            bool
	otlpEndpoint        string
	quiet               bool
}

// register adds the long-named job flags; -g and -T are registered by
// each command where its help lists them.
func (j *jobFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&j.backend, "backend", "auto", "auto, nccl or host")
	fs.StringVar(&j.ncclLib, "nccl-lib", "", "libnccl.so.2 to load, or its folder (also COLLBENCH_NCCL_LIB)")
	fs.StringVar(&j.devices, "devices", "", "GPU of each local rank, comma-separated (repeats allowed where NCCL permits); default NCCL_TESTS_DEVICE+i or 0..g-1")
	fs.StringVar(&j.rendezvous, "rendezvous", "", "host:port rank 0 hosts the job's rendezvous at (default MASTER_ADDR:MASTER_PORT, the first Slurm node, or this host)")
	fs.IntVar(&j.groupSize, "group-size", 0, "split the job into groups of this many ranks, each its own communicator (default: one group of all ranks)")
	fs.StringVar(&j.layout, "layout", "consecutive", "group layout: consecutive (adjacent ranks) or strided (ranks world/group-size apart)")
	fs.BoolVar(&j.isolated, "isolated", false, "run only the first group; the other ranks wait")
	fs.StringVar(&j.otlpEndpoint, "otlp-endpoint", "", "send metrics and spans over OTLP/HTTP to this collector, e.g. http://localhost:4318 (default OTEL_EXPORTER_OTLP_ENDPOINT; nothing is sent when neither is set)")
	fs.BoolVarP(&j.quiet, "quiet", "q", false, "no progress on stderr (it is shown only when stderr is a terminal)")
}

// parseArgs reads a measuring command's line into fs and refuses stray
// arguments; problems are usage errors.
func parseArgs(fs *pflag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return usageError{Err: err}
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	return finiteFlags(fs)
}

// check validates the job flags; problems are usage errors.
func (j *jobFlags) check() error {
	switch {
	case j.ngpus < 1:
		return usagef("-g must be at least 1 (got %d)", j.ngpus)
	case j.threads < 0:
		return usagef("-t must be at least 1 (got %d)", j.threads)
	case j.perProc() > maxLocalRanks:
		return usagef("-t × -g = %d: at most %d ranks run in one process; launch more processes", j.perProc(), maxLocalRanks)
	case j.layout != "consecutive" && j.layout != "strided":
		return usagef("unknown --layout %q (want consecutive or strided)", j.layout)
	case j.groupSize < 0:
		return usagef("--group-size cannot be negative (got %d)", j.groupSize)
	}
	if _, err := seconds("-T", j.timeout); err != nil {
		return err
	}
	if err := telemetry.Check(j.otlpEndpoint, os.Getenv); err != nil {
		return usageError{Err: err}
	}
	switch j.backend {
	case "auto", "host", "nccl":
	default:
		return usagef("unknown --backend %q (want auto, nccl or host)", j.backend)
	}
	return nil
}

// perProc is the ranks of one process: -t threads of -g GPUs each.
func (j *jobFlags) perProc() int { return j.ngpus * max(j.threads, 1) }

// maxLocalRanks bounds -g: far above the GPUs of any host, far below
// what would exhaust a process before a sentence could say so.
const maxLocalRanks = 1024

// grouping is the --group-size/--layout/--isolated split.
func (j *jobFlags) grouping() bench.Grouping {
	return bench.Grouping{Size: j.groupSize, Strided: j.layout == "strided", Isolated: j.isolated}
}

// flags holds a collective subcommand's flags: nccl-tests' letters, long
// names and defaults, plus collbench's own.
type flags struct {
	jobFlags
	fs                       *pflag.FlagSet
	minBytes, maxBytes, step sizeFlag
	factor                   int64
	iters, warmup, agg       int
	cycles, check            int
	op, dtype                string
	root, blocking, graph    int
	average, cputime         int
	jsonFile                 string
	format                   string
	register, iterTiming     int
	iterSkip                 int
	unalign, timestamps      int
	ctaPolicy, streamNull    int
	memoryReport, parallel   int
	unsupported              map[string]*int
	traffic                  *trafficFlags // alltoallv only
}

// unsupportedFlags are nccl-tests options collbench recognises but does not
// implement; setting one to a non-zero value is refused rather than ignored.
var unsupportedFlags = []struct {
	short, long, why string
}{
	{"D", "device_implementation", "it selects nccl-tests' own CUDA kernels, and collbench carries no device code (docs/gpu.md)"},
	{"V", "device_cta_count", "it sizes nccl-tests' own CUDA kernels, and collbench carries no device code (docs/gpu.md)"},
}

func newFlags(name string) *flags {
	f := &flags{fs: pflag.NewFlagSet(name, pflag.ContinueOnError), minBytes: 32 << 20, maxBytes: 32 << 20, step: 1 << 20}
	fs := f.fs
	fs.SortFlags = false
	fs.IntVarP(&f.threads, "nthreads", "t", 1, "threads per process, each with -g GPUs: ranks = processes × threads × GPUs")
	fs.IntVarP(&f.ngpus, "ngpus", "g", 1, "GPUs (ranks) per process")
	fs.VarP(&f.minBytes, "minbytes", "b", "minimum size in bytes (K, M, G suffixes are binary)")
	fs.VarP(&f.maxBytes, "maxbytes", "e", "maximum size in bytes")
	fs.VarP(&f.step, "stepbytes", "i", "size increment when the step factor is 1")
	fs.Int64VarP(&f.factor, "stepfactor", "f", 1, "size multiplier (an integer; 1 = use -i)")
	fs.IntVarP(&f.iters, "iters", "n", 20, "timed iterations per size")
	fs.IntVarP(&f.warmup, "warmup_iters", "w", 1, "warm-up iterations per power-of-two size")
	fs.IntVarP(&f.agg, "agg_iters", "m", 1, "calls aggregated into one group per iteration")
	fs.IntVarP(&f.cycles, "run_cycles", "N", 1, "times to repeat the sweep (0 = until interrupted)")
	fs.IntVarP(&f.check, "check", "c", 1, "verification passes per size (0 = none; #wrong prints N/A)")
	fs.StringVarP(&f.op, "op", "o", "sum", "reduction: sum, prod, max, min, avg, mulsum or all")
	fs.StringVarP(&f.dtype, "datatype", "d", "float", "type: int8 uint8 int32 uint32 int64 uint64 half float double bfloat16 f8e4m3 f8e5m2, or all")
	fs.IntVarP(&f.root, "root", "r", 0, "root rank (-1 = every root in turn)")
	fs.IntVarP(&f.blocking, "blocking", "z", 0, "0 async; 1 sync+barrier per call; 2 sync per call; 3 sync per call, barrier per iteration outside the time")
	fs.IntVarP(&f.graph, "cudagraph", "G", 0, "capture iterations in a CUDA graph and launch it this many times")
	fs.IntVarP(&f.average, "average", "a", 1, "combine times across processes: 0 rank 0, 1 mean, 2 min, 3 max")
	fs.Float64VarP(&f.timeout, "timeout", "T", 0, "seconds a call may take before the run is aborted (0 = no limit)")
	fs.IntVarP(&f.cputime, "report_cputime", "C", 0, "report host enqueue time instead of completion time")
	fs.StringVarP(&f.jsonFile, "output_file", "J", "", "also write the results as JSON to this file")
	fs.IntVarP(&f.register, "local_register", "R", 0, "register buffers with NCCL: 1 ncclCommRegister, 2 symmetric windows (nccl backend)")
	fs.IntVarP(&f.iterTiming, "per_iter_timing", "I", 0, "time every iteration with CUDA events for the statistics columns (always on for the host backend)")
	fs.IntVarP(&f.iterSkip, "per_iter_skip", "K", 0, "leading iterations left out of the per-iteration statistics")
	fs.IntVarP(&f.unalign, "unalign", "u", 0, "move every call's send and receive data this many elements into their buffers")
	fs.IntVarP(&f.timestamps, "report_timestamps", "S", 0, "end each row with the time it was measured (table output)")
	fs.IntVarP(&f.parallel, "parallel_init", "p", 0, "1: each of the -t threads initialises its GPUs' communicators itself, all at once; nccl backend")
	fs.IntVarP(&f.memoryReport, "memory", "M", 0, "1: end the table with the GPU memory the communicators, buffers and collectives took; nccl backend")
	fs.IntVarP(&f.streamNull, "stream_null", "y", 0, "1: run the collectives on each GPU's NULL (legacy default) stream; nccl backend")
	fs.IntVarP(&f.ctaPolicy, "cta_policy", "x", 0, "NCCL's CTA policy: 0 default, 1 efficiency (NCCL 2.27), 2 zero (2.28); nccl backend")
	if c, err := bench.LookupCollective(name); err == nil && c.Traffic != nil {
		f.traffic = &trafficFlags{}
		f.traffic.register(fs)
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

// parse reads the command line; problems are usage errors.
func (f *flags) parse(args []string) error {
	if err := parseArgs(f.fs, args); err != nil {
		return err
	}
	for _, u := range unsupportedFlags {
		if v := *f.unsupported[u.long]; v != 0 {
			return usagef("-%s/--%s is not supported: %s", u.short, u.long, u.why)
		}
	}
	if f.threads < 1 {
		return usagef("-t must be at least 1 (got %d)", f.threads)
	}
	if err := f.jobFlags.check(); err != nil {
		return err
	}
	switch f.format {
	case "table", "json", "csv":
	default:
		return usagef("unknown --format %q (want table, json or csv)", f.format)
	}
	if f.traffic != nil {
		if err := f.traffic.fromEnv(f.fs); err != nil {
			return err
		}
		if f.traffic.moe != "" {
			if err := f.checkMoE(); err != nil {
				return err
			}
		}
	}
	if f.ctaPolicy < 0 || f.ctaPolicy > 2 {
		return usagef("-x must be 0, 1 or 2 (got %d)", f.ctaPolicy)
	}
	if f.register < 0 || f.register > 2 {
		return usagef("-R must be 0, 1 or 2 (got %d)", f.register)
	}
	if f.iterSkip < 0 || f.iterSkip >= f.iters {
		return usagef("-K must be between 0 and -n minus 1 (got %d)", f.iterSkip)
	}
	if f.factor < 1 {
		return usagef("-f must be at least 1 (got %d; 1 steps by -i)", f.factor)
	}
	for _, b := range []struct {
		name string
		v    int
	}{{"-I", f.iterTiming}, {"-C", f.cputime}, {"-S", f.timestamps}, {"-y", f.streamNull}, {"-M", f.memoryReport}, {"-p", f.parallel}} {
		if b.v != 0 && b.v != 1 {
			return usagef("%s must be 0 or 1 (got %d)", b.name, b.v)
		}
	}
	return nil
}

// options builds the engine options for coll.
func (f *flags) options(coll *bench.Collective) (bench.Options, error) {
	if f.traffic != nil && f.traffic.moe == "" {
		var err error
		if coll, err = f.traffic.withTraffic(coll); err != nil {
			return bench.Options{}, err
		}
	}
	o := bench.Options{
		Coll:  coll,
		Sweep: bench.Sweep{Min: int64(f.minBytes), Max: int64(f.maxBytes), Factor: f.factor, Step: int64(f.step)},
		Iters: f.iters, Warmup: f.warmup, Agg: f.agg, Cycles: f.cycles, Check: f.check,
		Root: f.root, Blocking: f.blocking, Graph: f.graph, Average: f.average,
		CPUTime: f.cputime != 0, IterTiming: f.iterTiming != 0, IterSkip: f.iterSkip, Unalign: f.unalign,
	}
	var err error
	if o.Timeout, err = seconds("-T", f.timeout); err != nil {
		return o, err
	}
	if o.Types, err = parseList(f.dtype, numeric.AllTypes, numeric.ParseDataType); err != nil {
		return o, usageError{Err: err}
	}
	if coll.Reduces {
		if o.Ops, err = parseList(f.op, numeric.AllOps, numeric.ParseRedOp); err != nil {
			return o, usageError{Err: err}
		}
	} else if f.fs.Changed("op") {
		if _, err := numeric.ParseRedOp(f.op); err != nil && f.op != "all" {
			return o, usageError{Err: err}
		}
	}
	return o, nil
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

func (f *flags) usage(name string) string {
	return fmt.Sprintf("Usage: collbench %s [flags]\n\nFlags:\n%s", name, f.fs.FlagUsages())
}
