package report

import (
	"fmt"
	"io"
	"sort"
	"text/tabwriter"

	"github.com/collbench/collbench/model"
)

const gib = 1 << 30

// PredictTable prints one strategy's prediction.
func PredictTable(w io.Writer, p model.Prediction, mc model.Machine) {
	m, t := p.Model, p.Training
	fmt.Fprintf(w, "# model %s: %.3g parameters, %d layers, hidden %d; seq %d, micro-batch %d, global batch %d (%d micro-batches per step)\n",
		m.Name, p.Params, m.Layers, m.Hidden, t.Seq, t.MicroBatch, t.GlobalBatch, p.MicroBatches)
	fmt.Fprintf(w, "# strategy %s: %.3g parameters per GPU\n", p.Strategy, p.ParamsPerGPU)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "dim\tcollective\tgroup\tlayout\tcalls/step\tbytes/call\tGB/GPU/step\ttime(ms)\texposed(ms)\toverlaps\t")
	for _, tr := range p.Traffic {
		hidden := tr.Hidden
		if hidden == "" {
			hidden = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%.0f\t%.0f\t%.3f\t%.3f\t%.3f\t%s\t\n", tr.Dim, tr.Coll, tr.Group, tr.Layout, tr.Calls, tr.Bytes,
			tr.Volume/1e9, tr.Time/1e3, tr.Exposed/1e3, hidden)
	}
	fmt.Fprintf(tw, "total\t\t\t\t\t\t%.3f\t%.3f\t%.3f\t\t\n", volume(p)/1e9, p.CommTime/1e3, p.Exposed/1e3)
	tw.Flush()
	if len(p.Traffic) == 0 {
		fmt.Fprintln(w, "# no communication: every group has one rank")
	}
	if p.Compute > 0 {
		fmt.Fprintf(w, "# compute ≈ %.3f ms per step at %.3g TFLOP/s per GPU (with the pipeline bubble); overlap slows comm ×%.3f, compute ×%.3f\n",
			p.Compute/1e3, mc.FLOPS/1e12, max(mc.CommSlowdown, 1), max(mc.ComputeSlowdown, 1))
		fmt.Fprintf(w, "# step ≈ %.3f ms without overlap, %.3f ms with overlap\n", p.StepNoOverlap/1e3, p.StepOverlap/1e3)
	} else {
		fmt.Fprintln(w, "# no compute rate (the profile has no GEMM probe; give {TFLOPS}): exposed = all communication")
	}
	mem := p.Memory
	fmt.Fprintf(w, "# memory per GPU (mixed-precision Adam, 16 B/parameter, ZeRO-%d): weights %.2f GiB, gradients %.2f GiB, optimizer %.2f GiB, total %.2f GiB (activations not included)\n",
		p.Strategy.ZeRO, mem.Weights/gib, mem.Grads/gib, mem.Optimizer/gib, mem.Total/gib)
}

func volume(p model.Prediction) float64 {
	var v float64
	for _, tr := range p.Traffic {
		v += tr.Volume
	}
	return v
}

// RankTable lists strategies best first; memLimit (bytes, 0 = unknown)
// marks those whose model state does not fit.
func RankTable(w io.Writer, ranked []model.Prediction, skipped map[string]string, memLimit float64) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "rank\tstrategy\tcomm(ms)\texposed(ms)\tstep(ms)\tGB/GPU/step\tstate(GiB)\tfits\t")
	for i, p := range ranked {
		fits := "?"
		if memLimit > 0 {
			fits = map[bool]string{true: "yes", false: "no"}[p.Memory.Total <= memLimit]
		}
		step := "-"
		if p.Compute > 0 {
			step = fmt.Sprintf("%.3f", p.StepOverlap/1e3)
		}
		fmt.Fprintf(tw, "%d\t%s\t%.3f\t%.3f\t%s\t%.3f\t%.2f\t%s\t\n", i+1, p.Strategy, p.CommTime/1e3, p.Exposed/1e3, step,
			volume(p)/1e9, p.Memory.Total/gib, fits)
	}
	tw.Flush()
	var names []string
	for k := range skipped {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		fmt.Fprintf(w, "# %s left out: %s\n", k, skipped[k])
	}
}
