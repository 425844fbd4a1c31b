package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/collbench/collbench/bench"
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
	wrong, err := measure(ctx, coll, f, args, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "collbench %s: %v\n", coll.Name, err)
		return exitCode(err)
	}
	if wrong {
		return exitWrong
	}
	return exitOK
}

// measure runs the sweep and writes the outputs. It reports whether any
// result was wrong.
func measure(ctx context.Context, coll *bench.Collective, f *flags, args []string, stdout io.Writer) (bool, error) {
	opts, err := f.options(coll)
	if err != nil {
		return false, err
	}
	nranks := f.ngpus
	if err := opts.Validate(nranks); err != nil {
		return false, usageError{err}
	}
	if f.jsonFile != "" {
		if err := report.CheckWritable(f.jsonFile); err != nil {
			return false, usageError{err}
		}
	}
	backend, notes, err := pickBackend(f)
	if err != nil {
		return false, err
	}
	if backend.Name() != "nccl" && (f.register != 0 || f.devices != "") {
		return false, usagef("-R and --devices apply to the nccl backend only")
	}
	devs, err := deviceList(f.devices, f.ngpus)
	if err != nil {
		return false, usageError{err}
	}
	setup := bench.Setup{NRanks: nranks, LocalRanks: f.ngpus, Devices: devs, Register: f.register}
	if lim, ok := backend.(bench.MemoryLimiter); ok {
		limit, err := lim.MaxBytes(setup, opts.Check > 0)
		if err != nil {
			return false, err
		}
		if opts.Sweep.Max > limit {
			opts.Sweep.Max = max(limit, 0)
			opts.Sweep.Min = min(opts.Sweep.Min, opts.Sweep.Max)
			notes = append(notes, fmt.Sprintf("Reducing maxBytes to %d due to memory limitation", opts.Sweep.Max))
		}
	}
	setup.BufBytes = opts.Sweep.Max
	comm, err := backend.Open(ctx, setup)
	if err != nil {
		if errors.Is(err, bench.ErrTooLarge) {
			return false, usageError{err}
		}
		return false, fmt.Errorf("opening the %s backend: %w", backend.Name(), err)
	}
	defer comm.Close()
	caps := comm.Capabilities()
	if opts.Graph > 0 && !caps.Graphs {
		return false, usagef("the %s backend cannot capture CUDA graphs (-G); run without -G", backend.Name())
	}
	if err := filterSupport(&opts, caps, strings.EqualFold(f.dtype, "all"), strings.EqualFold(f.op, "all")); err != nil {
		return false, err
	}
	perIter := opts.PerIteration(caps)

	doc := &report.Run{Schema: report.SchemaName, Version: report.SchemaVersion, Collbench: version,
		Collective: coll.Name, Test: coll.TestName, Backend: backend.Name(),
		StartTime: time.Now().UTC().Format(time.RFC3339), Args: append([]string{"collbench", coll.Name}, args...),
		Config: configOf(f, nranks, comm.Devices(), perIter)}
	table := &report.Table{W: stdout, Info: report.Info{Version: version, Backend: backend.Name(), TestName: coll.TestName,
		NThreads: 1, NGPUs: f.ngpus, MinBytes: opts.Sweep.Min, MaxBytes: opts.Sweep.Max, StepFactor: opts.Sweep.Factor,
		StepBytes: opts.Sweep.Step, Warmup: opts.Warmup, Iters: opts.Iters, Agg: opts.Agg, Check: opts.Check,
		Graph: opts.Graph, Blocking: opts.Blocking, CPUTime: opts.CPUTime, Devices: comm.Devices()}}
	table.Info.Notes = append(table.Info.Notes, notes...)
	if f.format == "table" {
		table.Preamble()
	}
	eng := &bench.Engine{Comm: comm, Opts: opts, NRanks: nranks}
	sum, runErr := eng.Run(ctx, func(r bench.Row) {
		doc.Results = append(doc.Results, report.MakeResult(r))
		if f.format == "table" {
			table.Row(r)
		}
	})
	doc.EndTime = time.Now().UTC().Format(time.RFC3339)
	doc.Finish(sum)
	if runErr != nil {
		doc.Errors = append(doc.Errors, runErr.Error())
	}
	switch f.format {
	case "table":
		if runErr == nil {
			table.Footer(sum)
		}
	case "json":
		if err := doc.Encode(stdout); err != nil {
			return false, err
		}
	case "csv":
		if err := report.WriteCSV(stdout, doc); err != nil {
			return false, err
		}
	}
	if f.jsonFile != "" {
		if err := report.WriteFileAtomic(f.jsonFile, doc.Encode); err != nil {
			return false, err
		}
	}
	return sum.ErrorCases > 0, runErr
}

func configOf(f *flags, nranks int, devs []bench.Device, perIter bool) report.Config {
	c := report.Config{NThreads: 1, NGPUs: f.ngpus, NRanks: nranks, MinBytes: int64(f.minBytes), MaxBytes: int64(f.maxBytes),
		Warmup: f.warmup, Iters: f.iters, Agg: f.agg, Validation: f.check, Graph: f.graph,
		Blocking: f.blocking != 0, BlockMode: f.blocking, Average: f.average, CPUTime: f.cputime != 0,
		PerIterTime: perIter, Devices: report.DeviceRecords(devs)}
	if f.factor > 1 {
		c.StepFactor = &f.factor
	} else {
		step := int64(f.step)
		c.StepBytes = &step
	}
	return c
}
