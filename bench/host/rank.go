package host

import (
	"io"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/numeric"
)

// rank is one host-backend rank: its buffers, its stream and its
// connections to every peer.
type rank struct {
	id, n      int // rank and size of its communicator (group)
	local      int // index among this process's measured ranks
	info       bench.Device
	conns      []link // by group rank
	inline     int    // the largest message written inline (inlineLimit)
	send, recv []byte
	work       chan bench.Batch
	scratch    []byte
	segs       [2][]byte
	tuning     Tuning // the backend's choices, as it was told them
	nodes      int    // hosts the rank's group spans, for a tuner file's rows
}

// call is one collective call resolved to byte slices for this rank.
type call struct {
	bench.Op
	in, out []byte // send data and receive area
	elt     int
	index   int    // the call's number in its batch, from the batch's FirstIter
	algo    string // the algorithm of a collective that has several (Algorithms)
	seg     int    // the segment data is received, reduced and forwarded in
}

func (r *rank) next() int { return (r.id + 1) % r.n }
func (r *rank) prev() int { return (r.id - 1 + r.n) % r.n }

// run executes call number index with the buffers shifted by shift bytes.
func (r *rank) run(op bench.Op, index int, shift int64) error {
	elt := int64(op.Type.Size())
	sendKind, sendOff, recvOff := op.Regions(r.id)
	src := r.send
	if sendKind == bench.RecvBuf {
		src = r.recv
	}
	c := call{Op: op, elt: int(elt), index: index,
		in:  src[shift+sendOff : shift+sendOff+op.Counts.Send*elt],
		out: r.recv[shift+recvOff : shift+recvOff+op.Counts.Recv*elt],
	}
	if op.Counts.Empty() {
		return nil
	}
	ch, err := r.choose(c, op.Counts.Bytes(int(elt)))
	if err != nil {
		return err
	}
	c.algo, c.seg = ch.Algorithm, int(ch.Segment)
	algo := algorithms[op.Coll.ID]
	if algo == nil {
		return errUnsupported(op.Coll.Name)
	}
	if err := algo(r, c); err != nil {
		return err
	}
	if c.algo != "" {
		return r.logChoice(c, ch) // after the call, which every rank finished
	}
	return nil
}

// algorithms is the host backend's implementation of each collective.
var algorithms = map[bench.ID]func(*rank, call) error{
	bench.AllReduce:     (*rank).allReduce,
	bench.AllGather:     (*rank).allGather,
	bench.ReduceScatter: (*rank).reduceScatter,
	bench.AllToAll:      (*rank).allToAll,
	bench.Broadcast:     (*rank).broadcast,
	bench.Reduce:        (*rank).reduce,
	bench.SendRecv:      (*rank).sendRecv,
	bench.Gather:        (*rank).gather,
	bench.Scatter:       (*rank).scatter,
	bench.Pipeline:      (*rank).pipeline,
	bench.AllToAllV:     (*rank).allToAllV,
	bench.HyperCube:     (*rank).hyperCube,
}

type errUnsupported string

func (e errUnsupported) Error() string { return "the host backend has no algorithm for " + string(e) }

// scratchBuf returns a reusable buffer of n bytes.
func (r *rank) scratchBuf(n int) []byte {
	if cap(r.scratch) < n {
		r.scratch = make([]byte, n)
	}
	return r.scratch[:n]
}

// segBuf returns one of two reusable buffers of a call's segment.
func (r *rank) segBuf(i, seg int) []byte {
	if cap(r.segs[i]) < seg {
		r.segs[i] = make([]byte, seg)
	}
	return r.segs[i][:seg]
}

// sendAsync writes b to peer in the background; the returned channel yields
// the write's error once it is done.
func (r *rank) sendAsync(peer int, b []byte) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := r.conns[peer].Write(b)
		done <- err
	}()
	return done
}

// recvFull reads exactly len(b) bytes from peer.
func (r *rank) recvFull(peer int, b []byte) error {
	_, err := io.ReadFull(r.conns[peer], b)
	return err
}

// inlineSend is the largest message exchange (and a small all-to-all)
// writes from the rank's own goroutine before it reads, instead of from
// a goroutine started for the write: for small messages a goroutine and a
// channel per message cost as much as the bytes. A rank's own limit is
// lower where its sockets hold less (inlineLimit).
const inlineSend = 64 << 10

// inlineLimit is the largest message a rank may write before it reads
// over conns: inlineSend, or a quarter of the smallest buffer its links
// have (linkBuffer). A write waits once the bytes its peer has not read
// fill the buffers; if every rank of a cycle waited so, each would hold
// more than one message unread by the next, that is be ahead of it by two
// messages or more, which around a cycle of ranks in step is impossible,
// provided two messages fit a buffer. Larger messages are written from a
// goroutine of their own, while the rank reads.
func inlineLimit(conns []link) int {
	limit := inlineSend
	for _, c := range conns {
		if c != nil {
			limit = min(limit, linkBuffer(c)/4)
		}
	}
	return limit
}

// exchange sends out to one peer while receiving in from another.
func (r *rank) exchange(to int, out []byte, from int, in []byte) error {
	if len(out) <= r.inline {
		if _, err := r.conns[to].Write(out); err != nil {
			return err
		}
		return r.recvFull(from, in)
	}
	done := r.sendAsync(to, out)
	rerr := r.recvFull(from, in)
	if serr := <-done; serr != nil {
		return serr
	}
	return rerr
}

// transform is the operator's scaling of a rank's own contribution: the
// PreMulSum scalar, or 1/n for a float average.
func (r *rank) transform(c call) (float64, bool) {
	switch {
	case c.RedOp == numeric.MulSum:
		return numeric.PremulScalar(r.id), true
	case c.RedOp == numeric.Avg && c.Type.IsFloat():
		return numeric.AvgScalar(r.n), true
	}
	return 0, false
}

// contribute writes this rank's (scaled) contribution own into dst.
func (r *rank) contribute(c call, dst, own []byte) {
	if s, ok := r.transform(c); ok {
		numeric.Premul(c.Type, dst, own, s)
		return
	}
	copy(dst, own)
}

// finish applies the operator's last step to a fully reduced chunk.
func (r *rank) finish(c call, b []byte) {
	if c.RedOp == numeric.Avg && !c.Type.IsFloat() {
		numeric.DivideInt(c.Type, b, r.n)
	}
}

// recvReduce receives len(dst) bytes from peer and stores own ⊕ received
// into dst, a segment at a time so the combine overlaps the transfer.
func (r *rank) recvReduce(c call, peer int, dst, own []byte) error {
	seg := r.segBuf(0, c.seg)
	for off := 0; off < len(dst); off += c.seg {
		end := min(off+c.seg, len(dst))
		buf := seg[:end-off]
		if err := r.recvFull(peer, buf); err != nil {
			return err
		}
		r.contribute(c, dst[off:end], own[off:end])
		numeric.Combine(c.Type, c.RedOp, dst[off:end], buf)
	}
	return nil
}
