// Command collbench measures collective communication (all-reduce,
// all-gather, reduce-scatter, all-to-all, broadcast, reduce, send/recv,
// gather, scatter) with nccl-tests' flags, numbers and table, and profiles,
// exports, predicts, compares, plots and health-checks with the same
// engine. It parses flags, prints help, results and errors, and maps
// errors to exit codes; the work is the library packages'
// (docs/architecture.md).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/chart"
	"github.com/collbench/collbench/cluster"
	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/fileio"
	"github.com/collbench/collbench/run"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "0.1.0-dev"

// Exit codes. Usage errors and failed checks use the codes nccl-tests users
// script against (nccl-tests returns 7 for wrong results, 4 on a timeout).
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
	exitExport  = 3 // the profile is measured and saved, but an export asked for failed
	exitTimeout = 4
	exitWrong   = 7
	exitSignal  = 130
)

// init keeps the main goroutine on the process's main thread. The
// measurements run on the main goroutine, so the nccl backend issues its
// NCCL and CUDA calls from the main thread, as nccl-tests does, and from
// one thread throughout: CUDA's and NCCL's per-thread state (the current
// context among it) is set up once, not again on every thread the
// goroutine would otherwise move to between batches.
func init() { runtime.LockOSThread() }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli(ctx, os.Args, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// cli dispatches a command line and returns the process exit code. A
// command whose standard output could not be written (a full disk, a
// closed descriptor) has lost its results and fails, whatever it measured.
func cli(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	out := &fileio.CheckedWriter{W: stdout}
	code := dispatch(ctx, args, out, stderr)
	if out.Err != nil {
		fmt.Fprintf(stderr, "collbench: writing to standard output: %v\n", out.Err)
		if code == exitOK {
			code = exitFailure
		}
	}
	return code
}

// commands are the subcommands other than the collectives.
var commands = map[string]func(ctx context.Context, args []string, stdout, stderr io.Writer) int{
	"doctor": runDoctor, "launch": runLaunch, "overlap": runOverlap, "profile": runProfile, "export": runExport,
	"predict": runPredict, "health": runHealth, "compare": runCompare, "plot": runPlot, "report": runReport,
	"ab": runAB, "references": runReferences,
}

// dispatch runs the command a command line names.
func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	// Invoked through a link named like an nccl-tests binary
	// (all_reduce_perf -b 8 …), the name is the subcommand.
	if base := filepath.Base(args[0]); base != "collbench" {
		if _, err := bench.LookupCollective(base); err == nil {
			return runCollective(ctx, base, args[1:], stdout, stderr)
		}
	}
	if len(args) < 2 {
		// Nothing asked for is a usage error; 'collbench help' asks.
		usage(stderr)
		return exitUsage
	}
	cmd, rest := args[1], args[2:]
	if run, ok := commands[cmd]; ok {
		return run(ctx, rest, stdout, stderr)
	}
	switch cmd {
	case "help", "-h", "--help":
		if len(rest) > 0 {
			return runCollective(ctx, rest[0], []string{"--help"}, stdout, stderr)
		}
		usage(stdout)
		return exitOK
	case "version", "--version":
		if len(rest) > 0 {
			fmt.Fprintf(stderr, "collbench version: unexpected argument %q\n", rest[0])
			return exitUsage
		}
		fmt.Fprintf(stdout, "collbench %s\n", version)
		return exitOK
	}
	if _, err := bench.LookupCollective(cmd); err != nil {
		fmt.Fprintf(stderr, "collbench: unknown command %q; run 'collbench help' for the list\n", cmd)
		return exitUsage
	}
	return runCollective(ctx, cmd, rest, stdout, stderr)
}

func usage(w io.Writer) {
	var b strings.Builder
	b.WriteString("collbench measures collective communication the way nccl-tests does.\n\n")
	b.WriteString("Usage:\n  collbench <collective> [flags]\n  collbench launch -n N [--] <collective|overlap|profile|health|ab> [flags]\n  collbench overlap [flags]\n  collbench profile [-o profile.json] [--export galvatron,…] [flags]\n  collbench export --to TARGET profile.json [-o DIR]\n  collbench predict --profile profile.json [--model NAME] [--dp N --tp N --pp N …]\n  collbench compare base.json new.json [--threshold PCT] [--min-busbw GB/s]\n  collbench ab --arm SPEC --arm SPEC [--rounds N] [-J ab.json] -- <collective> [flags]\n  collbench plot run.json|profile.json [more.json …] [-o busbw.svg|.png|.pdf]\n  collbench report run.json|profile.json|health.json [more.json …] [-o report.html|report.md|table.txt|-]\n  collbench health [-J health.json] [--heatmap pairs.svg] [--expect inter=GB/s …] [--racks FILE]\n  collbench references [--references FILE] [--json]\n  collbench help <collective>\n  collbench doctor\n  collbench version\n\nCollectives:\n")
	for _, c := range bench.Collectives {
		if c.TestName == "" {
			fmt.Fprintf(&b, "  %-14s (also %s; not in nccl-tests)\n", c.Name, strings.Join(c.Aliases, ", "))
			continue
		}
		fmt.Fprintf(&b, "  %-14s (also %s, %s)\n", c.Name, strings.TrimSuffix(c.TestName, "_perf"), c.TestName)
	}
	b.WriteString("\nExample:\n  collbench allreduce -b 8 -e 128M -f 2 -g 4\n")
	fmt.Fprint(w, b.String())
}

// exitCode maps a run's error to the process exit code.
func exitCode(err error) int {
	var ue usageError
	var te *bench.TimeoutError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ue), errors.As(err, new(*document.InputError)), errors.As(err, new(*fileio.SameFileError)),
		errors.Is(err, chart.ErrNothingToPlot), errors.Is(err, chart.ErrNoPairs):
		return exitUsage
	case errors.Is(err, errExportFailed):
		return exitExport
	case errors.Is(err, context.Canceled): // an interruption wins over what it cut short
		return exitSignal
	case errors.As(err, &te), errors.Is(err, cluster.ErrTimedOut), errors.As(err, new(*run.StartTimeout)), errors.Is(err, errIncomplete):
		return exitTimeout
	case errors.Is(err, bench.ErrWrongResults):
		return exitWrong
	}
	return exitFailure
}

// printed says whether an outcome's explanation is already on the
// output (the findings, the failed targets, the regressions), so that the
// command only exits with the code it calls for.
func printed(err error) bool {
	return errors.Is(err, errExportFailed) || errors.Is(err, errUnhealthy) || errors.Is(err, errIncomplete) || errors.Is(err, errRegressed) ||
		errors.Is(err, errArmsDiffer)
}

// newFlagSet is a subcommand's flags, listed in help in the order they
// are added.
func newFlagSet(name string) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SortFlags = false
	return fs
}

// fileCommand runs a command that reads and writes files (export,
// predict, compare, plot, report) once its flags are parsed: an error is
// one line on stderr naming the command, unless already printed, and the
// exit code the error calls for.
func fileCommand(fs *pflag.FlagSet, args []string, synopsis string, stdout, stderr io.Writer, body func() error) int {
	if code, done := parseFlags(fs, args, synopsis, stdout, stderr); done {
		return code
	}
	err := body()
	if err != nil && !printed(err) {
		fmt.Fprintf(stderr, "collbench %s: %s\n", fs.Name(), errText(err))
	}
	return exitCode(err)
}

// usageError marks errors in what the user asked for (exit code 2); the
// run package marks its own the same way.
type usageError = run.UsageError

func usagef(format string, a ...any) error { return run.Usagef(format, a...) }

// parseFlags parses a subcommand's own flags. done means the caller
// returns code at once: the help was printed, or a usage error reported.
func parseFlags(fs *pflag.FlagSet, args []string, synopsis string, stdout, stderr io.Writer) (code int, done bool) {
	return parseWith(fs, func() error {
		if err := fs.Parse(args); err != nil {
			return err
		}
		return finiteFlags(fs)
	}, synopsis, stdout, stderr)
}

// parseWith runs a command's own parse (flags plus checks); done means the caller
// returns code at once: the help was printed, or a usage error reported.
func parseWith(fs *pflag.FlagSet, parse func() error, synopsis string, stdout, stderr io.Writer) (code int, done bool) {
	fs.SetOutput(io.Discard)
	err := parse()
	switch {
	case err == nil:
		return exitOK, false
	case errors.Is(err, pflag.ErrHelp):
		fmt.Fprintf(stdout, "Usage: %s\n\nFlags:\n%s", synopsis, fs.FlagUsages())
		return exitOK, true
	}
	fmt.Fprintf(stderr, "collbench %s: %s\n", fs.Name(), errText(err))
	return exitUsage, true
}
