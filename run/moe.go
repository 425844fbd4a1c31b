package run

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/numeric"
	"github.com/collbench/collbench/document"
)

// MoESpec is a mixture-of-experts layer's exchanges, as collbench
// alltoallv --moe runs them.
type MoESpec struct {
	Routing *bench.Routing
	Type    numeric.DataType
	Draws   int // routing draws the timed calls cycle through
	// Opts carries the iterations, warm-up, checks, -a and -m; the
	// collective and the sizes follow from the routing.
	Opts bench.Options
	Args []string // the command line, recorded in the document
}

// MoEHooks hear of the run; nil hooks are skipped, and only rank 0 runs
// them.
type MoEHooks struct {
	// Before runs once the spec is checked and before any process is
	// contacted.
	Before func() error
	// Start runs when the communicators are open.
	Start func(s *Session, doc *document.MoERun)
	// Write renders the outputs, even after a failed measurement (runErr
	// says why).
	Write func(doc *document.MoERun, phases []bench.MoEPhase, runErr error) error
}

// MoE measures dispatch and combine of spec's routing on the job's
// communicators. It returns the document (nil when nothing ran) and an
// error: Write's if it failed, else the measurement's.
func (j *Job) MoE(ctx context.Context, spec MoESpec, h MoEHooks) (*document.MoERun, error) {
	nranks, groups := j.World(), j.Settings.Grouping
	if err := groups.Validate(nranks); err != nil {
		return nil, Usagef("--group-size: %v", err)
	}
	commRanks := groups.Of(nranks)
	if err := spec.Routing.Check(commRanks); err != nil {
		return nil, Usagef("--moe: %v", err)
	}
	if err := spec.Routing.CheckDraws(commRanks, spec.Draws); err != nil {
		return nil, Usagef("--moe: %v", err)
	}
	// The buffers hold the busiest rank of the heaviest draw; combine,
	// the same exchange reversed, needs no more.
	traffic, err := spec.Routing.Traffic(ctx, commRanks, spec.Type.Size(), spec.Draws)
	if err != nil {
		return nil, err
	}
	dispatch, err := bench.Collectives[bench.AllToAllV].WithTraffic(traffic)
	if err != nil {
		return nil, err
	}
	size := max(dispatch.Counts(0, spec.Type.Size(), commRanks).Bytes(spec.Type.Size()), 1)
	opts := spec.Opts
	opts.Coll, opts.Sweep, opts.Types, opts.Root = dispatch, bench.Sweep{Min: size, Max: size, Factor: 2}, []numeric.DataType{spec.Type}, -1
	if opts, err = opts.Validate(commRanks); err != nil {
		return nil, UsageError{err}
	}
	opts.Timeout, opts.StallFloor = j.Limits.Collective, j.Limits.Watchdog
	if h.Before != nil && j.Rank == 0 {
		if err := h.Before(); err != nil {
			return nil, err
		}
	}
	started := time.Now()
	outer := ctx
	ctx, sess, err := j.Open(ctx, opts.Sweep, opts.Check > 0, nil)
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	if sess.Sweep.Max < size {
		return nil, Usagef("--moe needs %d-byte buffers; the devices hold %d (fewer --tokens or a smaller --hidden)", size, sess.Sweep.Max)
	}
	if check := sess.Comm.Capabilities().Type; check != nil {
		if err := check(spec.Type); err != nil {
			return nil, UsageError{err}
		}
	}
	rec := sess.startTelemetry(ctx, "alltoallv", started)
	r := spec.Routing
	doc := &document.MoERun{Stamp: document.NewStamp(document.MoESchemaName, document.MoESchemaVersion, j.Settings.Version,
		sess.Backend.Name(), spec.Args),
		Config: document.MoEConfig{Experts: r.Experts, TopK: r.TopK, Tokens: r.Tokens, Hidden: r.Hidden, Type: spec.Type.String(),
			Routing: r.Name, Seed: r.Seed, Draws: spec.Draws, NRanks: nranks, NProcs: j.Size, GroupSize: commRanks,
			Iters: opts.Iters, Warmup: opts.Warmup, Check: opts.Check, Average: opts.Average, Devices: document.DeviceRecords(sess.Devices)}}
	if h.Start != nil && j.Rank == 0 {
		h.Start(sess, doc)
	}
	eng := &bench.Engine{Comm: sess.Comm, Peers: j.Peers(), Opts: opts, CommRanks: commRanks, Groups: groups.Groups(nranks)}
	sweepCtx, endSweep := rec.Span(ctx, "sweep", time.Now(), attribute.String("collbench.collective", "alltoallv"))
	phases, runErr := eng.MoE(sweepCtx, r, spec.Type, spec.Draws)
	if runErr == nil && j.Multi() {
		runErr = j.Peers().Barrier(ctx)
	}
	endSweep(time.Now(), runErr)
	for _, p := range phases {
		doc.Phases = append(doc.Phases, document.MakeMoEPhase(p))
	}
	doc.Finish()
	if runErr = j.Explain(outer, runErr); runErr != nil {
		doc.Errors = append(doc.Errors, runErr.Error())
	}
	err = writeAndFlush(ctx, rec, runErr, j.logf, func() error {
		if h.Write == nil || j.Rank != 0 {
			return nil
		}
		return h.Write(doc, phases, runErr)
	})
	if err != nil {
		return doc, err
	}
	return doc, runErr
}
