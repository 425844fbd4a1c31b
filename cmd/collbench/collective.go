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
	var rowErr error // a result the table could not print
	doc, err := j.Sweep(ctx, spec, run.SweepHooks{
		Before: checkFiles(append(f.Traffic.Files(), f.references...), f.jsonFile),
		Start: func(s *run.Session, doc *document.Run, _ int) {
			table = report.TableOf(stdout, doc)
			// What the record does not hold: the clock of -S, and an
			// uneven all-to-all's traffic for its per-rank summary.
			table.Info.Timestamps = f.Timestamps != 0
			if f.Traffic != nil && f.Traffic.Summary {
				table.Info.Coll, table.Info.RankSummary = spec.Opts.Coll, true
			}
			if f.columns == "judge" && s.Judger != nil {
				table.Extra = report.JudgeColumns(s.Judger, run.JudgeRow)
			}
			if f.format == "table" {
				table.Preamble()
			}
		},
		Record: func(r document.Result, _ int) {
			if f.format == "table" && rowErr == nil {
				rowErr = table.Result(r)
			}
		},
		Write: func(doc *document.Run, _ error) error {
			if rowErr != nil {
				return rowErr
			}
			return writeRun(ctx, f, doc, table, stdout)
		},
	})
	if doc == nil {
		return false, err
	}
	s := doc.Summary()
	return s.ErrorCases > 0 || s.BitwiseCases > 0 || !s.BandwidthOK(), err
}

// writeRun closes the table or prints the document, and saves the -J
// file.
func writeRun(ctx context.Context, f *flags, doc *document.Run, table *report.Table, out io.Writer) error {
	switch f.format {
	case "table":
		if err := table.End(doc); err != nil {
			return err
		}
	case "csv":
		if err := report.WriteCSV(out, doc); err != nil {
			return err
		}
	}
	return emitJSON(ctx, f.format, f.jsonFile, out, doc.Encode)
}

// measureMoE times a mixture-of-experts layer's dispatch and combine and
// prints them (rank 0); it reports whether any result was wrong.
func measureMoE(ctx context.Context, f *flags, j *run.Job, argv []string, stdout io.Writer) (bool, error) {
	spec, err := f.MoESpec(f.JobRequest, f.fs.Changed("op"), argv)
	if err != nil {
		return false, err
	}
	table := &report.Table{W: stdout}
	doc, err := j.MoE(ctx, spec, run.MoEHooks{
		Before: checkFiles(f.Traffic.Files(), f.jsonFile),
		Start: func(s *run.Session, doc *document.MoERun, _ int) {
			c := doc.Config
			table.Info = report.Info{Version: version, Backend: s.Backend.Name(), TestName: "alltoallv_perf", NThreads: f.Threads,
				NGPUs: f.NGPUs, MinBytes: s.Sweep.Max, MaxBytes: s.Sweep.Max, StepBytes: f.StepBytes, Warmup: c.Warmup, Iters: c.Iters, Agg: f.Agg, Check: c.Check, Devices: s.Devices, Notes: s.Notes}
			if f.format == "table" {
				table.MoEPreamble(c)
			}
		},
		Write: func(doc *document.MoERun, runErr error) error {
			if f.format == "table" {
				for _, p := range doc.Phases {
					if err := table.MoEPhase(p); err != nil {
						return err
					}
				}
				if runErr == nil {
					if err := table.MoEFooter(doc.Phases, report.ProcLabels(j.Size, f.PerProc())); err != nil {
						return err
					}
				}
			}
			return emitJSON(ctx, f.format, f.jsonFile, stdout, doc.Encode)
		},
	})
	failed := false
	if doc != nil {
		for _, p := range doc.Phases {
			if w := p.Result.OutOfPlace.NWrong; w != nil && *w > 0 {
				failed = true
			}
		}
	}
	return failed, err
}
