package host

import "github.com/collbench/collbench/bench/numeric"

// doublingMax is the largest call (bytes of the all-reduce buffer, or of
// the whole all-gather or reduce-scatter output or input) that groups of a
// power-of-two size run by recursive doubling or halving: log2(n) steps
// instead of the ring's n−1 (2(n−1) for all-reduce). Below it each step's
// latency, not its bytes, sets the time; above it the ring, which moves
// fewer bytes per rank, is faster (scripts/cpu-peers.sh, docs/performance.md).
const doublingMax = 256 << 10

// allReduceDoubling exchanges the whole partial result with the rank
// mask apart, for mask = 1, 2, 4…, and folds in what arrives. Both sides of
// a pair combine the same two values, so every rank ends with the same
// bits.
func (r *rank) allReduceDoubling(c call) error {
	acc := c.out
	r.contribute(c, acc, c.in)
	got := r.scratchBuf(len(acc))
	for mask := 1; mask < r.n; mask <<= 1 {
		peer := r.id ^ mask
		if err := r.exchange(peer, acc, peer, got); err != nil {
			return err
		}
		numeric.Combine(c.Type, c.RedOp, acc, got)
	}
	r.finish(c, acc)
	return nil
}

// allGatherDoubling doubles the block of chunks a rank holds at every
// step: with the rank mask apart it swaps its block (the chunks of the
// ranks that share its bits above mask) for the partner's, which lands
// right beside it in rank order.
func (r *rank) allGatherDoubling(c call) error {
	chunk := len(c.in)
	copy(c.out[r.id*chunk:(r.id+1)*chunk], c.in)
	for mask := 1; mask < r.n; mask <<= 1 {
		peer := r.id ^ mask
		mine, theirs := r.id&^(mask-1), peer&^(mask-1)
		if err := r.exchange(peer, c.out[mine*chunk:(mine+mask)*chunk], peer, c.out[theirs*chunk:(theirs+mask)*chunk]); err != nil {
			return err
		}
	}
	return nil
}

// reduceScatterDoubling halves the range of chunks a rank is responsible
// for at every step: with the rank mask apart (mask = n/2, n/4 … 1) it
// sends its partial sums of the half the partner keeps and folds the
// partner's partial sums of its own half into them.
func (r *rank) reduceScatterDoubling(c call) error {
	chunk := len(c.out)
	acc := r.scratchBuf(2 * len(c.in))
	sums, got := acc[:len(c.in)], acc[len(c.in):]
	r.contribute(c, sums, c.in)
	lo := 0 // the first chunk of the range this rank still reduces
	for mask := r.n / 2; mask >= 1; mask >>= 1 {
		peer := r.id ^ mask
		keep, give := lo, lo+mask
		if r.id&mask != 0 {
			keep, give = lo+mask, lo
		}
		in := got[keep*chunk : (keep+mask)*chunk]
		if err := r.exchange(peer, sums[give*chunk:(give+mask)*chunk], peer, in); err != nil {
			return err
		}
		numeric.Combine(c.Type, c.RedOp, sums[keep*chunk:(keep+mask)*chunk], in)
		lo = keep
	}
	copy(c.out, sums[lo*chunk:(lo+1)*chunk])
	r.finish(c, c.out)
	return nil
}
