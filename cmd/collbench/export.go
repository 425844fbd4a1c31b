package main

import (
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
type exportFlags struct{ export.Request }

func (e *exportFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&e.Targets, "export", "", "also export to these planners, comma-separated: "+strings.Join(export.Targets, ", ")+" or all")
	fs.StringVar(&e.Dir, "export-dir", ".", "folder the exports are written to")
	e.registerTuning(fs)
}

// registerTuning adds the flags that shape the exported figures.
func (e *exportFlags) registerTuning(fs *pflag.FlagSet) {
	fs.StringVar(&e.GalvatronBW, "galvatron-bw", "point:32M", "what Galvatron's bandwidth files hold: point:SIZE (busbw at SIZE), asymptotic (fitted busbw∞) or average (mean over the sizes)")
	fs.StringVar(&e.SimAIBW, "simai-bw", "asymptotic", "what SimAI's bandwidths hold (busbw.yaml, -nv, -nic): asymptotic (the line's busbw), point:SIZE (busbw at SIZE) or average (mean over the sizes)")
	fs.IntVar(&e.TP, "simai-tp", 0, "SimAI TP group size (default: ranks per node)")
	fs.IntVar(&e.DP, "simai-dp", 0, "SimAI DP group size (default: world / TP)")
	fs.IntVar(&e.EP, "simai-ep", 0, "SimAI EP group size (default: DP); its expert-data-parallel group is DP/EP ranks")
	fs.IntVar(&e.PP, "simai-pp", 0, "SimAI PP group size (default: 2)")
	fs.StringVar(&e.Name, "simai-name", "collbench", "first line of SimAI's busbw.yaml")
}

func (e *exportFlags) check() error {
	if err := e.Check(); err != nil {
		return usageError{Err: err}
	}
	return nil
}

// checkDir makes sure the export folder takes files, creating it.
func (e *exportFlags) checkDir() error {
	if err := e.CheckDir(); err != nil {
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
	written, err := e.Write(ctx, doc)
	for _, f := range written {
		files(f)
	}
	if failed := export.Failures(err); len(failed) > 0 && ctx.Err() == nil {
		for _, t := range failed {
			fmt.Fprintf(stderr, "collbench %s: %s\n", cmd, errText(t))
		}
		return errExportFailed
	}
	return err
}

// runExport is collbench export: a saved profile into planners' formats.
func runExport(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("export")
	var e exportFlags
	fs.StringVar(&e.Targets, "to", "", "targets, comma-separated: "+strings.Join(export.Targets, ", ")+" or all")
	fs.StringVarP(&e.Dir, "output", "o", ".", "folder to write the files into (created if missing)")
	e.registerTuning(fs)
	synopsis := synopsisOf("export")
	return fileCommand(fs, args, stdout, stderr, func() error {
		switch {
		case fs.NArg() != 1:
			return usagef("want one profile file (usage: %s)", synopsis)
		case e.Targets == "":
			return usagef("--to is required (%s or all)", strings.Join(export.Targets, ", "))
		}
		if err := e.check(); err != nil {
			return err
		}
		doc, err := loadProfile(ctx, fs.Arg(0))
		if err != nil {
			return err
		}
		e.Keep = []string{fs.Arg(0)}
		targets, _ := export.ParseTargets(e.Targets) // checked above
		if t := export.Collides(targets, e.Dir, fs.Arg(0)); t != "" {
			return usagef("the profile %s is a file the %s export writes into -o %s; name another folder", fs.Arg(0), t, e.Dir)
		}
		if err := e.checkDir(); err != nil {
			return err
		}
		return e.write(ctx, doc, "export", func(f string) { fmt.Fprintln(stdout, f) }, stderr)
	})
}

// loadProfile reads a profile file; every problem is one line naming it.
func loadProfile(ctx context.Context, path string) (*document.Profile, error) {
	return document.Load(ctx, path, inputLimit, document.DecodeProfile)
}

// inputLimit caps what is read of one input file.
var inputLimit int64 = fileio.MaxInput
