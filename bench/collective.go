package bench

import (
	"fmt"
	"sort"
	"strings"

	"github.com/collbench/collbench/bench/numeric"
)

// Counts is the element accounting of one collective call at one size, as
// nccl-tests' getCollByteCount defines it.
type Counts struct {
	Send, Recv int64 // elements in each rank's send and receive buffer
	Param      int64 // the count argument passed to the library
	// In-place layout: the send data starts SendInPlace·rank elements and
	// the receive data RecvInPlace·rank elements into the receive buffer.
	SendInPlace, RecvInPlace int64
}

// Empty reports whether a call with these counts moves nothing.
func (c Counts) Empty() bool { return c.Send == 0 && c.Recv == 0 }

// Bytes is the larger of the send and receive data, for elements of elt
// bytes: what one call touches in its larger buffer.
func (c Counts) Bytes(elt int) int64 { return max(c.Send, c.Recv) * int64(elt) }

// ID names a collective in code. Backends key their implementations by
// it: the host backend's algorithm table, and the GPU loop's collective
// code, which is the ID itself (bench/gpu checks batch.h against these
// values when it compiles).
type ID int

// The collectives, in the GPU loop's numbering.
const (
	AllReduce ID = iota
	AllGather
	ReduceScatter
	AllToAll
	Broadcast
	Reduce
	SendRecv
	Gather
	Scatter
	Pipeline
	AllToAllV
	HyperCube
)

// Collective describes one collective as data: how it counts bytes, how
// its bus bandwidth is normalised and what every rank must hold
// afterwards. Everything else that varies by collective looks it up by ID.
type Collective struct {
	ID       ID
	Name     string   // collbench subcommand, e.g. "allreduce"
	TestName string   // nccl-tests binary name, e.g. "all_reduce_perf"; empty for one nccl-tests lacks
	Aliases  []string // other accepted spellings: the binary's name with and without _perf
	Reduces  bool     // takes a reduction operator
	Rooted   bool     // has a root rank (-r)
	// VerifyInPlace is false where nccl-tests leaves in-place results
	// unchecked (all-to-all, all-to-all-v, send/recv: a rank's send and
	// receive of one group share the buffer there, and NCCL does not
	// order them, so a receive may land before the send has read), so
	// #wrong prints N/A for them.
	VerifyInPlace bool
	// PowerOfTwo refuses communicators whose size is not a power of two.
	PowerOfTwo bool
	// UnnamedOp prints an empty redop column where other collectives
	// that do not reduce print "none" (nccl-tests' hypercube).
	UnnamedOp bool
	// P2PPeers is the peers a rank exchanges with whatever the rank
	// count, where that is fixed (a send/receive ring or a chain: 2);
	// 0 otherwise.
	P2PPeers int
	// Traffic is the uneven all-to-all's pattern; nil for the others.
	Traffic   *Traffic
	busFactor func(n int) float64
	counts    func(count int64, elt, n int) Counts
	// algBytes is the bytes over which algorithm bandwidth is computed;
	// nil means the call's footprint.
	algBytes func(c Counts, elt, n int) int64
	expect   func(e expectation, out []byte) bool
}

// Label names the collective in nccl-tests' output: its binary's name,
// or collbench's own name for a test nccl-tests lacks.
func (c *Collective) Label() string {
	if c.TestName == "" {
		return c.Name
	}
	return c.TestName
}

// BusFactor converts algorithm bandwidth to bus bandwidth for n ranks.
func (c *Collective) BusFactor(n int) float64 { return c.busFactor(n) }

// Counts applies the collective's byte accounting to count elements of elt
// bytes over n ranks.
func (c *Collective) Counts(count int64, elt, n int) Counts {
	if c.Traffic != nil {
		return c.Traffic.counts(count, elt, n)
	}
	return c.counts(count, elt, n)
}

// AlgBytes is the bytes one call of these counts moves for the algorithm
// bandwidth: the footprint, except where nccl-tests counts otherwise.
func (c *Collective) AlgBytes(counts Counts, elt, n int) int64 {
	if c.algBytes != nil {
		return c.algBytes(counts, elt, n)
	}
	return counts.Bytes(elt)
}

// Fits says why the collective cannot run on a communicator of n ranks
// (a hypercube of other than a power of two, routed traffic whose experts
// do not split over n), or nil.
func (c *Collective) Fits(n int) error {
	if c.PowerOfTwo && n&(n-1) != 0 {
		return fmt.Errorf("%s needs a power-of-two number of ranks (got %d)", c.Name, n)
	}
	if c.Traffic != nil && c.Traffic.Routed != nil {
		return c.Traffic.Routed.Check(n)
	}
	return nil
}

// BufferBytes is what each buffer must hold for calls of up to size
// bytes on n ranks: size, or the busiest rank's bytes where an uneven
// pattern loads it beyond each rank's share of the size. A collective
// that does not fit n ranks (Fits) will not run there and needs size.
func (c *Collective) BufferBytes(size int64, elt, n int) int64 {
	if c.Traffic == nil || c.Fits(n) != nil {
		return size
	}
	return max(size, c.Counts(size/int64(elt), elt, n).Bytes(elt))
}

// OpName is the redop column of a row with operator op.
func (c *Collective) OpName(op numeric.RedOp) string {
	if c.UnnamedOp {
		return ""
	}
	return op.String()
}

// WithTraffic returns a copy of an uneven all-to-all that follows t.
func (c *Collective) WithTraffic(t *Traffic) (*Collective, error) {
	if c.Traffic == nil {
		return nil, fmt.Errorf("%s takes no traffic pattern; alltoallv does", c.Name)
	}
	cp := *c
	cp.Traffic = t
	return &cp, nil
}

// perRankBase is nccl-tests' per-rank share, rounded down to 16 bytes.
func perRankBase(count int64, elt, n int) int64 {
	return (count / int64(n)) &^ int64(16/elt-1)
}

func ringFactor(n int) float64 { return float64(n-1) / float64(n) }

func flatCounts(count int64, _, _ int) Counts {
	return Counts{Send: count, Recv: count, Param: count}
}

func gatherCounts(count int64, elt, n int) Counts {
	b := perRankBase(count, elt, n)
	return Counts{Send: b, Recv: b * int64(n), Param: b, SendInPlace: b}
}

func scatterCounts(count int64, elt, n int) Counts {
	b := perRankBase(count, elt, n)
	return Counts{Send: b * int64(n), Recv: b, Param: b, RecvInPlace: b}
}

// Collectives is every collective collbench runs, in help order.
var Collectives = []*Collective{
	{
		ID: AllReduce, Name: "allreduce", TestName: "all_reduce_perf", Aliases: []string{"all_reduce", "all_reduce_perf"}, Reduces: true, VerifyInPlace: true,
		busFactor: func(n int) float64 { return 2 * float64(n-1) / float64(n) },
		counts:    flatCounts,
		expect:    func(e expectation, out []byte) bool { e.reduced(0, out); return true },
	},
	{
		ID: AllGather, Name: "allgather", TestName: "all_gather_perf", Aliases: []string{"all_gather", "all_gather_perf"}, VerifyInPlace: true,
		busFactor: ringFactor, counts: gatherCounts,
		expect: func(e expectation, out []byte) bool { e.concat(out); return true },
	},
	{
		ID: ReduceScatter, Name: "reducescatter", TestName: "reduce_scatter_perf", Aliases: []string{"reduce_scatter", "reduce_scatter_perf"}, Reduces: true, VerifyInPlace: true,
		busFactor: ringFactor, counts: scatterCounts,
		expect: func(e expectation, out []byte) bool { e.reduced(int64(e.rank)*e.param, out); return true },
	},
	{
		ID: AllToAll, Name: "alltoall", TestName: "alltoall_perf", Aliases: []string{"alltoall_perf"},
		busFactor: ringFactor,
		counts: func(count int64, elt, n int) Counts {
			b := perRankBase(count, elt, n)
			return Counts{Send: b * int64(n), Recv: b * int64(n), Param: b}
		},
		expect: func(e expectation, out []byte) bool { e.transpose(out); return true },
	},
	{
		ID: Broadcast, Name: "broadcast", TestName: "broadcast_perf", Aliases: []string{"broadcast_perf"}, Rooted: true, VerifyInPlace: true,
		busFactor: func(int) float64 { return 1 }, counts: flatCounts,
		expect: func(e expectation, out []byte) bool { e.input(e.root, 0, out); return true },
	},
	{
		ID: Reduce, Name: "reduce", TestName: "reduce_perf", Aliases: []string{"reduce_perf"}, Reduces: true, Rooted: true, VerifyInPlace: true,
		busFactor: func(int) float64 { return 1 }, counts: flatCounts,
		expect: func(e expectation, out []byte) bool {
			if e.rank != e.root {
				return false
			}
			e.reduced(0, out)
			return true
		},
	},
	{
		ID: SendRecv, Name: "sendrecv", TestName: "sendrecv_perf", Aliases: []string{"sendrecv_perf"}, P2PPeers: 2,
		busFactor: func(int) float64 { return 1 }, counts: flatCounts,
		expect: func(e expectation, out []byte) bool {
			e.input((e.rank-1+e.nranks)%e.nranks, 0, out)
			return true
		},
	},
	{
		ID: Gather, Name: "gather", TestName: "gather_perf", Aliases: []string{"gather_perf"}, Rooted: true, VerifyInPlace: true,
		busFactor: ringFactor, counts: gatherCounts,
		expect: func(e expectation, out []byte) bool {
			if e.rank != e.root {
				return false
			}
			e.concat(out)
			return true
		},
	},
	{
		ID: Scatter, Name: "scatter", TestName: "scatter_perf", Aliases: []string{"scatter_perf"}, Rooted: true, VerifyInPlace: true,
		busFactor: ringFactor, counts: scatterCounts,
		expect: func(e expectation, out []byte) bool { e.input(e.root, int64(e.rank)*e.param, out); return true },
	},
	{
		// A pipeline's stage boundaries, as Galvatron's p2p probe and
		// pipeline-parallel training send activations: each rank sends
		// to the next, the last sends nothing and the first receives
		// nothing. nccl-tests has no such test; sendrecv closes the ring.
		// In place a stage sends and receives in one buffer, unchecked
		// as sendrecv is.
		ID: Pipeline, Name: "pipeline", Aliases: []string{"p2p_chain"}, P2PPeers: 2,
		busFactor: func(int) float64 { return 1 }, counts: flatCounts,
		expect: func(e expectation, out []byte) bool {
			if e.rank == 0 {
				return false
			}
			e.input(e.rank-1, 0, out)
			return true
		},
	},
	{
		// An uneven all-to-all: each rank sends each peer the share its
		// Traffic gives, in rank order, and receives the peers' shares
		// in rank order. In place it runs but is not checked, as in
		// nccl-tests.
		ID: AllToAllV, Name: "alltoallv", TestName: "alltoallv_perf", Aliases: []string{"alltoallv_perf", "all_to_allv"},
		Traffic: &DefaultTraffic, busFactor: ringFactor,
		expect: func(e expectation, out []byte) bool { e.uneven(out); return true },
	},
	{
		// An all-gather by recursive doubling: a local copy, then
		// log2(n) exchanges with rank^mask of the blocks gathered so far.
		ID: HyperCube, Name: "hypercube", TestName: "hypercube_perf", Aliases: []string{"hypercube_perf"},
		VerifyInPlace: true, PowerOfTwo: true, UnnamedOp: true,
		busFactor: func(int) float64 { return 1 }, counts: gatherCounts,
		algBytes: func(c Counts, elt, n int) int64 { return c.Param * int64(elt) * int64(n-1) },
		expect:   func(e expectation, out []byte) bool { e.concat(out); return true },
	},
}

// LookupCollective finds a collective by its name or one of its aliases
// (its nccl-tests binary name, "all_reduce_perf", with or without the
// suffix).
func LookupCollective(name string) (*Collective, error) {
	l := strings.ToLower(name)
	for _, c := range Collectives {
		if l == c.Name {
			return c, nil
		}
		for _, a := range c.Aliases {
			if l == a {
				return c, nil
			}
		}
	}
	names := make([]string, len(Collectives))
	for i, c := range Collectives {
		names[i] = c.Name
	}
	sort.Strings(names)
	return nil, fmt.Errorf("unknown collective %q (want one of %s)", name, strings.Join(names, ", "))
}
