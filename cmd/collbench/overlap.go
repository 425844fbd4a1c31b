package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"go.opentelemetry.io/otel/attribute"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/numeric"
	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/report"
)

// overlapFlags are collbench overlap's flags.
type overlapFlags struct {
	jobFlags
	fs                 *pflag.FlagSet
	coll, commType, op string
	minBytes, maxBytes sizeFlag
	factor             int64
	gemms, copies      []string
	dtype              string
	cover, target      float64
	preset             string
	format, jsonFile   string
	galvatron          string
	commPriority       string
	maxCTAs, minCTAs   int
}

// galvatronPreset is Galvatron's overlap probe (profile_overlap.py): an
// fp32 Linear 4096→4096 on 1024 rows against a 64 MiB fp32 all-reduce of
// the whole world, the covering side four times longer, about a second
// measured.
var galvatronPreset = struct {
	gemm   string
	dtype  string
	size   int64
	cover  float64
	target float64
}{"1024,4096,4096", "float", 64 << 20, 4, 1}

func newOverlapFlags() *overlapFlags {
	f := &overlapFlags{fs: pflag.NewFlagSet("overlap", pflag.ContinueOnError), minBytes: 1 << 20, maxBytes: 64 << 20}
	fs := f.fs
	fs.SortFlags = false
	fs.StringVar(&f.coll, "coll", "allreduce", "the collective (any collbench collective)")
	fs.VarP(&f.minBytes, "minbytes", "b", "smallest message size")
	fs.VarP(&f.maxBytes, "maxbytes", "e", "largest message size")
	fs.Int64VarP(&f.factor, "stepfactor", "f", 4, "size multiplier")
	fs.StringVar(&f.commType, "comm-type", "float", "the collective's data type")
	fs.StringVarP(&f.op, "op", "o", "sum", "the collective's reduction")
	fs.StringArrayVar(&f.gemms, "gemm", nil, "GEMM shape m,n,k (C[m×n] = A[m×k]·B[k×n]); repeat for several (default 4096,4096,4096 on GPUs, 256,256,256 on the host)")
	fs.StringArrayVar(&f.copies, "copy", nil, "also run a memory-bound device copy of this many bytes; repeat for several")
	fs.StringVarP(&f.dtype, "datatype", "d", "", "GEMM type: float, half or bfloat16 (default bfloat16 on GPUs, float on the host)")
	fs.Float64Var(&f.cover, "cover", 4, "the covering side runs this many times longer than the measured one")
	fs.Float64Var(&f.target, "target", 0.5, "seconds the measured side runs in each overlapped phase")
	fs.StringVar(&f.preset, "preset", "", "galvatron: Galvatron's probe (fp32 1024×4096×4096 GEMM against a 64 MiB fp32 all-reduce)")
	fs.IntVarP(&f.ngpus, "ngpus", "g", 1, "GPUs (ranks) per process")
	fs.Float64VarP(&f.timeout, "timeout", "T", 0, "seconds a phase may take before the run is aborted (0 = no limit in one process)")
	fs.StringVar(&f.commPriority, "comm-priority", "normal", "stream priority of the collectives against the compute: normal or high (nccl backend)")
	fs.IntVar(&f.maxCTAs, "nccl-max-ctas", 0, "NCCL config maxCTAs: at most this many CTAs (channels) per collective (nccl backend; 0 = NCCL's default)")
	fs.IntVar(&f.minCTAs, "nccl-min-ctas", 0, "NCCL config minCTAs (nccl backend; 0 = NCCL's default)")
	f.jobFlags.register(fs)
	fs.StringVar(&f.format, "format", "table", "stdout format: table or json")
	fs.StringVarP(&f.jsonFile, "output_file", "J", "", "also write the results as JSON to this file")
	fs.StringVar(&f.galvatron, "galvatron", "", "also write Galvatron's overlap_coefficient.json to this file")
	return f
}

// parse reads and checks the command line.
func (f *overlapFlags) parse(args []string) error {
	if err := parseArgs(f.fs, args); err != nil {
		return err
	}
	if err := f.jobFlags.check(); err != nil {
		return err
	}
	switch {
	case f.preset != "" && f.preset != "galvatron":
		return usagef("unknown --preset %q (want galvatron)", f.preset)
	case f.cover < 1:
		return usagef("--cover must be at least 1 (got %g)", f.cover)
	case f.target <= 0 || f.target > 3600:
		return usagef("--target must be between 0 and 3600 seconds (got %g)", f.target)
	case f.format != "table" && f.format != "json":
		return usagef("unknown --format %q (want table or json)", f.format)
	case f.commPriority != "normal" && f.commPriority != "high":
		return usagef("unknown --comm-priority %q (want normal or high)", f.commPriority)
	case f.maxCTAs < 0 || f.minCTAs < 0:
		return usagef("--nccl-max-ctas and --nccl-min-ctas cannot be negative")
	case f.maxCTAs > 0 && f.minCTAs > f.maxCTAs:
		return usagef("--nccl-min-ctas %d is above --nccl-max-ctas %d", f.minCTAs, f.maxCTAs)
	}
	if f.preset == "galvatron" {
		for _, name := range []string{"gemm", "copy", "datatype", "minbytes", "maxbytes", "coll", "comm-type", "cover", "target"} {
			if f.fs.Changed(name) {
				return usagef("--preset galvatron fixes --%s; leave it out", name)
			}
		}
		f.gemms, f.dtype = []string{galvatronPreset.gemm}, galvatronPreset.dtype
		f.minBytes, f.maxBytes = sizeFlag(galvatronPreset.size), sizeFlag(galvatronPreset.size)
		f.cover, f.target = galvatronPreset.cover, galvatronPreset.target
	}
	return nil
}

// plan is what the flags ask for, resolved for a backend.
type plan struct {
	coll      *bench.Collective
	commType  numeric.DataType
	op        numeric.RedOp
	sizes     []int64
	workloads []bench.Workload
}

func (f *overlapFlags) plan(onGPU bool) (plan, error) {
	var p plan
	var err error
	if p.coll, err = bench.LookupCollective(f.coll); err != nil {
		return p, usageError{err}
	}
	if p.commType, err = numeric.ParseDataType(f.commType); err != nil {
		return p, usagef("--comm-type: %v", err)
	}
	p.op = numeric.NoOp
	if p.coll.Reduces {
		if p.op, err = numeric.ParseRedOp(f.op); err != nil {
			return p, usageError{err}
		}
	}
	sweep := bench.Sweep{Min: int64(f.minBytes), Max: int64(f.maxBytes), Factor: f.factor}
	if err := sweep.Validate(); err != nil {
		return p, usageError{err}
	}
	p.sizes = sweep.Sizes()
	dtype, gemms := f.dtype, f.gemms
	if dtype == "" {
		dtype = map[bool]string{true: "bfloat16", false: "float"}[onGPU]
	}
	gt, err := numeric.ParseDataType(dtype)
	if err != nil {
		return p, usagef("-d: %v", err)
	}
	if gt != numeric.Float32 && gt != numeric.Float16 && gt != numeric.Bfloat16 {
		return p, usagef("-d %s: GEMMs run in float, half or bfloat16", gt)
	}
	if len(gemms) == 0 && len(f.copies) == 0 {
		gemms = []string{map[bool]string{true: "4096,4096,4096", false: "256,256,256"}[onGPU]}
	}
	for _, g := range gemms {
		w, err := bench.ParseGEMM(g, gt)
		if err != nil {
			return p, usageError{err}
		}
		p.workloads = append(p.workloads, w)
	}
	for _, c := range f.copies {
		n, err := bench.ParseSize(c)
		if err != nil || n <= 0 {
			return p, usagef("--copy %q: want a positive size", c)
		}
		p.workloads = append(p.workloads, bench.Workload{Kind: bench.Copy, Bytes: n})
	}
	return p, nil
}

// runOverlap is collbench overlap.
func runOverlap(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f := newOverlapFlags()
	if code, done := parseWith(f.fs, func() error { return f.parse(args) }, "collbench overlap [flags]", stdout, stderr); done {
		return code
	}
	return runJob(ctx, "overlap", &f.jobFlags, stderr, func(j *job, logf func(string, ...any)) (bool, error) {
		return false, overlap(ctx, f, j, logf, args, stdout, stderr)
	})
}

func overlap(ctx context.Context, f *overlapFlags, j *job, logf func(string, ...any), args []string, stdout, stderr io.Writer) error {
	nranks, groups := j.Size*f.ngpus, f.grouping()
	if err := groups.Validate(nranks); err != nil {
		return usagef("--group-size: %v", err)
	}
	for _, path := range []string{f.jsonFile, f.galvatron} {
		if path != "" && j.Rank == 0 {
			if err := checkFile(path); err != nil {
				return err
			}
		}
	}
	// The plan's defaults depend on the backend; flag errors are found
	// before any process is contacted by planning for both.
	if _, err := f.plan(false); err != nil {
		return err
	}
	sizing := bench.Options{Sweep: bench.Sweep{Min: int64(f.minBytes), Max: int64(f.maxBytes), Factor: f.factor}}
	started := time.Now()
	outer := ctx // the signal context, before the job's failure is joined to it
	ctx, sess, closeSession, err := j.open(ctx, &f.jobFlags, logf, &sizing, func(s *bench.Setup) {
		s.MinCTAs, s.MaxCTAs, s.CommHighPriority = f.minCTAs, f.maxCTAs, f.commPriority == "high"
	})
	if err != nil {
		return err
	}
	defer closeSession()
	rec := startTelemetry(ctx, j, &f.jobFlags, "overlap", sess, started, logf)
	onGPU := sess.backend.Name() == "nccl"
	p, err := f.plan(onGPU)
	if err != nil {
		return err
	}
	if !onGPU && (f.commPriority != "normal" || f.maxCTAs > 0 || f.minCTAs > 0) {
		return usagef("--comm-priority and --nccl-max-ctas/--nccl-min-ctas apply to the nccl backend only")
	}
	doc := &document.OverlapRun{Schema: document.OverlapSchemaName, Version: document.OverlapSchemaVersion, Collbench: version,
		Backend: sess.backend.Name(), StartTime: time.Now().UTC().Format(time.RFC3339),
		Args: append([]string{"collbench", "overlap"}, args...),
		Config: document.OverlapConfig{Collective: p.coll.Name, Type: p.commType.String(), RedOp: p.op.String(),
			NRanks: nranks, NProcs: j.Size, GroupSize: groups.Of(nranks), Layout: groups.Layout(),
			Cover: f.cover, TargetUs: f.target * 1e6, Knobs: f.knobs(), Devices: document.DeviceRecords(sess.devices)}}
	out := j.output(stdout)
	if f.format == "table" {
		report.OverlapHeader(out, doc, sess.notes)
	}
	x := bench.Overlap{Comm: sess.comm, Peers: j.peers(), CommRanks: groups.Of(nranks), Opts: bench.OverlapOptions{
		Coll: p.coll, Type: p.commType, RedOp: p.op, Target: time.Duration(f.target * float64(time.Second)),
		Cover: f.cover, Timeout: j.limits.collective}}
	var runErr error
	sweepCtx, endSweep := rec.Span(ctx, "sweep", time.Now(), attribute.String("collbench.collective", p.coll.Name))
	steps := newPhases(sweepCtx, rec)
	var bar *progressBar
	if j.Rank == 0 {
		bar = newProgress(stderr, f.quiet, "overlap", len(p.sizes)*len(p.workloads))
	}
	measured := 0
	for _, size := range p.sizes {
		if size > sizing.Sweep.Max {
			break // lowered to what the devices hold; the notes say so
		}
		for _, w := range p.workloads {
			fig, err := x.Measure(ctx, size, w)
			if err != nil {
				runErr = fmt.Errorf("%s of %d bytes next to %s: %w", p.coll.Name, size, w, err)
				break
			}
			steps.done(fmt.Sprintf("size %s next to %s", bench.FormatSize(size), w), attribute.Int64("collbench.message.size", size),
				attribute.String("collbench.workload", w.String()))
			rec.Overlap(sweepCtx, "overlap", p.coll.Name, size, w.String(), fig.CommSlowdown, fig.ComputeSlowdown)
			r := document.MakeOverlapResult(size, w, fig)
			doc.Add(r)
			bar.Clear() // the row may go to the same terminal
			if f.format == "table" {
				report.OverlapRow(out, r)
			}
			measured++
			bar.Update(measured, bench.FormatSize(size)+" next to "+w.String())
		}
		if runErr != nil {
			break
		}
	}
	bar.Clear()
	if runErr == nil && j.multi() {
		runErr = j.peers().Barrier(ctx)
	}
	endSweep(time.Now(), runErr)
	err = writeAndFlush(ctx, rec, runErr, logf, func() error { return writeOverlap(ctx, f, doc, j, out, j.explain(outer, runErr)) })
	if err != nil {
		return err
	}
	return runErr
}

// writeOverlap prints the footer or the document and saves the files.
func writeOverlap(ctx context.Context, f *overlapFlags, doc *document.OverlapRun, j *job, out io.Writer, runErr error) error {
	doc.EndTime = time.Now().UTC().Format(time.RFC3339)
	if runErr != nil {
		doc.Errors = append(doc.Errors, runErr.Error())
	}
	switch {
	case f.format == "json":
		if err := doc.Encode(out); err != nil {
			return err
		}
	case runErr == nil:
		report.OverlapFooter(out, doc)
	}
	if j.Rank == 0 {
		if f.jsonFile != "" {
			if err := saveFile(ctx, f.jsonFile, out, doc.Encode); err != nil {
				return err
			}
		}
		if f.galvatron != "" && runErr == nil {
			if err := saveFile(ctx, f.galvatron, out, doc.EncodeGalvatron); err != nil {
				return err
			}
		}
	}
	return nil
}

// knobs records what changes the answer: the NCCL_* environment, the
// config limits and the stream priority.
func (f *overlapFlags) knobs() map[string]string {
	k := map[string]string{"comm_priority": f.commPriority}
	if f.maxCTAs > 0 {
		k["nccl_config.maxCTAs"] = fmt.Sprint(f.maxCTAs)
	}
	if f.minCTAs > 0 {
		k["nccl_config.minCTAs"] = fmt.Sprint(f.minCTAs)
	}
	addNCCLEnv(k)
	return k
}

// addNCCLEnv copies every NCCL_* variable of the environment into m: they
// change what NCCL does, so records of a measurement carry them.
func addNCCLEnv(m map[string]string) {
	for _, kv := range os.Environ() {
		if name, val, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(name, "NCCL_") {
			m[name] = val
		}
	}
}
