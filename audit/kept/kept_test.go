package kept

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/numeric"
)

// keepCall keeps one all-reduce's outputs of count float32 elements for
// ranks, each rank's element i from value(rank, i), into dir.
func keepCall(t *testing.T, dir string, ranks int, count int64, inPlace bool, value func(rank int, i int64) float32) {
	t.Helper()
	ar, _ := bench.LookupCollective("allreduce")
	op := bench.Op{Coll: ar, Type: numeric.Float32, RedOp: numeric.Sum, Root: -1, InPlace: inPlace, Counts: ar.Counts(count, 4, ranks)}
	keep := Keep(dir)
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

// CompareFiles finds the first differing element and bit of two files,
// counts every differing element and bit, gives the distance in ULPs at
// the first and at most, compares only the first n elements, and reads
// across its chunks.
func TestCompareFiles(t *testing.T) {
	dir := t.TempDir()
	const count = 3*chunkElements + 5
	ref, got := make([]byte, 4*count), make([]byte, 4*count)
	for i := 0; i < count; i++ {
		v := math.Float32bits(smooth(0, int64(i)))
		binary.LittleEndian.PutUint32(ref[4*i:], v)
		binary.LittleEndian.PutUint32(got[4*i:], v)
	}
	flip := func(elem, bit int) { got[4*elem+bit/8] ^= 1 << (bit % 8) }
	flip(chunkElements+3, 13) // in the second chunk
	flip(2*chunkElements, 2)
	flip(count-1, 0) // past n below
	a, b := filepath.Join(dir, "got"), filepath.Join(dir, "ref")
	if err := os.WriteFile(a, got, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, ref, 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := CompareFiles(a, b, numeric.Float32, count-1)
	if err != nil {
		t.Fatal(err)
	}
	want := Diff{Elements: 2, Bits: 2, FirstElement: chunkElements + 3, FirstBit: 13, FirstULPs: 1 << 13, MaxULPs: 1 << 13}
	if d != want {
		t.Errorf("%+v, want %+v", d, want)
	}
	if d, err := CompareFiles(b, b, numeric.Float32, count); err != nil || d.Differs() || d.FirstElement != -1 {
		t.Errorf("a file against itself: %+v, %v", d, err)
	}
	if _, err := CompareFiles(a, b, numeric.Float32, count+1); err == nil {
		t.Error("comparing past the end of the files gave no error")
	}
}

// A folder keeps one run's outputs: a file already there is refused,
// never overwritten.
func TestKeepNeverOverwrites(t *testing.T) {
	dir := t.TempDir()
	keepCall(t, dir, 1, 10, false, smooth)
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("%d files", len(entries))
	}
	path := filepath.Join(dir, entries[0].Name())
	before, _ := os.ReadFile(path)
	ar, _ := bench.LookupCollective("allreduce")
	op := bench.Op{Coll: ar, Type: numeric.Float32, RedOp: numeric.Sum, Root: -1, Counts: ar.Counts(10, 4, 1)}
	err := Keep(dir)(bench.Kept{Op: op, Rank: 0, Output: make([]byte, 40)})
	if err == nil || !strings.Contains(err.Error(), "is there already") {
		t.Errorf("keeping into a used folder: %v", err)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Error("the kept file was overwritten")
	}
}

// A file name read back is the case that wrote it; any other name is
// not a case.
func FuzzParseCase(f *testing.F) {
	f.Add(Case{Coll: "allreduce", Type: "float", Op: "sum", Root: -1, Size: 4096, Count: 1024, Rank: 3}.File())
	f.Add(Case{Coll: "reduce", Type: "bfloat16", Op: "prod", Root: 2, InPlace: true, Size: 2, Count: 1}.File())
	f.Add("allreduce.float.sum.root-1.out-of-place.4096B.1024.rank3")
	f.Add("a.b.c.root1.in-place.1B.1.rank1.out")
	f.Add("a.b.c.root+1.in-place.01B.1.rank1.out")
	f.Fuzz(func(t *testing.T, name string) {
		c, ok := Parse(name)
		if ok && c.File() != name {
			t.Errorf("%q reads as %+v, which names %q", name, c, c.File())
		}
	})
}
