package bench

import (
	"bytes"
	"math/rand"
	"testing"

	"github.com/collbench/collbench/bench/numeric"
)

// Reducing the ranks' inputs in any order must give the bytes Reduce gives:
// that is what lets a result be compared bitwise whatever algorithm ran.
func TestPatternOrderIndependent(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for _, dt := range numeric.AllTypes() {
		for _, op := range numeric.AllOps() {
			for _, n := range []int{2, 3, 8, 17} {
				p := Pattern{Type: dt, Op: op, NRanks: n, Seed: 7}
				const elems = 257
				want := make([]byte, elems*dt.Size())
				p.Reduce(0, want)

				order := rng.Perm(n)
				got := make([]byte, len(want))
				tmp := make([]byte, len(want))
				for i, r := range order {
					dst := tmp
					if i == 0 {
						dst = got
					}
					p.Fill(r, 0, dst)
					if s, ok := p.premul(r); ok {
						numeric.Premul(dt, dst, dst, s)
					}
					if i > 0 {
						numeric.Combine(dt, op, got, tmp)
					}
				}
				if op == numeric.Avg && !dt.IsFloat() {
					numeric.DivideInt(dt, got, n)
				}
				if w := p.CountWrong(got, want); w != 0 {
					t.Errorf("%v %v n=%d order %v: %d elements differ", dt, op, n, order, w)
				}
			}
		}
	}
}

func TestPatternVariesByRankAndSeed(t *testing.T) {
	p := Pattern{Type: numeric.Float32, Op: numeric.Sum, NRanks: 4, Seed: 1}
	a, b := make([]byte, 1024), make([]byte, 1024)
	p.Fill(0, 0, a)
	p.Fill(1, 0, b)
	if bytes.Equal(a, b) {
		t.Error("ranks 0 and 1 got the same input")
	}
	p.Seed = 2
	p.Fill(0, 0, b)
	if bytes.Equal(a, b) {
		t.Error("seeds 1 and 2 gave the same input")
	}
}

func TestCountWrong(t *testing.T) {
	p := Pattern{Type: numeric.Float32, Op: numeric.Sum, NRanks: 2}
	want := make([]byte, 400)
	p.Reduce(0, want)
	got := bytes.Clone(want)
	if w := p.CountWrong(got, want); w != 0 {
		t.Fatalf("identical buffers: %d wrong", w)
	}
	got[4*10] ^= 1 // one ULP off in element 10
	got[4*20+3] ^= 0x80
	if w := p.CountWrong(got, want); w != 2 {
		t.Errorf("two corrupted elements: %d wrong", w)
	}
	avg := Pattern{Type: numeric.Float32, Op: numeric.Avg, NRanks: 3}
	avg.Reduce(0, want)
	got = bytes.Clone(want)
	numeric.PutBits(numeric.Float32, got, 5, numeric.GetBits(numeric.Float32, want, 5)+2)
	if w := avg.CountWrong(got, want); w != 0 {
		t.Errorf("float avg within 2 ULP counted wrong (%d)", w)
	}
	numeric.PutBits(numeric.Float32, got, 5, numeric.GetBits(numeric.Float32, want, 5)+3)
	if w := avg.CountWrong(got, want); w != 1 {
		t.Errorf("float avg 3 ULP off: %d wrong, want 1", w)
	}
}
