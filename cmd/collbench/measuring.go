package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/collbench/collbench/bench/host"
	"github.com/collbench/collbench/cluster"
	"github.com/collbench/collbench/fileio"
	"github.com/collbench/collbench/libpath"
	"github.com/collbench/collbench/nccl"
	"github.com/collbench/collbench/progress"
	"github.com/collbench/collbench/run"
	"github.com/collbench/collbench/setting"
	"github.com/spf13/pflag"
)

// measurer is a measuring command's flags: the job's among them, what
// they need checked beyond the job's, and the measurement they ask for.
type measurer interface {
	flags() (*pflag.FlagSet, *jobFlags)
	check() error
	// measure runs in the job; argv is the command line as the files
	// record it. It reports whether any result was wrong.
	measure(ctx context.Context, j *run.Job, argv []string, stdout, stderr io.Writer) (wrong bool, err error)
}

// parseMeasuring reads a measuring command's line into m: no stray
// arguments, the job's flags, then the command's own; problems are usage
// errors.
func parseMeasuring(m measurer, args []string) error {
	fs, jf := m.flags()
	if err := fs.Parse(args); err != nil {
		return usageError{Err: err}
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	if err := finiteFlags(fs); err != nil {
		return err
	}
	if err := jf.check(); err != nil {
		return err
	}
	return m.check()
}

// runMeasuring runs a measuring command: its line parsed (synopsis heads
// the help), then its measurement in the job this process's environment
// places it in. Errors go to stderr as one line naming the command and,
// in a job of several processes, this process's ranks, after the job's
// failure has been put first.
func runMeasuring(ctx context.Context, m measurer, args []string, stdout, stderr io.Writer) int {
	fs, jf := m.flags()
	if code, done := parseWith(fs, func() error { return parseMeasuring(m, args) }, stdout, stderr); done {
		return code
	}
	cmd := fs.Name()
	fail := func(err error) int {
		fmt.Fprintf(stderr, "collbench %s: %s\n", cmd, errTextIn(fs, err))
		return exitCode(err)
	}
	s, err := jf.settings()
	if err != nil {
		return fail(err)
	}
	s.Agreed = agreedSettings(fs)
	debugToStderr()
	j, err := run.NewJob(s, os.Getenv, func(format string, a ...any) {
		fmt.Fprintf(stderr, "collbench %s: %s\n", cmd, setting.Marks(fmt.Sprintf(format, a...), spell(fs)))
	})
	if err != nil {
		return fail(err)
	}
	defer j.Close()
	j.Progress = &progress.Lines{W: stderr, Quiet: jf.quiet, Prefix: "collbench " + cmd + ": "}
	wrong, err := m.measure(ctx, j, append([]string{"collbench", cmd}, args...), stdout, stderr)
	tellLauncher(err)
	if printed(err) {
		return exitCode(err)
	}
	if err = j.Explain(ctx, err); err != nil {
		if j.Multi() {
			err = fmt.Errorf("%s: %w", cluster.ProcName(j.Rank, jf.PerProc()), err)
		}
		return fail(withLibFlag(err))
	}
	if wrong {
		return exitWrong
	}
	return exitOK
}

// withLibFlag adds the command line's way of naming NCCL to an error
// that says it was not found by searching (not when it was named).
func withLibFlag(err error) error {
	if errors.Is(err, nccl.ErrNotFound) && !errors.As(err, new(*libpath.ExplicitError)) {
		return fmt.Errorf("%w (or pass --nccl-lib with its path)", err)
	}
	return err
}

// checkFiles refuses, before anything runs, an output that cannot be
// written, one that is one of the inputs (writing it would destroy what
// was read), and two outputs that are one file (the second would replace
// the first). The files the environment names count too: the tuner files
// as inputs, the host backend's log as an output that is appended to.
func checkFiles(inputs []string, outputs ...string) func() error {
	return func() error {
		inputs := append(slices.Clone(inputs), envInputs(os.Getenv)...)
		var seen []string
		// The host backend's log is appended to, never replaced: it may
		// be no input, and no output may be it.
		if p := os.Getenv(host.TuningLogVar); p != "" {
			if err := fileio.Distinct(p, inputs); err != nil {
				return usagef("%s=%s: %v", host.TuningLogVar, p, err)
			}
			seen = append(seen, p)
		}
		for _, p := range outputs {
			if p == "" || p == fileio.Stdout {
				continue
			}
			if err := fileio.Check(p); err != nil {
				return usageError{Err: err}
			}
			if err := fileio.Distinct(p, inputs); err != nil { // an empty input names no file
				var same *fileio.SameFileError
				if errors.As(err, &same) {
					if v := envInputNaming(os.Getenv, same.Input); v != "" {
						return usagef("the output %s is the input %s, which %s names; write to another file", same.Output, same.Input, v)
					}
				}
				return usageError{Err: err}
			}
			for _, q := range seen {
				if sameFile(p, q) {
					return usagef("%s and %s are one file, written twice; name two", q, p)
				}
			}
			seen = append(seen, p)
		}
		return nil
	}
}

// envInputs are the files the agreed variables name (agreedVariables:
// the host backend's and NCCL's tuner files), which the run reads.
func envInputs(getenv func(string) string) []string {
	var out []string
	for _, v := range agreedVariables {
		if p := getenv(v.name); p != "" && v.file {
			out = append(out, p)
		}
	}
	return out
}

// envInputNaming is the agreed variable that names the file path, "" if
// none.
func envInputNaming(getenv func(string) string, path string) string {
	for _, v := range agreedVariables {
		if p := getenv(v.name); p != "" && v.file && p == path {
			return v.name
		}
	}
	return ""
}

// sameFile says whether two names are one file: the same file where it
// exists, else the same path once cleaned.
func sameFile(a, b string) bool {
	if fa, err := os.Stat(a); err == nil {
		if fb, err := os.Stat(b); err == nil {
			return os.SameFile(fa, fb)
		}
	}
	aa, err1 := filepath.Abs(a)
	bb, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && aa == bb
}

// emitJSON prints a document on stdout under --format json, and saves it
// to file (-J) when one is named, through fileio.Save.
func emitJSON(ctx context.Context, format, file string, stdout io.Writer, encode func(io.Writer) error) error {
	if format == "json" {
		if err := encode(stdout); err != nil {
			return err
		}
	}
	if file == "" {
		return nil
	}
	return fileio.Save(ctx, file, stdout, encode)
}

// checkFormat refuses a --format outside allowed.
func checkFormat(format string, allowed ...string) error {
	if slices.Contains(allowed, format) {
		return nil
	}
	last := len(allowed) - 1
	return usagef("unknown --format %q (want %s or %s)", format, strings.Join(allowed[:last], ", "), allowed[last])
}

// interrupted is ctx's cause once an interrupt has ended it: a command
// whose last round finished just before Ctrl-C still stops there, exit
// 130, and writes none of the files it was asked for, rather than report
// as finished what the user cut short.
func interrupted(ctx context.Context) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return nil
}
