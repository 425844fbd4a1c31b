package bench

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/bits"
)

// Bitwise is what a placement's bitwise check found (nccl-tests' -B): a
// reference call, then Repeats more calls from the same inputs, each
// output compared bit for bit with the reference's on every rank. It
// answers whether a configuration repeats, not whether it is right: the
// inputs are the checked inputs, which reduce exactly in any order.
type Bitwise struct {
	Repeats int
	// Elements and Bits that differ, summed over every rank and repeat.
	Elements, Bits int64
	// The first difference: the repeat (from 0), the rank (the lowest
	// with one), the element and the bit in it (from the least
	// significant); -1 when every output repeated.
	FirstRepeat, FirstRank, FirstElement, FirstBit int64
}

// Repeated says whether every repeat gave the reference's bits.
func (b *Bitwise) Repeated() bool { return b == nil || b.Bits == 0 }

// BitDiff is one output compared with its reference: how many elements
// and bits differ, and the first differing bit counted from the start of
// the output (element × bits per element + bit), -1 when none.
type BitDiff struct {
	Elements, Bits int64
	First          int64
}

// CompareBits compares got with ref element by element, eltSize bytes
// each in little-endian order, as nccl-tests' strict comparison does:
// an element differs when any bit does, and a bit is numbered from the
// least significant of its element.
func CompareBits(got, ref []byte, eltSize int) BitDiff {
	d := BitDiff{First: -1}
	if bytes.Equal(got, ref) || eltSize <= 0 {
		return d
	}
	n := min(len(got), len(ref)) / eltSize
	for i := 0; i < n; i++ {
		a, b := got[i*eltSize:(i+1)*eltSize], ref[i*eltSize:(i+1)*eltSize]
		if bytes.Equal(a, b) {
			continue
		}
		d.Elements++
		for k := range a {
			x := a[k] ^ b[k]
			if x == 0 {
				continue
			}
			d.Bits += int64(bits.OnesCount8(x))
			if d.First < 0 { // elements in order, bytes from the least significant
				d.First = int64(i*eltSize*8 + k*8 + bits.TrailingZeros8(x))
			}
		}
	}
	return d
}

// rankOutput is one local rank's output of a call, by global rank.
type rankOutput struct {
	rank int
	out  []byte
}

// bitwise runs the bitwise check of one placement: call (nil from a
// process that calls nothing) makes one call from the placement's inputs
// and returns each local rank's output. Every process joins the same
// agreements, one set per repeat.
func (e *Engine) bitwise(ctx context.Context, op Op, call func() ([]rankOutput, error)) (*Bitwise, error) {
	b := &Bitwise{Repeats: e.Opts.Bitwise, FirstRepeat: -1, FirstRank: -1, FirstElement: -1, FirstBit: -1}
	var ref []rankOutput
	if call != nil {
		var err error
		if ref, err = call(); err != nil {
			return nil, fmt.Errorf("the bitwise check's reference call: %w", err)
		}
	}
	eltBits := int64(op.Type.Size()) * 8
	none := math.Inf(1)
	for r := 0; r < b.Repeats; r++ {
		var elts, nbits float64
		firstRank, firstBit := none, none
		if call != nil {
			got, err := call()
			if err != nil {
				return nil, fmt.Errorf("the bitwise check's repeat %d: %w", r, err)
			}
			for i, g := range got {
				d := CompareBits(g.out, ref[i].out, op.Type.Size())
				elts, nbits = elts+float64(d.Elements), nbits+float64(d.Bits)
				if d.First >= 0 && (float64(g.rank) < firstRank || float64(g.rank) == firstRank && float64(d.First) < firstBit) {
					firstRank, firstBit = float64(g.rank), float64(d.First)
				}
			}
		}
		tot, err := e.peers().AllReduce(ctx, []float64{elts, nbits}, ReduceSum)
		if err != nil {
			return nil, err
		}
		lowest, err := e.peers().AllReduce(ctx, []float64{firstRank}, ReduceMin)
		if err != nil {
			return nil, err
		}
		if firstRank != lowest[0] {
			firstBit = none
		}
		first, err := e.peers().AllReduce(ctx, []float64{firstBit}, ReduceMin)
		if err != nil {
			return nil, err
		}
		b.Elements += int64(tot[0])
		b.Bits += int64(tot[1])
		if b.FirstRepeat < 0 && tot[1] > 0 {
			at := int64(first[0])
			b.FirstRepeat, b.FirstRank, b.FirstElement, b.FirstBit = int64(r), int64(lowest[0]), at/eltBits, at%eltBits
		}
	}
	return b, nil
}

// outputs makes one call of op from the inputs of seed and reads every
// local rank's output: the bitwise check's call.
func (e *Engine) outputs(ctx context.Context, op Op, seed uint64) ([]rankOutput, error) {
	if err := e.fill(op, seed); err != nil {
		return nil, err
	}
	if err := e.launch(ctx, Batch{Op: op, Iters: 1, Agg: 1}, op.Footprint()); err != nil {
		return nil, err
	}
	recvBytes := op.Counts.Recv * int64(op.Type.Size())
	var outs []rankOutput
	for l, d := range e.Comm.Devices() {
		_, _, recvOff := op.Regions(d.GroupRank)
		out := make([]byte, recvBytes)
		if err := e.Comm.Read(l, RecvBuf, recvOff, out); err != nil {
			return nil, fmt.Errorf("reading result of rank %d: %w", d.Rank, err)
		}
		outs = append(outs, rankOutput{d.Rank, out})
	}
	return outs, nil
}
