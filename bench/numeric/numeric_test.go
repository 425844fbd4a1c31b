package numeric

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestMinifloatKnownValues(t *testing.T) {
	tests := []struct {
		name   string
		encode func(float64) uint32
		decode func(uint32) float64
		v      float64
		bits   uint32
	}{
		{"half one", h(FloatToHalf), hd(HalfToFloat), 1, 0x3c00},
		{"half -2", h(FloatToHalf), hd(HalfToFloat), -2, 0xc000},
		{"half max", h(FloatToHalf), hd(HalfToFloat), 65504, 0x7bff},
		{"half min subnormal", h(FloatToHalf), hd(HalfToFloat), math.Ldexp(1, -24), 0x0001},
		{"half 1/3 rounds to even", h(FloatToHalf), hd(HalfToFloat), 0.333251953125, 0x3555},
		{"bf16 one", h(FloatToBF16), hd(BF16ToFloat), 1, 0x3f80},
		{"bf16 256", h(FloatToBF16), hd(BF16ToFloat), 256, 0x4380},
		{"e4m3 one", b(FloatToE4M3), bd(E4M3ToFloat), 1, 0x38},
		{"e4m3 max", b(FloatToE4M3), bd(E4M3ToFloat), 448, 0x7e},
		{"e5m2 one", b(FloatToE5M2), bd(E5M2ToFloat), 1, 0x3c},
		{"e5m2 max", b(FloatToE5M2), bd(E5M2ToFloat), 57344, 0x7b},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.encode(tt.v); got != tt.bits {
				t.Errorf("encode(%g) = %#x, want %#x", tt.v, got, tt.bits)
			}
			if got := tt.decode(tt.bits); got != tt.v {
				t.Errorf("decode(%#x) = %g, want %g", tt.bits, got, tt.v)
			}
		})
	}
}

func TestMinifloatOverflow(t *testing.T) {
	if got := FloatToHalf(1e6); got != 0x7c00 {
		t.Errorf("half overflow = %#x, want +Inf 0x7c00", got)
	}
	if got := FloatToE4M3(1000); got != 0x7e {
		t.Errorf("e4m3 overflow = %#x, want saturation to 448 (0x7e)", got)
	}
	if got := FloatToE5M2(-1e6); got != 0xfb {
		t.Errorf("e5m2 overflow = %#x, want saturation to -57344 (0xfb)", got)
	}
}

// Every finite pattern must survive decode then encode unchanged.
func TestMinifloatRoundTrip(t *testing.T) {
	for _, f := range []struct {
		name string
		m    minifloat
		bits int
	}{{"half", fmtHalf, 16}, {"bf16", fmtBF16, 16}, {"e4m3", fmtE4M3, 8}, {"e5m2", fmtE5M2, 8}} {
		for i := 0; i < 1<<f.bits; i++ {
			v := f.m.decode(uint32(i))
			if math.IsNaN(v) || math.IsInf(v, 0) || (v == 0 && i != 0) {
				continue
			}
			if got := f.m.encode(v); got != uint32(i) {
				t.Fatalf("%s: pattern %#x decodes to %g, which encodes to %#x", f.name, i, v, got)
			}
		}
	}
}

func TestExactIntIsExact(t *testing.T) {
	for _, dt := range AllTypes() {
		if !dt.IsFloat() {
			continue
		}
		m := dt.ExactInt()
		buf := make([]byte, dt.Size())
		for _, v := range []float64{m, m - 1, -m, 1, -1} {
			PutFloat(dt, buf, 0, v)
			if got := GetFloat(dt, buf, 0); got != v {
				t.Errorf("%v: %g stored as %g", dt, v, got)
			}
		}
	}
}

func TestCombine(t *testing.T) {
	for _, dt := range AllTypes() {
		for _, op := range []RedOp{Sum, Prod, Max, Min} {
			a, b := make([]byte, 2*dt.Size()), make([]byte, 2*dt.Size())
			put := func(buf []byte, i int, v float64) {
				if dt.IsFloat() {
					PutFloat(dt, buf, i, v)
				} else {
					PutBits(dt, buf, i, uint64(int64(v)))
				}
			}
			put(a, 0, 3)
			put(a, 1, 2)
			put(b, 0, 2)
			put(b, 1, 4)
			Combine(dt, op, a, b)
			want := map[RedOp][2]float64{Sum: {5, 6}, Prod: {6, 8}, Max: {3, 4}, Min: {2, 2}}[op]
			for i, w := range want {
				var got float64
				if dt.IsFloat() {
					got = GetFloat(dt, a, i)
				} else {
					got = float64(GetBits(dt, a, i))
				}
				if got != w {
					t.Errorf("%v %v element %d = %g, want %g", dt, op, i, got, w)
				}
			}
		}
	}
}

func TestPremulAndDivide(t *testing.T) {
	buf := make([]byte, 4)
	PutFloat(Float32, buf, 0, 3)
	Premul(Float32, buf, buf, 2)
	if got := GetFloat(Float32, buf, 0); got != 6 {
		t.Errorf("premul = %g, want 6", got)
	}
	ib := make([]byte, 4)
	PutBits(Int32, ib, 0, uint64(0xfffffff9)) // -7
	DivideInt(Int32, ib, 2)
	if got := int32(GetBits(Int32, ib, 0)); got != -3 {
		t.Errorf("-7/2 = %d, want -3 (truncation toward zero)", got)
	}
}

func TestParseNames(t *testing.T) {
	for _, dt := range AllTypes() {
		if got, err := ParseDataType(dt.String()); err != nil || got != dt {
			t.Errorf("ParseDataType(%q) = %v, %v", dt.String(), got, err)
		}
	}
	for _, op := range AllOps() {
		if got, err := ParseRedOp(op.String()); err != nil || got != op {
			t.Errorf("ParseRedOp(%q) = %v, %v", op.String(), got, err)
		}
	}
	if _, err := ParseDataType("float128"); err == nil {
		t.Error("ParseDataType accepted float128")
	}
	if _, err := ParseRedOp("xor"); err == nil {
		t.Error("ParseRedOp accepted xor")
	}
}

func h(f func(float64) uint16) func(float64) uint32 {
	return func(v float64) uint32 { return uint32(f(v)) }
}
func hd(f func(uint16) float64) func(uint32) float64 {
	return func(b uint32) float64 { return f(uint16(b)) }
}
func b(f func(float64) uint8) func(float64) uint32 {
	return func(v float64) uint32 { return uint32(f(v)) }
}
func bd(f func(uint8) float64) func(uint32) float64 {
	return func(x uint32) float64 { return f(uint8(x)) }
}

// The bit encoder gives what the arithmetic one gives: at every value of
// each format, at every midpoint between neighbours and one float64 ulp
// either side of it (where ties to even decide), at the specials, and at
// a million random float64s across and beyond each format's range.
func TestEncodeMatchesArithmetic(t *testing.T) {
	formats := map[string]minifloat{"half": fmtHalf, "bf16": fmtBF16, "e4m3": fmtE4M3, "e5m2": fmtE5M2}
	rng := rand.New(rand.NewPCG(1, 2))
	for name, f := range formats {
		check := func(v float64) {
			if got, want := f.encode(v), f.encodeByArithmetic(v); got != want {
				t.Fatalf("%s: encode(%g) = %#x, by arithmetic %#x", name, v, got, want)
			}
		}
		for _, v := range []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(),
			math.SmallestNonzeroFloat64, math.MaxFloat64, -math.MaxFloat64, f.maxFinite() * 2} {
			check(v)
		}
		n := uint32(1) << (1 + f.expBits + f.manBits)
		var prev float64
		for b := uint32(0); b < n/2; b++ { // the non-negative patterns, in order
			v := f.decode(b)
			if math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			for _, x := range []float64{v, (prev + v) / 2} {
				for _, y := range []float64{x, math.Nextafter(x, 0), math.Nextafter(x, math.Inf(1))} {
					check(y)
					check(-y)
				}
			}
			prev = v
		}
		for range 1_000_000 {
			check(math.Ldexp(rng.Float64()+0.5, rng.IntN(80)-50) * float64(1-2*rng.IntN(2)))
		}
	}
}

// BenchmarkEncode is one narrow-float conversion, as every reduction and
// check of those types does per element.
func BenchmarkEncode(b *testing.B) {
	vals := make([]float64, 4096)
	for i := range vals {
		vals[i] = float64(i%1000) * 0.37
	}
	for _, bc := range []struct {
		name string
		f    func(float64) uint32
	}{{"bf16", fmtBF16.encode}, {"bf16-arithmetic", fmtBF16.encodeByArithmetic}, {"e4m3", fmtE4M3.encode}, {"e4m3-arithmetic", fmtE4M3.encodeByArithmetic}} {
		b.Run(bc.name, func(b *testing.B) {
			var sink uint32
			for b.Loop() {
				for _, v := range vals {
					sink += bc.f(v)
				}
			}
			_ = sink
		})
	}
}

func TestULPs(t *testing.T) {
	f32 := func(v ...float32) []byte {
		b := make([]byte, 4*len(v))
		for i, x := range v {
			PutFloat(Float32, b, i, float64(x))
		}
		return b
	}
	one := math.Float32frombits(0x3f800000)
	next := math.Float32frombits(0x3f800001)
	for _, c := range []struct {
		name string
		t    DataType
		a, b []byte
		want uint64
	}{
		{"same", Float32, f32(1.5), f32(1.5), 0},
		{"last bit", Float32, f32(one), f32(next), 1},
		{"across zero", Float32, f32(math.Float32frombits(1)), f32(math.Float32frombits(0x80000001)), 3},
		{"minus zero", Float32, f32(0), f32(float32(math.Copysign(0, -1))), 1},
		{"a power of two apart", Float32, f32(1), f32(2), 1 << 23},
		{"half", Float16, []byte{0x00, 0x3c}, []byte{0x02, 0x3c}, 2},
		{"int8 wraps no further than its range", Int8, []byte{0x80}, []byte{0x7f}, 255},
		{"uint64", Uint64, []byte{0, 0, 0, 0, 0, 0, 0, 0}, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, math.MaxUint64},
		{"int64 extremes", Int64, []byte{0, 0, 0, 0, 0, 0, 0, 0x80}, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}, math.MaxUint64},
	} {
		if got := ULPs(c.t, c.a, c.b, 0); got != c.want {
			t.Errorf("%s: %d ULPs, want %d", c.name, got, c.want)
		}
		if got := ULPs(c.t, c.b, c.a, 0); got != c.want {
			t.Errorf("%s, swapped: %d ULPs, want %d", c.name, got, c.want)
		}
	}
}
