package bench

import "context"

// Reduction says how a value is combined across processes.
type Reduction int

const (
	ReduceSum Reduction = iota
	ReduceMin
	ReduceMax
)

// Peers is the other processes of a job, for the few host-side exchanges the
// engine makes between measurements: barriers, and combining times and error
// counts. None of it happens inside a timed region.
type Peers interface {
	// Proc and NProcs number this process among the job's processes.
	Proc() int
	NProcs() int
	Barrier(ctx context.Context) error
	// AllReduce combines vals element-wise across processes.
	AllReduce(ctx context.Context, vals []float64, how Reduction) ([]float64, error)
}

// Solo is the Peers of a job that has one process.
type Solo struct{}

func (Solo) Proc() int                         { return 0 }
func (Solo) NProcs() int                       { return 1 }
func (Solo) Barrier(ctx context.Context) error { return ctx.Err() }
func (Solo) AllReduce(ctx context.Context, vals []float64, _ Reduction) ([]float64, error) {
	return vals, ctx.Err()
}

// orSolo is p, or Solo when no peers were given: the engine's default,
// applied where it is used so the caller's value is never written.
func orSolo(p Peers) Peers {
	if p == nil {
		return Solo{}
	}
	return p
}

// Tracker is a Peers that can tell the job what this process is doing, so
// that a process that stalls is reported with the collective and size it
// stalled in.
type Tracker interface {
	Doing(what string)
}
