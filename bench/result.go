package bench

import "github.com/collbench/collbench/bench/numeric"

// Placement is the measurement of one size in one buffer placement.
type Placement struct {
	Time    float64   // µs per call (host enqueue time with -C)
	AlgBW   float64   // GB/s (1e9 B/s)
	BusBW   float64   // GB/s
	Wrong   int64     // wrong elements over all ranks; meaningful if Checked
	Checked bool      // false prints N/A
	Iter    IterStats // per-iteration times, max over ranks
}

// Row is one line of the nccl-tests table: a size measured out of place and
// in place.
type Row struct {
	Size       int64 // bytes: the larger of send and receive per rank
	Count      int64 // elements: the count argument of the call
	Type       numeric.DataType
	Op         numeric.RedOp
	Root       int // -1 for rootless collectives
	OutOfPlace Placement
	InPlace    Placement
	Iters      int
}

// Summary closes a run as nccl-tests' footer does.
type Summary struct {
	Rows int
	// AvgBusBW is the plain mean of bus bandwidth over every placement of
	// every row, nccl-tests' "Avg bus bandwidth".
	AvgBusBW float64
	// ErrorCases counts (process, size, placement) cases with any wrong
	// element: nccl-tests' "Out of bounds values".
	ErrorCases int
}
