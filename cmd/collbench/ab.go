package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/collbench/collbench/ab"
	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/host"
	"github.com/collbench/collbench/compare"
	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/fileio"
	"github.com/collbench/collbench/report"
	"github.com/collbench/collbench/run"
)

// abFlags are the options of collbench ab.
type abFlags struct {
	arms, dims       []string
	rounds           int
	threshold, alpha float64
	correction       string
	output, logs     string
	rendezvous       string
	quiet            bool
	roundsGiven      bool
	armTimeout       float64
	checked          []checkedSweep // each arm's sweep as checked
}

// runAB is collbench ab: one sweep under several arms (NCCL builds,
// environment settings, flags), each arm in processes of its own, the
// arms taking turns round after round; each size of each arm judged
// against the first arm. Exit 1 when an arm is significantly slower
// beyond the threshold, or an arm failed.
func runAB(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var f abFlags
	fs := newFlagSet("ab")
	fs.SetInterspersed(false) // the sweep after the flags is its own
	fs.StringArrayVar(&f.arms, "arm", nil, "an arm: words name=LABEL, lib=PATH (libnccl.so.2 to load), NAME=VALUE (environment) and then collbench flags, e.g. 'lib=/opt/nccl/lib NCCL_PROTO=LL -x 1'; repeat it; the first is the base")
	fs.StringArrayVar(&f.dims, "arms-matrix", nil, "NAME=V1,V2,…: a dimension of a grid of arms, an environment variable or lib; repeat it for more dimensions; its arms come after those of --arm")
	fs.IntVar(&f.rounds, "rounds", defaultRounds, "rounds: each arm runs the sweep once a round, the arms in turn (default 7, or more where the table's tests need them)")
	fs.Float64Var(&f.threshold, "threshold", 5, "change of time in percent beyond which a significant difference is faster or slower")
	fs.Float64Var(&f.alpha, "alpha", 0.01, "significance level of the rank-sum test over the rounds, for the whole table (see --correction)")
	fs.StringVar(&f.correction, "correction", string(compare.Holm), "how the table's p-values are adjusted for each other: holm (the chance of any false verdict stays below --alpha), bh (the expected share of false verdicts does) or none")
	fs.StringVarP(&f.output, "output_file", "J", "", "also write the arms, every round and the verdicts as JSON to this file")
	fs.StringVar(&f.logs, "logs", "", "keep the output of every arm's process in this folder")
	fs.StringVar(&f.rendezvous, "rendezvous", "", "host:port where ab's own processes meet (default MASTER_ADDR:MASTER_PORT, the first Slurm node, or this host)")
	fs.BoolVarP(&f.quiet, "quiet", "q", false, "no line on stderr as each arm's turn ends")
	registerArmTimeout(fs, &f.armTimeout)
	if code, done := parseFlags(fs, args, stdout, stderr); done {
		return code
	}
	f.roundsGiven = fs.Changed("rounds")
	err := f.run(ctx, fs, stdout, stderr)
	tellLauncher(err)
	if err != nil && !printed(err) {
		fmt.Fprintf(stderr, "collbench ab: %s\n", errText(err))
	}
	return exitCode(err)
}

// errArmsDiffer is an A/B run in which an arm was significantly slower
// than the first beyond the threshold, or an arm failed (exit 1); the
// table says which.
var errArmsDiffer = errors.New("an arm was slower than the first, or failed")

func (f *abFlags) run(ctx context.Context, fs *pflag.FlagSet, stdout, stderr io.Writer) error {
	sweep := fs.Args()
	var arms []ab.Arm
	j, err := joinArmsJob(ctx, fs, f.rendezvous, f.logs, stderr, func(procs int) (inputs []string, err error) {
		arms, inputs, err = f.check(sweep, procs)
		return inputs, err
	}, "output_file")
	if err != nil {
		return err
	}
	defer j.Close()
	stamp := document.NewStamp(document.ABSchemaName, document.ABSchemaVersion, version, "", os.Args[1:])
	say := func(ev ab.Event) {
		if j.Rank != 0 {
			return
		}
		a := arms[ev.Arm]
		switch {
		case ev.Failed != "" && ev.Round > 0: // one that cannot start refuses the run, in a line of its own
			fmt.Fprintf(stderr, "collbench ab: arm %s (%s) %s\n", ab.Letter(ev.Arm), a.Label, ev.Failed)
		case ev.Round > 0 && !f.quiet:
			fmt.Fprintf(stderr, "collbench ab: round %d/%d: arm %s (%s) in %.1f s\n", ev.Round, f.rounds, ab.Letter(ev.Arm), a.Label, ev.Elapsed.Seconds())
		}
	}
	out, err := ab.Run(ctx, ab.Options{Processes: j.processes(sweep, f.logs, f.armTimeout), Arms: arms, Rounds: f.rounds,
		Emit: say, Probe: abProbe, Vet: f.vet})
	var refused *ab.Refused
	if errors.As(err, &refused) {
		return usageError{Err: err}
	}
	if err != nil {
		if out != nil && out.Stopped != "" && j.Rank == 0 && f.output != "" {
			f.saveInterrupted(out, stamp, sweep, stdout, stderr)
		}
		return err
	}
	if j.Rank != 0 {
		return nil
	}
	rec := f.judge(out, stamp, sweep)
	report.ABArms(stdout, rec)
	report.ABTable(stdout, rec)
	report.ABFailures(stdout, rec)
	if f.output != "" {
		if err := fileio.Save(ctx, f.output, stdout, rec.Encode); err != nil {
			return err
		}
	}
	if rec.Slower > 0 || len(rec.Errors) > 0 || rec.Stopped != "" {
		return errArmsDiffer
	}
	return nil
}

// vet refuses, once the probe has said which backend an arm runs on, a
// flag that backend does not take, or a host algorithm the arm's
// collective cannot run over its groups: the arm would fail its first
// round.
func (f *abFlags) vet(arm int, probed ab.ArmOutcome) error {
	c := f.checked[arm]
	backend := c.backend
	if backend == "auto" {
		backend = probed.Backend
	}
	if backend != "host" {
		return nil
	}
	if err := c.host.CheckCollective(c.opts.Coll, c.groupRanks); err != nil {
		return err
	}
	if len(c.ncclOnly) > 0 {
		verb := "applies"
		if len(c.ncclOnly) > 1 {
			verb = "apply"
		}
		return fmt.Errorf("%s %s to the nccl backend only, and the arm runs on the host backend here", strings.Join(c.ncclOnly, ", "), verb)
	}
	return nil
}

// judge is the record of the turns in out, judged as the flags ask.
func (f *abFlags) judge(out *ab.Outcome, stamp document.Stamp, sweep []string) *document.ABRun {
	stamp.Finish()
	return ab.Judge(out, stamp, sweep, f.rounds, compare.ArmOptions{Threshold: f.threshold / 100, Alpha: f.alpha,
		Correction: compare.Correction(f.correction)})
}

// saveInterrupted writes -J of the turns an interrupted run finished, so
// that minutes of measurement are not lost with the run; the record's
// stopped field says where it was cut. The run's own context has ended:
// the write gets a few seconds of its own.
func (f *abFlags) saveInterrupted(out *ab.Outcome, stamp document.Stamp, sweep []string, stdout, stderr io.Writer) {
	rec := f.judge(out, stamp, sweep)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := fileio.Save(ctx, f.output, stdout, rec.Encode); err != nil {
		fmt.Fprintf(stderr, "collbench ab: keeping the finished rounds: %s\n", errText(err))
	}
}

// defaultRounds is the rounds an A/B run takes unless told: enough for
// the rank-sum test to reach 0.01 with a margin for a round that
// overlaps; more where the table's tests need them.
const defaultRounds = 7

// check validates the flags and the sweep, and returns the arms: each
// arm's flags are parsed with the sweep's by the collective's own flag
// set, so that a typo fails now, not in the first round; procs is the
// number of ab's processes, each starting one process of every arm. It
// also settles the rounds: enough that one difference among the table's
// tests can be shown at --alpha once adjusted for the others.
func (f *abFlags) check(sweep []string, procs int) (arms []ab.Arm, inputs []string, err error) {
	switch {
	case len(sweep) == 0:
		return nil, nil, usagef("no sweep given (usage: %s)", synopsisOf("ab"))
	case f.rounds < 1 || f.rounds > compare.MaxRounds:
		return nil, nil, usagef("--rounds must be between 1 and %d (got %d)", compare.MaxRounds, f.rounds)
	}
	if err := checkTurnFlags(f.threshold, f.alpha, f.armTimeout); err != nil {
		return nil, nil, err
	}
	if _, err := compare.ParseCorrection(f.correction); err != nil {
		return nil, nil, usagef("--correction: %v", err)
	}
	coll, err := bench.LookupCollective(sweep[0])
	if err != nil {
		return nil, nil, usagef("ab measures a collective's sweep; %q is not a collective (run 'collbench help' for the list)", sweep[0])
	}
	if n, err := ab.MatrixSize(f.dims); err != nil {
		return nil, nil, usageError{Err: err}
	} else if n+len(f.arms) > ab.MaxArms {
		return nil, nil, usagef("more than %d arms (--arm and --arms-matrix): each runs once a round; split the run", ab.MaxArms)
	}
	for _, spec := range f.arms {
		a, err := ab.ParseArm(spec)
		if err != nil {
			return nil, nil, usageError{Err: err}
		}
		arms = append(arms, a)
	}
	grid, err := ab.Matrix(f.dims)
	if err != nil {
		return nil, nil, usageError{Err: err}
	}
	if len(f.dims) > 0 {
		arms = append(arms, grid...)
	}
	if len(arms) < 2 {
		return nil, nil, usagef("ab wants at least two arms (--arm, --arms-matrix); got %d", len(arms))
	}
	rows := 0
	for i, a := range arms {
		c, err := checkSweep("ab", coll, sweep[1:], a, procs)
		if err != nil {
			return nil, nil, usagef("arm %s (%s): %w", ab.Letter(i), a.Label, err)
		}
		f.checked = append(f.checked, c)
		rows = max(rows, c.rows)
		for _, p := range c.inputs {
			if !slices.Contains(inputs, p) {
				inputs = append(inputs, p)
			}
		}
	}
	return arms, inputs, f.settleRounds(rows * (len(arms) - 1))
}

// settleRounds sets --rounds, when not given, to the least (at least
// defaultRounds) that can show one difference among tests comparisons at
// --alpha once they are adjusted for each other, and refuses a number given
// that cannot.
func (f *abFlags) settleRounds(tests int) error {
	c := compare.Correction(f.correction)
	need := compare.RoundsNeeded(f.alpha, tests, c, 1)
	if need == 0 {
		return usagef("no number of rounds up to %d can show a difference among %d tests at p < %g", compare.MaxRounds, tests, f.alpha)
	}
	if !f.roundsGiven {
		f.rounds = max(defaultRounds, need)
		return nil
	}
	if f.rounds < need {
		best := compare.SmallestRankSumP(f.rounds, f.rounds)
		if tests > 1 && c != compare.NoCorrection {
			return usagef("--rounds %d cannot show a difference among %d tests at p < %g: %d rounds a side give p ≥ %.3g at best, %.3g once adjusted (%s); use at least %d",
				f.rounds, tests, f.alpha, f.rounds, best, best*float64(tests), c, need)
		}
		return usagef("--rounds %d cannot show a difference at p < %g: %d rounds a side give p ≥ %.3g at best; use at least %d", f.rounds, f.alpha, f.rounds, best, need)
	}
	return nil
}

// checkedSweep is a sweep as ab and tune checked it: its options, the
// rows its table will have and the files its processes read.
type checkedSweep struct {
	opts   bench.Options
	rows   int
	inputs []string
	// backend is the one the sweep's flags ask for ("auto" unless
	// given); ncclOnly the flags set that only the nccl backend takes.
	backend  string
	ncclOnly []string
	// host is what the arm's environment sets for the host backend,
	// checked against the collective and its groups of ranks.
	host       host.Backend
	groupRanks int
}

// ncclOnlyFlags are the collectives' flags that only the nccl backend
// takes (a non-zero value on the host backend is refused when the run
// starts).
var ncclOnlyFlags = []string{"local_register", "cta_policy", "stream_null", "parallel_init", "nccl-max-ctas", "nccl-min-ctas",
	"nccl-estimate", "memory"}

// checkSweep parses a sweep's flags and an arm's with the collective's
// flag set, refuses the flags the command (ab, tune) sets itself and
// inputs that cannot be read again each turn, and checks the sweep as its
// processes will: the options, the rows its table will have and its input
// files.
func checkSweep(command string, coll *bench.Collective, sweep []string, arm ab.Arm, procs int) (checkedSweep, error) {
	var none checkedSweep
	armArgs := arm.Args
	fl := newFlags(coll)
	fl.getenv = armEnv(arm)
	fs, _ := fl.flags()
	fs.SetOutput(io.Discard)
	if err := fs.Parse(append(append([]string(nil), sweep...), armArgs...)); err != nil {
		return none, err
	}
	if fs.NArg() > 0 {
		return none, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	for _, name := range []string{"output_file", "rendezvous", "help"} {
		if fs.Changed(name) {
			return none, fmt.Errorf("--%s is %s's to set (%s's own -J writes every arm's results)", name, command, command)
		}
	}
	if fl.Cycles != 1 {
		return none, fmt.Errorf("-N %d: each round runs the sweep once", fl.Cycles)
	}
	if err := finiteFlags(fs); err != nil {
		return none, err
	}
	if err := fl.jobFlags.check(); err != nil {
		return none, err
	}
	if err := fl.check(); err != nil {
		return none, err
	}
	if fl.Traffic != nil && fl.Traffic.MoE != "" {
		return none, fmt.Errorf("--moe times a layer's calls, not a sweep's sizes, and %s compares sweeps", command)
	}
	// Every turn reads the sweep's files again: a FIFO would be read once
	// (and ab itself would wait on it here), a file missing now fails
	// every turn.
	inputs := append(fl.Traffic.Files(), fl.references...)
	for _, p := range inputs {
		if err := regularInput(p); err != nil {
			return none, err
		}
	}
	if _, err := referenceTables(context.Background(), fl.references); err != nil {
		return none, err
	}
	o, err := fl.Options(coll, fl.JobRequest, fs.Changed("op"))
	if err != nil {
		return none, err
	}
	// The sweep's own checks, against the ranks it will have: this job's
	// processes, each with the arm's threads and GPUs (split into groups,
	// the groups' size is the arm processes' to check).
	ranks := procs * fl.Threads * fl.NGPUs
	grouped := fs.Changed("group-size")
	if grouped {
		if fl.GroupSize > ranks {
			return none, fmt.Errorf("--group-size %d is larger than the job's %d ranks", fl.GroupSize, ranks)
		}
		ranks = fl.GroupSize
	}
	// The arm's host backend settings, read now: a malformed one is the
	// arm's usage error before any round, not its failure in round 1.
	tuning, err := run.HostTuning(armEnv(arm))
	if err != nil {
		return none, err
	}
	c := checkedSweep{opts: o, rows: o.PlannedRows(ranks), inputs: inputs, backend: fl.Backend,
		host: host.Backend{Tuning: tuning}, groupRanks: ranks}
	for _, name := range ncclOnlyFlags {
		if f := fs.Lookup(name); f != nil && fs.Changed(name) && f.Value.String() != "0" && f.Value.String() != "false" {
			c.ncclOnly = append(c.ncclOnly, "--"+name)
		}
	}
	if grouped {
		return c, o.Sweep.Validate()
	}
	_, err = o.Validate(ranks)
	return c, err
}

// armEnv reads the environment an arm's processes will have: this
// process's, with the arm's library and settings over it.
func armEnv(a ab.Arm) func(string) string {
	set := map[string]string{}
	if a.Lib != "" {
		set["COLLBENCH_NCCL_LIB"] = a.Lib
	}
	for _, kv := range a.Env {
		name, val, _ := strings.Cut(kv, "=")
		set[name] = val
	}
	return func(name string) string {
		if v, ok := set[name]; ok {
			return v
		}
		return os.Getenv(name)
	}
}

// regularInput refuses an input that is not a regular file (a FIFO, a
// device, a folder) or cannot be read, in one line naming it.
func regularInput(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, errors.Unwrap(err))
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file: every turn reads it again", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, errors.Unwrap(err))
	}
	return f.Close()
}

// abProbe asks a process which NCCL it loads: collbench doctor's JSON.
func abProbe(lib string) []string {
	args := []string{"doctor", "--json"}
	if lib != "" {
		args = append(args, "--nccl-lib", lib)
	}
	return args
}

// abPlace joins a round's sweep to its arm's rendezvous and names the
// run document it writes.
func abPlace(rendezvous, document string) []string {
	var args []string
	if rendezvous != "" {
		args = append(args, "--rendezvous", rendezvous)
	}
	if document != "" {
		args = append(args, "-J", document)
	}
	return args
}
