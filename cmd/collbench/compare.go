package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/collbench/collbench/compare"
	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/report"
	"github.com/collbench/collbench/run"
)

// errRegressed is a comparison that found a significant regression or a
// new run below the bandwidth floor (exit 1); the table says which.
var errRegressed = errors.New("the new run regressed")

// runCompare is collbench compare: two saved runs, size by size, with a
// significance test; non-zero exit on a significant regression or a run
// below the bandwidth floor.
func runCompare(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("compare")
	o := compare.Options{}
	fs.Float64Var(&o.Threshold, "threshold", 5, "slowdown in percent that counts as a regression when significant")
	fs.Float64Var(&o.Alpha, "alpha", 0.05, "significance level of the Mann-Whitney test on per-iteration times")
	minBW := fs.Float64("min-busbw", 0, "fail when the new run's average bus bandwidth is below this many GB/s (default NCCL_TESTS_MIN_BW)")
	synopsis := synopsisOf("compare")
	return fileCommand(fs, args, stdout, stderr, func() error {
		if !fs.Changed("min-busbw") {
			f, err := run.MinBusBW(os.Getenv)
			if err != nil {
				return err
			}
			*minBW = f
		}
		switch {
		case fs.NArg() != 2:
			return usagef("want two run files (usage: %s)", synopsis)
		case o.Threshold < 0 || o.Alpha <= 0 || o.Alpha >= 1:
			return usagef("--threshold must be at least 0 and --alpha between 0 and 1")
		case *minBW < 0:
			return usagef("--min-busbw cannot be negative (got %g)", *minBW)
		}
		o.Threshold /= 100
		base, err := loadRun(ctx, fs.Arg(0))
		if err != nil {
			return err
		}
		next, err := loadRun(ctx, fs.Arg(1))
		if err != nil {
			return err
		}
		cs, left := compare.Runs(base, next, o)
		if len(cs) == 0 {
			return usagef("the runs have no size of the same collective, type and placement in common")
		}
		fmt.Fprintf(stdout, "# base %s (%s, %s) vs new %s (%s, %s)\n", fs.Arg(0), base.Collective, base.StartTime, fs.Arg(1), next.Collective, next.StartTime)
		regressions := report.CompareTable(stdout, cs, o)
		report.LeftOut(stdout, left)
		report.Standings(spelling{w: stdout}, base, next, compare.Standings(base, next))
		floorOK := *minBW <= 0 || report.Floor(stdout, next.AvgBusBW.Bandwidth, *minBW)
		if regressions > 0 || !floorOK {
			return errRegressed
		}
		return nil
	})
}

// loadRun reads a run document; problems are one line naming the file.
func loadRun(ctx context.Context, path string) (*document.Run, error) {
	return document.Load(ctx, path, inputLimit, document.DecodeRun)
}
