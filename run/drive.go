package run

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/gpu"
	"github.com/collbench/collbench/telemetry"
)

// Measurement is one kind of run a job drives: a sweep, a
// mixture-of-experts layer, an overlap experiment, a profile, or one a
// package of its own defines (the health check). Drive takes every one
// through the same steps, so the watchdog, telemetry, the caller's hooks
// (on rank 0 only), the explanation of a failure and the writing of
// outputs behave alike for all; a measurement says only what differs.
// Doc is its record (the file it writes), Rec each record it hands over
// as it ends.
type Measurement[Doc, Rec any] interface {
	// Check refuses, before any process is contacted, what cannot run.
	Check(ctx context.Context, j *Job) error
	// Opening is what the communicators must hold; it runs once the
	// caller had its say (Before), and may pick the backend.
	Opening(ctx context.Context, j *Job) (Opening, error)
	// Begin runs once the communicators are open: what the backend
	// cannot run is refused here, and the record is laid out and
	// returned, with the number of steps the progress will count.
	Begin(ctx context.Context, s *Session) (doc Doc, planned int, err error)
	// Measure runs it, handing each record to out (the caller's hook,
	// the progress line and telemetry).
	Measure(ctx context.Context, out *Recording[Rec]) error
	// Finish completes the record with the outcome, on every rank; err
	// is the measurement's failure, explained by the job's, which the
	// record's errors take. An error it returns ends the run without
	// outputs.
	Finish(ctx context.Context, out *Recording[Rec], err error) error
}

// Hooks are what a caller hears of a measurement, each on rank 0 only
// (the driver calls them there and nowhere else); nil hooks are skipped.
// Doc is the measurement's record, the one its file holds; Rec is each
// record it hands over as it ends: a sweep's result row, an overlap
// point, a mixture-of-experts phase, a profile's curve, a health check's
// step.
type Hooks[Doc, Rec any] struct {
	// Before runs once the spec is checked and before any process is
	// contacted: the place to refuse an output that cannot be written.
	Before func() error
	// Start runs when the communicators are open, with the record laid
	// out (its settings and devices, no results yet) and how many steps
	// are planned: the records, or a profile's sizes.
	Start func(s *Session, doc Doc, planned int)
	// Record runs as each record ends; done counts them so far.
	Record func(r Rec, done int)
	// Write renders the outputs, timed as the telemetry's "write" phase,
	// even after a failed measurement: runErr says why (the record's
	// errors hold it too).
	Write func(doc Doc, runErr error) error
}

// Recording is where a measurement's records go: the caller's Record
// hook (rank 0), the job's progress, and the telemetry recorder (nil
// records nothing) with the measurement's span and a span per phase as
// each ends.
type Recording[Rec any] struct {
	rec      *telemetry.Recorder
	ctx      context.Context // under the measurement's span
	steps    *phases
	progress Progress
	hook     func(Rec, int) // the caller's, on rank 0; nil elsewhere
	handed   int            // records handed over
}

// Hand gives one record to the caller's hook, with the progress line out
// of its way, and counts it on the progress line as what; a measurement
// whose progress counts steps of its own (a profile's sizes) gives no
// what, and counts them with Step.
func (r *Recording[Rec]) Hand(rec Rec, what string) {
	r.handed++
	r.progress.Clear()
	if r.hook != nil {
		r.hook(rec, r.handed)
	}
	if what != "" {
		r.progress.Update(r.handed, what)
	}
}

// Step counts progress that hands no record (a profile's sizes within a
// curve): done so far, the last one what.
func (r *Recording[Rec]) Step(done int, what string) {
	r.progress.Update(done, what)
}

// Phase ends a span of the measurement's telemetry, named name: from
// where the last one ended (or the measurement began) to now.
func (r *Recording[Rec]) Phase(name string, attrs ...attribute.KeyValue) {
	r.steps.done(name, attrs...)
}

// Telemetry is the recorder the records go to: nil on every rank but 0,
// or without an endpoint, when its methods do nothing.
func (r *Recording[Rec]) Telemetry() *telemetry.Recorder { return r.rec }

// Context is the context under the measurement's span.
func (r *Recording[Rec]) Context() context.Context { return r.ctx }

// base is what every measurement holds: its job and its spec.
type base[S any] struct {
	j    *Job
	spec S
}

// noteErr records a measurement's failure in its record's errors.
func noteErr(errs *[]string, err error) {
	if err != nil {
		*errs = append(*errs, err.Error())
	}
}

// Opening is what a measurement's communicators must hold: the sizes,
// whether results are checked, any backend's settings and the nccl
// backend's.
type Opening struct {
	Sweep  bench.Sweep
	Check  bool
	Adjust func(*bench.Setup)
	Tuning gpu.Tuning // the nccl backend's own settings
	// Command names the run in telemetry; Span is the phase that
	// measures, with its attributes.
	Command, Span string
	Attrs         []attribute.KeyValue
}

// Drive runs one measurement: checked, the caller's Before on rank 0,
// the communicators opened under the watchdog, telemetry started, the
// record laid out (Start), the measurement under its span handing over
// its records (Record), every process waited for, a failure explained by
// the job's, the record finished with it and the
// outputs written (Write) on rank 0. It returns the record (the zero
// value when the measurement never began) and an error: Write's if it
// failed, else the measurement's.
func Drive[Doc, Rec any](ctx context.Context, j *Job, m Measurement[Doc, Rec], h Hooks[Doc, Rec]) (Doc, error) {
	var none Doc
	if err := m.Check(ctx, j); err != nil {
		return none, err
	}
	rank0 := j.Rank == 0
	if h.Before != nil && rank0 {
		if err := h.Before(); err != nil {
			return none, err
		}
	}
	started := time.Now()
	o, err := m.Opening(ctx, j)
	if err != nil {
		return none, err
	}
	outer := ctx // the signal context, before the job's failure is joined to it
	ctx, sess, err := j.Open(ctx, o.Sweep, o.Check, o.Adjust, o.Tuning)
	if err != nil {
		return none, err
	}
	defer sess.Close()
	rec := sess.startTelemetry(ctx, o.Command, started)
	doc, planned, err := m.Begin(ctx, sess)
	if err != nil {
		closeTelemetry(rec, err, j.logf)
		return none, err
	}
	if h.Start != nil && rank0 {
		h.Start(sess, doc, planned)
	}
	j.sayOnTheCPU()
	progress := j.progress()
	progress.Begin(o.Command, planned)
	spanCtx, end := rec.Span(ctx, o.Span, time.Now(), o.Attrs...)
	out := &Recording[Rec]{rec: rec, ctx: spanCtx, steps: newPhases(spanCtx, rec), progress: progress}
	if rank0 {
		out.hook = h.Record
	}
	runErr := m.Measure(ctx, out)
	progress.Clear()
	if runErr == nil && j.Multi() {
		// Nobody leaves before everybody is done, so a finished rank is
		// not mistaken for a lost one.
		runErr = j.Peers().Barrier(ctx)
	}
	end(time.Now(), runErr)
	runErr = j.Explain(outer, runErr)
	if err := m.Finish(ctx, out, runErr); err != nil {
		closeTelemetry(rec, err, j.logf)
		return doc, err
	}
	err = writeAndFlush(ctx, rec, runErr, j.logf, func() error {
		if h.Write == nil || !rank0 {
			return nil
		}
		return h.Write(doc, runErr)
	})
	if err != nil {
		return doc, err
	}
	return doc, runErr
}

// closeTelemetry flushes what the recorder holds, ended by err.
func closeTelemetry(rec *telemetry.Recorder, err error, logf func(string, ...any)) {
	if ferr := rec.Close(err); ferr != nil {
		logf("telemetry: %v", ferr)
	}
}
