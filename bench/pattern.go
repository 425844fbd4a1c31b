package bench

import (
	"math"

	"github.com/collbench/collbench/bench/numeric"
)

// Pattern generates verification data: each rank's input is a function of
// (seed, rank, element index), chosen so that reducing the inputs of all
// ranks in any order gives one exact, predictable result.
//
// Integer types wrap, so any values combine exactly. For float types every
// value is a small integer (or ±1/±2 for products) and, per element, only as
// many ranks contribute a non-identity value as keeps every partial result
// exactly representable; the contributing ranks rotate with the index so
// every rank's data flows through the reduction. A float average has at most
// two contributors, so its single rounding is the same in any order.
type Pattern struct {
	Type   numeric.DataType
	Op     numeric.RedOp // numeric.NoOp for collectives that only move data
	NRanks int
	Seed   uint64
	// Order makes the inputs show the order of a reduction instead of
	// reducing exactly (fillOrder); such inputs are compared bit for
	// bit, never checked against a value.
	Order bool
}

// valueCap bounds float values so patterns stay readable when dumped.
const valueCap = 1024

func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

func (p Pattern) hash(rank int, j int64) uint64 {
	return mix64(mix64(p.Seed^uint64(rank)<<48) ^ uint64(j))
}

// sumShape returns how many ranks contribute per element and the largest
// magnitude each may contribute.
func (p Pattern) sumShape() (k int, a float64) {
	m := p.Type.ExactInt()
	scale := 1.0
	if p.Op == numeric.MulSum {
		scale = 2
	}
	k = p.NRanks
	if limit := int(m / scale); k > limit {
		k = limit
	}
	if p.Op == numeric.Avg && k > 2 {
		k = 2
	}
	a = math.Min(math.Floor(m/(float64(k)*scale)), valueCap)
	return k, a
}

// contributes reports whether rank supplies a non-identity value at j.
func (p Pattern) contributes(rank int, j int64, k int) bool {
	return (int64(rank)+j)%int64(p.NRanks) < int64(k)
}

// Fill writes rank's input for global element indices start, start+1, …
// into out (len(out)/elt elements).
func (p Pattern) Fill(rank int, start int64, out []byte) {
	if p.Order {
		p.fillOrder(rank, start, out)
		return
	}
	t := p.Type
	n := len(out) / t.Size()
	if !t.IsFloat() {
		for i := 0; i < n; i++ {
			h := p.hash(rank, start+int64(i))
			if p.Op == numeric.Prod {
				v := int64(h%6) - 3 // small non-zero factors keep products alive
				if v >= 0 {
					v++
				}
				h = uint64(v)
			}
			numeric.PutBits(t, out, i, h)
		}
		return
	}
	codes := narrowTable(t)
	switch p.Op {
	case numeric.Sum, numeric.Avg, numeric.MulSum:
		k, a := p.sumShape()
		for i := 0; i < n; i++ {
			j := start + int64(i)
			v := 0.0
			if p.contributes(rank, j, k) {
				v = float64(int64(p.hash(rank, j)%uint64(2*a+1))) - a
			}
			if codes != nil {
				putNarrow(t, codes, out, i, v)
			} else {
				numeric.PutFloat(t, out, i, v)
			}
		}
	case numeric.Prod:
		k := min(p.NRanks, t.MaxPow2())
		for i := 0; i < n; i++ {
			j := start + int64(i)
			v := 1.0
			if p.contributes(rank, j, k) {
				h := p.hash(rank, j)
				v = float64(1 + h&1)
				if h&2 != 0 {
					v = -v
				}
			}
			if codes != nil {
				putNarrow(t, codes, out, i, v)
			} else {
				numeric.PutFloat(t, out, i, v)
			}
		}
	default: // max, min and plain data movement: any exact values will do
		a := math.Min(t.ExactInt(), valueCap)
		for i := 0; i < n; i++ {
			h := p.hash(rank, start+int64(i))
			if codes != nil {
				putNarrow(t, codes, out, i, float64(int64(h%uint64(2*a+1)))-a)
			} else {
				numeric.PutFloat(t, out, i, float64(int64(h%uint64(2*a+1)))-a)
			}
		}
	}
}

// Reduce writes the reduction over all ranks of elements start… into out,
// as the library must compute it: each rank's input pre-multiplied where the
// operator asks (MulSum, float Avg), combined, then divided for an integer
// Avg.
func (p Pattern) Reduce(start int64, out []byte) {
	tmp := make([]byte, len(out))
	for r := 0; r < p.NRanks; r++ {
		dst := tmp
		if r == 0 {
			dst = out
		}
		p.Fill(r, start, dst)
		if s, ok := p.premul(r); ok {
			numeric.Premul(p.Type, dst, dst, s)
		}
		if r > 0 {
			numeric.Combine(p.Type, p.Op, out, tmp)
		}
	}
	if p.Op == numeric.Avg && !p.Type.IsFloat() {
		numeric.DivideInt(p.Type, out, p.NRanks)
	}
}

// premul is the factor rank applies to its own input before combining.
func (p Pattern) premul(rank int) (float64, bool) {
	switch {
	case p.Op == numeric.MulSum:
		return numeric.PremulScalar(rank), true
	case p.Op == numeric.Avg && p.Type.IsFloat():
		return numeric.AvgScalar(p.NRanks), true
	}
	return 0, false
}

// Tolerance is how far (in units in the last place, comparing bit patterns)
// a result may be from the expected one: 2 for a float average, whose
// pre-multiplication by 1/n may round differently, and 0 for everything else.
func (p Pattern) Tolerance() uint64 {
	if p.Op == numeric.Avg && p.Type.IsFloat() {
		return 2
	}
	return 0
}

// CountWrong compares got with want element by element, bitwise, and
// returns how many elements differ by more than the tolerance.
func (p Pattern) CountWrong(got, want []byte) int64 {
	t, tol := p.Type, p.Tolerance()
	var wrong int64
	for i, n := 0, len(want)/t.Size(); i < n; i++ {
		a, b := numeric.GetBits(t, got, i), numeric.GetBits(t, want, i)
		d := a - b
		if b > a {
			d = b - a
		}
		if d > tol {
			wrong++
		}
	}
	return wrong
}

// expectation is what a Collective's expect rule sees: the pattern and the
// call's shape from one rank's point of view.
type expectation struct {
	pat        Pattern
	rank, root int
	nranks     int
	param      int64 // count argument, elements
	elt        int
	traffic    *Traffic
}

func (e expectation) reduced(start int64, out []byte) { e.pat.Reduce(start, out) }

func (e expectation) input(rank int, start int64, out []byte) { e.pat.Fill(rank, start, out) }

// concat is every rank's input laid end to end (all-gather, gather).
func (e expectation) concat(out []byte) {
	chunk := int(e.param) * e.elt
	for r := 0; r < e.nranks; r++ {
		e.pat.Fill(r, 0, out[r*chunk:(r+1)*chunk])
	}
}

// transpose is chunk `rank` of every rank's input, in rank order (all-to-all).
func (e expectation) transpose(out []byte) {
	chunk := int(e.param) * e.elt
	for r := 0; r < e.nranks; r++ {
		e.pat.Fill(r, int64(e.rank)*e.param, out[r*chunk:(r+1)*chunk])
	}
}

// uneven is every rank's share for this rank, in rank order, each taken
// from where it starts in its sender's input (all-to-all-v). The rest of
// the buffer, sized for the busiest rank, stays zero.
func (e expectation) uneven(out []byte) {
	clear(out)
	n, elt := e.nranks, int64(e.elt)
	total := e.param * int64(n) * elt
	var at int64
	for src := 0; src < n; src++ {
		b := e.traffic.PeerBytes(src, e.rank, n, total) / elt * elt
		if b == 0 {
			continue
		}
		var start int64 // elements src sends the ranks before this one
		for k := 0; k < e.rank; k++ {
			start += e.traffic.PeerBytes(src, k, n, total) / elt
		}
		e.pat.Fill(src, start, out[at:at+b])
		at += b
	}
}

// Expected computes what rank's receive buffer must hold after the call and
// reports false when that rank's output is not defined (non-root ranks of
// reduce and gather).
func (c *Collective) Expected(p Pattern, counts Counts, rank, root int, out []byte) bool {
	e := expectation{pat: p, rank: rank, root: root, nranks: p.NRanks, param: counts.Param,
		elt: p.Type.Size(), traffic: c.Traffic}
	return c.expect(e, out[:counts.Recv*int64(p.Type.Size())])
}
