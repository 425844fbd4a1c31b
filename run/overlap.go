package run

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/numeric"
	"github.com/collbench/collbench/document"
)

// OverlapSpec is an overlap experiment, as collbench overlap runs it: a
// collective at each size next to each compute workload.
type OverlapSpec struct {
	Coll     *bench.Collective
	CommType numeric.DataType
	RedOp    numeric.RedOp // numeric.NoOp for collectives that do not reduce
	Sweep    bench.Sweep
	// GEMMs are m,n,k shapes in GEMMType (float, half or bfloat16);
	// Copies are sizes of memory-bound device copies. With neither, the
	// backend's default GEMM runs; an empty type is the backend's default.
	GEMMs    []string
	GEMMType string
	Copies   []int64
	Cover    float64       // the covering side runs this many times longer (at least 1)
	Target   time.Duration // how long the measured side runs (up to an hour)
	// CommPriority ("normal" or "high"), MinCTAs and MaxCTAs tune NCCL
	// (nccl backend only; 0 keeps NCCL's default).
	CommPriority     string
	MinCTAs, MaxCTAs int
	Args             []string // the command line, recorded in the document
}

// check refuses settings the experiment cannot run with.
func (o *OverlapSpec) check() error {
	switch {
	case o.Coll == nil:
		return Usagef("no collective given")
	case o.Cover < 1:
		return Usagef("--cover must be at least 1 (got %g)", o.Cover)
	case o.Target <= 0 || o.Target > time.Hour:
		return Usagef("--target must be between 0 and 3600 seconds (got %g)", o.Target.Seconds())
	case o.CommPriority != "normal" && o.CommPriority != "high":
		return Usagef("unknown --comm-priority %q (want normal or high)", o.CommPriority)
	}
	if err := checkCTAs(o.MinCTAs, o.MaxCTAs); err != nil {
		return err
	}
	for _, n := range o.Copies {
		if n <= 0 {
			return Usagef("--copy %d: want a positive size", n)
		}
	}
	return nil
}

// Workloads are the compute workloads the spec asks for on a backend:
// bfloat16 4096³ GEMMs by default on GPUs, float 256³ on the host.
func (o *OverlapSpec) Workloads(onGPU bool) ([]bench.Workload, error) {
	dtype, gemms := o.GEMMType, o.GEMMs
	if dtype == "" {
		dtype = map[bool]string{true: "bfloat16", false: "float"}[onGPU]
	}
	gt, err := numeric.ParseDataType(dtype)
	if err != nil {
		return nil, Usagef("-d: %v", err)
	}
	if gt != numeric.Float32 && gt != numeric.Float16 && gt != numeric.Bfloat16 {
		return nil, Usagef("-d %s: GEMMs run in float, half or bfloat16", gt)
	}
	if len(gemms) == 0 && len(o.Copies) == 0 {
		gemms = []string{map[bool]string{true: "4096,4096,4096", false: "256,256,256"}[onGPU]}
	}
	var out []bench.Workload
	for _, g := range gemms {
		w, err := bench.ParseGEMM(g, gt)
		if err != nil {
			return nil, UsageError{err}
		}
		out = append(out, w)
	}
	for _, n := range o.Copies {
		out = append(out, bench.Workload{Kind: bench.Copy, Bytes: n})
	}
	return out, nil
}

// OverlapHooks hear of an overlap experiment as it goes; nil hooks are
// skipped, and only rank 0 runs them.
type OverlapHooks struct {
	// Before runs once the spec is checked and before any process is
	// contacted.
	Before func() error
	// Start runs when the communicators are open, with the document to
	// be filled and how many measurements are planned.
	Start func(s *Session, doc *document.OverlapRun, planned int)
	// Result runs as each measurement completes; done counts them.
	Result func(r document.OverlapResult, done int)
	// Write renders the outputs, timed as the telemetry's "write" phase,
	// even after a failed measurement (runErr says why).
	Write func(doc *document.OverlapRun, runErr error) error
}

// Overlap measures the collective at each size next to each workload. It
// returns the document (nil when nothing ran) and an error: Write's if it
// failed, else the measurement's.
func (j *Job) Overlap(ctx context.Context, spec OverlapSpec, h OverlapHooks) (*document.OverlapRun, error) {
	nranks, groups := j.World(), j.Settings.Grouping
	if err := spec.check(); err != nil {
		return nil, err
	}
	if err := groups.Validate(nranks); err != nil {
		return nil, Usagef("--group-size: %v", err)
	}
	if err := spec.Coll.Fits(groups.Of(nranks)); err != nil {
		return nil, UsageError{err}
	}
	if err := spec.Sweep.Validate(); err != nil {
		return nil, UsageError{err}
	}
	if h.Before != nil && j.Rank == 0 {
		if err := h.Before(); err != nil {
			return nil, err
		}
	}
	// The workloads' defaults depend on the backend; errors are found
	// before any process is contacted by resolving them for the host.
	if _, err := spec.Workloads(false); err != nil {
		return nil, err
	}
	started := time.Now()
	outer := ctx // the signal context, before the job's failure is joined to it
	ctx, sess, err := j.Open(ctx, spec.Sweep, false, func(s *bench.Setup) {
		s.MinCTAs, s.MaxCTAs, s.CommHighPriority = spec.MinCTAs, spec.MaxCTAs, spec.CommPriority == "high"
	})
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	rec := sess.startTelemetry(ctx, "overlap", started)
	workloads, err := spec.Workloads(sess.OnGPU())
	if err != nil {
		return nil, err
	}
	if !sess.OnGPU() && (spec.CommPriority != "normal" || spec.MaxCTAs > 0 || spec.MinCTAs > 0) {
		return nil, Usagef("--comm-priority and --nccl-max-ctas/--nccl-min-ctas apply to the nccl backend only")
	}
	p := spec
	doc := &document.OverlapRun{Stamp: document.NewStamp(document.OverlapSchemaName, document.OverlapSchemaVersion, j.Settings.Version,
		sess.Backend.Name(), spec.Args),
		Config: document.OverlapConfig{Collective: p.Coll.Name, Type: p.CommType.String(), RedOp: p.RedOp.String(),
			NRanks: nranks, NProcs: j.Size, GroupSize: groups.Of(nranks), Layout: groups.Layout(),
			Cover: p.Cover, TargetUs: p.Target.Seconds() * 1e6, Knobs: spec.knobs(), Devices: document.DeviceRecords(sess.Devices)}}
	sizes := spec.Sweep.Sizes()
	if h.Start != nil && j.Rank == 0 {
		h.Start(sess, doc, len(sizes)*len(workloads))
	}
	x := bench.Overlap{Comm: sess.Comm, Peers: j.Peers(), CommRanks: groups.Of(nranks), Opts: bench.OverlapOptions{
		Coll: p.Coll, Type: p.CommType, RedOp: p.RedOp, Target: p.Target, Cover: p.Cover, Timeout: j.Limits.Collective,
		StallFloor: j.Limits.Watchdog}}
	var runErr error
	sweepCtx, endSweep := rec.Span(ctx, "sweep", time.Now(), attribute.String("collbench.collective", p.Coll.Name))
	steps := newPhases(sweepCtx, rec)
	measured := 0
	for _, size := range sizes {
		if size > sess.Sweep.Max {
			break // lowered to what the devices hold; the notes say so
		}
		for _, w := range workloads {
			fig, err := x.Measure(ctx, size, w)
			if err != nil {
				runErr = fmt.Errorf("%s of %d bytes next to %s: %w", p.Coll.Name, size, w, err)
				break
			}
			steps.done(fmt.Sprintf("size %s next to %s", bench.FormatSize(size), w), attribute.Int64("collbench.message.size", size),
				attribute.String("collbench.workload", w.String()))
			rec.Overlap(sweepCtx, "overlap", p.Coll.Name, size, w.String(), fig.CommSlowdown, fig.ComputeSlowdown)
			r := document.MakeOverlapResult(size, w, fig)
			doc.Add(r)
			measured++
			if h.Result != nil && j.Rank == 0 {
				h.Result(r, measured)
			}
		}
		if runErr != nil {
			break
		}
	}
	if runErr == nil && j.Multi() {
		runErr = j.Peers().Barrier(ctx)
	}
	endSweep(time.Now(), runErr)
	err = writeAndFlush(ctx, rec, runErr, j.logf, func() error {
		doc.Finish()
		explainedErr := j.Explain(outer, runErr)
		if explainedErr != nil {
			doc.Errors = append(doc.Errors, explainedErr.Error())
		}
		if h.Write == nil || j.Rank != 0 {
			return nil
		}
		return h.Write(doc, explainedErr)
	})
	if err != nil {
		return doc, err
	}
	return doc, runErr
}

// knobs records what changes the answer: the NCCL_* environment, the
// config limits and the stream priority.
func (o *OverlapSpec) knobs() map[string]string {
	k := map[string]string{"comm_priority": o.CommPriority}
	if o.MaxCTAs > 0 {
		k["nccl_config.maxCTAs"] = fmt.Sprint(o.MaxCTAs)
	}
	if o.MinCTAs > 0 {
		k["nccl_config.minCTAs"] = fmt.Sprint(o.MinCTAs)
	}
	addNCCLEnv(k)
	return k
}

// addNCCLEnv copies every NCCL_* variable of the environment into m: they
// change what NCCL does, so records of a measurement carry them.
// NCCL_VERSION is not one: NVIDIA's container images set it to the NCCL
// they package, which need not be the one loaded.
func addNCCLEnv(m map[string]string) {
	for _, kv := range os.Environ() {
		if name, val, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(name, "NCCL_") && name != "NCCL_VERSION" {
			m[name] = val
		}
	}
}
