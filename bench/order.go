package bench

import (
	"math"
	"math/bits"

	"github.com/collbench/collbench/bench/numeric"
)

// orderExponent is the widest binary exponent an order-revealing input
// takes (2^±orderExponent). Values a few binades apart, with random signs
// and every mantissa bit set at random, round differently in most
// partial sums, whatever the type: four ranks' sums taken in two orders
// differ in 40 to 44 % of elements at ±2 binades, in 7 to 33 % at ±20,
// where the smaller terms are absorbed whole.
const orderExponent = 2

// fillOrder writes rank's order-revealing input for global elements
// start… into out: values whose reduction depends on the order it is
// taken in, unlike the checked inputs, which reduce exactly in any
// order. Each is a function of the seed, the rank and the element only,
// so element i has the same inputs in a call of any size. Floats take
// every mantissa bit the type has, a random sign and, for a sum or
// average, an exponent within orderExponent binades (fewer where the
// ranks' sum would come near the type's largest value); for a product,
// magnitudes from 1 to 1.25. Integers wrap, so their reductions are exact
// in any order and never show one.
func (p Pattern) fillOrder(rank int, start int64, out []byte) {
	t := p.Type
	n := len(out) / t.Size()
	if !t.IsFloat() {
		for i := 0; i < n; i++ {
			numeric.PutBits(t, out, i, p.hash(rank, start+int64(i)))
		}
		return
	}
	spread := orderSpread(t, p.NRanks)
	for i := 0; i < n; i++ {
		h := p.hash(rank, start+int64(i))
		frac := float64(h>>11) / (1 << 53) // [0, 1)
		var v float64
		if p.Op == numeric.Prod {
			v = 1 + frac/4 // a product of n stays below 1.25^n
		} else {
			v = math.Ldexp(1+frac, int(h%uint64(2*spread+1))-spread)
		}
		if h>>63 == 1 {
			v = -v
		}
		numeric.PutFloat(t, out, i, v)
	}
}

// orderSpread is the exponent range of t's order-revealing inputs on n
// ranks: orderExponent, narrowed so that n values of the largest
// magnitude still sum to a finite value with room to spare.
func orderSpread(t numeric.DataType, n int) int {
	room := t.MaxPow2() - 2 - bits.Len(uint(max(n, 1)))
	return max(0, min(orderExponent, room))
}

// orderSeed is the seed of a case's order-revealing inputs: its type,
// operator and root only, so that every size, placement, configuration
// and run of the case reduces the same inputs element by element.
func orderSeed(op Op) uint64 {
	return mix64(uint64(op.Type)<<32 ^ uint64(op.RedOp)<<16 ^ uint64(op.Root+1))
}

// Kept is one rank's output of a bitwise check's reference call, handed
// to Options.Reference: the case it answers, the rank, the run cycle (-N)
// from 0, and the bytes, good only until the hook returns.
type Kept struct {
	Op     Op
	Rank   int
	Cycle  int
	Output []byte
}
