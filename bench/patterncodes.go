package bench

import (
	"sync"

	"github.com/collbench/collbench/bench/numeric"
)

// Every float a Pattern writes is an integer in [-valueCap, valueCap] (or
// ±1, ±2 for products). For the 16- and 8-bit floats the general encoder
// (rounding through frexp and ldexp) costs about 50 ns an element, which
// made checking a 64 MiB bf16 or fp8 buffer take seconds; their fills
// look the bit patterns up in a table of those integers, made once per
// type with that same encoder.
var narrowCodes sync.Map // numeric.DataType → []uint64

// narrowTable is the table of narrow float type t, nil for the others.
func narrowTable(t numeric.DataType) []uint64 {
	if t.Size() > 2 {
		return nil
	}
	table, ok := narrowCodes.Load(t)
	if !ok {
		table, _ = narrowCodes.LoadOrStore(t, encodeInts(t))
	}
	return table.([]uint64)
}

// putNarrow stores v as element i of out through codes (t's narrowTable)
// when v is one of its integers, else by the general encoder. Fills call
// it only for the narrow types, so the wide ones keep their inlined
// encoder.
func putNarrow(t numeric.DataType, codes []uint64, out []byte, i int, v float64) {
	if v == float64(int64(v)) && v >= -valueCap && v <= valueCap {
		numeric.PutBits(t, out, i, codes[int(v)+valueCap])
		return
	}
	numeric.PutFloat(t, out, i, v)
}

// encodeInts encodes -valueCap…valueCap in t with the general encoder.
func encodeInts(t numeric.DataType) []uint64 {
	codes := make([]uint64, 2*valueCap+1)
	b := make([]byte, t.Size())
	for v := -valueCap; v <= valueCap; v++ {
		numeric.PutFloat(t, b, 0, float64(v))
		codes[v+valueCap] = numeric.GetBits(t, b, 0)
	}
	return codes
}
