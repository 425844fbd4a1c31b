package bench

import "github.com/collbench/collbench/bench/numeric"

// Placement is the measurement of one size in one buffer placement.
type Placement struct {
	Time    float64 // µs per call (host enqueue time with -C)
	AlgBW   float64 // GB/s (1e9 B/s)
	BusBW   float64 // GB/s
	Wrong   int64   // wrong elements over all ranks; meaningful if Checked
	Checked bool    // false prints N/A
	// Bitwise is the bitwise check's finding (Options.Bitwise), nil when
	// none ran.
	Bitwise *Bitwise
	Iter    IterStats // per-iteration times, max over ranks
	// Estimate is the backend's own estimate of one call in µs (NCCL's
	// model, with Options.Estimate), 0 when there is none.
	Estimate float64
	// Procs is each process's own time in µs, in process order, when the
	// job has several processes; -1 for a process with no measured rank.
	Procs []float64
	// Groups are each group's figures when several groups run at once.
	Groups []GroupPlacement
}

// GroupPlacement is one group's time (the mean over the processes that
// hold its ranks) and bandwidths.
type GroupPlacement struct {
	Time, AlgBW, BusBW float64
}

// Slowest returns the index of the slowest process and the fastest and
// slowest times; ok is false without per-process times.
func (p Placement) Slowest() (proc int, fastest, slowest float64, ok bool) {
	proc = -1
	for i, t := range p.Procs {
		if t < 0 {
			continue
		}
		if proc < 0 || t > slowest {
			proc, slowest = i, t
		}
		if !ok || t < fastest {
			fastest, ok = t, true
		}
	}
	return proc, fastest, slowest, ok
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
	// Power is what the devices drew while the size ran on after its
	// timed loop; zero unless a Point was asked to read it.
	Power PowerDraw
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
	// BitwiseCases counts (size, placement) cases whose repeats differed
	// from their reference: nccl-tests' "Bitwise mismatches" (-B).
	BitwiseCases int
	// MinBusBW is the floor asked for in GB/s (NCCL_TESTS_MIN_BW); 0
	// checks nothing.
	MinBusBW float64
}

// BandwidthOK reports whether the average bus bandwidth passes the floor:
// at least 90% of it, as nccl-tests judges NCCL_TESTS_MIN_BW.
func (s Summary) BandwidthOK() bool { return s.MinBusBW <= 0 || s.AvgBusBW >= 0.9*s.MinBusBW }
