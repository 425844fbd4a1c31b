package main

import (
	"context"
	"io"

	"github.com/spf13/pflag"

	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/fileio"
	"github.com/collbench/collbench/report"
	"github.com/collbench/collbench/run"
)

// overlapFlags are collbench overlap's flags.
type overlapFlags struct {
	jobFlags
	run.OverlapRequest
	fs               *pflag.FlagSet
	format, jsonFile string
	galvatron        string
}

func newOverlapFlags() *overlapFlags {
	f := &overlapFlags{fs: newFlagSet("overlap"), OverlapRequest: run.DefaultOverlapRequest()}
	fs, r := f.fs, &f.OverlapRequest
	fs.StringVar(&r.Coll, "coll", r.Coll, "the collective (any collbench collective)")
	fs.VarP(size(&r.MinBytes), "minbytes", "b", "smallest message size")
	fs.VarP(size(&r.MaxBytes), "maxbytes", "e", "largest message size")
	fs.Int64VarP(&r.Factor, "stepfactor", "f", r.Factor, "size multiplier")
	fs.StringVar(&r.CommType, "comm-type", r.CommType, "the collective's data type")
	fs.StringVarP(&r.Op, "op", "o", r.Op, "the collective's reduction")
	fs.StringArrayVar(&r.GEMMs, "gemm", nil, "GEMM shape m,n,k (C[m×n] = A[m×k]·B[k×n]); repeat for several (default 4096,4096,4096 on GPUs, 256,256,256 on the host)")
	fs.StringArrayVar(&r.Copies, "copy", nil, "also run a memory-bound device copy of this many bytes; repeat for several")
	fs.StringVarP(&r.DType, "datatype", "d", r.DType, "GEMM type: float, half or bfloat16 (default bfloat16 on GPUs, float on the host)")
	fs.Float64Var(&r.Cover, "cover", r.Cover, "the covering side runs this many times longer than the measured one")
	fs.Float64Var(&r.Target, "target", r.Target, "seconds the measured side runs in each overlapped phase")
	fs.StringVar(&r.Preset, "preset", r.Preset, "galvatron: Galvatron's probe (fp32 1024×4096×4096 GEMM against a 64 MiB fp32 all-reduce)")
	f.JobRequest = run.DefaultJobRequest()
	f.jobFlags.registerRanks(fs, "phase", "run")
	fs.StringVar(&r.CommPriority, "comm-priority", r.CommPriority, "stream priority of the collectives against the compute: normal or high (nccl backend)")
	fs.IntVar(&r.MaxCTAs, "nccl-max-ctas", r.MaxCTAs, "NCCL config maxCTAs: at most this many CTAs (channels) per collective (nccl backend; 0 = NCCL's default)")
	fs.IntVar(&r.MinCTAs, "nccl-min-ctas", r.MinCTAs, "NCCL config minCTAs (nccl backend; 0 = NCCL's default)")
	f.jobFlags.register(fs)
	fs.StringVar(&f.format, "format", "table", "stdout format: table or json")
	fs.StringVarP(&f.jsonFile, "output_file", "J", "", "also write the results as JSON to this file")
	fs.StringVar(&f.galvatron, "galvatron", "", "also write Galvatron's overlap_coefficient.json to this file (the largest overlap_coe of the GEMMs; copies are left out)")
	return f
}

func (f *overlapFlags) flags() (*pflag.FlagSet, *jobFlags) { return f.fs, &f.jobFlags }

func (f *overlapFlags) check() error {
	if err := f.OverlapRequest.Validate(changed(f.fs)); err != nil {
		return err
	}
	if f.galvatron != "" && len(f.GEMMs) == 0 && len(f.Copies) > 0 && f.Preset == "" {
		return usagef("--galvatron needs a --gemm: Galvatron's coefficient is a GEMM's next to the collective, and --copy alone runs none")
	}
	return checkFormat(f.format, "table", "json")
}

// runOverlap is collbench overlap.
func runOverlap(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runMeasuring(ctx, newOverlapFlags(), args, stdout, stderr)
}

// measure runs the experiment, printing its table as it goes, and writes
// the outputs.
func (f *overlapFlags) measure(ctx context.Context, j *run.Job, argv []string, stdout, stderr io.Writer) (bool, error) {
	spec, err := f.Spec(argv)
	if err != nil {
		return false, err
	}
	_, err = j.Overlap(ctx, spec, run.OverlapHooks{
		Before: checkFiles(nil, f.jsonFile, f.galvatron),
		Start: func(s *run.Session, doc *document.OverlapRun, _ int) {
			if f.format == "table" {
				report.OverlapHeader(stdout, doc, s.Notes)
			}
		},
		Record: func(r document.OverlapResult, _ int) {
			if f.format == "table" {
				report.OverlapRow(stdout, r)
			}
		},
		Write: func(doc *document.OverlapRun, runErr error) error { return writeOverlap(ctx, f, doc, stdout, runErr) },
	})
	return false, err
}

// writeOverlap prints the footer or the document and saves the files.
func writeOverlap(ctx context.Context, f *overlapFlags, doc *document.OverlapRun, out io.Writer, runErr error) error {
	if f.format == "table" && runErr == nil {
		report.OverlapFooter(out, doc)
	}
	if err := emitJSON(ctx, f.format, f.jsonFile, out, doc.Encode); err != nil || f.galvatron == "" || runErr != nil {
		return err
	}
	return fileio.Save(ctx, f.galvatron, out, doc.EncodeGalvatron)
}
