package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/spf13/pflag"

	"github.com/collbench/collbench/ab"
	"github.com/collbench/collbench/audit"
	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/compare"
	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/fileio"
	"github.com/collbench/collbench/report"
	"github.com/collbench/collbench/telemetry"
	"github.com/collbench/collbench/tune"
)

// auditFlags are the options of collbench audit.
type auditFlags struct {
	algorithms, protocols, channels string
	repeats, rounds                 int
	threshold, alpha                float64
	record, logs, rendezvous        string
	quiet                           bool
	armTimeout                      float64
}

// runAudit is collbench audit: whether the sweep's collective gives the
// same bits run to run, in fresh processes, across sizes and across the
// library's settings, where it first differs, and what the fastest
// setting that repeats costs against the library's own choice.
func runAudit(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var f auditFlags
	fs := newFlagSet("audit")
	fs.SetInterspersed(false) // the sweep after the flags is its own
	fs.IntVar(&f.repeats, "repeats", audit.DefaultRepeats, "calls of each size and placement compared bit for bit with a reference call")
	fs.StringVar(&f.algorithms, "algorithms", "", "algorithms to audit, e.g. ring,tree (default: all the collective has; host backend: ring, doubling, pipeline)")
	fs.StringVar(&f.protocols, "protocols", "", "protocols to audit: ll,ll128,simple (default all); host backend: segments, e.g. 64K,256K")
	fs.StringVar(&f.channels, "channels", "", "NCCL channel counts to audit besides NCCL's own, e.g. 2,8")
	fs.IntVar(&f.rounds, "rounds", 0, "rounds measuring the price of the fastest setting that repeats (default 5, or more where the tests need them)")
	fs.Float64Var(&f.threshold, "threshold", 2, "change in percent the price must show to be called slower or faster")
	fs.Float64Var(&f.alpha, "alpha", 0.05, "significance of the price's verdicts (Holm over the sizes)")
	fs.StringVarP(&f.record, "output_file", "J", "", "also write the record (settings, every comparison, the price) as JSON")
	fs.StringVar(&f.logs, "logs", "", "keep the output of every process started in this folder")
	fs.StringVar(&f.rendezvous, "rendezvous", "", "host:port where audit's processes meet (default as the collectives')")
	fs.BoolVarP(&f.quiet, "quiet", "q", false, "no line on stderr as each turn ends")
	registerArmTimeout(fs, &f.armTimeout)
	if code, done := parseFlags(fs, args, stdout, stderr); done {
		return code
	}
	err := f.run(ctx, fs, stdout, stderr)
	tellLauncher(err)
	if err != nil && !printed(err) {
		fmt.Fprintf(stderr, "collbench audit: %s\n", errText(err))
	}
	return exitCode(err)
}

// errDoesNotRepeat is an audit that found the library's own choice
// giving other bits (exit 1); the table says where.
var errDoesNotRepeat = errors.New("the library's own choice does not repeat bit for bit")

func (f *auditFlags) run(ctx context.Context, fs *pflag.FlagSet, stdout, stderr io.Writer) error {
	sweep := fs.Args()
	var space tune.Space
	j, err := joinArmsJob(ctx, fs, f.rendezvous, f.logs, stderr, func(procs int) (inputs []string, err error) {
		space, inputs, err = f.check(sweep, procs)
		return inputs, err
	}, "output_file")
	if err != nil {
		return err
	}
	defer j.Close()
	say := func(ev audit.Event) {
		switch {
		case ev.Failed != "":
			fmt.Fprintf(stderr, "collbench audit: %s: %s %s\n", ev.Stage, ev.Label, ev.Failed)
		case f.quiet:
		case ev.Stage == "price":
			fmt.Fprintf(stderr, "collbench audit: price %d/%d: %s in %.1f s\n", ev.Round, ev.Rounds, ev.Label, ev.Elapsed.Seconds())
		default:
			fmt.Fprintf(stderr, "collbench audit: %s: %s in %.1f s\n", ev.Stage, ev.Label, ev.Elapsed.Seconds())
		}
	}
	stamp := document.NewStamp(document.AuditSchemaName, document.AuditSchemaVersion, version, "", os.Args[1:])
	var tel *telemetry.Recorder
	if j.Rank == 0 {
		tel, err = telemetry.Start(ctx, telemetry.Options{Command: "audit", Version: version, Started: time.Now(),
			Warn: func(err error) { fmt.Fprintf(stderr, "collbench audit: %v\n", err) }})
		if err != nil {
			return usageError{Err: err}
		}
		defer func() {
			if err := tel.Close(nil); err != nil {
				fmt.Fprintf(stderr, "collbench audit: telemetry: %v\n", err)
			}
		}()
	}
	res, err := audit.Run(ctx, audit.Options{Processes: j.processes(sweep, f.logs, f.armTimeout), Emit: say, Keep: auditKeep,
		Space: space, Repeats: f.repeats, Rounds: f.rounds, Alpha: f.alpha, Threshold: f.threshold / 100, Stamp: stamp, Telemetry: tel})
	var refused *audit.Refused
	if errors.As(err, &refused) {
		return usageError{Err: err}
	}
	if err == nil {
		err = interrupted(ctx)
	}
	if err != nil {
		return err
	}
	if j.Rank == 0 {
		report.Audit(stdout, res.Record)
		if err := interrupted(ctx); err != nil {
			return err
		}
		if f.record != "" {
			if err := fileio.Save(ctx, f.record, stdout, res.Record.Encode); err != nil {
				return err
			}
		}
	}
	if !res.OwnRepeats {
		return errDoesNotRepeat
	}
	return nil
}

// auditKeep is what a turn of the audit adds to the sweep: the bitwise
// check on order-revealing inputs, its reference outputs kept in dir.
func auditKeep(repeats int, dir string) []string {
	return []string{"-B", strconv.Itoa(repeats), "--order-inputs", "--keep-outputs", dir}
}

// check validates the flags and the sweep, and returns the space.
func (f *auditFlags) check(sweep []string, procs int) (sp tune.Space, inputs []string, err error) {
	switch {
	case len(sweep) == 0:
		return sp, nil, usagef("no sweep given (usage: %s)", synopsisOf("audit"))
	case f.repeats < 1 || f.repeats > bench.MaxBitwise:
		return sp, nil, usagef("--repeats must be between 1 and %d (got %d)", bench.MaxBitwise, f.repeats)
	case f.rounds < 0 || f.rounds > compare.MaxRounds:
		return sp, nil, usagef("--rounds must be between 0 (as many as the tests need) and %d (got %d)", compare.MaxRounds, f.rounds)
	}
	if err := checkTurnFlags(f.threshold, f.alpha, f.armTimeout); err != nil {
		return sp, nil, err
	}
	coll, err := bench.LookupCollective(sweep[0])
	if err != nil {
		return sp, nil, usagef("audit measures a collective's sweep; %q is not a collective (run 'collbench help' for the list)", sweep[0])
	}
	c, err := checkSweep("audit", coll, sweep[1:], ab.Arm{}, procs)
	if err != nil {
		return sp, nil, usagef("the sweep: %w", err)
	}
	if o := c.opts; o.Bitwise != 0 || o.OrderInputs || o.Reference != nil {
		return sp, nil, usagef("the sweep: -B, --order-inputs and --keep-outputs are audit's to set (--repeats sets the calls compared)")
	}
	if sp, err = parseSpace(f.algorithms, f.protocols, f.channels); err != nil {
		return sp, nil, err
	}
	return sp, c.inputs, nil
}
