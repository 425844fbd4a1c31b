package bench

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/bits"

	"github.com/collbench/collbench/bench/numeric"
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
	// FirstULPs is how far apart the first differing element's two
	// values are, in steps of its type (numeric.ULPs); MaxULPs the
	// farthest of any differing element.
	FirstULPs, MaxULPs uint64
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

// MaxULPs is the farthest apart, in steps of t, that any element of got
// lies from the same element of ref (numeric.ULPs); 0 when they repeat.
func MaxULPs(t numeric.DataType, got, ref []byte) uint64 {
	var most uint64
	n := min(len(got), len(ref)) / t.Size()
	for i := 0; i < n; i++ {
		most = max(most, numeric.ULPs(t, got, ref, i))
	}
	return most
}

// bitwise runs the bitwise check of one placement: call (nil from a
// process that calls nothing) makes one call from the placement's inputs
// and hands each local rank's output to its function, in local order, the
// bytes good only until it returns. Every process joins the same
// agreements, one set per repeat. Only the reference is kept: each
// repeat is compared as it is read.
func (e *Engine) bitwise(ctx context.Context, op Op, call func(each func(local, rank int, out []byte)) error) (*Bitwise, error) {
	b := &Bitwise{Repeats: e.Opts.Bitwise, FirstRepeat: -1, FirstRank: -1, FirstElement: -1, FirstBit: -1}
	var ref [][]byte
	if call != nil {
		var kept error
		err := call(func(_, rank int, out []byte) {
			ref = append(ref, bytes.Clone(out))
			if e.Opts.Reference != nil && kept == nil {
				kept = e.Opts.Reference(Kept{Op: op, Rank: rank, Cycle: e.cycle, Output: out})
			}
		})
		if err == nil && kept != nil {
			err = fmt.Errorf("keeping the reference output: %w", kept)
		}
		if err != nil {
			return nil, fmt.Errorf("the bitwise check's reference call: %w", err)
		}
	}
	eltBits := int64(op.Type.Size()) * 8
	none := math.Inf(1)
	for r := 0; r < b.Repeats; r++ {
		var elts, nbits, firstULPs, maxULPs float64
		firstRank, firstBit := none, none
		if call != nil {
			err := call(func(local, rank int, out []byte) {
				d := CompareBits(out, ref[local], op.Type.Size())
				elts, nbits = elts+float64(d.Elements), nbits+float64(d.Bits)
				if d.First < 0 {
					return
				}
				maxULPs = max(maxULPs, float64(MaxULPs(op.Type, out, ref[local])))
				if float64(rank) < firstRank || float64(rank) == firstRank && float64(d.First) < firstBit {
					firstRank, firstBit = float64(rank), float64(d.First)
					firstULPs = float64(numeric.ULPs(op.Type, out, ref[local], int(d.First/eltBits)))
				}
			})
			if err != nil {
				return nil, fmt.Errorf("the bitwise check's repeat %d: %w", r, err)
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
		if firstBit != first[0] {
			firstULPs = 0
		}
		ulps, err := e.peers().AllReduce(ctx, []float64{firstULPs, maxULPs}, ReduceMax)
		if err != nil {
			return nil, err
		}
		b.Elements += int64(tot[0])
		b.Bits += int64(tot[1])
		b.MaxULPs = max(b.MaxULPs, uint64(ulps[1]))
		if b.FirstRepeat < 0 && tot[1] > 0 {
			at := int64(first[0])
			b.FirstRepeat, b.FirstRank, b.FirstElement, b.FirstBit = int64(r), int64(lowest[0]), at/eltBits, at%eltBits
			b.FirstULPs = uint64(ulps[0])
		}
	}
	return b, nil
}

// outputs makes one call of op from the inputs of seed and hands every
// local rank's output to each, read into the engine's scratch: the
// bitwise check's call.
func (e *Engine) outputs(ctx context.Context, op Op, seed uint64, each func(local, rank int, out []byte)) error {
	pat := e.pattern(op, seed)
	if e.Opts.OrderInputs {
		pat.Seed, pat.Order = orderSeed(op), true
	}
	if err := e.fillPattern(op, pat); err != nil {
		return err
	}
	if err := e.launch(ctx, Batch{Op: op, Iters: 1, Agg: 1}, op.Footprint()); err != nil {
		return err
	}
	recvBytes := op.Counts.Recv * int64(op.Type.Size())
	for l, d := range e.Comm.Devices() {
		_, _, recvOff := op.Regions(d.GroupRank)
		e.scratch.got = grow(e.scratch.got, recvBytes)
		if err := e.Comm.Read(l, RecvBuf, recvOff, e.scratch.got); err != nil {
			return fmt.Errorf("reading result of rank %d: %w", d.Rank, err)
		}
		each(l, d.Rank, e.scratch.got)
	}
	return nil
}
