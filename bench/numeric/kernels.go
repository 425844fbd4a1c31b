package numeric

import (
	"encoding/binary"
	"math"
	"unsafe"
)

type native interface {
	~int8 | ~uint8 | ~int32 | ~uint32 | ~int64 | ~uint64 | ~float32 | ~float64
}

// view reinterprets a byte slice as a slice of T. Buffers come from make or
// from sub-slicing at multiples of the element size, so they are aligned.
func view[T native](b []byte) []T {
	var z T
	n := len(b) / int(unsafe.Sizeof(z))
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), n)
}

func combineNative[T native](op RedOp, d, s []T) {
	s = s[:len(d)]
	switch op {
	case Sum, Avg, MulSum:
		for i := range d {
			d[i] += s[i]
		}
	case Prod:
		for i := range d {
			d[i] *= s[i]
		}
	case Max:
		for i := range d {
			if s[i] > d[i] {
				d[i] = s[i]
			}
		}
	case Min:
		for i := range d {
			if s[i] < d[i] {
				d[i] = s[i]
			}
		}
	}
}

func combineFloat(op RedOp, a, b float64) float64 {
	switch op {
	case Prod:
		return a * b
	case Max:
		return math.Max(a, b)
	case Min:
		return math.Min(a, b)
	}
	return a + b
}

// codec converts the narrow float types to and from float64.
type codec struct {
	get func(b []byte, i int) float64
	put func(b []byte, i int, v float64)
}

func narrowCodec(t DataType) codec {
	switch t {
	case Float16:
		return codec{
			func(b []byte, i int) float64 { return HalfToFloat(binary.LittleEndian.Uint16(b[2*i:])) },
			func(b []byte, i int, v float64) { binary.LittleEndian.PutUint16(b[2*i:], FloatToHalf(v)) },
		}
	case Bfloat16:
		return codec{
			func(b []byte, i int) float64 { return BF16ToFloat(binary.LittleEndian.Uint16(b[2*i:])) },
			func(b []byte, i int, v float64) { binary.LittleEndian.PutUint16(b[2*i:], FloatToBF16(v)) },
		}
	case Float8e4m3:
		return codec{
			func(b []byte, i int) float64 { return E4M3ToFloat(b[i]) },
			func(b []byte, i int, v float64) { b[i] = FloatToE4M3(v) },
		}
	case Float8e5m2:
		return codec{
			func(b []byte, i int) float64 { return E5M2ToFloat(b[i]) },
			func(b []byte, i int, v float64) { b[i] = FloatToE5M2(v) },
		}
	}
	return codec{}
}

// Combine folds src into dst element-wise: dst[i] = dst[i] op src[i]. Sum,
// Avg and MulSum all add here; their scaling is Premul's and DivideInt's job.
// Narrow floats are combined in float64 and rounded once, which is what a
// GPU does for one pairwise reduction.
func Combine(t DataType, op RedOp, dst, src []byte) {
	switch t {
	case Int8:
		combineNative(op, view[int8](dst), view[int8](src))
	case Uint8:
		combineNative(op, view[uint8](dst), view[uint8](src))
	case Int32:
		combineNative(op, view[int32](dst), view[int32](src))
	case Uint32:
		combineNative(op, view[uint32](dst), view[uint32](src))
	case Int64:
		combineNative(op, view[int64](dst), view[int64](src))
	case Uint64:
		combineNative(op, view[uint64](dst), view[uint64](src))
	case Float32:
		combineNative(op, view[float32](dst), view[float32](src))
	case Float64:
		combineNative(op, view[float64](dst), view[float64](src))
	default:
		c := narrowCodec(t)
		for i, n := 0, len(dst)/t.Size(); i < n; i++ {
			c.put(dst, i, combineFloat(op, c.get(dst, i), c.get(src, i)))
		}
	}
}

func premulNative[T native](d, s []T, k T) {
	s = s[:len(d)]
	for i := range d {
		d[i] = s[i] * k
	}
}

// ScalarFor rounds a scalar to the element type, as NCCL receives the
// PreMulSum scalar (and the 1/n of a float average) in the type itself.
func ScalarFor(t DataType, v float64) float64 {
	switch t {
	case Float32:
		return float64(float32(v))
	case Float16, Bfloat16, Float8e4m3, Float8e5m2:
		b := make([]byte, t.Size())
		c := narrowCodec(t)
		c.put(b, 0, v)
		return c.get(b, 0)
	}
	return v
}

// Premul writes src·scalar into dst, rounded to the type. Integer types
// multiply by the integer part of the scalar, wrapping like C arithmetic.
func Premul(t DataType, dst, src []byte, scalar float64) {
	k := ScalarFor(t, scalar)
	switch t {
	case Int8:
		premulNative(view[int8](dst), view[int8](src), int8(k))
	case Uint8:
		premulNative(view[uint8](dst), view[uint8](src), uint8(k))
	case Int32:
		premulNative(view[int32](dst), view[int32](src), int32(k))
	case Uint32:
		premulNative(view[uint32](dst), view[uint32](src), uint32(k))
	case Int64:
		premulNative(view[int64](dst), view[int64](src), int64(k))
	case Uint64:
		premulNative(view[uint64](dst), view[uint64](src), uint64(k))
	case Float32:
		premulNative(view[float32](dst), view[float32](src), float32(k))
	case Float64:
		premulNative(view[float64](dst), view[float64](src), k)
	default:
		c := narrowCodec(t)
		for i, n := 0, len(dst)/t.Size(); i < n; i++ {
			c.put(dst, i, c.get(src, i)*k)
		}
	}
}

func divideNative[T native](d []T, n T) {
	for i := range d {
		d[i] /= n
	}
}

// DivideInt divides every element of an integer buffer by n, truncating
// toward zero: the final step of an integer average.
func DivideInt(t DataType, buf []byte, n int) {
	switch t {
	case Int8:
		divideNative(view[int8](buf), int8(n))
	case Uint8:
		divideNative(view[uint8](buf), uint8(n))
	case Int32:
		divideNative(view[int32](buf), int32(n))
	case Uint32:
		divideNative(view[uint32](buf), uint32(n))
	case Int64:
		divideNative(view[int64](buf), int64(n))
	case Uint64:
		divideNative(view[uint64](buf), uint64(n))
	}
}

// AvgScalar is the factor each rank applies under Avg for a float type.
// NCCL implements a float average as a pre-multiplied sum by 1/n, and an
// integer one as a sum followed by a division (DivideInt).
func AvgScalar(n int) float64 { return 1 / float64(n) }

// PutFloat stores v, rounded to the type, as element i of a float buffer.
func PutFloat(t DataType, b []byte, i int, v float64) {
	switch t {
	case Float32:
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(v)))
	case Float64:
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(v))
	default:
		narrowCodec(t).put(b, i, v)
	}
}

// GetFloat loads element i of a float buffer.
func GetFloat(t DataType, b []byte, i int) float64 {
	switch t {
	case Float32:
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
	case Float64:
		return math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return narrowCodec(t).get(b, i)
}

// PutBits stores the low Size()*8 bits of u as element i.
func PutBits(t DataType, b []byte, i int, u uint64) {
	switch t.Size() {
	case 1:
		b[i] = byte(u)
	case 2:
		binary.LittleEndian.PutUint16(b[2*i:], uint16(u))
	case 4:
		binary.LittleEndian.PutUint32(b[4*i:], uint32(u))
	case 8:
		binary.LittleEndian.PutUint64(b[8*i:], u)
	}
}

// GetBits loads element i as an unsigned bit pattern.
func GetBits(t DataType, b []byte, i int) uint64 {
	switch t.Size() {
	case 1:
		return uint64(b[i])
	case 2:
		return uint64(binary.LittleEndian.Uint16(b[2*i:]))
	case 4:
		return uint64(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return binary.LittleEndian.Uint64(b[8*i:])
}
