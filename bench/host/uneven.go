package host

import "fmt"

// allToAllV is allToAll with the shares of the call's traffic pattern:
// pairwise, at step s a rank sends its share for rank+s and receives
// rank-s's share for it. Shares sit in rank order in both buffers, as the
// grouped sends and receives of nccl-tests' alltoallv lay them out.
func (r *rank) allToAllV(c call) error {
	t, n, elt := c.Coll.Traffic, r.n, int64(c.elt)
	total := c.Counts.Total(c.elt, n)
	share := func(from, to int) int64 { return t.PeerBytesAt(c.index, from, to, n, total) / elt * elt }
	sendAt, recvAt := make([]int64, n+1), make([]int64, n+1)
	for p := 0; p < n; p++ {
		sendAt[p+1] = sendAt[p] + share(r.id, p)
		recvAt[p+1] = recvAt[p] + share(p, r.id)
	}
	src := c.in
	if c.InPlace { // the output overwrites shares not yet sent
		src = r.scratchBuf(int(sendAt[n]))
		copy(src, c.in)
	}
	out := func(p int) []byte { return c.out[recvAt[p]:recvAt[p+1]] }
	in := func(p int) []byte { return src[sendAt[p]:sendAt[p+1]] }
	copy(out(r.id), in(r.id))
	for s := 1; s < n; s++ {
		to, from := r.mod(r.id+s), r.mod(r.id-s)
		if err := r.exchange(to, in(to), from, out(from)); err != nil {
			return err
		}
	}
	return nil
}

// hyperCube gathers by recursive doubling, as nccl-tests' hypercube: a
// rank copies its block into place, then for mask = 1, 2, 4 … swaps the
// mask blocks it holds with rank^mask, which holds the other half of
// their common 2·mask-block span.
func (r *rank) hyperCube(c call) error {
	if r.n&(r.n-1) != 0 {
		return fmt.Errorf("a hypercube needs a power-of-two number of ranks (got %d)", r.n)
	}
	chunk := len(c.in)
	blocks := func(first, count int) []byte { return c.out[first*chunk : (first+count)*chunk] }
	if own := blocks(r.id, 1); &own[0] != &c.in[0] {
		copy(own, c.in)
	}
	for mask := 1; mask < r.n; mask <<= 1 {
		mine := r.id &^ (mask - 1)
		peer := r.id ^ mask
		if err := r.exchange(peer, blocks(mine, mask), peer, blocks(mine^mask, mask)); err != nil {
			return err
		}
	}
	return nil
}
