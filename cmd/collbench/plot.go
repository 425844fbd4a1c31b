package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/collbench/collbench/chart"
	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/fileio"
	"github.com/collbench/collbench/report"
)

// runPlot is collbench plot: bus bandwidth and time against message size
// for saved runs and profiles, one line per collective, group or curve.
func runPlot(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("plot")
	out := fs.StringP("output", "o", "busbw.svg", "image to write; the extension picks the format: .svg, .png or .pdf")
	metric := fs.String("metric", "both", "panels: busbw, time or both")
	title := fs.String("title", "", "chart title (default: the file names)")
	only := fs.String("only", "", "plot only the lines whose label matches this regular expression")
	synopsis := synopsisOf("plot")
	return fileCommand(fs, args, stdout, stderr, func() error {
		if fs.NArg() == 0 {
			return usagef("want at least one run or profile file (usage: %s)", synopsis)
		}
		format, err := chart.FormatOf(*out)
		if err != nil {
			return usageError{Err: err}
		}
		metrics, err := chart.ParseMetrics(*metric)
		if err != nil {
			return usageError{Err: err}
		}
		var keep *regexp.Regexp
		if *only != "" {
			if keep, err = regexp.Compile(*only); err != nil {
				return usagef("--only: %v", err)
			}
		}
		if err := checkOutput(*out, fs.Args()); err != nil {
			return err
		}
		lines, err := chart.PlotFiles(ctx, *out, format, fs.Args(), inputLimit, keep, chart.Options{Title: *title, Metrics: metrics})
		if err == nil {
			fmt.Fprintf(stdout, "wrote %s (%d line(s))\n", *out, lines)
		}
		return err
	})
}

// runReport is collbench report: one HTML or Markdown page with the facts,
// tables and charts of saved runs and profiles.
func runReport(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("report")
	out := fs.StringP("output", "o", "report.html", "page to write: .html, or .md (charts then go to SVG files beside it); - or a .txt file prints a run's nccl-tests table, or an audit's")
	title := fs.String("title", "", "page title (default: the file names)")
	synopsis := synopsisOf("report")
	return fileCommand(fs, args, stdout, stderr, func() error {
		if fs.NArg() == 0 {
			return usagef("want at least one run or profile file (usage: %s)", synopsis)
		}
		if *out == fileio.Stdout || strings.EqualFold(filepath.Ext(*out), ".txt") {
			return savedTable(ctx, *out, fs.Args(), stdout)
		}
		if _, err := chart.PageFormat(*out); err != nil {
			return usageError{Err: err}
		}
		if err := checkOutput(*out, fs.Args()); err != nil {
			return err
		}
		written, err := chart.ReportFiles(ctx, *out, *title, fs.Args(), inputLimit)
		if err == nil {
			fmt.Fprintf(stdout, "wrote %s\n", strings.Join(written, ", "))
		}
		return err
	})
}

// checkOutput refuses, before anything is read, an output that cannot be
// written or that is one of the inputs (writing it would destroy it).
func checkOutput(out string, inputs []string) error {
	if err := fileio.Check(out); err != nil {
		return usageError{Err: err}
	}
	if err := fileio.Distinct(out, inputs); err != nil {
		return usageError{Err: err}
	}
	return nil
}

// savedTable prints one saved run as the nccl-tests table it printed, to
// stdout (-) or a text file.
func savedTable(ctx context.Context, out string, inputs []string, stdout io.Writer) error {
	if len(inputs) != 1 {
		return usagef("a table is printed from one run file (got %d files)", len(inputs))
	}
	if out != fileio.Stdout {
		if err := checkOutput(out, inputs); err != nil {
			return err
		}
	}
	saved, err := document.Load(ctx, inputs[0], inputLimit, document.DecodeSaved)
	if err != nil {
		return fmt.Errorf("a table is printed from a run or audit file: %w", err)
	}
	return fileio.Save(ctx, out, stdout, func(w io.Writer) error {
		cw := &fileio.CheckedWriter{W: w}
		if a := saved.Audit; a != nil {
			report.Audit(cw, a)
			return cw.Err
		}
		d := saved.Run
		if err := report.SavedTable(cw, d, askedColumns(d.Args, "judge")); err != nil {
			return err
		}
		return cw.Err
	})
}

// askedColumns says whether a run's recorded command line asked for a set
// of columns (--columns SET or --columns=SET), which its live table then
// showed.
func askedColumns(args []string, set string) bool {
	for i, a := range args {
		if a == "--columns="+set || (a == "--columns" && i+1 < len(args) && args[i+1] == set) {
			return true
		}
	}
	return false
}
