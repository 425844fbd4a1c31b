package report

import (
	"fmt"
	"strings"

	"github.com/collbench/collbench/bench"
)

// Spread writes, after the footer of a job with several processes or
// groups, how the processes' own times spread (fastest, slowest and which
// process was slowest) and each group's bus bandwidth when several groups
// ran at once. Every line is a comment, so parsers of nccl-tests' table
// read the output unchanged. procs names each process, e.g. "rank 3".
func (t *Table) Spread(rows []bench.Row, procs []string) {
	var line strings.Builder
	p := func(format string, a ...any) {
		fmt.Fprintf(&line, format, a...)
		if text := line.String(); strings.HasSuffix(text, "\n") {
			fmt.Fprint(t.W, strings.TrimRight(text, " \n")+"\n")
			line.Reset()
		}
	}
	var spread, groups bool
	for _, r := range rows {
		spread = spread || len(r.OutOfPlace.Procs) > 1
		groups = groups || len(r.OutOfPlace.Groups) > 1
	}
	if spread {
		p("# Spread across processes: each process's own time (us), out-of-place | in-place\n")
		p("# %10s  %8s  %8s  %7s  %-10s | %8s  %8s  %7s  %-10s\n", "size", "fastest", "slowest", "spread", "slowest", "fastest", "slowest", "spread", "slowest")
		for _, r := range rows {
			p("# %10d", r.Size)
			for i, pl := range []bench.Placement{r.OutOfPlace, r.InPlace} {
				if i == 1 {
					p(" |")
				}
				proc, lo, hi, ok := pl.Slowest()
				if !ok {
					p("  %8s  %8s  %7s  %-10s", "-", "-", "-", "-")
					continue
				}
				p("  %8s  %8s  %6.1f%%  %-10s", FloatStr(lo, 8), FloatStr(hi, 8), 100*(hi-lo)/max(lo, 1e-9), procName(procs, proc))
			}
			p("\n")
		}
		p("#\n")
	}
	if groups {
		n := 0
		for _, r := range rows {
			n = max(n, len(r.OutOfPlace.Groups))
		}
		p("# Bus bandwidth of each group (GB/s), out-of-place\n")
		p("# %10s", "size")
		for g := 0; g < n; g++ {
			p("  %8s", fmt.Sprintf("group %d", g))
		}
		p("\n")
		for _, r := range rows {
			p("# %10d", r.Size)
			for g := 0; g < n; g++ {
				bw := 0.0
				if g < len(r.OutOfPlace.Groups) {
					bw = r.OutOfPlace.Groups[g].BusBW
				}
				p("  %8s", FloatStr(bw, 8))
			}
			p("\n")
		}
		p("#\n")
	}
}

// ProcLabels names each process by the ranks it holds: "rank 3", or
// "ranks 4-7" for a process with several.
func ProcLabels(nprocs, perProc int) []string {
	out := make([]string, nprocs)
	for i := range out {
		first := i * perProc
		if perProc == 1 {
			out[i] = fmt.Sprintf("rank %d", first)
		} else {
			out[i] = fmt.Sprintf("ranks %d-%d", first, first+perProc-1)
		}
	}
	return out
}

// procName is process i's label from procs, or "process i" without one.
func procName(procs []string, i int) string {
	if i >= 0 && i < len(procs) {
		return procs[i]
	}
	return fmt.Sprintf("process %d", i)
}
