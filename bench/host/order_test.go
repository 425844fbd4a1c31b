package host

import (
	"context"
	"encoding/binary"
	"math"
	"testing"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/numeric"
)

// orderInput is rank's input at element i: a float32 whose magnitude
// spans 2^±20, so that a sum's bits depend on the order it is taken in.
func orderInput(rank, i int) float32 {
	h := uint64(rank)*0x9e3779b97f4a7c15 ^ uint64(i)*0xbf58476d1ce4e5b9
	h ^= h >> 31
	h *= 0x94d049bb133111eb
	h ^= h >> 29
	mant := 1 + float64(h&0xffffff)/float64(1<<24)
	exp := int(h>>24&0x3f) - 20
	if h>>40&1 == 1 {
		mant = -mant
	}
	return float32(math.Ldexp(mant, exp))
}

// sumAllReduce runs one all-reduce of count float32 elements of
// orderInput on n ranks with algo and returns rank 0's output.
func sumAllReduce(t *testing.T, n, count int, algo string) []float32 {
	t.Helper()
	ar, _ := bench.LookupCollective("allreduce")
	comm := openTuned(t, n, int64(count)*4, Tuning{Algorithm: algo, Segment: 1024})
	op := bench.Op{Coll: ar, Type: numeric.Float32, RedOp: numeric.Sum, Root: -1, Counts: ar.Counts(int64(count), 4, n)}
	for l := 0; l < n; l++ {
		in := make([]byte, 4*count)
		for i := range count {
			binary.LittleEndian.PutUint32(in[4*i:], math.Float32bits(orderInput(l, i)))
		}
		if err := comm.Write(l, bench.SendBuf, 0, in); err != nil {
			t.Fatal(err)
		}
	}
	if err := comm.Enqueue(bench.Batch{Op: op, Iters: 1, Agg: 1}); err != nil {
		t.Fatal(err)
	}
	if err := comm.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	raw := make([]byte, 4*count)
	if err := comm.Read(0, bench.RecvBuf, 0, raw); err != nil {
		t.Fatal(err)
	}
	out := make([]float32, count)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return out
}

// The ring's order of combining an element follows its chunk, and the
// chunks follow the size: the same element from the same inputs comes out
// with other bits in a call of another size (the chunked-prefill case).
// Recursive doubling combines whole messages in pairs, ((x0+x1)+(x2+x3)),
// and the pipelined chain in a line, x0+(x3+(x2+x1)): each in one order
// for every element at every size, so their results are those sums, bit
// for bit, and repeat across sizes, though not each other's.
func TestAllReduceOrderAcrossSizes(t *testing.T) {
	const n, small, large = 4, 3000, 4096
	x := func(r, i int) float32 { return orderInput(r, i) }
	for _, c := range []struct {
		algo string
		sum  func(i int) float32 // nil: the order follows the size
	}{
		{AlgoRing, nil},
		{AlgoDoubling, func(i int) float32 { return (x(0, i) + x(1, i)) + (x(2, i) + x(3, i)) }},
		{AlgoPipeline, func(i int) float32 { return x(0, i) + (x(3, i) + (x(2, i) + x(1, i))) }},
	} {
		a, b := sumAllReduce(t, n, small, c.algo), sumAllReduce(t, n, large, c.algo)
		differ := 0
		for i := range a {
			if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
				differ++
			}
		}
		t.Logf("%s: %d of %d elements differ between calls of %d and %d elements", c.algo, differ, small, small, large)
		if c.sum == nil {
			if differ == 0 {
				t.Errorf("%s: the first %d elements came out the same at %d and %d elements; the inputs do not show the order", c.algo, small, small, large)
			}
			continue
		}
		if differ != 0 {
			t.Errorf("%s: %d of %d elements differ between %d and %d elements", c.algo, differ, small, small, large)
		}
		for i, got := range b {
			if want := c.sum(i); math.Float32bits(got) != math.Float32bits(want) {
				t.Fatalf("%s: element %d is %g, want %g", c.algo, i, got, want)
			}
		}
	}
}
