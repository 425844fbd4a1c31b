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
// watchdog, telemetry, the explanation of a failure and the writing of
// outputs behave alike for all; a measurement says only what differs.
type measurement interface {
	// check refuses, before any process is contacted, what cannot run.
	check(ctx context.Context, j *Job) error
	// opening is what the communicators must hold; it runs once the
	// caller had its say (before), and may pick the backend.
	opening(ctx context.Context, j *Job) (opening, error)
	// begin runs once the communicators are open: what the backend
	// cannot run is refused here, and the record is laid out.
	begin(ctx context.Context, s *Session) error
	// planned is how many steps measure will report (Progress), known
	// once begin has run.
	planned() int
	// measure runs it, handing each record to the caller's hooks and to
	// rec (telemetry: a span per step under the measurement's).
	measure(ctx context.Context, rec *recording) error
	// finish completes the record with the outcome, on every rank; err
	// is the measurement's failure, explained by the job's. An error it
	// returns ends the run without outputs.
	finish(ctx context.Context, rec *recording, err error) error
	// write renders the outputs, on rank 0 only, even after a failure.
	write(err error) error
}

// base is what every measurement holds: its job, its spec and the
// caller's hooks.
type base[S, H any] struct {
	j     *Job
	spec  S
	hooks H
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

// recording is where a measurement's records go besides its hooks: the
// telemetry recorder (nil records nothing), the measurement's span and a
// span per phase as each ends, and the job's progress.
type recording struct {
	rec      *telemetry.Recorder
	ctx      context.Context // under the measurement's span
	steps    *phases
	progress Progress
}

// step hands a record to the caller's hook (deliver, nil for none) with
// the progress line out of its way, then counts it: done steps so far,
// the last one what.
func (r *recording) step(done int, what string, deliver func()) {
	r.progress.Clear()
	if deliver != nil {
		deliver()
	}
	r.progress.Update(done, what)
}

// drive runs one measurement: checked, the caller's before on rank 0,
// the communicators opened under the watchdog, telemetry started, the
// measurement under its span, every process waited for, a failure
// explained by the job's, the record finished and the outputs written on
// rank 0. ran says the measurement began (its record exists); the error
// is the writing's if it failed, else the measurement's.
func (j *Job) drive(ctx context.Context, m measurement, before func() error) (ran bool, err error) {
	if err := m.check(ctx, j); err != nil {
		return false, err
	}
	if before != nil && j.Rank == 0 {
		if err := before(); err != nil {
			return false, err
		}
	}
	started := time.Now()
	o, err := m.opening(ctx, j)
	if err != nil {
		return false, err
	}
	outer := ctx // the signal context, before the job's failure is joined to it
	ctx, sess, err := j.Open(ctx, o.sweep, o.check, o.adjust, o.tuning)
	if err != nil {
		return false, err
	}
	defer sess.Close()
	rec := sess.startTelemetry(ctx, o.command, started)
	if err := m.begin(ctx, sess); err != nil {
		closeTelemetry(rec, err, j.logf)
		return false, err
	}
	j.sayOnTheCPU()
	progress := j.progress()
	progress.Begin(o.command, m.planned())
	spanCtx, end := rec.Span(ctx, o.span, time.Now(), o.attrs...)
	out := &recording{rec: rec, ctx: spanCtx, steps: newPhases(spanCtx, rec), progress: progress}
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
		return true, err
	}
	err = writeAndFlush(ctx, rec, runErr, j.logf, func() error {
		if j.Rank != 0 {
			return nil
		}
		return m.write(runErr)
	})
	if err != nil {
		return true, err
	}
	return true, runErr
}

// measure drives m and returns what it recorded, the zero value when it
// never began, with drive's error.
func measure[T any](ctx context.Context, j *Job, m measurement, before func() error, record func() T) (T, error) {
	ran, err := j.drive(ctx, m, before)
	if !ran {
		var none T
		return none, err
	}
	return record(), err
}

// closeTelemetry flushes what the recorder holds, ended by err.
func closeTelemetry(rec *telemetry.Recorder, err error, logf func(string, ...any)) {
	if ferr := rec.Close(err); ferr != nil {
		logf("telemetry: %v", ferr)
	}
}
