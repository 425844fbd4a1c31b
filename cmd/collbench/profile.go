package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/export"
	"github.com/collbench/collbench/fileio"
	"github.com/collbench/collbench/report"
	"github.com/collbench/collbench/run"
)

// profileFlags are collbench profile's flags.
type profileFlags struct {
	jobFlags
	run.ProfileRequest
	fs      *pflag.FlagSet
	output  string
	partial bool
	exports exportFlags
}

func newProfileFlags() *profileFlags {
	f := &profileFlags{fs: newFlagSet("profile"), ProfileRequest: run.DefaultProfileRequest()}
	fs, r := f.fs, &f.ProfileRequest
	fs.StringVarP(&f.output, "output", "o", "", "write the profile to this file (default: stdout)")
	fs.VarP(size(&r.MinBytes), "minbytes", "b", "smallest message size")
	fs.VarP(size(&r.MaxBytes), "maxbytes", "e", "largest message size")
	fs.Int64VarP(&r.Factor, "stepfactor", "f", r.Factor, "size multiplier (at least 2)")
	fs.StringVar(&r.Colls, "colls", r.Colls, "collectives to measure, comma-separated")
	fs.StringVar(&r.GroupSizes, "group-sizes", r.GroupSizes, "group sizes, comma-separated (default: the world and every power of two from 2 that divides it)")
	fs.StringVar(&r.Layouts, "layouts", r.Layouts, "group layouts to measure: consecutive, strided or both")
	fs.StringVarP(&r.DType, "datatype", "d", r.DType, "data type of the collectives")
	fs.StringVar(&r.Op, "op", r.Op, "reduction of the reducing collectives")
	fs.IntVarP(&r.Iters, "iters", "n", r.Iters, "timed iterations per size (the most; --budget may run fewer)")
	fs.IntVar(&r.MinIters, "min-iters", r.MinIters, "the fewest timed iterations --budget trims a size to")
	fs.IntVarP(&r.Warmup, "warmup_iters", "w", r.Warmup, "warm-up calls before each size")
	fs.IntVarP(&r.Check, "check", "c", r.Check, "verification passes per size")
	fs.DurationVar(&r.Budget, "budget", r.Budget, "time budget for the whole profile, e.g. 10m; trims iterations, then the largest sizes (a curve keeps 8 or is left out), then curves (0 = no limit)")
	fs.BoolVar(&f.partial, "partial", false, "accept a profile --budget left curves or overlap probes out of (exit 0; without it such a profile is written and the exit is 4)")
	fs.BoolVar(&r.NoOverlap, "no-overlap", r.NoOverlap, "leave out the overlap probes")
	fs.StringArrayVar(&r.OverlapGEMMs, "overlap-gemm", nil, "overlap probe GEMM m,n,k; repeat for several (default: Galvatron's probe plus 4096³ bf16 on GPUs, 256³ float on the host)")
	fs.Var(size(&r.OverlapBytes), "overlap-bytes", "all-reduce size of the --overlap-gemm probes (default 64M on GPUs, 1M on the host)")
	fs.Float64Var(&r.OverlapTarget, "overlap-target", r.OverlapTarget, "seconds each overlapped phase runs (default 0.5 on GPUs, 0.05 on the host)")
	fs.Float64Var(&r.PowerWindow, "power-window", 0, "seconds each size runs on while NVML reads the GPUs' power draw, for AIConfigurator's table (GPUs only; 0 = not read)")
	f.JobRequest = run.DefaultJobRequest()
	f.jobFlags.registerRanks(fs, "call", "run")
	f.jobFlags.register(fs)
	// Profiles sweep group sizes and layouts themselves.
	for _, name := range []string{"group-size", "layout"} {
		_ = fs.MarkHidden(name)
	}
	fs.Lookup("isolated").Usage = "run only the first group of each size, the others waiting (default: all groups at once, as in training)"
	fs.Lookup("quiet").Usage = "no progress on stderr: neither the line per curve nor, on a terminal, the progress bar"
	registerRouting(fs, &r.Routing, "measure alltoallv (in --colls) with this layer's routed traffic: each size split over the ranks as --routing routes tokens",
		"tokens per rank of each draw, which set the split's proportions")
	f.exports.register(fs)
	return f
}

func (f *profileFlags) flags() (*pflag.FlagSet, *jobFlags) { return f.fs, &f.jobFlags }

func (f *profileFlags) check() error {
	for _, name := range []string{"group-size", "layout"} {
		if f.fs.Changed(name) {
			return usagef("--%s does not apply to profile; use --group-sizes and --layouts", name)
		}
	}
	if err := routingOnlyWithMoE(f.fs, f.Routing.MoE); err != nil {
		return err
	}
	return f.exports.check()
}

// runProfile is collbench profile.
func runProfile(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runMeasuring(ctx, newProfileFlags(), args, stdout, stderr)
}

// measure runs the profile, a line per curve and a progress bar on
// stderr, and writes the profile and its exports.
func (f *profileFlags) measure(ctx context.Context, j *run.Job, argv []string, stdout, stderr io.Writer) (bool, error) {
	if err := f.Routing.Load(ctx, inputLimit); err != nil {
		return false, err
	}
	spec, err := f.Spec(argv)
	if err != nil {
		return false, err
	}
	if spec.Exports, err = export.ParseTargets(f.exports.Targets); err != nil {
		return false, usageError{Err: err}
	}
	spec.Partial = f.partial
	doc, err := j.Profile(ctx, spec, run.ProfileHooks{
		Before: func() error {
			if err := checkFiles(f.Routing.Files(), f.output)(); err != nil {
				return err
			}
			if f.output != "" && f.output != fileio.Stdout {
				if t := export.Collides(spec.Exports, f.exports.Dir, f.output); t != "" {
					return usagef("-o %s is a file the %s export writes into --export-dir %s; name another", f.output, t, f.exports.Dir)
				}
			}
			return f.exports.checkDir()
		},
		Write: func(doc *document.Profile, runErr error) error {
			return f.write(ctx, doc, stdout, stderr, runErr == nil)
		},
	})
	if err != nil || doc == nil || f.partial {
		return false, err
	}
	return false, f.partialProfile(doc, j.Rank, stderr)
}

// errPartialProfile is a profile its budget left curves or probes out of,
// written as it is, that was not asked to be partial: exit 4, as a
// timeout, its line already printed.
var errPartialProfile = errors.New("the profile's budget left parts of it out")

// partialProfile says, on rank 0, how much the profile lacks and returns
// errPartialProfile when it lacks anything (document.Profile.LeftOut).
func (f *profileFlags) partialProfile(doc *document.Profile, rank int, stderr io.Writer) error {
	curves, probes := doc.LeftOut()
	if len(curves)+len(probes) == 0 {
		return nil
	}
	if rank == 0 {
		fmt.Fprintf(stderr, "collbench profile: %d of %d curve(s) and %d overlap probe(s) left out (the profile's notes say why), and the profile written without them; raise --budget, or pass --partial to accept a partial profile\n",
			len(curves), len(doc.Curves), len(probes))
	}
	return errPartialProfile
}

// write saves the profile (kept even when the run failed part way, with
// the error inside) and, after a complete run, the exports, whether the
// profile went to a file or to stdout; with -o the fits are summed up on
// stdout.
func (f *profileFlags) write(ctx context.Context, doc *document.Profile, stdout, stderr io.Writer, complete bool) error {
	if f.output == "" || f.output == fileio.Stdout {
		if err := doc.Encode(stdout); err != nil {
			return err
		}
	} else {
		if err := fileio.Save(ctx, f.output, stdout, doc.Encode); err != nil {
			return err
		}
		report.FitTable(stdout, doc)
	}
	if !complete {
		return nil
	}
	f.exports.Keep = []string{f.output}
	return f.exports.write(ctx, doc, "profile", func(file string) { fmt.Fprintf(stderr, "collbench profile: wrote %s\n", file) }, stderr)
}
