package report

import (
	"fmt"
	"sort"
)

// estimateBlock prints, under the footer's average, NCCL's own estimate of
// each out-of-place call beside the measured time and their ratio, and the
// median ratio: how far the run is from what NCCL's model expects of this
// machine. It prints nothing when no row carried an estimate, so that the
// table stays nccl-tests' unless --nccl-estimate asked for it.
func (t *Table) estimateBlock() {
	if len(t.estimates) == 0 {
		return
	}
	var ratios []float64
	fmt.Fprintf(t.W, "#\n# NCCL's own estimate of each call (ncclGroupSimulateEnd), out of place:\n")
	fmt.Fprintf(t.W, "# %12s  %8s  %6s  %12s  %12s  %8s\n", "size", "type", "redop", "time(us)", "estimate(us)", "ratio")
	for _, r := range t.estimates {
		ratio := r.OutOfPlace.Time / r.OutOfPlace.Estimate
		ratios = append(ratios, ratio)
		fmt.Fprintf(t.W, "# %12d  %8s  %6s  %12s  %12s  %8.3f\n", r.Size, r.Type, r.Op, FloatStr(r.OutOfPlace.Time, 12),
			FloatStr(r.OutOfPlace.Estimate, 12), ratio)
	}
	sort.Float64s(ratios)
	n := len(ratios)
	med := ratios[n/2]
	if n%2 == 0 {
		med = (ratios[n/2-1] + ratios[n/2]) / 2
	}
	fmt.Fprintf(t.W, "# %-20s : %.3f× NCCL's estimate (median of %d size(s); %.3f× to %.3f×)\n", "Measured time", med, n, ratios[0], ratios[n-1])
}
