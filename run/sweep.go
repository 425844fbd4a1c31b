package run

import (
	"context"
	"fmt"
	"slices"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/nccl"
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

// SweepHooks hear of a sweep as it goes; nil hooks are skipped.
type SweepHooks struct {
	// Before runs on rank 0 once the spec is checked and before any
	// process is contacted: the place to refuse an output that cannot be
	// written.
	Before func() error
	// Start runs when the communicators are open, with the options as
	// the engine will run them and the rows it will hand over.
	Start func(s *Session, opts bench.Options, planned int)
	// Row runs as each row completes; seen counts the rows so far.
	Row func(r bench.Row, seen int)
	// Write renders the outputs; it runs on rank 0 only, timed as the
	// telemetry's "write" phase, even after a failed measurement.
	Write func(r *SweepResult) error
}

// SweepResult is what a sweep measured.
type SweepResult struct {
	Doc     *document.Run
	Summary bench.Summary
	Rows    []bench.Row // the rows kept: all of them, or the latest cycle with -N 0
	// Err is the measurement's failure, explained by the job's (also in
	// Doc.Errors); nil when it completed.
	Err error
	// Memory is this process's device memory use, with -M.
	Memory *bench.MemoryUse
}

// Sweep measures one collective over its sizes on the job's
// communicators. It returns the result (nil when nothing was measured)
// and an error: Write's if it failed, else the measurement's.
func (j *Job) Sweep(ctx context.Context, spec SweepSpec, h SweepHooks) (*SweepResult, error) {
	coll, nranks, groups := spec.Opts.Coll, j.World(), j.Settings.Grouping
	if err := groups.Validate(nranks); err != nil {
		return nil, Usagef("--group-size: %v", err)
	}
	opts, err := spec.Opts.Validate(groups.Of(nranks))
	if err != nil {
		return nil, UsageError{err}
	}
	opts.Timeout, opts.StallFloor = j.Limits.Collective, j.Limits.Watchdog
	if spec.StreamNull && opts.Graph > 0 {
		return nil, Usagef("-y and -G cannot be combined: CUDA cannot capture the NULL stream into a graph")
	}
	if h.Before != nil && j.Rank == 0 {
		if err := h.Before(); err != nil {
			return nil, err
		}
	}
	started := time.Now()
	outer := ctx // the signal context, before the job's failure is joined to it
	ctx, sess, err := j.Open(ctx, opts.Sweep, opts.Check > 0, func(s *bench.Setup) {
		s.Register, s.CTAPolicy, s.StreamNull, s.InitThreads = spec.Register, spec.CTAPolicy, spec.StreamNull, spec.InitThreads
		s.MinCTAs, s.MaxCTAs, s.P2PPeers = spec.MinCTAs, spec.MaxCTAs, coll.P2PPeers
		s.Pad = 8 * int64(opts.Unalign) // the largest element, as nccl-tests pads
		s.BufferBytes = func(size int64) int64 {
			var need int64
			for _, t := range opts.Types {
				need = max(need, coll.BufferBytes(size, t.Size(), groups.Of(nranks)))
			}
			return need
		}
	})
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	opts.Sweep = sess.Sweep
	rec := sess.startTelemetry(ctx, coll.Name, started)
	for _, f := range []struct {
		set  bool
		name string
	}{{spec.Register != 0, "-R"}, {spec.CTAPolicy != 0, "-x"}, {spec.StreamNull, "-y"}, {spec.InitThreads > 0, "-p"},
		{spec.MinCTAs != 0 || spec.MaxCTAs != 0, "--nccl-min-ctas/--nccl-max-ctas"}, {opts.Estimate, "NCCL's estimate (ncclGroupSimulateEnd)"}} {
		if f.set && !sess.OnGPU() {
			return nil, Usagef("%s applies to the nccl backend only", f.name)
		}
	}
	if opts.Estimate {
		if err := nccl.Has("ncclGroupSimulateEnd"); err != nil {
			sess.Notes = append(sess.Notes, fmt.Sprintf("no NCCL estimates: %v", err))
		}
	}
	reporter, reports := sess.Comm.(bench.MemoryReporter)
	if spec.MemoryReport && !reports {
		return nil, Usagef("-M reports GPU memory; the %s backend has none", sess.Backend.Name())
	}
	caps := sess.Comm.Capabilities()
	if opts.Graph > 0 && !caps.Graphs {
		return nil, Usagef("the %s backend cannot capture CUDA graphs (-G); run without -G", sess.Backend.Name())
	}
	if opts, err = filterSupport(opts, caps, spec.AllTypes, spec.AllOps); err != nil {
		return nil, err
	}

	cfg := spec.Config
	// The sizes measured, as the table's preamble says: less than asked
	// where the devices hold less.
	cfg.MinBytes, cfg.MaxBytes = opts.Sweep.Min, opts.Sweep.Max
	cfg.NRanks, cfg.NProcs, cfg.GroupSize, cfg.Layout, cfg.Groups, cfg.Isolated = nranks, j.Size, groups.Of(nranks), groups.Layout(), groups.Groups(nranks), groups.Isolated
	cfg.PerIterTime, cfg.Devices = opts.PerIteration(caps), document.DeviceRecords(sess.Devices)
	doc := &document.Run{Schema: document.SchemaName, Version: document.SchemaVersion, Collbench: j.Settings.Version,
		Collective: coll.Name, Test: coll.Label(), Backend: sess.Backend.Name(),
		StartTime: time.Now().UTC().Format(time.RFC3339), Args: spec.Args, Config: cfg, Notes: slices.Clone(sess.Notes)}
	if sess.Backend.Name() == "nccl" {
		v := int(nccl.RuntimeVersion()) // ncclGetVersion's code, as nccl-tests writes it
		doc.NCCLVersion = &v
	}
	if spec.Judge != nil && j.Rank == 0 {
		sess.Judger = j.judger(sess, spec.Judge, coll.Name)
	}
	eng := &bench.Engine{Comm: sess.Comm, Peers: j.Peers(), Opts: opts, CommRanks: groups.Of(nranks), Groups: groups.Groups(nranks)}
	kept := newRowKeeper(opts.Cycles, eng.PlannedRows())
	if h.Start != nil && j.Rank == 0 {
		h.Start(sess, opts, eng.PlannedRows())
	}
	sweepCtx, endSweep := rec.Span(ctx, "sweep", time.Now(), attribute.String("collbench.collective", coll.Name))
	steps := newPhases(sweepCtx, rec)
	sum, runErr := eng.Run(ctx, func(r bench.Row) {
		steps.done("size "+bench.FormatSize(r.Size), attribute.Int64("collbench.message.size", r.Size),
			attribute.String("collbench.dtype", r.Type.String()), attribute.String("collbench.redop", r.Op.String()))
		recordRow(sweepCtx, rec, coll.Name, eng.CommRanks, r)
		kept.add(r)
		if h.Row != nil && j.Rank == 0 {
			h.Row(r, kept.seen())
		}
	})
	if runErr == nil && j.Multi() {
		// Nobody leaves before everybody is done, so a finished rank is
		// not mistaken for a lost one.
		runErr = j.Peers().Barrier(ctx)
	}
	endSweep(time.Now(), runErr)
	doc.Results = kept.results
	doc.EndTime = time.Now().UTC().Format(time.RFC3339)
	sum.MinBusBW = spec.MinBusBW
	doc.Finish(sum)
	if sess.Judger != nil && runErr == nil {
		doc.Judgement = judgeDoc(sess.Judger, doc)
	}
	if runErr = j.Explain(outer, runErr); runErr != nil {
		doc.Errors = append(doc.Errors, runErr.Error())
	}
	res := &SweepResult{Doc: doc, Summary: sum, Rows: kept.rows, Err: runErr}
	if spec.MemoryReport && runErr == nil {
		use, err := reporter.MemoryUse()
		if err != nil {
			return res, fmt.Errorf("reading GPU memory (-M): %w", err)
		}
		res.Memory = &use
	}
	err = writeAndFlush(ctx, rec, runErr, j.logf, func() error {
		if h.Write == nil || j.Rank != 0 {
			return nil
		}
		return h.Write(res)
	})
	if err != nil {
		return res, err
	}
	return res, runErr
}
