package nccl

// DataType is ncclDataType_t.
type DataType int

// NCCL's data types; Bfloat16 from 2.10, the fp8 types from 2.24.
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

// TypeSince is the first release that has a data type.
func TypeSince(t DataType) Version {
	switch {
	case t >= Float8e4m3:
		return V(2, 24, 0)
	case t == Bfloat16:
		return V(2, 10, 0)
	}
	return 0
}

// RedOp is ncclRedOp_t; values from NumOps on are per-communicator ops
// made by CreatePreMulSum.
type RedOp int

// NCCL's built-in reduction operators; Avg from 2.10.
const (
	Sum RedOp = iota
	Prod
	Max
	Min
	Avg
	NumOps
)

// Size is the element size in bytes.
func (t DataType) Size() int {
	switch t {
	case Int8, Uint8, Float8e4m3, Float8e5m2:
		return 1
	case Float16, Bfloat16:
		return 2
	case Int32, Uint32, Float32:
		return 4
	}
	return 8
}
