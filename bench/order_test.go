package bench

import (
	"math"
	"testing"

	"github.com/collbench/collbench/bench/numeric"
)

// Order-revealing inputs: a sum of four ranks' inputs taken in two
// orders differs in a quarter or more of the elements of every float
// type (the checked inputs differ in none); element i has the same input
// whatever the call's size; the largest sum of the ranks stays finite;
// and integers wrap, so that they sum the same in any order.
func TestOrderInputsShowTheOrder(t *testing.T) {
	const n, count = 4, 4096
	for _, typ := range []numeric.DataType{numeric.Float16, numeric.Bfloat16, numeric.Float32, numeric.Float64, numeric.Int32} {
		for _, order := range []bool{true, false} {
			p := Pattern{Type: typ, Op: numeric.Sum, NRanks: n, Seed: 7, Order: order}
			in := make([][]byte, n)
			for r := range in {
				in[r] = make([]byte, count*typ.Size())
				p.Fill(r, 0, in[r])
			}
			left, right := make([]byte, len(in[0])), make([]byte, len(in[0]))
			copy(left, in[0]) // ((x0+x1)+x2)+x3
			for r := 1; r < n; r++ {
				numeric.Combine(typ, numeric.Sum, left, in[r])
			}
			copy(right, in[n-1]) // x0+(x1+(x2+x3)), summed from the last
			for r := n - 2; r >= 0; r-- {
				numeric.Combine(typ, numeric.Sum, right, in[r])
			}
			differ := 0
			for i := 0; i < count; i++ {
				if numeric.GetBits(typ, left, i) != numeric.GetBits(typ, right, i) {
					differ++
				}
				if typ.IsFloat() && math.IsInf(numeric.GetFloat(typ, left, i), 0) {
					t.Fatalf("%v: element %d sums to infinity", typ, i)
				}
			}
			switch {
			case !typ.IsFloat() && differ != 0:
				t.Errorf("%v, order %t: %d of %d integer sums differ by order", typ, order, differ, count)
			case typ.IsFloat() && order && differ < count/4:
				t.Errorf("%v: only %d of %d sums differ by order; the inputs hide it", typ, differ, count)
			case typ.IsFloat() && !order && differ != 0:
				t.Errorf("%v: %d of %d checked sums differ by order; they must be exact", typ, differ, count)
			}
			if order {
				t.Logf("%v: %d of %d sums differ by order", typ, differ, count)
			}
		}
		p := Pattern{Type: typ, Op: numeric.Sum, NRanks: n, Seed: 7, Order: true}
		whole, tail := make([]byte, count*typ.Size()), make([]byte, 100*typ.Size())
		p.Fill(1, 0, whole)
		p.Fill(1, 1000, tail)
		if string(tail) != string(whole[1000*typ.Size():1100*typ.Size()]) {
			t.Errorf("%v: elements 1000… differ when filled from 1000", typ)
		}
	}
}

// The seed of a case's order-revealing inputs follows its type,
// operator and root, never its size or placement.
func TestOrderSeed(t *testing.T) {
	ar, _ := LookupCollective("allreduce")
	a := Op{Coll: ar, Type: numeric.Float32, RedOp: numeric.Sum, Root: -1, Counts: ar.Counts(10, 4, 2)}
	b := a
	b.Counts, b.InPlace = ar.Counts(1000, 4, 2), true
	if orderSeed(a) != orderSeed(b) {
		t.Error("the seed follows the size or the placement")
	}
	for _, c := range []Op{{Type: numeric.Float64, RedOp: numeric.Sum, Root: -1}, {Type: numeric.Float32, RedOp: numeric.Max, Root: -1}, {Type: numeric.Float32, RedOp: numeric.Sum, Root: 0}} {
		if orderSeed(c) == orderSeed(a) {
			t.Errorf("%+v has the seed of %+v", c, a)
		}
	}
}
