package main

import (
	"context"
	"io"
	"strings"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/numeric"
	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/report"
	"github.com/collbench/collbench/run"
)

// checkMoE refuses the flags that --moe replaces or cannot honour.
func (f *flags) checkMoE() error {
	for _, name := range []string{"spread", "matrix", "matrix-scale", "rank-summary", "minbytes", "maxbytes", "stepbytes", "stepfactor", "root"} {
		if f.fs.Changed(name) {
			return usagef("--%s does not apply with --moe: the routing sets who sends what", name)
		}
	}
	switch {
	case strings.EqualFold(f.dtype, "all"):
		return usagef("--moe runs one data type; choose it with -d")
	case f.format == "csv":
		return usagef("--format csv is not available with --moe (table or json)")
	case f.cycles != 1:
		return usagef("-N does not apply with --moe")
	case f.graph != 0:
		return usagef("-G does not apply with --moe: every call follows its own routing draw")
	}
	return nil
}

// measureMoE times a mixture-of-experts layer's dispatch and combine and
// prints them (rank 0); it reports whether any result was wrong.
func measureMoE(ctx context.Context, f *flags, j *run.Job, args []string, stdout io.Writer) (bool, error) {
	routing, err := f.traffic.routingOf()
	if err != nil {
		return false, err
	}
	t, err := numeric.ParseDataType(f.dtype)
	if err != nil {
		return false, usageError{Err: err}
	}
	opts, err := f.options(&bench.Collective{})
	if err != nil {
		return false, err
	}
	draws := f.traffic.drawCount(f.iters)
	table := &report.Table{W: stdout}
	spec := run.MoESpec{Routing: routing, Type: t, Draws: draws, Opts: opts, Args: append([]string{"collbench", "alltoallv"}, args...)}
	failed := false
	_, err = j.MoE(ctx, spec, run.MoEHooks{
		Before: func() error {
			if f.jsonFile != "" {
				return checkFile(f.jsonFile)
			}
			return nil
		},
		Start: func(s *run.Session, doc *document.MoERun) {
			c := doc.Config
			table.Info = report.Info{Version: version, Backend: s.Backend.Name(), TestName: "alltoallv_perf", NThreads: f.threads,
				NGPUs: f.ngpus, MinBytes: s.Sweep.Max, MaxBytes: s.Sweep.Max, StepBytes: int64(f.step), Warmup: c.Warmup, Iters: c.Iters, Agg: f.agg, Check: c.Check, Devices: s.Devices, Notes: s.Notes}
			if f.format == "table" {
				table.MoEPreamble(c)
			}
		},
		Write: func(doc *document.MoERun, phases []bench.MoEPhase, runErr error) error {
			for _, p := range phases {
				failed = failed || p.Row.OutOfPlace.Wrong > 0
			}
			switch f.format {
			case "table":
				for _, p := range phases {
					table.MoEPhase(p)
				}
				if runErr == nil {
					table.MoEFooter(phases, report.ProcLabels(j.Size, f.perProc()))
				}
			case "json":
				if err := doc.Encode(stdout); err != nil {
					return err
				}
			}
			if f.jsonFile != "" {
				return saveFile(ctx, f.jsonFile, stdout, doc.Encode)
			}
			return nil
		},
	})
	return failed, err
}
