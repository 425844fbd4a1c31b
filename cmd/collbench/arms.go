package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/collbench/collbench/ab"
	"github.com/collbench/collbench/compare"
	"github.com/collbench/collbench/run"
)

// armsJob is the job of a command that runs collbench processes of its
// own in turns (ab, tune): one rank per process, each starting one
// process a turn; exe is this program, the one those processes run.
type armsJob struct {
	*run.Job
	exe string
}

// processes is how the command's turns run the sweep from this process:
// this program, the environment, this process's place in the job, the
// logs folder, the turn's rendezvous and document (abPlace) and the
// --arm-timeout (seconds; 0 from the turns' timings).
func (j *armsJob) processes(sweep []string, logs string, armTimeout float64) ab.Processes {
	return ab.Processes{Exe: j.exe, Command: sweep, Env: os.Environ(), Rank: j.Rank, Size: j.Size, Addr: j.Addr, Group: j,
		LogDir: logs, Place: abPlace, TurnLimit: seconds(armTimeout)}
}

// joinArmsJob places this process in the command's job, lets check see
// how many processes it has (it returns the files the arms read), refuses
// on rank 0 the outputs that cannot be written, would replace one of
// those inputs or are the logs folder, and makes the logs folder, then
// meets the other processes. outputFlags name the flags of the files the
// command writes. The caller closes the job.
func joinArmsJob(ctx context.Context, fs *pflag.FlagSet, rendezvous, logs string, stderr io.Writer,
	check func(procs int) (inputs []string, err error), outputFlags ...string) (*armsJob, error) {
	command := fs.Name()
	j, err := run.NewJob(run.Settings{RanksPerProc: 1, Rendezvous: rendezvous, Version: version, Agreed: agreedSettings(fs)}, os.Getenv,
		func(format string, a ...any) { fmt.Fprintf(stderr, "collbench "+command+": "+format+"\n", a...) })
	if err != nil {
		return nil, err
	}
	inputs, err := check(j.Size)
	if err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding this program: %w", err)
	}
	if j.Rank == 0 {
		var outputs []string
		for _, name := range outputFlags {
			out := fs.Lookup(name).Value.String()
			if out != "" && logs != "" && sameFile(out, logs) {
				return nil, usagef("%s %s and --logs %s are one path: %s is a file, --logs a folder; name two",
					flagSpelling(fs, name), out, logs, flagSpelling(fs, name))
			}
			outputs = append(outputs, out)
		}
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

// checkTurnFlags refuses the settings every command that runs turns
// shares: --threshold below 0, --alpha outside compare.CheckAlpha's bounds
// and an --arm-timeout that is no deadline.
func checkTurnFlags(threshold, alpha, armTimeout float64) error {
	if threshold < 0 {
		return usagef("--threshold must be at least 0 (got %g)", threshold)
	}
	if err := compare.CheckAlpha(alpha); err != nil {
		return usageError{Err: err}
	}
	return checkArmTimeout(armTimeout)
}

// flagSpelling is how a flag of fs is written: its shorthand where it has
// one (-J), else its name (--measured).
func flagSpelling(fs *pflag.FlagSet, name string) string {
	if f := fs.Lookup(name); f != nil && f.Shorthand != "" {
		return "-" + f.Shorthand
	}
	return "--" + name
}

// registerArmTimeout adds --arm-timeout to a command that runs arms.
func registerArmTimeout(fs *pflag.FlagSet, p *float64) {
	fs.Float64Var(p, "arm-timeout", 0, "seconds an arm's turn may take before its processes are stopped and the arm fails "+
		"(0 = from the arms' timings: 10× the arm's slowest turn, 30× any arm's for its first, at least 60 s; 10 minutes before any turn ended)")
}

// maxArmTimeout bounds --arm-timeout: a week is no deadline a person waits for.
const maxArmTimeout = 7 * 24 * time.Hour

// checkArmTimeout refuses an --arm-timeout that is negative, not a number,
// or too small or large to be a deadline.
func checkArmTimeout(v float64) error {
	if v == 0 {
		return nil
	}
	if !(v >= 0.001) || v > maxArmTimeout.Seconds() {
		return usagef("--arm-timeout must be 0 (automatic) or between 0.001 and %.0f seconds (got %g)", maxArmTimeout.Seconds(), v)
	}
	return nil
}

// seconds is a flag's count of seconds as a duration.
func seconds(v float64) time.Duration { return time.Duration(v * float64(time.Second)) }
