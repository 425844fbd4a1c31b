package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/numeric"
	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/progress"
	"github.com/collbench/collbench/report"
	"github.com/collbench/collbench/run"
)

// profileFlags are collbench profile's flags.
type profileFlags struct {
	jobFlags
	fs                 *pflag.FlagSet
	output             string
	minBytes, maxBytes sizeFlag
	factor             int64
	colls, groupSizes  string
	layouts            string
	dtype, op          string
	iters, minIters    int
	warmup, check      int
	budget             time.Duration
	noOverlap          bool
	overlapGEMM        []string
	overlapBytes       sizeFlag
	overlapTarget      float64
	exports            exportFlags
	routing            trafficFlags // alltoallv's routed traffic (--moe)
}

// defaultProfileColls are the collectives planners read.
const defaultProfileColls = "allreduce,allgather,reducescatter,alltoall,broadcast,sendrecv,pipeline"

func newProfileFlags() *profileFlags {
	f := &profileFlags{fs: pflag.NewFlagSet("profile", pflag.ContinueOnError), minBytes: 1 << 20, maxBytes: 1 << 30, overlapBytes: 0}
	fs := f.fs
	fs.SortFlags = false
	fs.StringVarP(&f.output, "output", "o", "", "write the profile to this file (default: stdout)")
	fs.VarP(&f.minBytes, "minbytes", "b", "smallest message size")
	fs.VarP(&f.maxBytes, "maxbytes", "e", "largest message size")
	fs.Int64VarP(&f.factor, "stepfactor", "f", 2, "size multiplier (at least 2)")
	fs.StringVar(&f.colls, "colls", defaultProfileColls, "collectives to measure, comma-separated")
	fs.StringVar(&f.groupSizes, "group-sizes", "", "group sizes, comma-separated (default: the world and every power of two from 2 that divides it)")
	fs.StringVar(&f.layouts, "layouts", "consecutive,strided", "group layouts to measure: consecutive, strided or both")
	fs.StringVarP(&f.dtype, "datatype", "d", "bfloat16", "data type of the collectives")
	fs.StringVar(&f.op, "op", "sum", "reduction of the reducing collectives")
	fs.IntVarP(&f.iters, "iters", "n", 20, "timed iterations per size (the most; --budget may run fewer)")
	fs.IntVar(&f.minIters, "min-iters", 3, "the fewest timed iterations --budget trims a size to")
	fs.IntVarP(&f.warmup, "warmup_iters", "w", 5, "warm-up calls before each size")
	fs.IntVarP(&f.check, "check", "c", 0, "verification passes per size")
	fs.DurationVar(&f.budget, "budget", 0, "time budget for the whole profile, e.g. 10m; trims iterations, then the largest sizes (keeping 8 per curve), then curves (0 = no limit)")
	fs.BoolVar(&f.noOverlap, "no-overlap", false, "leave out the overlap probes")
	fs.StringArrayVar(&f.overlapGEMM, "overlap-gemm", nil, "overlap probe GEMM m,n,k; repeat for several (default: Galvatron's probe plus 4096³ bf16 on GPUs, 256³ float on the host)")
	fs.Var(&f.overlapBytes, "overlap-bytes", "all-reduce size of the --overlap-gemm probes (default 64M on GPUs, 1M on the host)")
	fs.Float64Var(&f.overlapTarget, "overlap-target", 0, "seconds each overlapped phase runs (default 0.5 on GPUs, 0.05 on the host)")
	fs.IntVarP(&f.ngpus, "ngpus", "g", 1, "GPUs (ranks) per process")
	fs.Float64VarP(&f.timeout, "timeout", "T", 0, "seconds a call may take before the run is aborted (0 = no limit in one process)")
	f.jobFlags.register(fs)
	// Profiles sweep group sizes and layouts themselves.
	for _, name := range []string{"group-size", "layout"} {
		_ = fs.MarkHidden(name)
	}
	fs.Lookup("isolated").Usage = "run only the first group of each size, the others waiting (default: all groups at once, as in training)"
	fs.Lookup("quiet").Usage = "no progress on stderr: neither the line per curve nor, on a terminal, the progress bar"
	f.routing.registerRouting(fs, "measure alltoallv (in --colls) with this layer's routed traffic: each size split over the ranks as --routing routes tokens",
		"tokens per rank of each draw, which set the split's proportions")
	f.exports.register(fs)
	return f
}

func (f *profileFlags) parse(args []string) error {
	if err := parseArgs(f.fs, args); err != nil {
		return err
	}
	if err := f.jobFlags.check(); err != nil {
		return err
	}
	for _, name := range []string{"group-size", "layout"} {
		if f.fs.Changed(name) {
			return usagef("--%s does not apply to profile; use --group-sizes and --layouts", name)
		}
	}
	if f.overlapTarget < 0 || f.overlapTarget > 3600 { // checked before it becomes a duration
		return usagef("--overlap-target must be between 0 and 3600 seconds")
	}
	return f.exports.check()
}

// spec is the profile the flags ask for.
func (f *profileFlags) spec(args []string) (run.ProfileSpec, error) {
	s := run.ProfileSpec{Sweep: bench.Sweep{Min: int64(f.minBytes), Max: int64(f.maxBytes), Factor: f.factor},
		Iters: f.iters, MinIters: f.minIters, Warmup: f.warmup, Check: f.check, Budget: f.budget,
		NoOverlap: f.noOverlap, OverlapGEMMs: f.overlapGEMM, OverlapBytes: int64(f.overlapBytes),
		OverlapTarget: time.Duration(f.overlapTarget * float64(time.Second)), Args: append([]string{"collbench", "profile"}, args...)}
	routed := false
	for _, name := range strings.Split(f.colls, ",") {
		c, err := bench.LookupCollective(strings.TrimSpace(name))
		if err != nil {
			return s, usagef("--colls: %v", err)
		}
		if c.Traffic != nil && f.routing.moe != "" {
			r, err := f.routing.routingOf()
			if err != nil {
				return s, err
			}
			if c, err = c.WithTraffic(bench.RoutedTraffic(r, f.routing.drawCount(f.iters))); err != nil {
				return s, err
			}
			routed = true
		}
		s.Colls = append(s.Colls, c)
	}
	if f.routing.moe != "" && !routed {
		return s, usagef("--moe shapes alltoallv's traffic: add alltoallv to --colls")
	}
	var err error
	if s.Type, err = numeric.ParseDataType(f.dtype); err != nil {
		return s, usagef("-d: %v", err)
	}
	if s.RedOp, err = numeric.ParseRedOp(f.op); err != nil {
		return s, usagef("-o: %v", err)
	}
	if f.groupSizes != "" {
		for _, g := range strings.Split(f.groupSizes, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(g))
			if err != nil {
				return s, usagef("--group-sizes: %q is not a group size of 2 or more that divides the ranks", g)
			}
			s.Groups = append(s.Groups, n)
		}
	}
	for _, l := range strings.Split(f.layouts, ",") {
		s.Layout = append(s.Layout, strings.TrimSpace(l))
	}
	return s, nil
}

// runProfile is collbench profile.
func runProfile(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f := newProfileFlags()
	parse := func() error { return f.parse(args) }
	return measuring(ctx, "profile", "collbench profile [-o profile.json] [flags]", f.fs, parse, &f.jobFlags, stdout, stderr, func(j *run.Job) (bool, error) {
		spec, err := f.spec(args)
		if err != nil {
			return false, err
		}
		var bar *progress.Bar
		_, err = j.Profile(ctx, spec, run.ProfileHooks{
			Before: func() error {
				if j.Rank == 0 {
					return f.checkOutputs()
				}
				return nil
			},
			Start: func(_ *run.Session, points int) { bar = progress.New(stderr, f.quiet, "profile", points) },
			Log: func(format string, a ...any) {
				if f.quiet {
					return
				}
				line := "collbench profile: " + fmt.Sprintf(format, a...)
				if bar != nil {
					bar.Print(line) // above the bar
					return
				}
				fmt.Fprintln(stderr, line)
			},
			Progress: func(done int, what string) { bar.Update(done, what) },
			Write: func(doc *document.Profile, complete bool) error {
				bar.Clear()
				return f.write(ctx, doc, stdout, stderr, complete)
			},
		})
		return false, err
	})
}

// checkOutputs finds unwritable outputs before anything is measured.
func (f *profileFlags) checkOutputs() error {
	if f.output != "" {
		if err := checkFile(f.output); err != nil {
			return err
		}
	}
	return f.exports.checkDir()
}

// write saves the profile (kept even when the run failed part way, with
// the error inside) and, after a complete run, the exports; with -o the
// fits are summed up on stdout.
func (f *profileFlags) write(ctx context.Context, doc *document.Profile, stdout, stderr io.Writer, complete bool) error {
	if f.output == "" || f.output == stdoutName {
		return doc.Encode(stdout)
	}
	if err := saveFile(ctx, f.output, stdout, doc.Encode); err != nil {
		return err
	}
	report.FitTable(stdout, doc)
	if !complete {
		return nil
	}
	return f.exports.write(ctx, doc, "profile", func(file string) { fmt.Fprintf(stderr, "collbench profile: wrote %s\n", file) }, stderr)
}
