package bench

import (
	"encoding/binary"
	"math"
	"testing"
)

// The comparison counts and places differences as nccl-tests' strict
// comparison does (its self-test's cases): an element differs when any
// bit does, and the first bit is numbered from the start of the output,
// least significant first within each element.
func TestCompareBits(t *testing.T) {
	u64 := func(v ...uint64) []byte {
		b := make([]byte, 8*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint64(b[8*i:], x)
		}
		return b
	}
	u32 := func(v ...uint32) []byte {
		b := make([]byte, 4*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint32(b[4*i:], x)
		}
		return b
	}
	zero := make([]byte, 32)
	byte3 := make([]byte, 32)
	byte3[3] = 1 << 2
	half2 := make([]byte, 32)
	binary.LittleEndian.PutUint16(half2[4:], 1<<3|1<<9)
	cases := []struct {
		name     string
		got, ref []byte
		elt      int
		want     BitDiff
	}{
		{"equal", zero, zero, 8, BitDiff{First: -1}},
		{"uint8", byte3, zero, 1, BitDiff{1, 1, 3*8 + 2}},
		{"float16, two bits of one element", half2, zero, 2, BitDiff{1, 2, 2*16 + 3}},
		{"float32, -0 against 0 and a NaN's payload", u32(0x80000000, 0x7fc00001, 0, 0), u32(0, 0x7fc00000, 0, 0), 4, BitDiff{2, 2, 31}},
		{"float64, the sign of the last", u64(0, 0, 0, 1<<63), zero, 8, BitDiff{1, 1, 3*64 + 63}},
		{"two elements, the first counted", u32(0, 0, math.Float32bits(1), math.Float32bits(2)), u32(0, 0, math.Float32bits(1.5), math.Float32bits(2.5)), 4,
			BitDiff{2, 2, 2*32 + 22}},
	}
	for _, c := range cases {
		if got := CompareBits(c.got, c.ref, c.elt); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}
