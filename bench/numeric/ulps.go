package numeric

import "math/bits"

// ULPs is how many representable values of t lie between element i of a
// and element i of b, counted on the type's own number line: for a float
// the steps between the two encodings when the values are laid out in
// order (−0 and +0 one step apart, as their bits differ), for an integer
// the difference of the values. It says how far apart two results that
// differ are: 1 is the last bit of rounding, millions a different sum.
func ULPs(t DataType, a, b []byte, i int) uint64 {
	x, y := GetBits(t, a, i), GetBits(t, b, i)
	width := uint(t.Size() * 8)
	switch {
	case t.IsFloat():
		return distance(ordered(x, width), ordered(y, width))
	case t == Int8 || t == Int32 || t == Int64:
		return distance(signExtend(x, width), signExtend(y, width))
	}
	if x > y {
		return x - y
	}
	return y - x
}

// ordered maps a sign-and-magnitude encoding of width bits onto a line
// where a larger integer is a larger value: negatives below −0 below +0.
func ordered(u uint64, width uint) int64 {
	sign := uint64(1) << (width - 1)
	mag := int64(u &^ sign)
	if u&sign != 0 {
		return -mag - 1
	}
	return mag
}

// signExtend reads the low width bits of u as a two's complement number.
func signExtend(u uint64, width uint) int64 {
	shift := 64 - width
	return int64(u<<shift) >> shift
}

// distance is |x − y|, exact over the whole int64 range.
func distance(x, y int64) uint64 {
	if x < y {
		x, y = y, x
	}
	d, _ := bits.Sub64(uint64(x), uint64(y), 0)
	return d
}
