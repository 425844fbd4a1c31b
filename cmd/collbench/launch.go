package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/launch"
	"github.com/collbench/collbench/run"
)

// launchFlags are the options of collbench launch.
type launchFlags struct {
	nprocs     int
	rendezvous string
	grace      float64
	distinct   bool
}

// runLaunch starts -n local ranks of a collbench subcommand with
// torchrun's environment, relays their output, forwards signals, and
// returns the first failing rank's exit code.
//
// It listens for SIGINT and SIGTERM itself, to forward them, so the
// signal context the other commands use is not used here.
func runLaunch(_ context.Context, args []string, stdout, stderr io.Writer) int {
	var lf launchFlags
	fs := newFlagSet("launch")
	fs.SetInterspersed(false) // everything after the subcommand is its own
	fs.IntVarP(&lf.nprocs, "nprocs", "n", 0, "ranks (processes) to start on this host")
	fs.StringVar(&lf.rendezvous, "rendezvous", "", "host:port for the job's rendezvous (default: a free loopback port)")
	fs.Float64Var(&lf.grace, "grace", 10, "seconds the other ranks get to finish after one fails, before they are stopped")
	fs.BoolVar(&lf.distinct, "distinct-hosts", false, "give each rank its own NCCL_HOSTID, so ranks may share a GPU before NCCL 2.30 (functional runs only)")
	if code, done := parseFlags(fs, args, stdout, stderr); done {
		return code
	}
	o, err := lf.options(fs.Args())
	if err != nil {
		fmt.Fprintf(stderr, "collbench launch: %s\n", errText(err))
		return exitCode(err)
	}
	o.Stdout, o.Stderr = stdout, stderr
	return launch.Run(o)
}

// options checks the flags and the subcommand sub and makes them the
// launcher's options.
func (lf *launchFlags) options(sub []string) (launch.Options, error) {
	switch {
	case lf.nprocs < 1:
		return launch.Options{}, usagef("-n must be at least 1 (got %d)", lf.nprocs)
	case lf.nprocs > launch.MaxProcs:
		return launch.Options{}, usagef("-n %d: launch starts at most %d processes on one host; use -g for more ranks per process, or a cluster launcher", lf.nprocs, launch.MaxProcs)
	case len(sub) == 0:
		return launch.Options{}, usagef("no subcommand given (e.g. collbench launch -n 4 allreduce -b 8 -e 1M)")
	}
	if _, err := bench.LookupCollective(sub[0]); err != nil && !slices.Contains(launchable, sub[0]) {
		return launch.Options{}, usagef("%q is not a collective, %s or %s; run 'collbench help' for the list", sub[0],
			strings.Join(launchable[:len(launchable)-1], ", "), launchable[len(launchable)-1])
	}
	grace, err := run.Seconds("--grace", lf.grace)
	if err != nil {
		return launch.Options{}, err
	}
	exe, err := os.Executable()
	if err != nil {
		return launch.Options{}, fmt.Errorf("finding this program: %w", err)
	}
	env, ln, err := launch.Env(os.Environ(), lf.rendezvous)
	if err != nil {
		return launch.Options{}, usageError{Err: err}
	}
	return launch.Options{Procs: lf.nprocs, Exe: exe, Args: sub, Grace: grace, Env: env, Listener: ln, DistinctHosts: lf.distinct}, nil
}

// launchable are the commands besides the collectives that run as a job
// of several processes under collbench launch.
var launchable = []string{"overlap", "profile", "health", "ab", "tune", "audit"}

// launchOutcome is the descriptor collbench launch gave this process to
// say what its exit means; nil when no launcher started it.
var launchOutcome = launch.OutcomeFile()

// tellLauncher tells the launcher that started this process what an exit
// carrying a verdict means (a finding, a check its budget cut short), so
// that it reports it as that and not as a failure.
func tellLauncher(err error) {
	if launchOutcome == nil {
		return
	}
	switch {
	case errors.Is(err, errUnhealthy), errors.Is(err, errArmsDiffer), errors.Is(err, errDoesNotRepeat):
		fmt.Fprintln(launchOutcome, launch.Finding)
	case errors.Is(err, errIncomplete), errors.Is(err, errPartialProfile):
		fmt.Fprintln(launchOutcome, launch.Incomplete)
	}
}
