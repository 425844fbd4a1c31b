package gpu

// #include "batch.h"
import "C"

import (
	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/nccl"
)

// estimated are the collectives that are one NCCL collective call, which
// NCCL's model times; the others are point-to-point calls (or several
// calls), which it gives no figure for.
var estimated = map[bench.ID]bool{bench.AllReduce: true, bench.AllGather: true, bench.ReduceScatter: true,
	bench.Broadcast: true, bench.Reduce: true}

// Estimate is NCCL's own estimate of one call of op on these
// communicators, in µs: the call made on every local GPU inside a group
// that ncclGroupSimulateEnd closes, so nothing runs. ok is false when the
// loaded NCCL predates it (2.22) or gives no figure for the call. Every
// rank of the job must ask at the same point, as for a real call: NCCL
// may connect the algorithm's channels first.
func (c *Comm) Estimate(op bench.Op) (us float64, ok bool, err error) {
	if c.cc.p.groupSimulateEnd == nil || !estimated[op.Coll.ID] || op.Coll.Traffic != nil {
		return 0, false, nil
	}
	o, err := c.cOp(bench.Batch{Op: op, Iters: 1, Agg: 1})
	if err != nil {
		return 0, false, err
	}
	var st C.cb_status
	var t C.float
	if C.cb_simulate(c.cc, &o, C.uint(nccl.RuntimeVersion()), &t, &st) != C.CB_OK {
		return 0, false, c.statusError(st)
	}
	if t <= 0 {
		return 0, false, nil
	}
	return float64(t), true, nil
}

var _ bench.Estimator = (*Comm)(nil)

// cb_sim_info must be nccl's ncclSimInfo_t: each line fails to compile
// (a constant index out of range) when they differ.
var (
	_ = [1]struct{}{}[C.sizeof_cb_sim_info-nccl.SimInfoSize]
	_ = [1]struct{}{}[C.CB_SIM_MAGIC-nccl.SimInfoMagic]
)
