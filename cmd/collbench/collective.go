package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/report"
	"github.com/collbench/collbench/run"
)

// runCollective runs one collective subcommand and returns the exit code.
func runCollective(ctx context.Context, name string, args []string, stdout, stderr io.Writer) int {
	coll, err := bench.LookupCollective(name)
	if err != nil {
		fmt.Fprintf(stderr, "collbench: %s\n", errText(err))
		return exitUsage
	}
	return runMeasuring(ctx, newFlags(coll), args, stdout, stderr)
}

// measure splits the job into the groups asked for and runs the sweep,
// or the mixture-of-experts layer --moe describes.
func (f *flags) measure(ctx context.Context, j *run.Job, argv []string, stdout, stderr io.Writer) (bool, error) {
	if err := j.Split(os.LookupEnv, f.fs.Changed("group-size") || f.fs.Changed("layout")); err != nil {
		return false, err
	}
	if f.Traffic != nil {
		if err := f.Traffic.Load(ctx, inputLimit); err != nil {
			return false, err
		}
		if f.Traffic.MoE != "" {
			return measureMoE(ctx, f, j, argv, stdout)
		}
	}
	return measureSweep(ctx, f, j, argv, stdout, stderr)
}

// measureSweep runs the sweep, printing the table as it goes (rank 0
// alone in a job of several processes), and writes the outputs. It
// reports whether any result was wrong.
func measureSweep(ctx context.Context, f *flags, j *run.Job, argv []string, stdout, stderr io.Writer) (bool, error) {
	coll := f.coll
	spec, err := f.Spec(coll, f.JobRequest, f.fs.Changed("op"), os.Getenv, argv)
	if err != nil {
		return false, err
	}
	switch f.columns {
	case "", "judge":
	default:
		return false, usagef("--columns %q: want judge (the one set there is)", f.columns)
	}
	if f.judge || len(f.references) > 0 || f.columns == "judge" {
		tables, err := referenceTables(ctx, f.references)
		if err != nil {
			return false, err
		}
		spec.Judge = &run.JudgeSpec{Tables: tables}
	}
	var table *report.Table
	res, err := j.Sweep(ctx, spec, run.SweepHooks{
		Before: checkFiles(append(f.Traffic.Files(), f.references...), f.jsonFile),
		Start: func(s *run.Session, opts bench.Options, planned int) {
			table = &report.Table{W: stdout, Info: report.Info{Version: version, Backend: s.Backend.Name(), TestName: coll.Label(),
				NThreads: f.Threads, NGPUs: f.NGPUs, MinBytes: opts.Sweep.Min, MaxBytes: opts.Sweep.Max, StepFactor: opts.Sweep.Factor,
				StepBytes: opts.Sweep.Step, Warmup: opts.Warmup, Iters: opts.Iters, Agg: opts.Agg, Check: opts.Check, Bitwise: opts.Bitwise,
				Graph: opts.Graph, Blocking: opts.Blocking, CPUTime: opts.CPUTime, Devices: s.Devices, Notes: s.Notes,
				Unalign: opts.Unalign, Timestamps: f.Timestamps != 0,
				Coll: opts.Coll, Ranks: j.Settings.Grouping.Of(j.World()), RankSummary: f.Traffic != nil && f.Traffic.Summary}}
			if f.columns == "judge" && s.Judger != nil {
				table.Extra = report.JudgeColumns(s.Judger, run.JudgeRow)
			}
			if f.format == "table" {
				table.Preamble()
			}
		},
		Row: func(r bench.Row, _ int) {
			if f.format == "table" {
				table.Row(r)
			}
		},
		Write: func(r *run.SweepResult) error { return writeRun(ctx, f, r, table, j.Size, stdout) },
	})
	if res == nil {
		return false, err
	}
	return res.Summary.ErrorCases > 0 || res.Summary.BitwiseCases > 0 || !res.Summary.BandwidthOK(), err
}

// writeRun prints the footer or the document and saves the -J file.
func writeRun(ctx context.Context, f *flags, r *run.SweepResult, table *report.Table, nprocs int, out io.Writer) error {
	switch f.format {
	case "table":
		if r.Err == nil && table != nil {
			table.MemoryUse = r.Memory
			if r.Doc.Judgement != nil {
				table.Judgement = r.Doc.Judgement.Summary
			}
			table.Footer(r.Summary)
			table.Spread(r.Rows, report.ProcLabels(nprocs, f.PerProc()))
		}
	case "csv":
		if err := report.WriteCSV(out, r.Doc); err != nil {
			return err
		}
	}
	return emitJSON(ctx, f.format, f.jsonFile, out, r.Doc.Encode)
}

// measureMoE times a mixture-of-experts layer's dispatch and combine and
// prints them (rank 0); it reports whether any result was wrong.
func measureMoE(ctx context.Context, f *flags, j *run.Job, argv []string, stdout io.Writer) (bool, error) {
	spec, err := f.MoESpec(f.JobRequest, f.fs.Changed("op"), argv)
	if err != nil {
		return false, err
	}
	table := &report.Table{W: stdout}
	failed := false
	_, err = j.MoE(ctx, spec, run.MoEHooks{
		Before: checkFiles(f.Traffic.Files(), f.jsonFile),
		Start: func(s *run.Session, doc *document.MoERun) {
			c := doc.Config
			table.Info = report.Info{Version: version, Backend: s.Backend.Name(), TestName: "alltoallv_perf", NThreads: f.Threads,
				NGPUs: f.NGPUs, MinBytes: s.Sweep.Max, MaxBytes: s.Sweep.Max, StepBytes: f.StepBytes, Warmup: c.Warmup, Iters: c.Iters, Agg: f.Agg, Check: c.Check, Devices: s.Devices, Notes: s.Notes}
			if f.format == "table" {
				table.MoEPreamble(c)
			}
		},
		Write: func(doc *document.MoERun, phases []bench.MoEPhase, runErr error) error {
			for _, p := range phases {
				failed = failed || p.Row.OutOfPlace.Wrong > 0
			}
			if f.format == "table" {
				for _, p := range phases {
					table.MoEPhase(p)
				}
				if runErr == nil {
					table.MoEFooter(phases, report.ProcLabels(j.Size, f.PerProc()))
				}
			}
			return emitJSON(ctx, f.format, f.jsonFile, stdout, doc.Encode)
		},
	})
	return failed, err
}
