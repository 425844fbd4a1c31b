package run

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/gpu"
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
		return Usagef("{Cover} must be at least 1 (got %g)", o.Cover)
	case o.Target <= 0 || o.Target > time.Hour:
		return Usagef("{Target} must be between 0 and 3600 seconds (got %g)", o.Target.Seconds())
	case o.CommPriority != "normal" && o.CommPriority != "high":
		return Usagef("unknown {CommPriority} %q (want normal or high)", o.CommPriority)
	}
	if err := checkCTAs(o.MinCTAs, o.MaxCTAs); err != nil {
		return err
	}
	for _, n := range o.Copies {
		if n <= 0 {
			return Usagef("{Copies} %d: want a positive size", n)
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
		return nil, Usagef("{DataType}: %v", err)
	}
	if gt != numeric.Float32 && gt != numeric.Float16 && gt != numeric.Bfloat16 {
		return nil, Usagef("{DataType} %s: GEMMs run in float, half or bfloat16", gt)
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

// OverlapHooks hear of an overlap experiment: its record laid out, each
// size next to each workload once measured, and the finished record.
type OverlapHooks = Hooks[*document.OverlapRun, document.OverlapResult]

// Overlap measures the collective at each size next to each workload. It
// returns the record (nil when nothing ran) and an error: Write's if it
// failed, else the measurement's.
func (j *Job) Overlap(ctx context.Context, spec OverlapSpec, h OverlapHooks) (*document.OverlapRun, error) {
	return Drive(ctx, j, &overlapRun{base: base[OverlapSpec]{j, spec}}, h)
}

// overlapRun is an overlap experiment as Drive runs it.
type overlapRun struct {
	base[OverlapSpec]
	sess      *Session
	workloads []bench.Workload
	doc       *document.OverlapRun
}

func (m *overlapRun) Check(_ context.Context, j *Job) error {
	nranks, groups, spec := j.World(), j.Settings.Grouping, m.spec
	if err := spec.check(); err != nil {
		return err
	}
	if err := groups.Validate(nranks); err != nil {
		return Usagef("{GroupSize}: %v", err)
	}
	if err := spec.Coll.Fits(groups.Of(nranks)); err != nil {
		return UsageError{err}
	}
	if err := spec.Sweep.Validate(); err != nil {
		return UsageError{err}
	}
	return nil
}

func (m *overlapRun) Opening(context.Context, *Job) (Opening, error) {
	spec := m.spec
	// The workloads' defaults depend on the backend; errors are found
	// before any process is contacted by resolving them for the host.
	if _, err := spec.Workloads(false); err != nil {
		return Opening{}, err
	}
	return Opening{Sweep: spec.Sweep, Tuning: gpu.Tuning{MinCTAs: spec.MinCTAs, MaxCTAs: spec.MaxCTAs, HighPriority: spec.CommPriority == "high"},
		Command: "overlap", Span: "sweep", Attrs: []attribute.KeyValue{attribute.String("collbench.collective", spec.Coll.Name)}}, nil
}

func (m *overlapRun) Begin(_ context.Context, sess *Session) (*document.OverlapRun, int, error) {
	j, p, nranks, groups := m.j, m.spec, m.j.World(), m.j.Settings.Grouping
	m.sess = sess
	var err error
	if m.workloads, err = p.Workloads(sess.OnGPU()); err != nil {
		return nil, 0, err
	}
	if !sess.OnGPU() && (p.CommPriority != "normal" || p.MaxCTAs > 0 || p.MinCTAs > 0) {
		return nil, 0, Usagef("{CommPriority} and {MaxCTAs}/{MinCTAs} apply to the nccl backend only")
	}
	m.doc = &document.OverlapRun{Stamp: document.NewStamp(document.OverlapSchemaName, document.OverlapSchemaVersion, j.Settings.Version,
		sess.Backend.Name(), p.Args),
		Config: document.OverlapConfig{Collective: p.Coll.Name, Type: p.CommType.String(), RedOp: p.RedOp.String(),
			NRanks: nranks, NProcs: j.Size, GroupSize: groups.Of(nranks), Layout: groups.Layout(),
			Cover: p.Cover, TargetUs: p.Target.Seconds() * 1e6, Knobs: p.knobs(), Devices: document.DeviceRecords(sess.Devices)}}
	return m.doc, len(p.Sweep.Sizes()) * len(m.workloads), nil // every size next to every workload
}

func (m *overlapRun) Measure(ctx context.Context, out *Recording[document.OverlapResult]) error {
	j, p := m.j, m.spec
	x := bench.Overlap{Comm: m.sess.Comm, Peers: j.Peers(), CommRanks: j.Settings.Grouping.Of(j.World()), Opts: bench.OverlapOptions{
		Coll: p.Coll, Type: p.CommType, RedOp: p.RedOp, Target: p.Target, Cover: p.Cover, Timeout: j.Limits.Collective,
		StallFloor: j.Limits.Watchdog}}
	for _, size := range p.Sweep.Sizes() {
		if size > m.sess.Sweep.Max {
			break // lowered to what the devices hold; the notes say so
		}
		for _, w := range m.workloads {
			fig, err := x.Measure(ctx, size, w)
			if err != nil {
				return fmt.Errorf("%s of %d bytes next to %s: %w", p.Coll.Name, size, w, err)
			}
			out.Phase(fmt.Sprintf("size %s next to %s", bench.FormatSize(size), w), attribute.Int64("collbench.message.size", size),
				attribute.String("collbench.workload", w.String()))
			r := document.MakeOverlapResult(size, w, fig)
			out.rec.Overlap(out.ctx, "overlap", p.Coll.Name, r)
			m.doc.Add(r)
			out.Hand(r, bench.FormatSize(size)+" next to "+w.String())
		}
	}
	return nil
}

func (m *overlapRun) Finish(_ context.Context, _ *Recording[document.OverlapResult], runErr error) error {
	m.doc.Finish()
	noteErr(&m.doc.Errors, runErr)
	return nil
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
