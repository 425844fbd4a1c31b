package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/collbench/collbench/run"
)

// armsJob is the job of a command that runs collbench processes of its
// own in turns (ab, tune): one rank per process, each starting one
// process a turn; exe is this program, the one those processes run.
type armsJob struct {
	*run.Job
	exe string
}

// joinArmsJob places this process in the command's job, lets check see
// how many processes it has, refuses on rank 0 the outputs that cannot be
// written and makes the logs folder, then meets the other processes. The
// caller closes the job.
func joinArmsJob(ctx context.Context, command, rendezvous, logs string, stderr io.Writer, check func(procs int) error,
	inputs []string, outputs ...string) (*armsJob, error) {
	j, err := run.NewJob(run.Settings{RanksPerProc: 1, Rendezvous: rendezvous, Version: version}, os.Getenv,
		func(format string, a ...any) { fmt.Fprintf(stderr, "collbench "+command+": "+format+"\n", a...) })
	if err != nil {
		return nil, err
	}
	if err := check(j.Size); err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding this program: %w", err)
	}
	if j.Rank == 0 {
		if err := checkFiles(inputs, outputs...)(); err != nil {
			return nil, err
		}
		if logs != "" {
			if err := os.MkdirAll(logs, 0o755); err != nil {
				return nil, usagef("--logs %s: %v", logs, err)
			}
		}
	}
	if err := j.Join(ctx); err != nil {
		return nil, err
	}
	return &armsJob{Job: j, exe: exe}, nil
}
