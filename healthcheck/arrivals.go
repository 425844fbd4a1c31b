package healthcheck

import (
	"context"
	"fmt"
	"math"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/numeric"
	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/health"
)

// arrivalCalls is how many calls of the job's all-reduce the arrival run
// times: enough that a process last by chance in 1/procs of them stands
// apart from one last in most (health.Straggler).
const arrivalCalls = 20

// arrivalBytes is the arrival run's all-reduce: small, so that the call
// ends for every rank within a message's latency of the last arrival and
// how long each waited inside is how late the others came.
const arrivalBytes = 1 << 10

// arrivalWork is the compute each rank runs before every call, as a
// training step computes between its collectives: a GEMM of about a
// millisecond on an H100, a few on a host core.
func arrivalWork(onGPU bool) bench.Workload {
	if onGPU {
		return bench.Workload{Kind: bench.GEMM, M: 4096, N: 4096, K: 4096, Type: numeric.Bfloat16}
	}
	return bench.Workload{Kind: bench.GEMM, M: 256, N: 256, K: 256, Type: numeric.Float32}
}

// arrivals times the job's all-reduce call after call, each after the
// same compute on every rank, and records who reached each call last
// (health.Arrivals); the stragglers are judged with the rest.
func (c *healthCheck) arrivals(ctx context.Context, allreduce *bench.Collective) error {
	const what = "arrivals at the job's all-reduce"
	agreed, err := c.agree(ctx, c.budget.Spent())
	if err != nil {
		return err
	}
	if agreed[0] { // the budget is spent
		c.spent = true
		c.doc.Skipped = append(c.doc.Skipped, what+": "+errBudget.Error())
		return nil
	}
	began := time.Now()
	world := c.j.World()
	t := numeric.Float32
	eng := &bench.Engine{Comm: c.sess.Comm, Peers: c.j.Peers(), CommRanks: world, Groups: 1, Opts: bench.Options{Coll: allreduce,
		Iters: 1, Agg: 1, Types: []numeric.DataType{t}, Ops: []numeric.RedOp{numeric.Sum}, Root: -1,
		Timeout: c.j.Limits.Collective, StallFloor: c.j.Limits.Watchdog}}
	w := arrivalWork(c.sess.OnGPU())
	run, err := eng.Arrivals(ctx, w, t, numeric.Sum, arrivalBytes, arrivalCalls)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	c.budget.Done(1)
	c.left = max(c.left-1, 0)
	figs, typical, stragglers := health.Arrivals(run.Gap, run.Work, c.spec.Criteria)
	per := c.j.Settings.RanksPerProc
	a := &document.Arrivals{Calls: arrivalCalls, Bytes: arrivalBytes, Workload: w.String(), GapUs: round3(typical)}
	for p, f := range figs {
		ranks := make([]int, per)
		for i := range ranks {
			ranks[i] = p*per + i
		}
		a.Procs = append(a.Procs, document.ProcArrival{Proc: p, Node: c.byRank[ranks[0]], Ranks: ranks, Last: f.Last,
			LateUs: round3(f.LateUs), WorkUs: round3(f.WorkUs)})
	}
	if a.Unjudged = c.sharedAcrossProcs(); a.Unjudged != "" {
		stragglers = nil
	}
	c.doc.Arrivals, c.stragglers = a, stragglers
	c.out.Phase(what, attribute.Int("collbench.health.calls", arrivalCalls))
	c.stepDone(what)
	c.overhead += time.Since(began)
	return nil
}

// sharedAcrossProcs says which GPU ranks of different processes share,
// if any: their kernels take turns on it (time slices), so a process
// that gets its turn late arrives late call after call however fast its
// host is; on an H100 shared by four processes, the first one released
// from each call was last to the next in 19 of 20, 4.4 ms behind. Ranks
// of one process share one context and do not take turns.
func (c *healthCheck) sharedAcrossProcs() string {
	s, ok := c.sess.Comm.(bench.DeviceSharer)
	if !ok {
		return ""
	}
	per := c.j.Settings.RanksPerProc
	for _, ranks := range s.SharedDevices() {
		procs := map[int]bool{}
		for _, r := range ranks {
			procs[r/per] = true
		}
		if len(procs) > 1 {
			return fmt.Sprintf("%s of %d processes share one GPU: who reaches a call last is the turn the GPU gives each, not a slow host",
				bench.RankNames(ranks), len(procs))
		}
	}
	return ""
}

// judgeArrivals flags each straggler the arrival run found: how late it
// came is its Drop, a fraction of the job's typical gap between calls.
func (c *healthCheck) judgeArrivals() {
	a := c.doc.Arrivals
	if a == nil || !(a.GapUs > 0) {
		return
	}
	for _, s := range c.stragglers {
		p := a.Procs[s]
		where := fmt.Sprintf("%s ranks %s (reached the job's all-reduce last in %d of %d calls, a median %s after the first; its compute %s)",
			c.doc.Nodes[p.Node].Name, bench.RankRanges(p.Ranks, ","), p.Last, a.Calls, micros(p.LateUs), micros(p.WorkUs))
		c.doc.Findings = append(c.doc.Findings, document.Finding{Kind: "straggler", Where: where, Nodes: []int{p.Node}, Ranks: p.Ranks,
			Drop: round3(p.LateUs / a.GapUs), Against: "peers"})
	}
}

// micros writes a time in µs in the unit that reads best.
func micros(us float64) string {
	return time.Duration(us * float64(time.Microsecond)).Round(time.Microsecond).String()
}

// round3 keeps three decimals, for the record.
func round3(v float64) float64 { return math.Round(v*1e3) / 1e3 }
