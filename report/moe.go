package report

import (
	"fmt"
	"strings"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/document"
)

// MoEPreamble writes the comment block of a mixture-of-experts run: the
// settings, the devices and the layer's shape.
func (t *Table) MoEPreamble(c document.MoEConfig) {
	t.head()
	fmt.Fprintf(t.W, "# MoE layer: %d experts (%d per rank), top-%d, %d tokens per rank, hidden %d, %s, routing %s, seed %d, %d draws\n",
		c.Experts, c.Experts/max(c.GroupSize, 1), c.TopK, c.Tokens, c.Hidden, c.Type, c.Routing, c.Seed, c.Draws)
	fmt.Fprintf(t.W, "#\n")
	fmt.Fprintf(t.W, "# %8s  %12s  %12s  %12s  %9s  %7s  %6s  %6s  %6s  %7s  %7s\n",
		"phase", "size", "mean/rank", "busiest", "imbalance", "time", "algbw", "busbw", "#wrong", "p50", "p99")
	fmt.Fprintf(t.W, "# %8s  %12s  %12s  %12s  %9s  %7s  %6s  %6s  %6s  %7s  %7s\n",
		"", "(B)", "(B)", "(B)", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)")
}

// MoEPhase writes one phase's line: the buffers' size (busiest rank of
// the heaviest draw), the mean and busiest rank's bytes per call, their
// ratio, and the measurement with its per-iteration median and p99.
func (t *Table) MoEPhase(p document.MoEPhase) error {
	row, err := p.Result.Row()
	if err != nil {
		return fmt.Errorf("phase %s: %w", p.Name, err)
	}
	o := row.OutOfPlace
	wrong := "   N/A"
	if o.Checked {
		wrong = CFormatG(float64(o.Wrong), 6)
	}
	iter := func(v float64) string {
		if o.Iter.N == 0 {
			return "      -"
		}
		return FloatStr(v, 7)
	}
	fmt.Fprintf(t.W, "  %8s  %12d  %12.0f  %12.0f  %9.3f  %7s  %6s  %6s  %6s  %7s  %7s\n", p.Name, row.Size, p.MeanBytes,
		p.Busiest, p.Imbalance, FloatStr(o.Time, 7), FloatStr(o.AlgBW, 6), FloatStr(o.BusBW, 6), wrong, iter(o.Iter.P50), iter(o.Iter.P99))
	return nil
}

// MoEFooter closes the run: the failed checks, then, with several
// processes, how each phase's per-process times spread.
func (t *Table) MoEFooter(phases []document.MoEPhase, procs []string) error {
	rows := make([]bench.Row, len(phases))
	cases := 0
	for i, p := range phases {
		row, err := p.Result.Row()
		if err != nil {
			return fmt.Errorf("phase %s: %w", p.Name, err)
		}
		rows[i] = row
		if row.OutOfPlace.Wrong > 0 {
			cases++
		}
	}
	status := "OK"
	if cases > 0 {
		status = "FAILED"
	}
	fmt.Fprintf(t.W, "# %-20s : %d %s\n", "Out of bounds values", cases, status)
	fmt.Fprintf(t.W, "#\n")
	var spread strings.Builder
	for i, p := range phases {
		proc, lo, hi, ok := rows[i].OutOfPlace.Slowest()
		if !ok {
			continue
		}
		fmt.Fprintf(&spread, "# %8s  %8s  %8s  %6.1f%%  %s\n", p.Name, FloatStr(lo, 8), FloatStr(hi, 8), 100*(hi-lo)/max(lo, 1e-9), procName(procs, proc))
	}
	if spread.Len() > 0 {
		fmt.Fprintf(t.W, "# Spread across processes: each process's own time (us)\n")
		fmt.Fprintf(t.W, "# %8s  %8s  %8s  %7s  %s\n", "phase", "fastest", "slowest", "spread", "slowest")
		fmt.Fprint(t.W, spread.String())
		fmt.Fprintf(t.W, "#\n")
	}
	fmt.Fprintf(t.W, "# Collective test concluded: %s\n", t.Info.TestName)
	fmt.Fprintf(t.W, "#\n\n")
	return nil
}
