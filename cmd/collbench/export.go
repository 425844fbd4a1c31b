package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/export"
	"github.com/collbench/collbench/fileio"
)

// exportFlags choose planner exports; collbench profile and collbench
// export share them.
type exportFlags struct {
	targets     string
	dir         string
	galvatronBW string
	opts        export.Options
}

func (e *exportFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&e.targets, "export", "", "also export to these planners, comma-separated: "+strings.Join(export.Targets, ", ")+" or all")
	fs.StringVar(&e.dir, "export-dir", ".", "folder the exports are written to")
	e.registerTuning(fs)
}

// registerTuning adds the flags that shape the exported figures.
func (e *exportFlags) registerTuning(fs *pflag.FlagSet) {
	fs.StringVar(&e.galvatronBW, "galvatron-bw", "point:32M", "what Galvatron's bandwidth files hold: point:SIZE (busbw at SIZE), asymptotic (fitted busbw∞) or average (mean over the sizes)")
	fs.IntVar(&e.opts.TP, "simai-tp", 0, "SimAI TP group size (default: ranks per node)")
	fs.IntVar(&e.opts.DP, "simai-dp", 0, "SimAI DP group size (default: world / TP)")
	fs.IntVar(&e.opts.EP, "simai-ep", 0, "SimAI EP group size (default: DP); its expert-data-parallel group is DP/EP ranks")
	fs.IntVar(&e.opts.PP, "simai-pp", 0, "SimAI PP group size (default: 2)")
	fs.StringVar(&e.opts.Name, "simai-name", "collbench", "first line of SimAI's busbw.yaml")
}

// list is the chosen targets, checked.
func (e *exportFlags) list() ([]string, error) {
	t, err := export.ParseTargets(e.targets)
	if err != nil {
		return nil, usageError{Err: err}
	}
	return t, nil
}

func (e *exportFlags) check() error {
	if _, err := e.list(); err != nil {
		return err
	}
	if err := export.CheckBandwidthRef(e.galvatronBW); err != nil {
		return usagef("--galvatron-bw: %v", err)
	}
	e.opts.GalvatronBW = e.galvatronBW
	return nil
}

// checkDir makes sure the export folder takes files, creating it.
func (e *exportFlags) checkDir() error {
	if e.targets == "" {
		return nil
	}
	if err := export.CheckDir(e.dir); err != nil {
		return usagef("--export-dir: %v", err)
	}
	return nil
}

// errExportFailed means a chosen export target could not be made
// (exit code 3): what it lacked is on stderr, one line per target, and
// the profile and the other targets' files are written.
var errExportFailed = errors.New("an export target could not be made")

// write exports doc to every chosen target, each independent of the
// others; the files go to files, a target that fails is one line on
// stderr and makes the result errExportFailed.
func (e *exportFlags) write(ctx context.Context, doc *document.Profile, cmd string, files func(string), stderr io.Writer) error {
	targets, err := e.list()
	if err != nil {
		return err
	}
	written, err := export.WriteAll(ctx, doc, targets, e.dir, e.opts)
	for _, f := range written {
		files(f)
	}
	if failed := export.Failures(err); len(failed) > 0 && ctx.Err() == nil {
		for _, t := range failed {
			fmt.Fprintf(stderr, "collbench %s: %v\n", cmd, t)
		}
		return errExportFailed
	}
	return err
}

// runExport is collbench export: a saved profile into planners' formats.
func runExport(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("export", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	var e exportFlags
	fs.StringVar(&e.targets, "to", "", "targets, comma-separated: "+strings.Join(export.Targets, ", ")+" or all")
	fs.StringVarP(&e.dir, "output", "o", ".", "folder to write the files into (created if missing)")
	e.registerTuning(fs)
	synopsis := "collbench export --to " + strings.Join(export.Targets, "|") + "|all profile.json [-o DIR]"
	if code, done := parseFlags(fs, args, synopsis, stdout, stderr); done {
		return code
	}
	fail := failer("export", stderr)
	switch {
	case fs.NArg() != 1:
		return fail(usagef("want one profile file (usage: %s)", synopsis))
	case e.targets == "":
		return fail(usagef("--to is required (%s or all)", strings.Join(export.Targets, ", ")))
	}
	if err := e.check(); err != nil {
		return fail(err)
	}
	doc, err := loadProfile(ctx, fs.Arg(0))
	if err != nil {
		return fail(err)
	}
	if err := e.checkDir(); err != nil {
		return fail(err)
	}
	err = e.write(ctx, doc, "export", func(f string) { fmt.Fprintln(stdout, f) }, stderr)
	switch {
	case errors.Is(err, errExportFailed):
		return exitCode(err) // each failed target has had its line
	case err != nil:
		return fail(err)
	}
	return exitOK
}

// loadProfile reads a profile file; every problem is one line naming it.
func loadProfile(ctx context.Context, path string) (*document.Profile, error) {
	return loadDoc(ctx, path, document.DecodeProfile)
}

// inputLimit caps what loadDoc reads of one file.
var inputLimit int64 = fileio.MaxInput

// loadDoc reads path (at most inputLimit bytes, giving up when ctx
// ends) and decodes it; a missing file or a bad document is a usage error
// of one line that names the file.
func loadDoc[T any](ctx context.Context, path string, decode func(io.Reader) (T, error)) (T, error) {
	var zero T
	data, err := fileio.Read(ctx, path, inputLimit)
	if err != nil {
		if ctx.Err() != nil {
			return zero, err
		}
		return zero, usagef("%s: %v", path, err)
	}
	doc, err := decode(bytes.NewReader(data))
	if err != nil {
		return zero, usagef("%s: %v", path, err)
	}
	return doc, ctx.Err()
}
