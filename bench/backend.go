package bench

import (
	"context"
	"errors"
	"time"

	"github.com/collbench/collbench/bench/numeric"
)

// Backend opens communicators for the ranks that live in this process. It is
// shaped after NCCL: each local rank owns a device with send and receive
// buffers and a stream; work is enqueued asynchronously (grouped across the
// local ranks) and drained with Wait.
type Backend interface {
	// Name is the backend's flag value, e.g. "host" or "nccl".
	Name() string
	// Open creates one communicator per local rank.
	Open(ctx context.Context, s Setup) (Comm, error)
}

// Setup is what a backend needs to know to open its communicators.
type Setup struct {
	JobRanks   int // ranks in the whole job (a communicator may hold fewer: Groups)
	FirstRank  int // global rank of local rank 0
	LocalRanks int // ranks (devices) in this process, -g
	// HostProcs is the job's processes on this host (the launcher's
	// local size), each taking what this one takes: what must fit in the
	// host's memory together. 0 or 1: this process alone.
	HostProcs int
	BufBytes  int64 // bytes of each send and receive buffer
	// BufferBytes, when set, gives the buffer bytes that calls of up to
	// size bytes need where that is more than size (an uneven
	// all-to-all's busiest rank); the session applies it to BufBytes.
	BufferBytes func(size int64) int64
	// Pad is allocated past BufBytes so calls may start up to Pad bytes
	// into the buffers (nccl-tests' -u); rotation stays within BufBytes.
	Pad int64
	// Devices are the device ordinals of the local ranks; empty means
	// 0..LocalRanks-1. A device may repeat where the library allows
	// several ranks on one GPU.
	Devices []int
	// Groups splits the job into the communicators that are measured.
	Groups Grouping
	// Exchange gives every process's bytes to every process, in process
	// order (the process holding rank 0 first); nil in a job of one
	// process.
	Exchange func(ctx context.Context, mine []byte) ([][]byte, error)
	// Addr is the address other hosts reach this process at, for
	// backends that open their own connections; empty means loopback.
	Addr string
}

// Place returns local rank local's group, its rank in that group, and
// whether it takes part in the measurement.
func (s Setup) Place(local int) (group, groupRank int, active bool) {
	return s.Groups.Place(s.JobRanks, s.FirstRank+local)
}

// Noter is a Comm with preamble lines of its own about how it was set up
// (ranks that share a GPU and the limits it gave them).
type Noter interface {
	Notes() []string
}

// MemoryLimiter is a Backend whose devices bound the largest message: it
// returns the largest -e that fits, as nccl-tests computes it.
type MemoryLimiter interface {
	MaxBytes(s Setup, check bool) (int64, error)
}

// Prechecker is a backend that can refuse a setup before any process
// meets another: what Open would refuse of this process alone (its
// memory, its settings). Every process of a job runs it on its own, so a
// refusal is every process's, said alike, and none is left waiting for a
// peer that already gave up. The setup has no Exchange yet.
type Prechecker interface {
	Precheck(s Setup) error
}

// CollectiveChecker is a backend that can refuse, before any process
// meets another, a collective its settings cannot run over groups of n
// ranks.
type CollectiveChecker interface {
	CheckCollective(c *Collective, n int) error
}

// Capabilities lists the options a backend can honour; the engine refuses
// the others instead of ignoring them.
type Capabilities struct {
	Graphs bool // CUDA graph capture and replay (-G); the Comm is a Grapher
	// Timestamps says per-iteration timestamps cost nothing measurable, so
	// they are taken on every timed batch; otherwise only with -I.
	Timestamps bool
	// Type and Op, when set, say why the backend cannot run a data type or
	// a reduction operator (for example fp8 before NCCL 2.24 or sm_90).
	Type func(numeric.DataType) error
	Op   func(numeric.RedOp) error
	// Pair, when set, says why the backend cannot run an operator on a
	// data type it otherwise runs (NCCL refuses avg and mulsum on fp8).
	Pair func(numeric.DataType, numeric.RedOp) error
}

// TypeOp is one data type with one reduction operator.
type TypeOp struct {
	Type numeric.DataType
	Op   numeric.RedOp
}

// MemoryUse is the device memory a Comm's set-up and work took, in bytes,
// on its busiest local device: nccl-tests' -M footer.
type MemoryUse struct {
	Init       int64 // the communicators' initialisation
	Buffers    int64 // the send and receive buffers
	Collective int64 // what the collectives have taken since, at most
	Free       int64 // the least free memory of any local device now
}

// MemoryReporter is a Comm that reads its devices' free memory.
type MemoryReporter interface {
	MemoryUse() (MemoryUse, error)
}

// Grapher is a Comm that can capture a batch into CUDA graphs, one per
// local device, for nccl-tests' -G mode.
type Grapher interface {
	Capture(b Batch) (Graph, error)
}

// Graph is a captured batch.
type Graph interface {
	// Launch enqueues the graph n times on every local stream.
	Launch(n int) error
	Close() error
}

// Device describes the device behind one local rank, for the preamble.
type Device struct {
	Rank      int // global rank in the job
	Group     int // the group (communicator) it belongs to
	GroupRank int // its rank inside that communicator
	Ordinal   int
	Hostname  string
	PID       int
	BusID     [3]int // PCI domain, bus, device
	Name      string
}

// BufKind selects a local rank's send or receive buffer.
type BufKind int

const (
	SendBuf BufKind = iota
	RecvBuf
)

// Op is one collective call as every local rank issues it.
type Op struct {
	Coll    *Collective
	Type    numeric.DataType
	RedOp   numeric.RedOp
	Root    int
	InPlace bool
	Counts  Counts
	// Unalign moves the send and receive data this many bytes into their
	// buffers (nccl-tests' -u: the element count times the type's size).
	Unalign int64
}

// Batch is a run of back-to-back calls: Iters iterations of Agg calls each,
// the Agg calls of one iteration launched as one group. Iteration i uses the
// buffers shifted by RotationShift(FirstIter+i) as nccl-tests does.
type Batch struct {
	Op
	Iters, Agg int
	FirstIter  int
	// Record asks for a timestamp at every iteration boundary on every
	// local stream (CUDA events on a GPU), read back with IterTimes.
	Record bool
}

// Comm is the communicators of this process's local ranks.
type Comm interface {
	Capabilities() Capabilities
	Devices() []Device
	// Write copies data into a local rank's buffer at a byte offset.
	Write(local int, buf BufKind, off int64, data []byte) error
	// Read copies from a local rank's buffer at a byte offset into dst.
	Read(local int, buf BufKind, off int64, dst []byte) error
	// Enqueue launches a batch on every local rank and returns without
	// waiting for it.
	Enqueue(b Batch) error
	// Wait blocks until all enqueued work has completed on every local rank,
	// or fails when ctx ends (the caller then aborts).
	Wait(ctx context.Context) error
	// IterTimes returns, per local rank, the duration of each recorded
	// iteration since the last call, and forgets them.
	IterTimes() [][]time.Duration
	// Abort tears the communicators down without waiting for peers; work in
	// flight fails.
	Abort()
	// Close releases the communicators and buffers.
	Close() error
}

// Regrouper is a Comm that makes the communicators of another grouping of
// its job from its own, for less than the backend's Open: on GPUs,
// ncclCommSplit of the job-wide communicators it holds, where Open makes
// new ones (ncclCommInitRank) and splits those, and the same streams and
// buffers instead of new ones. On an H100 with four ranks sharing it,
// splitting took half the time of a new job-wide set plus its split, and
// its teardown half as long (docs/health.md). Every process regroups with
// the same grouping at the same point; the new Comm holds messages of up
// to its parent's buffer size, must be closed before its parent, and
// neither runs while the other does.
type Regrouper interface {
	Regroup(g Grouping) (Comm, error)
}

// JointCloser is a Comm that closes others of its backend together with
// itself for about the cost of closing one: on GPUs one NCCL group
// destroys them all, where destroying each on its own waits up to half a
// second for NCCL's threads (docs/health.md). Every process closes the
// same Comms in the same order.
type JointCloser interface {
	CloseWith(others []Comm) error
}

// CloseAll closes comms: together where the first is a JointCloser, one
// after another otherwise. It returns the first error.
func CloseAll(comms []Comm) error {
	if len(comms) == 0 {
		return nil
	}
	if j, ok := comms[0].(JointCloser); ok {
		return j.CloseWith(comms[1:])
	}
	var first error
	for _, c := range comms {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// DeviceSharer is a Comm that knows which ranks of the job share a
// device: one list of global ranks, ascending, per device that more than
// one rank runs on (several ranks on one GPU, in one process or several of
// one machine).
type DeviceSharer interface {
	SharedDevices() [][]int
}

// Estimator is a backend that can say what a call would take without
// running it: NCCL's own cost model (ncclGroupSimulateEnd).
type Estimator interface {
	// Estimate returns the estimated time of one call of op in µs; ok is
	// false when there is no figure for it. Every rank asks at the same
	// point of the run.
	Estimate(op Op) (us float64, ok bool, err error)
}

// RotationShift is the byte offset of iteration iter's buffers: nccl-tests
// walks the buffers in steps of the call's footprint to defeat caches.
func RotationShift(footprint, bufBytes int64, iter int) int64 {
	if footprint <= 0 {
		return 0
	}
	steps := bufBytes / footprint
	if steps <= 0 {
		return 0
	}
	return footprint * (int64(iter) % steps)
}

// Footprint is the bytes one call touches in its larger buffer.
func (o Op) Footprint() int64 {
	return o.Counts.Bytes(o.Type.Size())
}

// Regions returns, for the rank with global number rank, the byte offsets of
// the send data (in SendBuf, or in RecvBuf when in place) and of the receive
// data (in RecvBuf) before rotation.
func (o Op) Regions(rank int) (sendBuf BufKind, sendOff, recvOff int64) {
	elt := int64(o.Type.Size())
	if o.InPlace {
		return RecvBuf, o.Unalign + o.Counts.SendInPlace*int64(rank)*elt, o.Unalign + o.Counts.RecvInPlace*int64(rank)*elt
	}
	return SendBuf, o.Unalign, o.Unalign
}

// ErrTooLarge marks a request for buffers the machine cannot hold.
var ErrTooLarge = errors.New("buffers too large")

// Computer is a Comm that can run a compute workload on a second stream of
// every local rank, next to its collectives, for the overlap experiment.
type Computer interface {
	// SetWorkload prepares w (buffers, library handles) on every local
	// rank, or says why the backend cannot run it.
	SetWorkload(w Workload) error
	// EnqueueCompute launches n runs of the workload on every local
	// compute stream and returns without waiting.
	EnqueueCompute(n int) error
	// WaitCompute blocks until the compute streams are idle and returns,
	// per local rank, how long the last n runs took on their stream.
	WaitCompute(ctx context.Context) ([]time.Duration, error)
}
