package run

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/gpu"
	"github.com/collbench/collbench/telemetry"
)

// measurement is one kind of run the job drives: a sweep, a
// mixture-of-experts layer, an overlap experiment, a profile or a health
// check. Job.drive takes every one through the same steps, so the
// watchdog, telemetry, the caller's hooks (on rank 0 only), the
// explanation of a failure and the writing of outputs behave alike for
// all; a measurement says only what differs. Doc is its record (the file
// it writes), Rec each record it hands over as it ends.
type measurement[Doc, Rec any] interface {
	// check refuses, before any process is contacted, what cannot run.
	check(ctx context.Context, j *Job) error
	// opening is what the communicators must hold; it runs once the
	// caller had its say (before), and may pick the backend.
	opening(ctx context.Context, j *Job) (opening, error)
	// begin runs once the communicators are open: what the backend
	// cannot run is refused here, and the record is laid out and
	// returned, with the number of steps the progress will count.
	begin(ctx context.Context, s *Session) (doc Doc, planned int, err error)
	// measure runs it, handing each record to out (the caller's hook,
	// the progress line and telemetry).
	measure(ctx context.Context, out *recording[Rec]) error
	// finish completes the record with the outcome, on every rank; err
	// is the measurement's failure, explained by the job's, which the
	// record's errors take. An error it returns ends the run without
	// outputs.
	finish(ctx context.Context, out *recording[Rec], err error) error
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

// recording is where a measurement's records go: the caller's Record
// hook (rank 0), the job's progress, and the telemetry recorder (nil
// records nothing) with the measurement's span and a span per phase as
// each ends.
type recording[Rec any] struct {
	rec      *telemetry.Recorder
	ctx      context.Context // under the measurement's span
	steps    *phases
	progress Progress
	hook     func(Rec, int) // the caller's, on rank 0; nil elsewhere
	handed   int            // records handed over
	done     int            // steps the progress line counted
}

// hand gives one record to the caller's hook, with the progress line out
// of its way, and counts it on the progress line as what; a measurement
// whose progress counts steps of its own (a profile's sizes) gives no
// what, and counts them with step.
func (r *recording[Rec]) hand(rec Rec, what string) {
	r.handed++
	r.progress.Clear()
	if r.hook != nil {
		r.hook(rec, r.handed)
	}
	if what != "" {
		r.done = r.handed
		r.progress.Update(r.done, what)
	}
}

// step counts progress that hands no record (a profile's sizes within a
// curve): done so far, the last one what.
func (r *recording[Rec]) step(done int, what string) {
	r.done = done
	r.progress.Update(done, what)
}

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

// opening is what a measurement's communicators must hold: the sizes,
// whether results are checked, any backend's settings and the nccl
// backend's.
type opening struct {
	sweep  bench.Sweep
	check  bool
	adjust func(*bench.Setup)
	tuning gpu.Tuning // the nccl backend's own settings
	// command names the run in telemetry; span is the phase that
	// measures, with its attributes.
	command, span string
	attrs         []attribute.KeyValue
}

// drive runs one measurement: checked, the caller's Before on rank 0,
// the communicators opened under the watchdog, telemetry started, the
// record laid out (Start), the measurement under its span handing over
// its records (Record), every process waited for, a failure explained by
// the job's, the record finished with it and the
// outputs written (Write) on rank 0. It returns the record (the zero
// value when the measurement never began) and an error: Write's if it
// failed, else the measurement's.
func drive[Doc, Rec any](ctx context.Context, j *Job, m measurement[Doc, Rec], h Hooks[Doc, Rec]) (Doc, error) {
	var none Doc
	if err := m.check(ctx, j); err != nil {
		return none, err
	}
	rank0 := j.Rank == 0
	if h.Before != nil && rank0 {
		if err := h.Before(); err != nil {
			return none, err
		}
	}
	started := time.Now()
	o, err := m.opening(ctx, j)
	if err != nil {
		return none, err
	}
	outer := ctx // the signal context, before the job's failure is joined to it
	ctx, sess, err := j.Open(ctx, o.sweep, o.check, o.adjust, o.tuning)
	if err != nil {
		return none, err
	}
	defer sess.Close()
	rec := sess.startTelemetry(ctx, o.command, started)
	doc, planned, err := m.begin(ctx, sess)
	if err != nil {
		closeTelemetry(rec, err, j.logf)
		return none, err
	}
	if h.Start != nil && rank0 {
		h.Start(sess, doc, planned)
	}
	j.sayOnTheCPU()
	progress := j.progress()
	progress.Begin(o.command, planned)
	spanCtx, end := rec.Span(ctx, o.span, time.Now(), o.attrs...)
	out := &recording[Rec]{rec: rec, ctx: spanCtx, steps: newPhases(spanCtx, rec), progress: progress}
	if rank0 {
		out.hook = h.Record
	}
	runErr := m.measure(ctx, out)
	progress.Clear()
	if runErr == nil && j.Multi() {
		// Nobody leaves before everybody is done, so a finished rank is
		// not mistaken for a lost one.
		runErr = j.Peers().Barrier(ctx)
	}
	end(time.Now(), runErr)
	runErr = j.Explain(outer, runErr)
	if err := m.finish(ctx, out, runErr); err != nil {
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
