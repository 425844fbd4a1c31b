package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/collbench/collbench/cluster"
	"github.com/collbench/collbench/libpath"
	"github.com/collbench/collbench/nccl"
	"github.com/collbench/collbench/run"
	"github.com/spf13/pflag"
)

// measuring runs a measuring command: its own parse (flags and checks,
// synopsis for the help), then body in its job, with runJob's exit code.
func measuring(ctx context.Context, name, synopsis string, fs *pflag.FlagSet, parse func() error, jf *jobFlags,
	stdout, stderr io.Writer, body func(j *run.Job) (bool, error)) int {
	if code, done := parseWith(fs, parse, synopsis, stdout, stderr); done {
		return code
	}
	return runJob(ctx, name, jf, stderr, body)
}

// runJob reads this process's place in the job from the environment, runs
// body in it and turns the outcome into the exit code. Errors go to stderr
// as one line naming the command and, in a job of several processes, this
// process's ranks, after the job's failure has been put first.
func runJob(ctx context.Context, cmd string, jf *jobFlags, stderr io.Writer, body func(j *run.Job) (wrong bool, err error)) int {
	logf := func(format string, a ...any) {
		fmt.Fprintf(stderr, "collbench %s: %s\n", cmd, fmt.Sprintf(format, a...))
	}
	s, err := jf.settings()
	if err != nil {
		fmt.Fprintf(stderr, "collbench %s: %v\n", cmd, err)
		return exitCode(err)
	}
	j, err := run.NewJob(s, os.Getenv, logf)
	if err != nil {
		fmt.Fprintf(stderr, "collbench %s: %v\n", cmd, err)
		return exitCode(err)
	}
	defer j.Close()
	wrong, err := body(j)
	if errors.Is(err, errExportFailed) || errors.Is(err, errUnhealthy) || errors.Is(err, errIncomplete) {
		return exitCode(err) // each failed target has had its line; the findings are printed
	}
	if err = j.Explain(ctx, err); err != nil {
		who := ""
		if j.Multi() {
			who = cluster.ProcName(j.Rank, jf.PerProc()) + ": "
		}
		fmt.Fprintf(stderr, "collbench %s: %s%v\n", cmd, who, withLibFlag(err))
		return exitCode(err)
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
