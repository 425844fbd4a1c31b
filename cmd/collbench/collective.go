package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"go.opentelemetry.io/otel/attribute"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/report"
)

// runCollective runs one collective subcommand and returns the exit code.
func runCollective(ctx context.Context, name string, args []string, stdout, stderr io.Writer) int {
	coll, err := bench.LookupCollective(name)
	if err != nil {
		fmt.Fprintf(stderr, "collbench: %v\n", err)
		return exitUsage
	}
	f := newFlags(coll.Name)
	f.fs.SetOutput(io.Discard)
	if err := f.parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fmt.Fprint(stdout, f.usage(coll.Name))
			return exitOK
		}
		fmt.Fprintf(stderr, "collbench %s: %v\n", coll.Name, err)
		return exitUsage
	}
	return runJob(ctx, coll.Name, &f.jobFlags, stderr, func(j *job, logf func(string, ...any)) (bool, error) {
		return measure(ctx, coll, f, j, logf, args, stdout, stderr)
	})
}

// measure runs the sweep and writes the outputs (rank 0 alone in a job of
// several processes). It reports whether any result was wrong.
func measure(ctx context.Context, coll *bench.Collective, f *flags, j *job, logf func(string, ...any), args []string, stdout, stderr io.Writer) (bool, error) {
	opts, err := f.options(coll)
	if err != nil {
		return false, err
	}
	nranks := j.Size * f.ngpus
	groups := f.grouping()
	if err := groups.Validate(nranks); err != nil {
		return false, usagef("--group-size: %v", err)
	}
	if opts, err = opts.Validate(groups.Of(nranks)); err != nil {
		return false, usageError{err}
	}
	opts.Timeout = j.limits.collective
	if f.jsonFile != "" && j.Rank == 0 {
		if err := checkFile(f.jsonFile); err != nil {
			return false, err
		}
	}
	started := time.Now()
	outer := ctx // the signal context, before the job's failure is joined to it
	ctx, sess, closeSession, err := j.open(ctx, &f.jobFlags, logf, &opts, func(s *bench.Setup) { s.Register = f.register })
	if err != nil {
		return false, err
	}
	defer closeSession()
	rec := startTelemetry(ctx, j, &f.jobFlags, coll.Name, sess, started, logf)
	backend, comm, allDevs, notes := sess.backend, sess.comm, sess.devices, sess.notes
	if f.register != 0 && backend.Name() != "nccl" {
		return false, usagef("-R applies to the nccl backend only")
	}
	caps := comm.Capabilities()
	if opts.Graph > 0 && !caps.Graphs {
		return false, usagef("the %s backend cannot capture CUDA graphs (-G); run without -G", backend.Name())
	}
	if err := filterSupport(&opts, caps, strings.EqualFold(f.dtype, "all"), strings.EqualFold(f.op, "all")); err != nil {
		return false, err
	}
	perIter := opts.PerIteration(caps)

	out := j.output(stdout)
	cfg := configOf(f, nranks, allDevs, perIter)
	cfg.NProcs, cfg.GroupSize, cfg.Layout, cfg.Groups, cfg.Isolated = j.Size, groups.Of(nranks), groups.Layout(), groups.Groups(nranks), groups.Isolated
	doc := &document.Run{Schema: document.SchemaName, Version: document.SchemaVersion, Collbench: version,
		Collective: coll.Name, Test: coll.TestName, Backend: backend.Name(),
		StartTime: time.Now().UTC().Format(time.RFC3339), Args: append([]string{"collbench", coll.Name}, args...),
		Config: cfg}
	table := &report.Table{W: out, Info: report.Info{Version: version, Backend: backend.Name(), TestName: coll.TestName,
		NThreads: 1, NGPUs: f.ngpus, MinBytes: opts.Sweep.Min, MaxBytes: opts.Sweep.Max, StepFactor: opts.Sweep.Factor,
		StepBytes: opts.Sweep.Step, Warmup: opts.Warmup, Iters: opts.Iters, Agg: opts.Agg, Check: opts.Check,
		Graph: opts.Graph, Blocking: opts.Blocking, CPUTime: opts.CPUTime, Devices: allDevs}}
	table.Info.Notes = append(table.Info.Notes, notes...)
	if f.format == "table" {
		table.Preamble()
	}
	eng := &bench.Engine{Comm: comm, Peers: j.peers(), Opts: opts, CommRanks: groups.Of(nranks), Groups: groups.Groups(nranks)}
	kept := newRowKeeper(opts.Cycles, eng.PlannedRows())
	sweepCtx, endSweep := rec.Span(ctx, "sweep", time.Now(), attribute.String("collbench.collective", coll.Name))
	steps := newPhases(sweepCtx, rec)
	var bar *progressBar
	if j.Rank == 0 {
		bar = newProgress(stderr, f.quiet, coll.Name, eng.PlannedRows())
	}
	sum, runErr := eng.Run(ctx, func(r bench.Row) {
		steps.done("size "+bench.FormatSize(r.Size), attribute.Int64("collbench.message.size", r.Size),
			attribute.String("collbench.dtype", r.Type.String()), attribute.String("collbench.redop", r.Op.String()))
		recordRow(sweepCtx, rec, coll.Name, eng.CommRanks, r)
		kept.add(r)
		bar.Clear() // the row may go to the same terminal
		if f.format == "table" {
			table.Row(r)
		}
		bar.Update(kept.seen(), bench.FormatSize(r.Size))
	})
	bar.Clear()
	if runErr == nil && j.multi() {
		// Nobody leaves before everybody is done, so a finished rank is
		// not mistaken for a lost one.
		runErr = j.peers().Barrier(ctx)
	}
	endSweep(time.Now(), runErr)
	doc.Results = kept.results
	doc.EndTime = time.Now().UTC().Format(time.RFC3339)
	doc.Finish(sum)
	if runErr = j.explain(outer, runErr); runErr != nil {
		doc.Errors = append(doc.Errors, runErr.Error())
	}
	err = writeAndFlush(ctx, rec, runErr, logf, func() error { return writeRun(ctx, f, doc, table, sum, kept.rows, j, out, runErr) })
	if err != nil {
		return false, err
	}
	return sum.ErrorCases > 0, runErr
}

// writeRun prints the footer or the document and saves the -J file.
func writeRun(ctx context.Context, f *flags, doc *document.Run, table *report.Table, sum bench.Summary, rows []bench.Row, j *job, out io.Writer, runErr error) error {
	switch f.format {
	case "table":
		if runErr == nil {
			table.Footer(sum)
			table.Spread(rows, report.ProcLabels(j.Size, f.ngpus))
		}
	case "json":
		if err := doc.Encode(out); err != nil {
			return err
		}
	case "csv":
		if err := report.WriteCSV(out, doc); err != nil {
			return err
		}
	}
	if f.jsonFile != "" && j.Rank == 0 {
		return saveFile(ctx, f.jsonFile, out, doc.Encode)
	}
	return nil
}

// openComm applies the backend's memory cap (agreed across processes),
// opens the communicators within the bootstrap deadline and gathers every
// process's devices. The note says when -e was lowered.
func openComm(ctx context.Context, backend bench.Backend, setup bench.Setup, opts *bench.Options, j *job) (bench.Comm, []bench.Device, string, error) {
	note := ""
	if lim, ok := backend.(bench.MemoryLimiter); ok {
		limit, err := lim.MaxBytes(setup, opts.Check > 0)
		if err != nil {
			return nil, nil, "", err
		}
		if j.multi() {
			if limit, err = j.agreeMin(ctx, limit); err != nil {
				return nil, nil, "", err
			}
		}
		if opts.Sweep.Max > limit {
			opts.Sweep.Max = max(limit, 0)
			opts.Sweep.Min = min(opts.Sweep.Min, opts.Sweep.Max)
			note = fmt.Sprintf("Reducing maxBytes to %d due to memory limitation", opts.Sweep.Max)
		}
	}
	setup.BufBytes = opts.Sweep.Max
	octx := ctx
	if j.limits.bootstrap > 0 {
		var cancel context.CancelFunc
		octx, cancel = context.WithTimeout(ctx, j.limits.bootstrap)
		defer cancel()
	}
	comm, err := backend.Open(octx, setup)
	if err != nil {
		if errors.Is(err, bench.ErrTooLarge) {
			return nil, nil, "", usageError{err}
		}
		if errors.Is(octx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			return nil, nil, "", &startTimeout{what: "opening the " + backend.Name() + " backend", after: j.limits.bootstrap, err: err}
		}
		if cause := context.Cause(ctx); cause != nil && cause != ctx.Err() && !errors.Is(err, cause) {
			err = fmt.Errorf("%w (%v)", cause, err)
		}
		return nil, nil, "", fmt.Errorf("opening the %s backend: %w", backend.Name(), err)
	}
	devs, err := j.allDevices(octx, comm.Devices())
	if err != nil {
		comm.Close()
		return nil, nil, "", err
	}
	return comm, devs, note, nil
}

func configOf(f *flags, nranks int, devs []bench.Device, perIter bool) document.Config {
	c := document.Config{NThreads: 1, NGPUs: f.ngpus, NRanks: nranks, MinBytes: int64(f.minBytes), MaxBytes: int64(f.maxBytes),
		Warmup: f.warmup, Iters: f.iters, Agg: f.agg, Validation: f.check, Graph: f.graph,
		Blocking: f.blocking != 0, BlockMode: f.blocking, Average: f.average, CPUTime: f.cputime != 0,
		PerIterTime: perIter, Devices: document.DeviceRecords(devs)}
	if f.factor > 1 {
		c.StepFactor = &f.factor
	} else {
		step := int64(f.step)
		c.StepBytes = &step
	}
	return c
}
