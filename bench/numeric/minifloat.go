package numeric

import (
	"math"
	"sync"
)

// minifloat is a binary floating-point format narrower than float32: the
// layout of fp16, bf16 and the two fp8 formats, with round-to-nearest-even
// conversion from float64.
type minifloat struct {
	expBits, manBits uint
	// ieee formats reserve the all-ones exponent for Inf and NaN; e4m3 (the
	// "fn" variant CUDA and NCCL use) has no Inf and only one NaN mantissa.
	ieee bool
	// saturate clamps overflow to the largest finite value, as CUDA's
	// __NV_SATFINITE conversion to fp8 does; otherwise overflow gives Inf.
	saturate bool
}

var (
	fmtHalf = minifloat{expBits: 5, manBits: 10, ieee: true}
	fmtBF16 = minifloat{expBits: 8, manBits: 7, ieee: true}
	fmtE4M3 = minifloat{expBits: 4, manBits: 3, saturate: true}
	fmtE5M2 = minifloat{expBits: 5, manBits: 2, ieee: true, saturate: true}
)

func (f minifloat) bias() int { return 1<<(f.expBits-1) - 1 }
func (f minifloat) emin() int { return 1 - f.bias() }
func (f minifloat) expMask() uint32 {
	return 1<<f.expBits - 1
}
func (f minifloat) manMask() uint32 { return 1<<f.manBits - 1 }
func (f minifloat) signBit() uint32 { return 1 << (f.expBits + f.manBits) }

// maxFinite is the largest finite value of the format.
func (f minifloat) maxFinite() float64 {
	if f.ieee {
		emax := int(f.expMask()) - 1 - f.bias()
		return (2 - math.Ldexp(1, -int(f.manBits))) * math.Ldexp(1, emax)
	}
	emax := int(f.expMask()) - f.bias()
	return (2 - math.Ldexp(1, 1-int(f.manBits))) * math.Ldexp(1, emax)
}

func (f minifloat) nan() uint32 {
	if f.ieee {
		return f.expMask()<<f.manBits | 1<<(f.manBits-1)
	}
	return f.expMask()<<f.manBits | f.manMask()
}

// encode rounds v to the nearest representable value (ties to even),
// on v's bits: the reductions of the host backend and every check encode
// each element, and the float arithmetic of reference (its rounding
// through frexp, ldexp and a division) took about 40 ns a value.
func (f minifloat) encode(v float64) uint32 {
	bits := math.Float64bits(v)
	sign := uint32(0)
	if bits>>63 != 0 {
		sign = f.signBit()
	}
	exp64 := int(bits>>52) & 0x7ff
	frac := bits & (1<<52 - 1)
	switch {
	case exp64 == 0x7ff && frac != 0:
		return f.nan()
	case exp64 == 0x7ff:
		return sign | f.overflow(f.maxFinite())
	case exp64 == 0:
		// Zero, or a float64 subnormal: far below half the smallest
		// subnormal of any of these formats.
		return sign
	}
	// v = m·2^(e2) with a 53-bit integer m; the quantum at v's exponent
	// (clamped to the subnormal range) is 2^(e−manBits).
	m := frac | 1<<52
	e2 := exp64 - 1023 - 52
	e := max(exp64-1023, f.emin())
	shift := e - int(f.manBits) - e2 // ≥ 52−manBits > 0
	var n uint64
	if shift < 64 {
		n = m >> shift
		rem, half := m&(1<<shift-1), uint64(1)<<(shift-1)
		if rem > half || (rem == half && n&1 == 1) {
			n++
		}
	}
	if n == 0 {
		return sign
	}
	if n == 1<<(f.manBits+1) { // rounded up into the next binade
		n >>= 1
		e++
	}
	if n < 1<<f.manBits { // subnormal: exponent field 0
		return sign | uint32(n)
	}
	code := uint32(e+f.bias())<<f.manBits | uint32(n)&f.manMask()
	if code > f.maxFiniteCode() {
		return sign | f.overflow(f.maxFinite())
	}
	return sign | code
}

// maxFiniteCode is the encoding of the largest finite value.
func (f minifloat) maxFiniteCode() uint32 {
	if f.ieee {
		return (f.expMask()-1)<<f.manBits | f.manMask()
	}
	return f.expMask()<<f.manBits | (f.manMask() - 1)
}

// encodeByArithmetic is encode by float arithmetic: the reference the bit
// version is tested against.
func (f minifloat) encodeByArithmetic(v float64) uint32 {
	if math.IsNaN(v) {
		return f.nan()
	}
	var sign uint32
	if math.Signbit(v) {
		sign = f.signBit()
		v = -v
	}
	if v == 0 {
		return sign
	}
	maxF := f.maxFinite()
	if math.IsInf(v, 0) {
		return sign | f.overflow(maxF)
	}
	e := f.exponentOf(v)
	if e < f.emin() {
		e = f.emin()
	}
	q := math.Ldexp(1, e-int(f.manBits))
	r := math.RoundToEven(v/q) * q
	if r > maxF {
		return sign | f.overflow(maxF)
	}
	return sign | f.encodeFinite(r)
}

// overflow is the encoding of a magnitude beyond the largest finite value.
func (f minifloat) overflow(maxF float64) uint32 {
	if f.saturate {
		return f.encodeFinite(maxF)
	}
	return f.expMask() << f.manBits
}

// exponentOf returns floor(log2(v)) for v > 0.
func (f minifloat) exponentOf(v float64) int {
	_, x := math.Frexp(v)
	return x - 1
}

// encodeFinite encodes a positive value that is exactly representable.
func (f minifloat) encodeFinite(r float64) uint32 {
	if r == 0 {
		return 0
	}
	if r < math.Ldexp(1, f.emin()) {
		return uint32(r / math.Ldexp(1, f.emin()-int(f.manBits)))
	}
	e := f.exponentOf(r)
	mant := uint32(r/math.Ldexp(1, e-int(f.manBits))) & f.manMask()
	return uint32(e+f.bias())<<f.manBits | mant
}

func (f minifloat) decode(b uint32) float64 {
	sign := 1.0
	if b&f.signBit() != 0 {
		sign = -1
	}
	exp := (b >> f.manBits) & f.expMask()
	mant := b & f.manMask()
	switch {
	case f.ieee && exp == f.expMask():
		if mant != 0 {
			return math.NaN()
		}
		return math.Inf(int(sign))
	case !f.ieee && exp == f.expMask() && mant == f.manMask():
		return math.NaN()
	case exp == 0:
		return sign * float64(mant) * math.Ldexp(1, f.emin()-int(f.manBits))
	}
	return sign * (1 + float64(mant)/float64(uint32(1)<<f.manBits)) * math.Ldexp(1, int(exp)-f.bias())
}

// Decoding tables: every 16-bit or 8-bit pattern decoded once.
var (
	tablesOnce           sync.Once
	halfTable, bf16Table []float64
	e4m3Table, e5m2Table []float64
)

func buildTables() {
	build := func(f minifloat, n int) []float64 {
		t := make([]float64, n)
		for i := range t {
			t[i] = f.decode(uint32(i))
		}
		return t
	}
	halfTable = build(fmtHalf, 1<<16)
	bf16Table = build(fmtBF16, 1<<16)
	e4m3Table = build(fmtE4M3, 1<<8)
	e5m2Table = build(fmtE5M2, 1<<8)
}

// HalfToFloat decodes an IEEE binary16 value.
func HalfToFloat(b uint16) float64 { tablesOnce.Do(buildTables); return halfTable[b] }

// FloatToHalf rounds to the nearest binary16 value (ties to even).
func FloatToHalf(v float64) uint16 { return uint16(fmtHalf.encode(v)) }

// BF16ToFloat decodes a bfloat16 value.
func BF16ToFloat(b uint16) float64 { tablesOnce.Do(buildTables); return bf16Table[b] }

// FloatToBF16 rounds to the nearest bfloat16 value (ties to even).
func FloatToBF16(v float64) uint16 { return uint16(fmtBF16.encode(v)) }

// E4M3ToFloat decodes an fp8 e4m3 value.
func E4M3ToFloat(b uint8) float64 { tablesOnce.Do(buildTables); return e4m3Table[b] }

// FloatToE4M3 rounds to the nearest e4m3 value, saturating at ±448.
func FloatToE4M3(v float64) uint8 { return uint8(fmtE4M3.encode(v)) }

// E5M2ToFloat decodes an fp8 e5m2 value.
func E5M2ToFloat(b uint8) float64 { tablesOnce.Do(buildTables); return e5m2Table[b] }

// FloatToE5M2 rounds to the nearest e5m2 value, saturating at ±57344.
func FloatToE5M2(v float64) uint8 { return uint8(fmtE5M2.encode(v)) }
