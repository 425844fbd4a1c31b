package host

import (
	"sync"

	"github.com/collbench/collbench/bench/numeric"
)

func (r *rank) mod(i int) int { return ((i % r.n) + r.n) % r.n }

// elementChunk returns chunk i of n of a buffer of count elements, split at
// element boundaries as evenly as possible.
func elementChunk(b []byte, elt, n, i int) []byte {
	count := len(b) / elt
	lo, hi := i*count/n, (i+1)*count/n
	return b[lo*elt : hi*elt]
}

// allReduce is a ring reduce-scatter followed by a ring all-gather, working
// in the output buffer. At reduce-scatter step s a rank forwards the chunk
// it completed at step s-1 and folds its own share into the one arriving, so
// after n-1 steps chunk r is complete on rank r.
func (r *rank) allReduce(c call) error {
	switch c.algo {
	case AlgoDoubling:
		return r.allReduceDoubling(c)
	case AlgoPipeline:
		return r.allReduceChain(c)
	}
	part := func(b []byte, i int) []byte { return elementChunk(b, c.elt, r.n, r.mod(i)) }
	if r.n == 1 {
		r.contribute(c, c.out, c.in)
		r.finish(c, c.out)
		return nil
	}
	out := part(c.in, r.id-1)
	if _, scaled := r.transform(c); scaled {
		tmp := r.scratchBuf(len(out))
		r.contribute(c, tmp, out)
		out = tmp
	}
	for s := 0; s < r.n-1; s++ {
		if s > 0 {
			out = part(c.out, r.id-s-1)
		}
		done := r.sendAsync(r.next(), out)
		err := r.recvReduce(c, r.prev(), part(c.out, r.id-s-2), part(c.in, r.id-s-2))
		if serr := <-done; err == nil {
			err = serr
		}
		if err != nil {
			return err
		}
	}
	r.finish(c, part(c.out, r.id))
	for s := 0; s < r.n-1; s++ {
		if err := r.exchange(r.next(), part(c.out, r.id-s), r.prev(), part(c.out, r.id-s-1)); err != nil {
			return err
		}
	}
	return nil
}

// allReduceChain is the pipelined chain reduce to rank 0, then the
// pipelined chain broadcast from it. Every element is combined in one
// order, rank 1's first and rank 0's last, whatever the size, the segment
// or the element's place in the message, where the ring's order follows
// the element's chunk, and the chunks follow the size. Unlike recursive
// doubling, which also keeps one order, it runs on any number of ranks;
// it is the slowest (2(n−1) hops one after another).
func (r *rank) allReduceChain(c call) error {
	red := c
	red.Root, red.algo = 0, AlgoPipeline
	if err := r.reduce(red); err != nil {
		return err
	}
	bc := c
	bc.Root, bc.algo, bc.in = 0, AlgoPipeline, c.out
	return r.broadcast(bc)
}

// reduceScatter is the ring reduce-scatter of allReduce with partial
// results kept in two alternating scratch chunks; the last step lands in
// the output.
func (r *rank) reduceScatter(c call) error {
	if c.algo == AlgoDoubling {
		return r.reduceScatterDoubling(c)
	}
	chunk := len(c.out)
	part := func(i int) []byte { i = r.mod(i); return c.in[i*chunk : (i+1)*chunk] }
	if r.n == 1 {
		r.contribute(c, c.out, part(0))
		r.finish(c, c.out)
		return nil
	}
	acc := r.scratchBuf(2 * chunk)
	out := part(r.id - 1)
	if _, scaled := r.transform(c); scaled {
		r.contribute(c, acc[chunk:], out)
		out = acc[chunk:]
	}
	for s := 0; s < r.n-1; s++ {
		dst := acc[(s%2)*chunk : (s%2+1)*chunk]
		if s == r.n-2 {
			dst = c.out
		}
		done := r.sendAsync(r.next(), out)
		err := r.recvReduce(c, r.prev(), dst, part(r.id-s-2))
		if serr := <-done; err == nil {
			err = serr
		}
		if err != nil {
			return err
		}
		out = dst
	}
	r.finish(c, c.out)
	return nil
}

// allGather is a ring: each step passes on the chunk received the step
// before.
func (r *rank) allGather(c call) error {
	if c.algo == AlgoDoubling {
		return r.allGatherDoubling(c)
	}
	chunk := len(c.in)
	part := func(i int) []byte { i = r.mod(i); return c.out[i*chunk : (i+1)*chunk] }
	copy(part(r.id), c.in)
	for s := 0; s < r.n-1; s++ {
		if err := r.exchange(r.next(), part(r.id-s), r.prev(), part(r.id-s-1)); err != nil {
			return err
		}
	}
	return nil
}

// allToAll exchanges with every peer at once, each pair over its own
// connection: one round of latency instead of the n−1 of a pairwise
// schedule.
func (r *rank) allToAll(c call) error {
	chunk := len(c.in) / r.n
	src := c.in
	if c.InPlace { // the output overwrites chunks not yet sent
		src = r.scratchBuf(len(c.in))
		copy(src, c.in)
	}
	part := func(b []byte, i int) []byte { return b[i*chunk : (i+1)*chunk] }
	copy(part(c.out, r.id), part(src, r.id))
	if chunk <= r.inline {
		// Small chunks fit the sockets' buffers (see inlineLimit): write
		// them all, then read them all, with no goroutine per peer.
		for s := 1; s < r.n; s++ {
			if _, err := r.conns[r.mod(r.id+s)].Write(part(src, r.mod(r.id+s))); err != nil {
				return err
			}
		}
		for s := 1; s < r.n; s++ {
			if err := r.recvFull(r.mod(r.id-s), part(c.out, r.mod(r.id-s))); err != nil {
				return err
			}
		}
		return nil
	}
	return r.eachPeer(func(p int) error { return r.exchange(p, part(src, p), p, part(c.out, p)) })
}

// sendRecv sends to the next rank and receives from the previous one.
func (r *rank) sendRecv(c call) error {
	src := c.in
	if c.InPlace {
		src = r.scratchBuf(len(c.in))
		copy(src, c.in)
	}
	if r.n == 1 {
		copy(c.out, src)
		return nil
	}
	return r.exchange(r.next(), src, r.prev(), c.out)
}

// pipeline sends to the next rank and receives from the previous one,
// except that the last rank sends nothing and the first receives nothing.
func (r *rank) pipeline(c call) error {
	switch {
	case r.n == 1:
		return nil // a one-stage pipeline moves nothing, as under NCCL
	case r.id == 0:
		return <-r.sendAsync(1, c.in)
	case r.id == r.n-1:
		return r.recvFull(r.id-1, c.out)
	}
	src := c.in
	if c.InPlace {
		src = r.scratchBuf(len(c.in))
		copy(src, c.in)
	}
	return r.exchange(r.id+1, src, r.id-1, c.out)
}

// forwarder writes segments to a peer in order, in the background, so a
// pipeline stage receives segment k+1 while segment k travels on.
type forwarder struct {
	segs chan []byte
	errc chan error
}

func (r *rank) forwardTo(peer int) *forwarder {
	f := &forwarder{segs: make(chan []byte, 16), errc: make(chan error, 1)}
	go func() {
		var err error
		for s := range f.segs {
			if err == nil {
				_, err = r.conns[peer].Write(s)
			}
		}
		f.errc <- err
	}()
	return f
}

// close waits for the queued segments to be written.
func (f *forwarder) close() error {
	close(f.segs)
	return <-f.errc
}

// broadcast is a pipelined chain from the root: every other rank receives
// segment by segment and passes each on to the next rank.
func (r *rank) broadcast(c call) error {
	if c.algo == AlgoDirect {
		return r.broadcastDirect(c)
	}
	pos := r.mod(r.id - c.Root)
	if pos == 0 {
		copy(c.out, c.in)
		if r.n == 1 {
			return nil
		}
		_, err := r.conns[r.next()].Write(c.in)
		return err
	}
	var fwd *forwarder
	if pos < r.n-1 {
		fwd = r.forwardTo(r.next())
	}
	var err error
	for off := 0; off < len(c.out) && err == nil; off += c.seg {
		seg := c.out[off:min(off+c.seg, len(c.out))]
		if err = r.recvFull(r.prev(), seg); err == nil && fwd != nil {
			fwd.segs <- seg
		}
	}
	if fwd != nil {
		if ferr := fwd.close(); err == nil {
			err = ferr
		}
	}
	return err
}

// reduce is a pipelined chain ending at the root: the rank after the root
// starts, and each rank folds its share into every segment it passes on.
// Ranks other than the root use their receive buffer as the work area (its
// contents are undefined after a reduce, as in NCCL).
func (r *rank) reduce(c call) error {
	if c.algo == AlgoDirect && r.n > 1 {
		return r.reduceDirect(c)
	}
	if r.n == 1 {
		r.contribute(c, c.out, c.in)
		r.finish(c, c.out)
		return nil
	}
	pos := r.mod(r.id - c.Root - 1)
	if pos == 0 {
		out := c.in
		if _, scaled := r.transform(c); scaled {
			out = r.scratchBuf(len(c.in))
			r.contribute(c, out, c.in)
		}
		_, err := r.conns[r.next()].Write(out)
		return err
	}
	var fwd *forwarder
	if r.id != c.Root {
		fwd = r.forwardTo(r.next())
	}
	var err error
	for off := 0; off < len(c.out) && err == nil; off += c.seg {
		end := min(off+c.seg, len(c.out))
		if err = r.recvReduce(c, r.prev(), c.out[off:end], c.in[off:end]); err == nil && fwd != nil {
			fwd.segs <- c.out[off:end]
		}
	}
	if fwd != nil {
		if ferr := fwd.close(); err == nil {
			err = ferr
		}
	}
	if err == nil && r.id == c.Root {
		r.finish(c, c.out)
	}
	return err
}

// eachPeer runs f for every other rank concurrently and returns the first
// error.
func (r *rank) eachPeer(f func(peer int) error) error {
	var wg sync.WaitGroup
	errs := make([]error, r.n)
	for p := 0; p < r.n; p++ {
		if p == r.id {
			continue
		}
		wg.Add(1)
		go func(p int) { defer wg.Done(); errs[p] = f(p) }(p)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// gather: every rank sends its data straight to the root.
func (r *rank) gather(c call) error {
	chunk := len(c.in)
	if r.id != c.Root {
		_, err := r.conns[c.Root].Write(c.in)
		return err
	}
	copy(c.out[r.id*chunk:(r.id+1)*chunk], c.in)
	return r.eachPeer(func(p int) error { return r.recvFull(p, c.out[p*chunk:(p+1)*chunk]) })
}

// scatter: the root sends every rank its chunk directly.
func (r *rank) scatter(c call) error {
	chunk := len(c.out)
	if r.id != c.Root {
		return r.recvFull(c.Root, c.out)
	}
	copy(c.out, c.in[r.id*chunk:(r.id+1)*chunk])
	return r.eachPeer(func(p int) error {
		_, err := r.conns[p].Write(c.in[p*chunk : (p+1)*chunk])
		return err
	})
}

// broadcastDirect sends the whole message from the root to every other
// rank at once: one step of latency instead of the chain's n−1, for n−1
// times the root's bytes.
func (r *rank) broadcastDirect(c call) error {
	if r.id != c.Root {
		return r.recvFull(c.Root, c.out)
	}
	copy(c.out, c.in)
	return r.eachPeer(func(p int) error {
		_, err := r.conns[p].Write(c.in)
		return err
	})
}

// reduceDirect has every other rank send its (scaled) share straight to
// the root, which folds them in rank order, a segment at a time: one step
// of latency instead of the chain's n−1, all the bytes through the root.
func (r *rank) reduceDirect(c call) error {
	if r.id != c.Root {
		out := c.in
		if _, scaled := r.transform(c); scaled {
			out = r.scratchBuf(len(c.in))
			r.contribute(c, out, c.in)
		}
		_, err := r.conns[c.Root].Write(out)
		return err
	}
	r.contribute(c, c.out, c.in)
	seg := r.segBuf(0, c.seg)
	for p := 0; p < r.n; p++ {
		if p == r.id {
			continue
		}
		for off := 0; off < len(c.out); off += c.seg {
			end := min(off+c.seg, len(c.out))
			if err := r.recvFull(p, seg[:end-off]); err != nil {
				return err
			}
			numeric.Combine(c.Type, c.RedOp, c.out[off:end], seg[:end-off])
		}
	}
	r.finish(c, c.out)
	return nil
}
