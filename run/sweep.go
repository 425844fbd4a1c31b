package run

import (
	"context"
	"fmt"
	"slices"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/gpu"
	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/nccl"
	"github.com/collbench/collbench/setting"
)

// SweepSpec is one collective's size sweep, as collbench <collective>
// runs it.
type SweepSpec struct {
	// Opts are the engine's options; Sweep validates them against the
	// communicators' size and applies the backend's limits.
	Opts     bench.Options
	Register int // buffer registration with NCCL (-R): 0 none, 1 ncclCommRegister, 2 symmetric windows
	// CTAPolicy is NCCL's CTA policy (-x): 0 default, 1 efficiency, 2 zero.
	CTAPolicy int
	// MinCTAs and MaxCTAs bound NCCL's CTAs per collective (0: NCCL's
	// default, or each rank's share of a GPU that several ranks use).
	MinCTAs, MaxCTAs int
	// StreamNull runs the collectives on the NULL stream (-y).
	StreamNull bool
	// MemoryReport reads the devices' memory use after the sweep (-M).
	MemoryReport bool
	// Judge, when set, judges the results against the wire, the
	// reference tables and NCCL's estimate (rank 0, into the document).
	Judge *JudgeSpec
	// InitThreads initialises the communicators from this many threads
	// at once (-p with -t); 0 is one group, and no -p.
	InitThreads int
	// AllTypes and AllOps say the types and reductions came from "all":
	// those the backend cannot run are dropped instead of refused.
	AllTypes, AllOps bool
	// Config is the run's configuration as the document records it;
	// Sweep fills in the job's part (processes, groups, devices).
	Config document.Config
	Args   []string // the command line, recorded in the document
	// MinBusBW fails the run when the average bus bandwidth is below 90%
	// of it, in GB/s (NCCL_TESTS_MIN_BW); 0 checks nothing.
	MinBusBW float64
}

// SweepHooks hear of a sweep: its record (the run document) laid out,
// each result row as it is measured, and the finished record.
type SweepHooks = Hooks[*document.Run, document.Result]

// Sweep measures one collective over its sizes on the job's
// communicators. It returns the record (nil when nothing was measured)
// and an error: Write's if it failed, else the measurement's.
func (j *Job) Sweep(ctx context.Context, spec SweepSpec, h SweepHooks) (*document.Run, error) {
	return Drive(ctx, j, &sweepRun{base: base[SweepSpec]{j, spec}}, h)
}

// sweepRun is a sweep as Drive runs it.
type sweepRun struct {
	base[SweepSpec]
	opts     bench.Options
	sess     *Session
	reporter bench.MemoryReporter
	doc      *document.Run
	eng      *bench.Engine
	kept     *rowKeeper
	sum      bench.Summary
}

func (m *sweepRun) Check(_ context.Context, j *Job) error {
	nranks, groups := j.World(), j.Settings.Grouping
	if err := groups.Validate(nranks); err != nil {
		return Usagef("{GroupSize}: %v", err)
	}
	opts, err := m.spec.Opts.Validate(groups.Of(nranks))
	if err != nil {
		return UsageError{err}
	}
	opts.Timeout, opts.StallFloor = j.Limits.Collective, j.Limits.Watchdog
	if m.spec.StreamNull && opts.Graph > 0 {
		return Usagef("{StreamNull} and {Graph} cannot be combined: CUDA cannot capture the NULL stream into a graph")
	}
	if err := j.checkCollective(opts.Coll, groups.Of(nranks)); err != nil {
		return err
	}
	m.opts = opts
	return nil
}

func (m *sweepRun) Opening(_ context.Context, j *Job) (Opening, error) {
	spec, opts, coll, n := m.spec, m.opts, m.opts.Coll, j.Settings.Grouping.Of(j.World())
	tuning := gpu.Tuning{Register: spec.Register, CTAPolicy: spec.CTAPolicy, StreamNull: spec.StreamNull, InitThreads: spec.InitThreads,
		MinCTAs: spec.MinCTAs, MaxCTAs: spec.MaxCTAs, P2PPeers: coll.P2PPeers}
	return Opening{Sweep: opts.Sweep, Check: opts.Check > 0, Tuning: tuning, Adjust: func(s *bench.Setup) {
		s.Pad = 8 * int64(opts.Unalign) // the largest element, as nccl-tests pads
		s.BufferBytes = func(size int64) int64 {
			var need int64
			for _, t := range opts.Types {
				need = max(need, coll.BufferBytes(size, t.Size(), n))
			}
			return need
		}
	}, Command: coll.Name, Span: "sweep", Attrs: []attribute.KeyValue{attribute.String("collbench.collective", coll.Name)}}, nil
}

func (m *sweepRun) Begin(_ context.Context, sess *Session) (*document.Run, int, error) {
	j, spec, opts, coll := m.j, m.spec, m.opts, m.opts.Coll
	nranks, groups := j.World(), j.Settings.Grouping
	m.sess = sess
	opts.Sweep = sess.Sweep
	for _, f := range []struct {
		set  bool
		name string
	}{{spec.Register != 0, "{Register}"}, {spec.CTAPolicy != 0, "{CTAPolicy}"}, {spec.StreamNull, "{StreamNull}"}, {spec.InitThreads > 0, "{Parallel}"},
		{spec.MinCTAs != 0 || spec.MaxCTAs != 0, "{MinCTAs}/{MaxCTAs}"}, {opts.Estimate, "NCCL's estimate (ncclGroupSimulateEnd)"}} {
		if f.set && !sess.OnGPU() {
			return nil, 0, Usagef("%s applies to the nccl backend only", f.name)
		}
	}
	if opts.Estimate {
		if err := nccl.Has("ncclGroupSimulateEnd"); err != nil {
			sess.Notes = append(sess.Notes, fmt.Sprintf("no NCCL estimates: %v", err))
		}
	}
	reporter, reports := sess.Comm.(bench.MemoryReporter)
	if spec.MemoryReport && !reports {
		return nil, 0, Usagef("{MemoryReport} reports GPU memory; the %s backend has none", sess.Backend.Name())
	}
	m.reporter = reporter
	caps := sess.Comm.Capabilities()
	if err := opts.Runs(caps); err != nil {
		return nil, 0, Usagef("the %s backend %w", sess.Backend.Name(), err)
	}
	opts, err := filterSupport(opts, caps, spec.AllTypes, spec.AllOps)
	if err != nil {
		return nil, 0, err
	}
	m.opts = opts

	cfg := spec.Config
	// The sizes measured, as the table's preamble says: less than asked
	// where the devices hold less.
	cfg.MinBytes, cfg.MaxBytes = opts.Sweep.Min, opts.Sweep.Max
	cfg.NRanks, cfg.NProcs, cfg.GroupSize, cfg.Layout, cfg.Groups, cfg.Isolated = nranks, j.Size, groups.Of(nranks), groups.Layout(), groups.Groups(nranks), groups.Isolated
	cfg.PerIterTime, cfg.Devices, cfg.Unalign = opts.PerIteration(caps), document.DeviceRecords(sess.Devices), opts.Unalign
	m.doc = &document.Run{Schema: document.SchemaName, Version: document.SchemaVersion, Collbench: j.Settings.Version,
		Collective: coll.Name, Test: coll.Label(), Backend: sess.Backend.Name(),
		StartTime: time.Now().UTC().Format(time.RFC3339), Args: spec.Args, Config: cfg, Notes: slices.Clone(sess.Notes)}
	if sess.OnGPU() {
		v := int(nccl.RuntimeVersion()) // ncclGetVersion's code, as nccl-tests writes it
		m.doc.NCCLVersion = &v
	}
	if spec.Judge != nil && j.Rank == 0 {
		sess.Judger = j.judger(sess, spec.Judge, coll.Name)
	}
	m.eng = &bench.Engine{Comm: sess.Comm, Peers: j.Peers(), Opts: opts, CommRanks: groups.Of(nranks), Groups: groups.Groups(nranks)}
	m.kept = newRowKeeper(opts.Cycles, m.eng.PlannedRows())
	return m.doc, m.eng.PlannedRows(), nil
}

func (m *sweepRun) Measure(ctx context.Context, out *Recording[document.Result]) error {
	coll := m.opts.Coll
	var err error
	m.sum, err = m.eng.Run(ctx, func(r bench.Row) {
		res := document.MakeResult(r)
		out.Phase("size "+bench.FormatSize(r.Size), attribute.Int64("collbench.message.size", r.Size),
			attribute.String("collbench.dtype", r.Type.String()), attribute.String("collbench.redop", r.Op.String()))
		out.rec.Measured(out.ctx, coll.Name, m.eng.CommRanks, res)
		m.kept.add(res)
		out.Hand(res, bench.FormatSize(r.Size))
	})
	return err
}

func (m *sweepRun) Finish(_ context.Context, _ *Recording[document.Result], runErr error) error {
	doc := m.doc
	doc.Results = m.kept.results
	doc.EndTime = time.Now().UTC().Format(time.RFC3339)
	m.sum.MinBusBW = m.spec.MinBusBW
	doc.Finish(m.sum)
	if m.sess.Judger != nil && runErr == nil {
		doc.Judgement = judgeDoc(m.sess.Judger, doc)
	}
	noteErr(&doc.Errors, runErr)
	if m.spec.MemoryReport && runErr == nil {
		use, err := m.reporter.MemoryUse()
		if err != nil {
			return setting.Errorf("reading GPU memory ({MemoryReport}): %w", err)
		}
		doc.Memory = document.MemoryUseOf(use)
	}
	return nil
}
