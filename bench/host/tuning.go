package host

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/tuner"
)

// The host backend's own choices, which collbench tune varies as it
// varies NCCL's algorithm, protocol and channels: the algorithm of each
// collective that has two, and the segment in which data is received,
// reduced and forwarded.
const (
	AlgoRing     = "ring"     // all-reduce, all-gather, reduce-scatter: n−1 steps around a ring
	AlgoDoubling = "doubling" // the same three: log2(n) steps of recursive doubling or halving (power-of-two groups)
	AlgoPipeline = "pipeline" // broadcast, reduce: a chain of ranks forwarding segment by segment; all-reduce: a chain reduce, then a chain broadcast (one order of combining for every size)
	AlgoDirect   = "direct"   // broadcast, reduce: the root and every other rank, one message each
)

// The variables that tell the host backend its choices (read by whoever
// starts it: run), as NCCL_ALGO, NCCL_PROTO, NCCL_TUNER_CONFIG_FILE and
// NCCL_DEBUG_SUBSYS=TUNING tell NCCL its own (docs/tune.md).
const (
	AlgoVar      = "COLLBENCH_HOST_ALGO"       // ring, doubling, pipeline or direct, for every call that has it
	SegmentVar   = "COLLBENCH_HOST_SEGMENT"    // the segment, e.g. 64K
	TunerFileVar = "COLLBENCH_HOST_TUNER_FILE" // a tuner file in the host backend's vocabulary
	TuningLogVar = "COLLBENCH_HOST_TUNING_LOG" // a file each group's rank 0 logs its choice per call to
	// DoublingMaxVar sets the backend's own model: the largest call it
	// runs by recursive doubling (0: none), as NCCL's model sets its own
	// choice; a tuner file's rows win over it.
	DoublingMaxVar = "COLLBENCH_HOST_DOUBLING_MAX"
)

// DefaultSegment is the segment unless told otherwise: small enough to
// stay in cache while it is combined, large enough for efficient socket
// calls.
const DefaultSegment = 256 << 10

// Segment bounds: a segment holds whole elements of every type (a
// multiple of 16 bytes), and two of a rank's are allocated at once.
const (
	MinSegment = 64
	MaxSegment = 64 << 20
)

// Choice is how one call runs: its algorithm and segment.
type Choice struct {
	Algorithm string
	Segment   int64
}

// Chooser picks a call's choice from a table (a tuner file's rows): by
// the collective's tuner name, the call's bytes as NCCL's tuner counts
// them (the nccl-tests size), and its communicator's nodes and ranks. ok
// is false where no row matches, and the backend's own choice stands.
type Chooser interface {
	Choose(collective string, bytes int64, nodes, ranks int) (c Choice, ok bool)
}

// Tuning is what the host backend is told about its choices. Forced
// settings (Algorithm, Segment) win over the table, which wins over the
// backend's own choice, as NCCL_ALGO and NCCL_PROTO restrict what NCCL's
// tuner plugin may pick.
type Tuning struct {
	Algorithm string // every call of a collective that has it; "" = the table's or the backend's
	Segment   int64  // 0 = the table's or DefaultSegment
	// DoublingMax is the backend's own model: the largest call it runs by
	// recursive doubling on a power-of-two group (0: doublingMax,
	// NoDoubling: none), as NCCL's own choice follows its cost model.
	DoublingMax int64
	Table       Chooser
	// Log, when set, hears one line per call of each group's rank 0,
	// worded as NCCL's TUNING lines are (NCCL_DEBUG_SUBSYS=TUNING): the
	// collective, the bytes NCCL would print, the algorithm, the segment
	// as the protocol, and the one channel.
	Log io.Writer
}

// Algorithms lists the algorithms a collective can run with, the first
// the one it runs when nothing is chosen; none for a collective with one
// way only.
func Algorithms(coll bench.ID) []string {
	switch coll {
	case bench.AllReduce:
		return []string{AlgoRing, AlgoDoubling, AlgoPipeline}
	case bench.AllGather, bench.ReduceScatter:
		return []string{AlgoRing, AlgoDoubling}
	case bench.Broadcast, bench.Reduce:
		return []string{AlgoPipeline, AlgoDirect}
	}
	return nil
}

// tunerNames are the collectives a tuner file can steer (NCCL asks its
// tuner about these five only): the name a tuner file gives each, and
// the one NCCL's log gives it.
var tunerNames = map[bench.ID][2]string{
	bench.AllReduce:     {"allreduce", "AllReduce"},
	bench.AllGather:     {"allgather", "AllGather"},
	bench.ReduceScatter: {"reducescatter", "ReduceScatter"},
	bench.Broadcast:     {"broadcast", "Broadcast"},
	bench.Reduce:        {"reduce", "Reduce"},
}

// TunerName is the collective's name in a tuner file, "" for one a tuner
// file cannot steer.
func TunerName(coll bench.ID) string { return tunerNames[coll][0] }

// Check refuses a forced setting the backend cannot take.
func (t Tuning) Check() error {
	switch t.Algorithm {
	case "", AlgoRing, AlgoDoubling, AlgoPipeline, AlgoDirect:
	default:
		return fmt.Errorf("the host backend has no algorithm %q (%s, %s for all-reduce, all-gather and reduce-scatter; %s for all-reduce, broadcast and reduce; %s for broadcast and reduce)",
			t.Algorithm, AlgoRing, AlgoDoubling, AlgoPipeline, AlgoDirect)
	}
	return CheckSegment(t.Segment)
}

// CheckSegment refuses a segment outside the bounds or of part elements.
func CheckSegment(seg int64) error {
	if seg != 0 && (seg < MinSegment || seg > MaxSegment || seg%16 != 0) {
		return fmt.Errorf("a segment of %d bytes: want a multiple of 16 from %d to %d", seg, MinSegment, MaxSegment)
	}
	return nil
}

// Vocabulary is what the host backend reads in a tuner file
// (COLLBENCH_HOST_TUNER_FILE): NCCL's example plugin's columns, with the
// host backend's algorithms, and its segment, a size such as 256K, in the
// protocol column; one channel.
var Vocabulary = tuner.Vocabulary{
	Name:        "the host backend",
	Collectives: tuner.Plugin.Collectives,
	Algorithms:  []string{AlgoRing, AlgoDoubling, AlgoPipeline, AlgoDirect},
	Protocol: func(s string) error {
		seg, err := bench.ParseSize(s)
		if err == nil && seg == 0 {
			// 0 is "the default" only where nothing was written; a
			// row or a trial that names a segment names one.
			err = fmt.Errorf("a segment of 0 bytes: want a multiple of 16 from %d to %d", MinSegment, MaxSegment)
		}
		if err == nil {
			err = CheckSegment(seg)
		}
		if err != nil {
			return fmt.Errorf("the protocol column holds the segment: %w", err)
		}
		return nil
	},
}

// Rules are a tuner file's rows as the host backend applies them: the
// first row that matches the call, as NCCL's example plugin applies its
// own (tuner.Apply); the host backend has neither grouped operations nor
// registered buffers, so a row matches with -1 or 1 numPipeOps and -1 or
// 0 regBuff.
type Rules []tuner.Row

// Choose implements Chooser.
func (rs Rules) Choose(collective string, bytes int64, nodes, ranks int) (Choice, bool) {
	d := tuner.Apply(rs, tuner.Query{Collective: collective, Bytes: uint64(bytes), Nodes: nodes, Ranks: ranks, PipeOps: 1})
	if d.Row < 0 {
		return Choice{}, false
	}
	seg, _ := bench.ParseSize(d.Protocol) // checked when the file was read
	return Choice{Algorithm: d.Algorithm, Segment: seg}, true
}

// NoDoubling is a DoublingMax under which the backend's own choice is
// never recursive doubling.
const NoDoubling = -1

// autoChoice is the backend's own choice: recursive doubling up to
// limit (Tuning.DoublingMax) on power-of-two groups, else the ring; the
// pipeline for broadcast and reduce.
func autoChoice(coll bench.ID, bytes int64, n int, limit int64) string {
	if limit == 0 {
		limit = doublingMax
	}
	switch coll {
	case bench.AllReduce, bench.AllGather, bench.ReduceScatter:
		if n > 1 && n&(n-1) == 0 && bytes <= limit {
			return AlgoDoubling
		}
		return AlgoRing
	case bench.Broadcast, bench.Reduce:
		return AlgoPipeline
	}
	return ""
}

// choose settles the call's algorithm and segment: forced, else the
// table's, else the backend's own. bytes is the call's size as NCCL's
// tuner counts it.
func (r *rank) choose(c call, bytes int64) (Choice, error) {
	t := r.tuning
	ch := Choice{Algorithm: autoChoice(c.Coll.ID, bytes, r.n, t.DoublingMax), Segment: DefaultSegment}
	if t.Table != nil {
		if got, ok := t.Table.Choose(TunerName(c.Coll.ID), bytes, r.nodes, r.n); ok {
			if got.Algorithm != "" {
				ch.Algorithm = got.Algorithm
			}
			if got.Segment != 0 {
				ch.Segment = got.Segment
			}
		}
	}
	if t.Algorithm != "" {
		ch.Algorithm = t.Algorithm
	}
	if t.Segment != 0 {
		ch.Segment = t.Segment
	}
	algos := Algorithms(c.Coll.ID)
	if len(algos) == 0 {
		return ch, nil // one way only: a forced algorithm does not apply
	}
	if ch.Algorithm == AlgoDoubling || (ch.Algorithm == AlgoDirect && c.Coll.ID == bench.Broadcast) {
		// These move whole messages: no segment applies, and the call is
		// the same whatever segment was asked for (as its log says).
		ch.Segment = DefaultSegment
	}
	return ch, runnable(c.Coll, ch.Algorithm, r.n)
}

// runnable refuses an algorithm the collective cannot run with over n
// ranks: one it does not have, or recursive doubling on a group that is
// not a power of two.
func runnable(coll *bench.Collective, algo string, n int) error {
	algos := Algorithms(coll.ID)
	switch {
	case len(algos) == 0:
		return nil
	case !slices.Contains(algos, algo):
		return fmt.Errorf("the host backend has no %s %s (it has %s)", algo, coll.Name, strings.Join(algos, ", "))
	case algo == AlgoDoubling && n&(n-1) != 0:
		return fmt.Errorf("recursive doubling needs a power-of-two group, and %s runs on %d ranks", coll.Name, n)
	}
	return nil
}

// CheckCollective implements bench.CollectiveChecker: an algorithm forced
// for every call (COLLBENCH_HOST_ALGO) that coll cannot run over groups of
// n ranks is refused before anything runs, not at its first call.
func (b Backend) CheckCollective(coll *bench.Collective, n int) error {
	if b.Tuning.Algorithm == "" {
		return nil
	}
	if err := runnable(coll, b.Tuning.Algorithm, n); err != nil {
		return fmt.Errorf("%s=%s: %w", AlgoVar, b.Tuning.Algorithm, err)
	}
	return nil
}

// logChoice writes the call's choice, as NCCL's rank 0 logs its own with
// NCCL_DEBUG_SUBSYS=TUNING: "AllReduce: 1048576 Bytes -> Algo RING proto
// 256K channel{Lo..Hi}={0..0}", bytes being the call's count times its
// element size (for all-gather and reduce-scatter, one rank's share).
//
// A line that cannot be written fails the call: a log that silently
// lost its lines would read as calls that chose nothing.
func (r *rank) logChoice(c call, ch Choice) error {
	w := r.tuning.Log
	if w == nil || r.id != 0 || r.info.Group != 0 {
		return nil
	}
	logMu.Lock()
	defer logMu.Unlock()
	if _, err := fmt.Fprintf(w, "%s: %d Bytes -> Algo %s proto %s channel{Lo..Hi}={0..0}\n", tunerNames[c.Coll.ID][1],
		c.Counts.Param*int64(c.elt), strings.ToUpper(ch.Algorithm), bench.FormatSize(ch.Segment)); err != nil {
		return fmt.Errorf("logging the host backend's choice (%s): %w", TuningLogVar, err)
	}
	return nil
}

// logMu keeps the lines of several processes' ranks whole where they
// share a file.
var logMu sync.Mutex
