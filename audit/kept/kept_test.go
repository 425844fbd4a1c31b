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

// CompareFiles finds the first differing element and bit of two files,
// counts every differing element and bit, gives the distance in ULPs at
// the first and at most, compares only the first n elements, and reads
// across its chunks.
func TestCompareFiles(t *testing.T) {
	dir := t.TempDir()
	const count = 3*chunkElements + 5
	ref, got := make([]byte, 4*count), make([]byte, 4*count)
	for i := 0; i < count; i++ {
		v := math.Float32bits(1.5 + float32(i%97))
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
	ar, _ := bench.LookupCollective("allreduce")
	op := bench.Op{Coll: ar, Type: numeric.Float32, RedOp: numeric.Sum, Root: -1, Counts: ar.Counts(10, 4, 1)}
	first := []byte(strings.Repeat("\x01", 40))
	if err := Keep(dir, false)(bench.Kept{Op: op, Rank: 0, Output: first}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, Case{Coll: "allreduce", Type: "float", Op: "sum", Root: -1, Size: 40, Count: 10}.File())
	err := Keep(dir, false)(bench.Kept{Op: op, Rank: 0, Output: make([]byte, 40)})
	if err == nil || !strings.Contains(err.Error(), "is there already") {
		t.Errorf("keeping into a used folder: %v", err)
	}
	if after, err := os.ReadFile(path); err != nil || string(after) != string(first) {
		t.Errorf("the kept file was overwritten or not kept where its case names it: %v", err)
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
