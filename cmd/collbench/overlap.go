package main

import (
	"context"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/numeric"
	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/progress"
	"github.com/collbench/collbench/report"
	"github.com/collbench/collbench/run"
)

// overlapFlags are collbench overlap's flags.
type overlapFlags struct {
	jobFlags
	fs                 *pflag.FlagSet
	coll, commType, op string
	minBytes, maxBytes sizeFlag
	factor             int64
	gemms, copies      []string
	dtype              string
	cover, target      float64
	preset             string
	format, jsonFile   string
	galvatron          string
	commPriority       string
	maxCTAs, minCTAs   int
}

func newOverlapFlags() *overlapFlags {
	f := &overlapFlags{fs: pflag.NewFlagSet("overlap", pflag.ContinueOnError), minBytes: 1 << 20, maxBytes: 64 << 20}
	fs := f.fs
	fs.SortFlags = false
	fs.StringVar(&f.coll, "coll", "allreduce", "the collective (any collbench collective)")
	fs.VarP(&f.minBytes, "minbytes", "b", "smallest message size")
	fs.VarP(&f.maxBytes, "maxbytes", "e", "largest message size")
	fs.Int64VarP(&f.factor, "stepfactor", "f", 4, "size multiplier")
	fs.StringVar(&f.commType, "comm-type", "float", "the collective's data type")
	fs.StringVarP(&f.op, "op", "o", "sum", "the collective's reduction")
	fs.StringArrayVar(&f.gemms, "gemm", nil, "GEMM shape m,n,k (C[m×n] = A[m×k]·B[k×n]); repeat for several (default 4096,4096,4096 on GPUs, 256,256,256 on the host)")
	fs.StringArrayVar(&f.copies, "copy", nil, "also run a memory-bound device copy of this many bytes; repeat for several")
	fs.StringVarP(&f.dtype, "datatype", "d", "", "GEMM type: float, half or bfloat16 (default bfloat16 on GPUs, float on the host)")
	fs.Float64Var(&f.cover, "cover", 4, "the covering side runs this many times longer than the measured one")
	fs.Float64Var(&f.target, "target", 0.5, "seconds the measured side runs in each overlapped phase")
	fs.StringVar(&f.preset, "preset", "", "galvatron: Galvatron's probe (fp32 1024×4096×4096 GEMM against a 64 MiB fp32 all-reduce)")
	fs.IntVarP(&f.ngpus, "ngpus", "g", 1, "GPUs (ranks) per process")
	fs.Float64VarP(&f.timeout, "timeout", "T", 0, "seconds a phase may take before the run is aborted (0 = no limit in one process)")
	fs.StringVar(&f.commPriority, "comm-priority", "normal", "stream priority of the collectives against the compute: normal or high (nccl backend)")
	fs.IntVar(&f.maxCTAs, "nccl-max-ctas", 0, "NCCL config maxCTAs: at most this many CTAs (channels) per collective (nccl backend; 0 = NCCL's default)")
	fs.IntVar(&f.minCTAs, "nccl-min-ctas", 0, "NCCL config minCTAs (nccl backend; 0 = NCCL's default)")
	f.jobFlags.register(fs)
	fs.StringVar(&f.format, "format", "table", "stdout format: table or json")
	fs.StringVarP(&f.jsonFile, "output_file", "J", "", "also write the results as JSON to this file")
	fs.StringVar(&f.galvatron, "galvatron", "", "also write Galvatron's overlap_coefficient.json to this file")
	return f
}

// parse reads and checks the command line.
func (f *overlapFlags) parse(args []string) error {
	if err := parseArgs(f.fs, args); err != nil {
		return err
	}
	if err := f.jobFlags.check(); err != nil {
		return err
	}
	switch {
	case f.preset != "" && f.preset != "galvatron":
		return usagef("unknown --preset %q (want galvatron)", f.preset)
	case f.target <= 0 || f.target > 3600: // before it becomes a duration
		return usagef("--target must be between 0 and 3600 seconds (got %g)", f.target)
	case f.format != "table" && f.format != "json":
		return usagef("unknown --format %q (want table or json)", f.format)
	}
	if f.preset == "galvatron" {
		for _, name := range []string{"gemm", "copy", "datatype", "minbytes", "maxbytes", "coll", "comm-type", "cover", "target"} {
			if f.fs.Changed(name) {
				return usagef("--preset galvatron fixes --%s; leave it out", name)
			}
		}
		g := run.GalvatronProbe
		f.gemms, f.dtype = []string{g.GEMM}, g.Type
		f.minBytes, f.maxBytes = sizeFlag(g.Size), sizeFlag(g.Size)
		f.cover, f.target = g.Cover, g.Target
	}
	return nil
}

// spec is the experiment the flags ask for.
func (f *overlapFlags) spec(args []string) (run.OverlapSpec, error) {
	p := run.OverlapSpec{GEMMs: f.gemms, GEMMType: f.dtype, Cover: f.cover, Target: time.Duration(f.target * float64(time.Second)),
		CommPriority: f.commPriority, MinCTAs: f.minCTAs, MaxCTAs: f.maxCTAs, Args: append([]string{"collbench", "overlap"}, args...),
		Sweep: bench.Sweep{Min: int64(f.minBytes), Max: int64(f.maxBytes), Factor: f.factor}}
	var err error
	if p.Coll, err = bench.LookupCollective(f.coll); err != nil {
		return p, usageError{Err: err}
	}
	if p.CommType, err = numeric.ParseDataType(f.commType); err != nil {
		return p, usagef("--comm-type: %v", err)
	}
	p.RedOp = numeric.NoOp
	if p.Coll.Reduces {
		if p.RedOp, err = numeric.ParseRedOp(f.op); err != nil {
			return p, usageError{Err: err}
		}
	}
	for _, c := range f.copies {
		n, err := bench.ParseSize(c)
		if err != nil || n <= 0 {
			return p, usagef("--copy %q: want a positive size", c)
		}
		p.Copies = append(p.Copies, n)
	}
	return p, nil
}

// runOverlap is collbench overlap.
func runOverlap(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f := newOverlapFlags()
	parse := func() error { return f.parse(args) }
	return measuring(ctx, "overlap", "collbench overlap [flags]", f.fs, parse, &f.jobFlags, stdout, stderr, func(j *run.Job) (bool, error) {
		spec, err := f.spec(args)
		if err != nil {
			return false, err
		}
		var bar *progress.Bar
		_, err = j.Overlap(ctx, spec, run.OverlapHooks{
			Before: func() error {
				for _, path := range []string{f.jsonFile, f.galvatron} {
					if path != "" && j.Rank == 0 {
						if err := checkFile(path); err != nil {
							return err
						}
					}
				}
				return nil
			},
			Start: func(s *run.Session, doc *document.OverlapRun, planned int) {
				if f.format == "table" {
					report.OverlapHeader(stdout, doc, s.Notes)
				}
				bar = progress.New(stderr, f.quiet, "overlap", planned)
			},
			Result: func(r document.OverlapResult, done int) {
				bar.Clear() // the row may go to the same terminal
				if f.format == "table" {
					report.OverlapRow(stdout, r)
				}
				bar.Update(done, bench.FormatSize(r.Size)+" next to "+r.Workload)
			},
			Write: func(doc *document.OverlapRun, runErr error) error {
				bar.Clear()
				return writeOverlap(ctx, f, doc, stdout, runErr)
			},
		})
		return false, err
	})
}

// writeOverlap prints the footer or the document and saves the files.
func writeOverlap(ctx context.Context, f *overlapFlags, doc *document.OverlapRun, out io.Writer, runErr error) error {
	switch {
	case f.format == "json":
		if err := doc.Encode(out); err != nil {
			return err
		}
	case runErr == nil:
		report.OverlapFooter(out, doc)
	}
	if f.jsonFile != "" {
		if err := saveFile(ctx, f.jsonFile, out, doc.Encode); err != nil {
			return err
		}
	}
	if f.galvatron != "" && runErr == nil {
		if err := saveFile(ctx, f.galvatron, out, doc.EncodeGalvatron); err != nil {
			return err
		}
	}
	return nil
}
