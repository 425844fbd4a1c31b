package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
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
	"github.com/collbench/collbench/tune"
	"github.com/collbench/collbench/tuner"
)

// tuneFlags are the options of collbench tune.
type tuneFlags struct {
	algorithms, protocols, channels string
	rounds                          int
	threshold, alpha                float64
	budget                          time.Duration
	plugin                          string
	output, measured, record, logs  string
	rendezvous                      string
	quiet                           bool
	armTimeout                      float64
}

// runTune is collbench tune: the sweep under every algorithm, protocol
// and channel count (the host backend's algorithms and segments there),
// judged against the library's own choice size by size, written as a
// tuner file, and proven by the library steered by that file against its
// own choice.
func runTune(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var f tuneFlags
	fs := newFlagSet("tune")
	fs.SetInterspersed(false) // the sweep after the flags is its own
	fs.StringVar(&f.algorithms, "algorithms", "", "algorithms to try, e.g. ring,tree (default: all the collective has; docs/tune.md)")
	fs.StringVar(&f.protocols, "protocols", "", "protocols to try: ll,ll128,simple (default all); host backend: segments, e.g. 64K,256K")
	fs.StringVar(&f.channels, "channels", "", "NCCL channel counts to try besides NCCL's own, e.g. 2,8")
	fs.IntVar(&f.rounds, "rounds", 0, "rounds of the search (default 7, or more where its tests need them)")
	fs.Float64Var(&f.threshold, "threshold", 5, "gain in percent over the library's own choice a setting needs to be written")
	fs.Float64Var(&f.alpha, "alpha", 0.01, "significance: the search's false discovery rate, the proof's family-wise error")
	fs.DurationVar(&f.budget, "budget", 0, "time the whole tuning may take, e.g. 20m (refused when too short)")
	fs.StringVar(&f.plugin, "plugin", "", "NCCL's example tuner plugin for the proof (libnccl-tuner-example.so, NCCL >= 2.30)")
	fs.StringVarP(&f.output, "output", "o", "tuner.conf", "the tuner file to write (for NCCL_TUNER_CONFIG_FILE)")
	fs.StringVar(&f.measured, "measured", "", "also write the measurements in optimize_config.py's columns")
	fs.StringVarP(&f.record, "output_file", "J", "", "also write the record (trials, rounds, verdicts, proof) as JSON")
	fs.StringVar(&f.logs, "logs", "", "keep the output of every process started in this folder")
	fs.StringVar(&f.rendezvous, "rendezvous", "", "host:port where tune's processes meet (default as the collectives')")
	fs.BoolVarP(&f.quiet, "quiet", "q", false, "no line on stderr as each trial and turn ends")
	registerArmTimeout(fs, &f.armTimeout)
	if code, done := parseFlags(fs, args, stdout, stderr); done {
		return code
	}
	err := f.run(ctx, fs, stdout, stderr)
	if err != nil && !printed(err) {
		fmt.Fprintf(stderr, "collbench tune: %s\n", errText(err))
	}
	return exitCode(err)
}

// errTuneIncomplete is a tuning whose file is not what it claims: its
// proof did not run, or the library did not do what the file says (exit
// 1); the output says which.
var errTuneIncomplete = errors.New("the tuner file could not be proven as written")

func (f *tuneFlags) run(ctx context.Context, fs *pflag.FlagSet, stdout, stderr io.Writer) error {
	sweep := fs.Args()
	var space tune.Space
	j, err := joinArmsJob(ctx, fs, f.rendezvous, f.logs, stderr, func(procs int) (inputs []string, err error) {
		space, inputs, err = f.check(sweep, procs)
		return append(inputs, f.plugin), err
	}, "output", "measured", "output_file")
	if err != nil {
		return err
	}
	defer j.Close()
	say := func(ev tune.Event) {
		switch {
		case ev.Failed != "" && ev.Stage == "trial":
			fmt.Fprintf(stderr, "collbench tune: arm %s (%s) refused: %s\n", ev.Arm, ev.Label, ev.Failed)
		case ev.Failed != "":
			fmt.Fprintf(stderr, "collbench tune: %s: arm %s (%s) %s\n", ev.Stage, ev.Arm, ev.Label, ev.Failed)
		case f.quiet:
		case ev.Stage == "trial":
			fmt.Fprintf(stderr, "collbench tune: trial: arm %s (%s) in %.1f s\n", ev.Arm, ev.Label, ev.Elapsed.Seconds())
		default:
			fmt.Fprintf(stderr, "collbench tune: %s %d/%d: arm %s (%s) in %.1f s\n", ev.Stage, ev.Round, ev.Rounds, ev.Arm, ev.Label, ev.Elapsed.Seconds())
		}
	}
	stamp := document.NewStamp(document.TuneSchemaName, document.TuneSchemaVersion, version, "", os.Args[1:])
	res, err := tune.Run(ctx, tune.Options{Processes: j.processes(sweep, f.logs, f.armTimeout), Emit: say, Space: space,
		Rounds: f.rounds, Alpha: f.alpha, Threshold: f.threshold / 100, Budget: f.budget, Plugin: f.plugin, Stamp: stamp})
	var refused *tune.Refused
	if errors.As(err, &refused) {
		return usageError{Err: err}
	}
	if err == nil {
		err = interrupted(ctx)
	}
	if err != nil || j.Rank != 0 {
		return err
	}
	report.Tune(stdout, res.Record)
	// Each file is written on its own: one that cannot be written does
	// not cost the others, and each failure is said.
	var failed []error
	for _, w := range []struct {
		path  string
		write func(io.Writer) error
	}{
		{f.output, bytesWriter(res.File)}, {f.measured, bytesWriter(res.Measured)}, {f.record, res.Record.Encode},
	} {
		if w.path == "" {
			continue
		}
		if err := interrupted(ctx); err != nil {
			return err
		}
		if err := fileio.Save(ctx, w.path, stdout, w.write); err != nil {
			failed = append(failed, err)
		}
	}
	if len(failed) > 0 {
		return errors.Join(failed...)
	}
	if p := res.Record.Proof; p != nil && (p.Failed != "" || len(p.Mismatches) > 0) {
		return errTuneIncomplete
	}
	return nil
}

// bytesWriter writes data, as fileio.Save's write does.
func bytesWriter(data []byte) func(io.Writer) error {
	return func(w io.Writer) error { _, err := w.Write(data); return err }
}

// check validates the flags and the sweep, and returns the space: the
// sweep is parsed by the collective's own flag parser, so that a typo
// fails now; procs is the number of tune's processes.
func (f *tuneFlags) check(sweep []string, procs int) (sp tune.Space, inputs []string, err error) {
	switch {
	case len(sweep) == 0:
		return sp, nil, usagef("no sweep given (usage: %s)", synopsisOf("tune"))
	case f.rounds < 0 || f.rounds > compare.MaxRounds:
		return sp, nil, usagef("--rounds must be between 0 (as many as the tests need) and %d (got %d)", compare.MaxRounds, f.rounds)
	case f.budget < 0:
		return sp, nil, usagef("--budget cannot be negative")
	}
	if err := checkTurnFlags(f.threshold, f.alpha, f.armTimeout); err != nil {
		return sp, nil, err
	}
	coll, err := bench.LookupCollective(sweep[0])
	if err != nil {
		return sp, nil, usagef("tune measures a collective's sweep; %q is not a collective (run 'collbench help' for the list)", sweep[0])
	}
	if host.TunerName(coll.ID) == "" {
		return sp, nil, usagef("%s cannot be steered by a tuner file: NCCL asks its tuner about broadcast, reduce, allgather, reducescatter and allreduce only (it runs %s as sends and receives, which no tuner row names)",
			coll.Name, coll.Name)
	}
	c, err := checkSweep("tune", coll, sweep[1:], ab.Arm{}, procs)
	o, rows := c.opts, c.rows
	if err != nil {
		return sp, nil, usagef("the sweep: %w", err)
	}
	if sizes := len(o.Sweep.Sizes()); rows != sizes {
		return sp, nil, usagef("the sweep has %d rows for %d sizes: a tuner file has one row per size, so give one data type (-d), one reduction (-o) and one root (-r)", rows, sizes)
	}
	if sp, err = parseSpace(f.algorithms, f.protocols, f.channels); err != nil {
		return sp, nil, err
	}
	if f.plugin != "" {
		if err := tuner.CheckPlugin(f.plugin); err != nil {
			return sp, nil, usagef("--plugin: %v", err)
		}
	}
	return sp, c.inputs, nil
}

// parseSpace reads --algorithms, --protocols and --channels into the
// space a tuning or an audit tries, in NCCL's tuner words or the host
// backend's; which backend takes them is known once the sweep has run.
func parseSpace(algorithms, protocols, channels string) (sp tune.Space, err error) {
	if sp.Algorithms, err = words(algorithms, "--algorithms", append(slices.Clone(tuner.Plugin.Algorithms), host.Vocabulary.Algorithms...), nil); err != nil {
		return sp, err
	}
	if sp.Protocols, err = words(protocols, "--protocols", tuner.Plugin.Protocols, host.Vocabulary.Protocol); err != nil {
		return sp, err
	}
	for _, c := range splitList(channels) {
		n, err := strconv.Atoi(c)
		if err != nil || n < 1 || n > 64 {
			return sp, usagef("--channels: %q is not a channel count from 1 to 64", c)
		}
		sp.Channels = append(sp.Channels, n)
	}
	return sp, nil
}

// words splits a comma-separated list and refuses a word that is neither
// one of known nor, where other is set, one it takes.
func words(list, flag string, known []string, other func(string) error) ([]string, error) {
	out := splitList(list)
	for _, w := range out {
		if slices.Contains(known, w) {
			continue
		}
		if other != nil && other(w) == nil {
			continue
		}
		return nil, usagef("%s: %q is not one (%s)", flag, w, strings.Join(known, ", "))
	}
	return out, nil
}

func splitList(s string) []string {
	var out []string
	for _, w := range strings.Split(s, ",") {
		if w = strings.TrimSpace(w); w != "" {
			out = append(out, w)
		}
	}
	return out
}
