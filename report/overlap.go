package report

import (
	"fmt"
	"io"
	"sort"

	"github.com/collbench/collbench/document"
)

// OverlapHeader writes the comment block (with notes, such as why a
// backend was chosen) and the column headers of the overlap table.
func OverlapHeader(w io.Writer, d *document.OverlapRun, notes []string) {
	c := d.Config
	fmt.Fprintf(w, "# collbench version %s backend=%s\n", d.Collbench, d.Backend)
	fmt.Fprintf(w, "# Overlap: %s %s %s on %d rank(s) in %d process(es), groups of %d (%s); covered %gx, %.0f ms per measured run\n",
		c.Collective, c.Type, c.RedOp, c.NRanks, c.NProcs, c.GroupSize, c.Layout, c.Cover, c.TargetUs/1e3)
	for _, n := range notes {
		fmt.Fprintf(w, "# %s\n", n)
	}
	for _, k := range sortedKeys(c.Knobs) {
		fmt.Fprintf(w, "# knob %s=%s\n", k, c.Knobs[k])
	}
	fmt.Fprintf(w, "#\n# %10s  %-28s  %10s  %10s  %10s  %10s  %6s  %6s  %7s  %6s  %7s\n", "size", "compute",
		"comm", "comm+cmp", "compute", "cmp+comm", "comm", "cmp", "overlap", "proc", "exposed")
	fmt.Fprintf(w, "# %10s  %-28s  %10s  %10s  %10s  %10s  %6s  %6s  %7s  %6s  %7s\n", "(B)", "",
		"(us)", "(us)", "(us)", "(us)", "slow", "slow", "coe", "usage", "comm")
}

// OverlapRow writes one result line.
func OverlapRow(w io.Writer, r document.OverlapResult) {
	fmt.Fprintf(w, "  %10d  %-28s  %10s  %10s  %10s  %10s  %6.3f  %6.3f  %7.3f  %6.3f  %7.3f\n", r.Size, r.Workload,
		FloatStr(r.CommAlone, 10), FloatStr(r.CommOverlapped, 10), FloatStr(r.ComputeAlone, 10), FloatStr(r.ComputeOverlapped, 10),
		r.CommSlowdown, r.ComputeSlowdown, r.OverlapCoe, r.ProcessorUsage, r.ExposedComm)
}

// OverlapFooter closes the table with the value for Galvatron.
func OverlapFooter(w io.Writer, d *document.OverlapRun) {
	if d.Galvatron == 0 {
		fmt.Fprintf(w, "# Galvatron overlap_coe: none (it comes from a GEMM, and none ran)\n#\n")
		return
	}
	fmt.Fprintf(w, "# Galvatron overlap_coe (largest over the GEMMs above): %.6f\n#\n", d.Galvatron)
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
