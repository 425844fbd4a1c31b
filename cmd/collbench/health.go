package main

import (
	"context"
	"errors"
	"io"

	"github.com/spf13/pflag"

	"github.com/collbench/collbench/chart"
	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/healthcheck"
	"github.com/collbench/collbench/report"
	"github.com/collbench/collbench/run"
)

// healthFlags are collbench health's flags.
type healthFlags struct {
	jobFlags
	healthcheck.Request
	fs                        *pflag.FlagSet
	format, jsonFile, heatmap string
	judge                     bool
	references                []string
}

func newHealthFlags() *healthFlags {
	f := &healthFlags{fs: newFlagSet("health"), Request: healthcheck.DefaultRequest()}
	fs, r := f.fs, &f.Request
	fs.Var(size(&r.PairBytes), "pair-size", "send/recv size between pairs of GPUs and of nodes (default 128M on GPUs, 4M on the host)")
	fs.Var(size(&r.ARBytes), "allreduce-size", "all-reduce size inside nodes and over the job (default as --pair-size)")
	fs.StringVarP(&r.DType, "datatype", "d", r.DType, "data type")
	fs.IntVarP(&r.Iters, "iters", "n", r.Iters, "timed iterations per pass (the most; --budget may run fewer)")
	fs.IntVarP(&r.Warmup, "warmup_iters", "w", r.Warmup, "warm-up calls before each pass")
	fs.IntVar(&r.Passes, "passes", r.Passes, "passes per figure; the best counts, so a slowdown must show in every pass")
	fs.DurationVar(&r.Budget, "budget", 0, "time budget for the whole check, e.g. 5m (0 = no limit)")
	fs.Float64Var(&r.MinDrop, "min-drop", r.MinDrop, "flag a figure at least this fraction below its reference")
	fs.Float64Var(&r.Z, "z", r.Z, "… and this many robust standard deviations (1.4826·MAD) below its peers' median")
	fs.StringArrayVar(&r.Expect, "expect", nil, "expected busbw in GB/s per level: intra=,node=,inter=,job= (repeat or comma-separate)")
	fs.StringVar(&r.Baseline, "baseline", "", "a previous health record (-J) whose medians are the expectations --expect leaves out")
	fs.BoolVar(&r.Bisect, "bisect", false, "bisect the job's all-reduce on 4 nodes or more even when it is not slow")
	fs.IntVar(&r.ScreenRounds, "screen-rounds", 0, "meet node pairs in this many rounds of random partners (at most 20) instead of every pair; default: 20 rounds from 22 nodes on, every pair below")
	fs.StringVar(&r.ScreenSeed, "screen-seed", "", "draw the screening's partners from this seed, as a record's config.screen_seed names it, to repeat that screening (default: a fresh seed each check, so that checks after checks meet other pairs)")
	fs.BoolVar(&r.AllPairs, "all-pairs", false, "measure every pair of nodes, whatever their number (N−1 rounds)")
	fs.StringVar(&r.RacksFile, "racks", "", "file of HOST RACK lines naming each node's rack: screen inside and across racks, and judge the racks' uplinks")
	fs.StringVar(&r.RackPattern, "rack-pattern", "", "host-name pattern whose one group is the rack, e.g. '^(r[0-9]+)-' (default: SLURM_TOPOLOGY_ADDR's leaf switch, where set)")
	fs.BoolVar(&f.judge, "judge", false, "also judge each level against the link it crosses and the published figures for this system; a node's or the job's all-reduce LOW against a published figure is flagged (docs/judge.md)")
	fs.StringArrayVar(&f.references, "references", nil, "a site's reference table (JSON, as 'collbench references --json' prints) used beside the built-in one; repeat for more (implies --judge)")
	f.JobRequest = run.DefaultJobRequest()
	f.jobFlags.registerRanks(fs, "call", "check")
	f.jobFlags.register(fs)
	for _, name := range []string{"group-size", "layout", "isolated"} {
		_ = fs.MarkHidden(name)
	}
	fs.StringVar(&f.format, "format", "table", "stdout format: table or json")
	fs.StringVarP(&f.jsonFile, "output_file", "J", "", "also write the record as JSON to this file")
	fs.StringVar(&f.heatmap, "heatmap", "", "also draw the pair matrices to this image (.svg, .png or .pdf)")
	return f
}

func (f *healthFlags) flags() (*pflag.FlagSet, *jobFlags) { return f.fs, &f.jobFlags }

func (f *healthFlags) check() error {
	if err := checkFormat(f.format, "table", "json"); err != nil {
		return err
	}
	if f.heatmap != "" {
		if _, err := chart.FormatOf(f.heatmap); err != nil {
			return usageError{Err: err}
		}
	}
	return nil
}

// errUnhealthy is a check that ran and flagged something: exit 1, its
// findings already printed.
var errUnhealthy = errors.New("the health check flagged something")

// errIncomplete is a check its budget cut short with nothing flagged in
// what it measured: exit 4, as a timeout.
var errIncomplete = errors.New("the health check's budget ran out before it was complete")

// runHealth is collbench health.
func runHealth(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runMeasuring(ctx, newHealthFlags(), args, stdout, stderr)
}

// measure runs the check, writes the record and turns its verdict into
// the outcome: errUnhealthy, errIncomplete, or nil when healthy.
func (f *healthFlags) measure(ctx context.Context, j *run.Job, argv []string, stdout, stderr io.Writer) (bool, error) {
	spec, err := f.Spec(ctx, argv, inputLimit)
	if err != nil {
		return false, err
	}
	if f.judge || len(f.references) > 0 {
		tables, err := referenceTables(ctx, f.references)
		if err != nil {
			return false, err
		}
		spec.Judge = &run.JudgeSpec{Tables: tables}
	}
	doc, err := healthcheck.Run(ctx, j, spec, healthcheck.Hooks{
		Before: checkFiles(append([]string{f.Baseline, f.RacksFile}, f.references...), f.jsonFile, f.heatmap),
		Write: func(doc *document.Health, runErr error) error {
			if f.format == "table" && runErr == nil {
				report.Health(spelling{w: stdout, fs: f.fs}, doc)
			}
			if err := emitJSON(ctx, f.format, f.jsonFile, stdout, doc.Encode); err != nil || f.heatmap == "" || runErr != nil {
				return err
			}
			return chart.HealthHeatmapFile(ctx, f.heatmap, doc)
		},
	})
	switch {
	case err != nil || doc == nil || doc.Healthy:
	case len(doc.Findings) > 0:
		return false, errUnhealthy
	default:
		return false, errIncomplete
	}
	return false, err
}
