package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/progress"
	"github.com/collbench/collbench/report"
	"github.com/collbench/collbench/run"
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
	return runJob(ctx, coll.Name, &f.jobFlags, stderr, func(j *run.Job) (bool, error) {
		if err := f.split(j); err != nil {
			return false, err
		}
		if f.traffic != nil && f.traffic.moe != "" {
			return measureMoE(ctx, f, j, args, stdout)
		}
		return measure(ctx, coll, f, j, args, stdout, stderr)
	})
}

// measure runs the sweep, printing the table as it goes (rank 0 alone in
// a job of several processes), and writes the outputs. It reports whether
// any result was wrong.
func measure(ctx context.Context, coll *bench.Collective, f *flags, j *run.Job, args []string, stdout, stderr io.Writer) (bool, error) {
	opts, err := f.options(coll)
	if err != nil {
		return false, err
	}
	var table *report.Table
	var bar *progress.Bar
	minBW, err := minBusBW()
	if err != nil {
		return false, err
	}
	initThreads := 0
	if f.parallel != 0 {
		initThreads = f.threads
	}
	spec := run.SweepSpec{InitThreads: initThreads, Opts: opts, Register: f.register, CTAPolicy: f.ctaPolicy, StreamNull: f.streamNull != 0, MemoryReport: f.memoryReport != 0, MinBusBW: minBW, AllTypes: strings.EqualFold(f.dtype, "all"),
		AllOps: strings.EqualFold(f.op, "all"), Config: configOf(f), Args: append([]string{"collbench", coll.Name}, args...)}
	res, err := j.Sweep(ctx, spec, run.SweepHooks{
		Before: func() error {
			if f.jsonFile != "" && j.Rank == 0 {
				return checkFile(f.jsonFile)
			}
			return nil
		},
		Start: func(s *run.Session, opts bench.Options, planned int) {
			table = &report.Table{W: stdout, Info: report.Info{Version: version, Backend: s.Backend.Name(), TestName: coll.Label(),
				NThreads: f.threads, NGPUs: f.ngpus, MinBytes: opts.Sweep.Min, MaxBytes: opts.Sweep.Max, StepFactor: opts.Sweep.Factor,
				StepBytes: opts.Sweep.Step, Warmup: opts.Warmup, Iters: opts.Iters, Agg: opts.Agg, Check: opts.Check,
				Graph: opts.Graph, Blocking: opts.Blocking, CPUTime: opts.CPUTime, Devices: s.Devices, Notes: s.Notes,
				Unalign: opts.Unalign, Timestamps: f.timestamps != 0,
				Coll: opts.Coll, Ranks: j.Settings.Grouping.Of(j.World()), RankSummary: f.traffic != nil && f.traffic.summary}}
			if f.format == "table" {
				table.Preamble()
			}
			bar = progress.New(stderr, f.quiet, coll.Name, planned)
		},
		Row: func(r bench.Row, seen int) {
			bar.Clear() // the row may go to the same terminal
			if f.format == "table" {
				table.Row(r)
			}
			bar.Update(seen, bench.FormatSize(r.Size))
		},
		Write: func(r *run.SweepResult) error {
			bar.Clear()
			return writeRun(ctx, f, r, table, j.Size, stdout)
		},
	})
	if res == nil {
		return false, err
	}
	return res.Summary.ErrorCases > 0 || !res.Summary.BandwidthOK(), err
}

// writeRun prints the footer or the document and saves the -J file.
func writeRun(ctx context.Context, f *flags, r *run.SweepResult, table *report.Table, nprocs int, out io.Writer) error {
	switch f.format {
	case "table":
		if r.Err == nil && table != nil {
			table.MemoryUse = r.Memory
			table.Footer(r.Summary)
			table.Spread(r.Rows, report.ProcLabels(nprocs, f.perProc()))
		}
	case "json":
		if err := r.Doc.Encode(out); err != nil {
			return err
		}
	case "csv":
		if err := report.WriteCSV(out, r.Doc); err != nil {
			return err
		}
	}
	if f.jsonFile != "" {
		return saveFile(ctx, f.jsonFile, out, r.Doc.Encode)
	}
	return nil
}

// split applies nccl-tests' NCCL_TESTS_SPLIT_MASK or NCCL_TESTS_SPLIT
// (colour = f(process)) to the job's grouping, in place of --group-size.
func (f *flags) split(j *run.Job) error {
	var sp bench.Split
	var err error
	if v, ok := os.LookupEnv("NCCL_TESTS_SPLIT_MASK"); ok {
		sp, err = bench.ParseSplitMask(v)
	} else if v, ok := os.LookupEnv("NCCL_TESTS_SPLIT"); ok {
		sp, err = bench.ParseSplit(v)
	} else {
		return nil
	}
	if err != nil {
		return usageError{Err: err}
	}
	if f.fs.Changed("group-size") || f.fs.Changed("layout") {
		return usagef("%s and --group-size/--layout both split the job; give one", sp.Text)
	}
	g, err := sp.Grouping(j.Size, f.perProc())
	if err != nil {
		return usageError{Err: err}
	}
	g.Isolated = f.isolated
	j.Settings.Grouping = g
	return nil
}

// minBusBW is the floor NCCL_TESTS_MIN_BW sets for the average bus
// bandwidth, in GB/s; 0 when it is unset.
func minBusBW() (float64, error) {
	v := os.Getenv("NCCL_TESTS_MIN_BW")
	if v == "" {
		return 0, nil
	}
	bw, err := parseEnvFloat("NCCL_TESTS_MIN_BW", v)
	if err == nil && bw < 0 {
		err = usagef("NCCL_TESTS_MIN_BW=%q cannot be negative", v)
	}
	return bw, err
}

// configOf is the run's configuration from the flags, as the document
// records it.
func configOf(f *flags) document.Config {
	c := document.Config{NThreads: f.threads, NGPUs: f.ngpus, MinBytes: int64(f.minBytes), MaxBytes: int64(f.maxBytes),
		Warmup: f.warmup, Iters: f.iters, Agg: f.agg, Validation: f.check, Graph: f.graph,
		Blocking: f.blocking != 0, BlockMode: f.blocking, Average: f.average, CPUTime: f.cputime != 0}
	if f.factor > 1 {
		c.StepFactor = &f.factor
	} else {
		step := int64(f.step)
		c.StepBytes = &step
	}
	return c
}
