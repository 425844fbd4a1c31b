package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/collbench/collbench/bench/numeric"
)

// ArrivalRun is a run of back-to-back calls, each after the same fixed
// compute, as a training step issues its collectives: for every process
// (rows, by Peers.Proc) and call, in µs on the process's own clock, the
// time from its return from the previous call to its start of this one
// (the compute and whatever held the host up), and the compute alone.
// A blocking call returns on every process within a message's latency of
// the last arrival, so that gap is when the process arrived, measured from
// a moment the processes share; no clocks need to agree across hosts.
type ArrivalRun struct {
	Gap  [][]float64
	Work [][]float64
}

// Arrivals runs one warm-up and then calls calls of the engine's
// collective of size bytes over the communicator, each after one run of
// w on every local rank, with no barrier between them: a process whose
// compute or host is slow reaches each call late. The
// figures are gathered on every process. The backend must run compute
// (Computer).
func (e *Engine) Arrivals(ctx context.Context, w Workload, t numeric.DataType, redop numeric.RedOp, size int64, calls int) (ArrivalRun, error) {
	var run ArrivalRun
	c, ok := e.Comm.(Computer)
	if !ok {
		return run, fmt.Errorf("this backend cannot run compute before collectives")
	}
	if err := c.SetWorkload(w); err != nil {
		return run, err
	}
	op := e.op(size, t, redop, -1, false)
	if op.Counts.Empty() {
		return run, fmt.Errorf("%d bytes is too small for %s on %d ranks", size, op.Coll.Name, e.CommRanks)
	}
	if err := e.peers().Barrier(ctx); err != nil {
		return run, err
	}
	procs, me := e.peers().NProcs(), e.peers().Proc()
	gap, work := make([]float64, procs*calls), make([]float64, procs*calls)
	var returned time.Time
	for i := -1; i < calls; i++ {
		if err := c.EnqueueCompute(1); err != nil {
			return run, err
		}
		took, err := c.WaitCompute(ctx)
		if err != nil {
			return run, err
		}
		if i >= 0 { // after the warm-up call
			gap[me*calls+i] = float64(time.Since(returned)) / float64(time.Microsecond)
			for _, d := range took {
				work[me*calls+i] = max(work[me*calls+i], float64(d)/float64(time.Microsecond))
			}
		}
		if err := e.launch(ctx, Batch{Op: op, Iters: 1, Agg: 1}, size); err != nil {
			return run, err
		}
		returned = time.Now()
	}
	got, err := e.peers().AllReduce(ctx, append(gap, work...), ReduceSum)
	if err != nil {
		return run, err
	}
	for p := 0; p < procs; p++ {
		run.Gap = append(run.Gap, got[p*calls:(p+1)*calls])
		run.Work = append(run.Work, got[(procs+p)*calls:(procs+p+1)*calls])
	}
	return run, nil
}
