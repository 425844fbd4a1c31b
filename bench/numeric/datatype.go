package numeric

import (
	"fmt"
	"strings"
)

// DataType is an element type, numbered as NCCL's ncclDataType_t.
type DataType int

// Values match ncclDataType_t so the GPU backend can pass them through.
const (
	Int8 DataType = iota
	Uint8
	Int32
	Uint32
	Int64
	Uint64
	Float16
	Float32
	Float64
	Bfloat16
	Float8e4m3
	Float8e5m2
)

type typeInfo struct {
	name  string
	size  int
	float bool
	// exactInt is the largest M such that every integer in [-M, M] is
	// representable; for integer types it is unused (they wrap).
	exactInt float64
	// maxPow2 is the largest k such that 2^k is finite in the type.
	maxPow2 int
}

var types = [...]typeInfo{
	Int8:       {"int8", 1, false, 0, 0},
	Uint8:      {"uint8", 1, false, 0, 0},
	Int32:      {"int32", 4, false, 0, 0},
	Uint32:     {"uint32", 4, false, 0, 0},
	Int64:      {"int64", 8, false, 0, 0},
	Uint64:     {"uint64", 8, false, 0, 0},
	Float16:    {"half", 2, true, 2048, 15},
	Float32:    {"float", 4, true, 1 << 24, 127},
	Float64:    {"double", 8, true, 1 << 53, 1023},
	Bfloat16:   {"bfloat16", 2, true, 256, 127},
	Float8e4m3: {"f8e4m3", 1, true, 16, 8},
	Float8e5m2: {"f8e5m2", 1, true, 8, 15},
}

// typeAliases are the extra spellings nccl-tests and NCCL accept.
var typeAliases = map[string]DataType{
	"char": Int8, "int": Int32, "float16": Float16, "fp16": Float16,
	"float32": Float32, "fp32": Float32, "float64": Float64, "fp64": Float64,
	"bf16": Bfloat16, "fp8e4m3": Float8e4m3, "fp8e5m2": Float8e5m2,
}

// AllTypes lists every type in NCCL order, as `-d all` runs them.
func AllTypes() []DataType {
	out := make([]DataType, len(types))
	for i := range types {
		out[i] = DataType(i)
	}
	return out
}

// ParseDataType accepts nccl-tests' names (and a few common aliases).
func ParseDataType(s string) (DataType, error) {
	l := strings.ToLower(s)
	for i, t := range types {
		if t.name == l {
			return DataType(i), nil
		}
	}
	if t, ok := typeAliases[l]; ok {
		return t, nil
	}
	names := make([]string, len(types))
	for i, t := range types {
		names[i] = t.name
	}
	return 0, fmt.Errorf("unknown data type %q (want one of %s, or all)", s, strings.Join(names, ", "))
}

func (t DataType) valid() bool { return t >= 0 && int(t) < len(types) }

// String is nccl-tests' name for the type, as printed in the table.
func (t DataType) String() string {
	if !t.valid() {
		return fmt.Sprintf("type(%d)", int(t))
	}
	return types[t].name
}

// Size is the element size in bytes.
func (t DataType) Size() int { return types[t].size }

// IsFloat reports whether the type is a floating-point type.
func (t DataType) IsFloat() bool { return types[t].float }

// IsFP8 reports whether the type is one of the 8-bit float formats.
func (t DataType) IsFP8() bool { return t == Float8e4m3 || t == Float8e5m2 }

// ExactInt is the largest M such that every integer in [-M, M] is exactly
// representable in a float type.
func (t DataType) ExactInt() float64 { return types[t].exactInt }

// MaxPow2 is the largest k for which 2^k is finite in a float type.
func (t DataType) MaxPow2() int { return types[t].maxPow2 }
