package report

import (
	"fmt"

	"github.com/collbench/collbench/bench"
)

// rankSummary writes, for the out-of-place and then the in-place time of
// row r, each rank's bytes and bandwidths in an uneven all-to-all, in the
// lines of nccl-tests' NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY. nccl-tests
// writes them inside the row, between its first columns and its times;
// here they come whole, before the row they belong to.
func (t *Table) rankSummary(tr *bench.Traffic, r bench.Row) {
	n := t.Info.Ranks
	total := r.Count * int64(n) * int64(r.Type.Size())
	factor := float64(n-1) / float64(n)
	for _, p := range []bench.Placement{r.OutOfPlace, r.InPlace} {
		sec := p.Time / 1e6
		if tr.Generated() {
			fmt.Fprintf(t.W, "# NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY: mode=generated nranks=%d total_bytes=%d spread=%.3f time_usec=%.2f\n",
				n, total, tr.Spread, p.Time)
		} else {
			fmt.Fprintf(t.W, "# NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY: mode=matrix nranks=%d matrix_dim=%d scale=%.3f time_usec=%.2f\n",
				n, tr.Dim, tr.Scale, p.Time)
		}
		for rank := 0; rank < n; rank++ {
			send, recv := tr.RankBytes(rank, n, total)
			alg := float64(max(send, recv)) / 1e9 / sec
			fmt.Fprintf(t.W, "#   rank=%d send_bytes=%d recv_bytes=%d alg_bw=%.2f bus_bw=%.2f\n", rank, send, recv, alg, alg*factor)
		}
	}
}
