package main

import (
	"context"
	"io"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/report"
	"github.com/collbench/collbench/run"
)

// checkMoE refuses the flags that --moe replaces or cannot honour.
func (f *flags) checkMoE() error {
	if f.format == "csv" {
		return usagef("--format csv is not available with --moe (table or json)")
	}
	return f.CheckMoE(f.fs.Changed)
}

// measureMoE times a mixture-of-experts layer's dispatch and combine and
// prints them (rank 0); it reports whether any result was wrong.
func measureMoE(ctx context.Context, f *flags, j *run.Job, args []string, stdout io.Writer) (bool, error) {
	spec, err := f.MoESpec(f.JobRequest, f.fs.Changed("op"), append([]string{"collbench", "alltoallv"}, args...))
	if err != nil {
		return false, err
	}
	table := &report.Table{W: stdout}
	failed := false
	_, err = j.MoE(ctx, spec, run.MoEHooks{
		Before: checkFiles(f.jsonFile),
		Start: func(s *run.Session, doc *document.MoERun) {
			c := doc.Config
			table.Info = report.Info{Version: version, Backend: s.Backend.Name(), TestName: "alltoallv_perf", NThreads: f.Threads,
				NGPUs: f.NGPUs, MinBytes: s.Sweep.Max, MaxBytes: s.Sweep.Max, StepBytes: f.StepBytes, Warmup: c.Warmup, Iters: c.Iters, Agg: f.Agg, Check: c.Check, Devices: s.Devices, Notes: s.Notes}
			if f.format == "table" {
				table.MoEPreamble(c)
			}
		},
		Write: func(doc *document.MoERun, phases []bench.MoEPhase, runErr error) error {
			for _, p := range phases {
				failed = failed || p.Row.OutOfPlace.Wrong > 0
			}
			if f.format == "table" {
				for _, p := range phases {
					table.MoEPhase(p)
				}
				if runErr == nil {
					table.MoEFooter(phases, report.ProcLabels(j.Size, f.PerProc()))
				}
			}
			return emitJSON(ctx, f.format, f.jsonFile, stdout, doc.Encode)
		},
	})
	return failed, err
}
