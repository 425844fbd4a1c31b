package gpu

// #include "batch.h"
import "C"

import "github.com/collbench/collbench/bench"

// The C loop numbers the collectives as bench.ID does. Each line below
// fails to compile (a constant index out of range) when batch.h's enum
// and bench's IDs drift apart.
var (
	_ = [1]struct{}{}[C.CB_ALLREDUCE-bench.AllReduce]
	_ = [1]struct{}{}[C.CB_ALLGATHER-bench.AllGather]
	_ = [1]struct{}{}[C.CB_REDUCESCATTER-bench.ReduceScatter]
	_ = [1]struct{}{}[C.CB_ALLTOALL-bench.AllToAll]
	_ = [1]struct{}{}[C.CB_BROADCAST-bench.Broadcast]
	_ = [1]struct{}{}[C.CB_REDUCE-bench.Reduce]
	_ = [1]struct{}{}[C.CB_SENDRECV-bench.SendRecv]
	_ = [1]struct{}{}[C.CB_GATHER-bench.Gather]
	_ = [1]struct{}{}[C.CB_SCATTER-bench.Scatter]
	_ = [1]struct{}{}[C.CB_PIPELINE-bench.Pipeline]
	_ = [1]struct{}{}[C.CB_ALLTOALLV-bench.AllToAllV]
	_ = [1]struct{}{}[C.CB_HYPERCUBE-bench.HyperCube]
)

// lastCode is the highest collective code the C loop knows.
const lastCode = bench.ID(C.CB_HYPERCUBE)
