package audit

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/collbench/collbench/audit/kept"
	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/numeric"
	"github.com/collbench/collbench/document"
)

// keepCall keeps one all-reduce's outputs of count float32 elements for
// ranks, each rank's element i from value(rank, i), into dir.
func keepCall(t *testing.T, dir string, ranks int, count int64, inPlace bool, value func(rank int, i int64) float32) {
	t.Helper()
	ar, _ := bench.LookupCollective("allreduce")
	op := bench.Op{Coll: ar, Type: numeric.Float32, RedOp: numeric.Sum, Root: -1, InPlace: inPlace, Counts: ar.Counts(count, 4, ranks)}
	keep := kept.Keep(dir, false)
	for r := 0; r < ranks; r++ {
		out := make([]byte, 4*count)
		for i := int64(0); i < count; i++ {
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(value(r, i)))
		}
		if err := keep(bench.Kept{Op: op, Rank: r, Output: out}); err != nil {
			t.Fatal(err)
		}
	}
}

func smooth(rank int, i int64) float32 { return 1.5 + float32(i%97) + float32(rank)/8 }

// A bit flipped at a known rank, element and bit of one case is found
// there and only there, with its distance in ULPs; the other placement
// and every other rank compare equal. Across processes the first
// difference is the lowest rank's.
func TestCompareFindsAnInjectedFlip(t *testing.T) {
	const ranks, count = 4, 5000
	a, b := t.TempDir(), t.TempDir()
	for _, inPlace := range []bool{false, true} {
		keepCall(t, a, ranks, count, inPlace, smooth)
		keepCall(t, b, ranks, count, inPlace, func(r int, i int64) float32 {
			v := smooth(r, i)
			if !inPlace && (r == 2 && i == 4321 || r == 3 && i == 7) {
				v = math.Float32frombits(math.Float32bits(v) ^ 1<<13)
			}
			return v
		})
	}
	found, err := compareDir(document.AuditFresh, "own choice", "its first run", b, a, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 2*ranks {
		t.Fatalf("%d comparisons, want %d (4 ranks × 2 placements)", len(found), 2*ranks)
	}
	checks := merge(found)
	if len(checks) != 2 {
		t.Fatalf("%d checks, want one per placement: %+v", len(checks), checks)
	}
	for _, c := range checks {
		if c.InPlace {
			if c.Differs() || c.First != nil {
				t.Errorf("in place: %+v, want the same bits", c)
			}
			continue
		}
		want := document.AuditFirst{Rank: 2, Element: 4321, Bit: 13, ULPs: 1 << 13}
		if c.First == nil || *c.First != want || c.Elements != 2 || c.Bits != 2 || c.MaxULPs != 1<<13 || c.Size != 4*count || c.Count != count {
			t.Errorf("out of place: %+v first %+v, want first %+v, 2 elements and 2 bits over the ranks", c, c.First, want)
		}
	}
}

// Across sizes, element i of the larger call is held against element i
// of the next smaller one: the first elements that differ are found, the
// elements past the smaller call's end are not compared, and a size
// with no smaller one is held against nothing.
func TestCompareAcrossSizes(t *testing.T) {
	dir := t.TempDir()
	keepCall(t, dir, 2, 1000, false, smooth)
	keepCall(t, dir, 2, 4000, false, func(r int, i int64) float32 {
		if r == 1 && i == 999 {
			return math.Nextafter32(smooth(r, i), 100)
		}
		return smooth(r, i) + float32(i/1000)*1000 // from 1000 on, not compared
	})
	found, err := compareDir(document.AuditSizes, "own choice", "the next smaller size", dir, "", true)
	if err != nil {
		t.Fatal(err)
	}
	checks := merge(found)
	if len(checks) != 1 {
		t.Fatalf("%d checks, want the one pair of sizes: %+v", len(checks), checks)
	}
	c := checks[0]
	want := document.AuditFirst{Rank: 1, Element: 999, Bit: 0, ULPs: 1}
	if c.First == nil || *c.First != want || c.Elements != 1 || c.Size != 16000 || c.AgainstSize != 4000 || c.Count != 1000 {
		t.Errorf("%+v first %+v, want first %+v, sizes 16000 against 4000 over 1000 elements", c, c.First, want)
	}
}
