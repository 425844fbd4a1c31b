package bench

import (
	"testing"

	"github.com/collbench/collbench/bench/numeric"
)

// The table gives, for every integer a fill can write, the bits the
// general encoder gives, and values off the table (halves, integers past
// valueCap) still go through the encoder; every narrow float a fill stores
// goes through putNarrow, so a fill writes what it wrote before the table.
func TestNarrowCodesMatchTheEncoder(t *testing.T) {
	b := make([]byte, 8)
	for _, ty := range numeric.AllTypes() {
		if !ty.IsFloat() {
			continue
		}
		codes, out := narrowTable(ty), make([]byte, ty.Size())
		if (codes != nil) != (ty.Size() <= 2) {
			t.Fatalf("%s: table %v for a %d-byte type", ty, codes != nil, ty.Size())
		}
		for v := -valueCap - 2; v <= valueCap+2; v++ {
			for _, x := range []float64{float64(v), float64(v) + 0.5} {
				if codes != nil {
					putNarrow(ty, codes, out, 0, x)
				} else {
					numeric.PutFloat(ty, out, 0, x)
				}
				numeric.PutFloat(ty, b, 0, x)
				if got, want := numeric.GetBits(ty, out, 0), numeric.GetBits(ty, b, 0); got != want {
					t.Fatalf("%s %v: table %#x, encoder %#x", ty, x, got, want)
				}
			}
		}
	}
}

// BenchmarkPatternFill is the fill a check runs per rank and placement.
func BenchmarkPatternFill(b *testing.B) {
	for _, ty := range []numeric.DataType{numeric.Float32, numeric.Bfloat16, numeric.Float16, numeric.Float8e4m3} {
		b.Run(ty.String(), func(b *testing.B) {
			p := Pattern{Type: ty, Op: numeric.Sum, NRanks: 4, Seed: 1}
			out := make([]byte, 1<<20)
			b.SetBytes(int64(len(out)))
			for b.Loop() {
				p.Fill(0, 0, out)
			}
		})
	}
}
