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
	"github.com/collbench/collbench/export"
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
	if ctx.Err() != nil && code != exitOK {
		// An interruption wins over what it cut short: a read of a
		// FIFO, a wait that ended with it, whatever the error says.
		code = exitSignal
	}
	if out.Err != nil {
		fmt.Fprintf(stderr, "collbench: writing to standard output: %v\n", out.Err)
		if code == exitOK {
			code = exitFailure
		}
	}
	return code
}

// command is a subcommand: its name, its line in the usage text (after
// "collbench "), and what runs it.
type command struct {
	name, synopsis string
	run            func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

// commands are the subcommands, in the order the usage text lists them;
// the collectives, which are many, are listed after them. (A function,
// not a variable: help prints the table it is part of.)
func commands() []command {
	return []command{
		{"", "<collective> [flags]", nil},
		{"launch", "launch -n N [--] <collective|overlap|profile|health|ab|tune|audit> [flags]", runLaunch},
		{"overlap", "overlap [flags]", runOverlap},
		{"profile", "profile [-o profile.json] [--export galvatron,…] [flags]", runProfile},
		{"export", "export --to " + strings.Join(export.Targets, "|") + "|all profile.json [-o DIR]", runExport},
		{"predict", "predict --profile profile.json [--model NAME | --layers N --hidden N …] [--dp N --tp N --pp N --zero K --sp --ep N] [--rank-strategies | --charges DIR | --astra-trace DIR]", runPredict},
		{"compare", "compare base.json new.json [--threshold PCT] [--min-busbw GB/s]", runCompare},
		{"ab", "ab --arm SPEC --arm SPEC [--rounds N] [-J ab.json] -- <collective> [flags]", runAB},
		{"tune", "tune [-o tuner.conf] [--plugin PATH] [--budget 20m] -- <collective> [flags]", runTune},
		{"audit", "audit [--repeats N] [--algorithms ring,tree] [-J audit.json] -- <collective> [flags]", runAudit},
		{"plot", "plot run.json|profile.json [more.json …] [-o busbw.svg|.png|.pdf] [--metric busbw|time|both]", runPlot},
		{"report", "report run.json|profile.json|health.json|audit.json [more.json …] [-o report.html|report.md|table.txt|-]", runReport},
		{"health", "health [-J health.json] [--heatmap pairs.svg] [--expect inter=GB/s …] [--racks FILE]", runHealth},
		{"references", "references [--references FILE] [--json]", runReferences},
		{"help", "help <collective>", runHelp},
		{"doctor", "doctor [--json]", runDoctor},
		{"version", "version", runVersion},
	}
}

// synopsisOf is a command's usage line as the command table writes it:
// the one place a synopsis is written. A collective's is the table's
// first row with the collective named.
func synopsisOf(name string) string {
	for _, c := range commands() {
		if c.name == name {
			return "collbench " + c.synopsis
		}
	}
	return "collbench " + name + " [flags]"
}

// lookup finds the subcommand a command line names; the help and version
// flags name theirs.
func lookup(name string) (command, bool) {
	switch name {
	case "-h", "--help":
		name = "help"
	case "--version":
		name = "version"
	}
	for _, c := range commands() {
		if c.name == name && c.run != nil {
			return c, true
		}
	}
	return command{}, false
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
	name, rest := args[1], args[2:]
	if c, ok := lookup(name); ok {
		return c.run(ctx, rest, stdout, stderr)
	}
	if _, err := bench.LookupCollective(name); err != nil {
		fmt.Fprintf(stderr, "collbench: unknown command %q%s; run 'collbench help' for the list\n", name, didYouMean(name))
		return exitUsage
	}
	return runCollective(ctx, name, rest, stdout, stderr)
}

// names are every name a command line may start with: the commands, the
// collectives and their nccl-tests names.
func names() []string {
	var out []string
	for _, c := range commands() {
		if c.run != nil {
			out = append(out, c.name)
		}
	}
	for _, c := range bench.Collectives {
		out = append(out, c.Name)
		out = append(out, c.Aliases...)
		if c.TestName != "" {
			out = append(out, c.TestName)
		}
	}
	return out
}

// didYouMean suggests the name closest to a mistyped one: the same
// letters without dashes, dots or underscores and case (all-reduce), or
// one or two edits away (allreducee); "" when none is that close.
func didYouMean(name string) string {
	plain := func(s string) string {
		return strings.NewReplacer("-", "", "_", "", ".", "").Replace(strings.ToLower(s))
	}
	best, dist := "", 3
	for _, n := range names() {
		d := editDistance(plain(name), plain(n))
		if d < dist {
			best, dist = n, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %s?)", best)
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// runHelp prints the usage text, or a command's or a collective's flags.
func runHelp(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stdout)
		return exitOK
	}
	if c, ok := lookup(args[0]); ok && c.name != "help" {
		return c.run(ctx, []string{"--help"}, stdout, stderr)
	}
	if _, err := bench.LookupCollective(args[0]); err != nil {
		fmt.Fprintf(stderr, "collbench help: no command or collective %q%s; run 'collbench help' for the list\n", args[0], didYouMean(args[0]))
		return exitUsage
	}
	return runCollective(ctx, args[0], []string{"--help"}, stdout, stderr)
}

// runVersion prints collbench's version.
func runVersion(_ context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Fprintf(stdout, "Usage: collbench version\n\nPrints collbench's version.\n")
		return exitOK
	}
	if len(args) > 0 {
		fmt.Fprintf(stderr, "collbench version: unexpected argument %q\n", args[0])
		return exitUsage
	}
	fmt.Fprintf(stdout, "collbench %s\n", version)
	return exitOK
}

// usage is the list of commands and collectives, from the tables.
func usage(w io.Writer) {
	var b strings.Builder
	b.WriteString("collbench measures collective communication the way nccl-tests does.\n\nUsage:\n")
	for _, c := range commands() {
		fmt.Fprintf(&b, "  collbench %s\n", c.synopsis)
	}
	b.WriteString("\nCollectives:\n")
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
	case errors.Is(err, context.Canceled): // an interruption wins over what it cut short
		return exitSignal
	case errors.As(err, &ue), errors.As(err, new(*document.InputError)), errors.As(err, new(*fileio.SameFileError)),
		errors.Is(err, chart.ErrNothingToPlot), errors.Is(err, chart.ErrNoPairs), errors.Is(err, cluster.ErrSettingsDiffer):
		return exitUsage
	case errors.Is(err, errExportFailed):
		return exitExport
	case errors.As(err, &te), errors.Is(err, cluster.ErrTimedOut), errors.As(err, new(*run.StartTimeout)), errors.Is(err, errIncomplete),
		errors.Is(err, errPartialProfile):
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
		errors.Is(err, errPartialProfile) ||
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
func fileCommand(fs *pflag.FlagSet, args []string, stdout, stderr io.Writer, body func() error) int {
	if code, done := parseFlags(fs, args, stdout, stderr); done {
		return code
	}
	err := body()
	if err != nil && !printed(err) {
		fmt.Fprintf(stderr, "collbench %s: %s\n", fs.Name(), errTextIn(fs, err))
	}
	return exitCode(err)
}

// usageError marks errors in what the user asked for (exit code 2); the
// run package marks its own the same way.
type usageError = run.UsageError

func usagef(format string, a ...any) error { return run.Usagef(format, a...) }

// parseFlags parses a subcommand's own flags. done means the caller
// returns code at once: the help was printed, or a usage error reported.
func parseFlags(fs *pflag.FlagSet, args []string, stdout, stderr io.Writer) (code int, done bool) {
	return parseWith(fs, func() error {
		if err := fs.Parse(args); err != nil {
			return err
		}
		return finiteFlags(fs)
	}, stdout, stderr)
}

// parseWith runs a command's own parse (flags plus checks); done means the caller
// returns code at once: the help was printed, or a usage error reported.
func parseWith(fs *pflag.FlagSet, parse func() error, stdout, stderr io.Writer) (code int, done bool) {
	synopsis := synopsisOf(fs.Name())
	fs.SetOutput(io.Discard)
	err := parse()
	switch {
	case err == nil:
		return exitOK, false
	case errors.Is(err, pflag.ErrHelp):
		_, collective := collectiveFlagSet(fs)
		writeHelp(stdout, synopsis, fs, collective, helpWidth(stdout))
		return exitOK, true
	}
	fmt.Fprintf(stderr, "collbench %s: %s\n", fs.Name(), errTextIn(fs, err))
	return exitUsage, true
}

// collectiveFlagSet says whether fs is a collective's (nccl-tests' flags
// and collbench's additions are told apart in its help).
func collectiveFlagSet(fs *pflag.FlagSet) (string, bool) {
	_, err := bench.LookupCollective(fs.Name())
	return fs.Name(), err == nil
}
