package gpu

import (
	"encoding/binary"
	"fmt"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/numeric"
	"github.com/collbench/collbench/nccl"
)

// collCode is the C loop's code for a collective: its ID, which
// codes.go checks against batch.h's enum at compile time.
func collCode(c *bench.Collective) (int, error) {
	if c.ID < 0 || c.ID > lastCode {
		return 0, fmt.Errorf("the nccl backend has no %s", c.Name)
	}
	return int(c.ID), nil
}

// ncclTypes maps collbench's data types to NCCL's.
var ncclTypes = map[numeric.DataType]nccl.DataType{
	numeric.Int8: nccl.Int8, numeric.Uint8: nccl.Uint8, numeric.Int32: nccl.Int32, numeric.Uint32: nccl.Uint32,
	numeric.Int64: nccl.Int64, numeric.Uint64: nccl.Uint64, numeric.Float16: nccl.Float16, numeric.Float32: nccl.Float32,
	numeric.Float64: nccl.Float64, numeric.Bfloat16: nccl.Bfloat16, numeric.Float8e4m3: nccl.Float8e4m3,
	numeric.Float8e5m2: nccl.Float8e5m2,
}

// typeSupport says why a data type cannot run with NCCL version v on GPUs
// whose lowest compute capability is minSM (major·10+minor): bf16 needs
// NCCL 2.10, fp8 needs NCCL 2.24 and sm_90, as nccl-tests filters them.
func typeSupport(t numeric.DataType, v nccl.Version, minSM int) error {
	nt, ok := ncclTypes[t]
	if !ok {
		return fmt.Errorf("data type %s has no NCCL equivalent", t)
	}
	if need := nccl.TypeSince(nt); need > v {
		a, b, _ := need.Parts()
		return fmt.Errorf("%s needs NCCL %d.%d or later (loaded: %s)", t, a, b, v)
	}
	if t.IsFP8() && minSM < 90 {
		return fmt.Errorf("%s needs compute capability 9.0 or later (lowest here: %d.%d)", t, minSM/10, minSM%10)
	}
	return nil
}

// opSupport says why a reduction operator cannot run with NCCL version v.
func opSupport(op numeric.RedOp, v nccl.Version) error {
	switch op {
	case numeric.Avg:
		if v < nccl.V(2, 10, 0) {
			return fmt.Errorf("avg needs NCCL 2.10 or later (loaded: %s)", v)
		}
	case numeric.MulSum:
		if need := nccl.Since("ncclRedOpCreatePreMulSum"); v < need {
			return fmt.Errorf("mulsum needs NCCL 2.11 or later (loaded: %s)", v)
		}
	}
	return nil
}

// pairSupport says why NCCL cannot run op on t: NCCL 2.28.9 on an H100
// refuses avg and mulsum on fp8 with ncclInvalidArgument, and so fails
// nccl-tests' all_reduce_perf -d f8e4m3 -o avg.
func pairSupport(t numeric.DataType, op numeric.RedOp) error {
	if t.IsFP8() && (op == numeric.Avg || op == numeric.MulSum) {
		return fmt.Errorf("NCCL refuses %s on %s (ncclInvalidArgument); sum, prod, max and min run on fp8", op, t)
	}
	return nil
}

// ncclOp maps an operator; MulSum is made per call with CreatePreMulSum.
func ncclOp(op numeric.RedOp) (code int, premul bool) {
	switch op {
	case numeric.Sum, numeric.NoOp:
		return int(nccl.Sum), false
	case numeric.Prod:
		return int(nccl.Prod), false
	case numeric.Max:
		return int(nccl.Max), false
	case numeric.Min:
		return int(nccl.Min), false
	case numeric.Avg:
		return int(nccl.Avg), false
	}
	return 0, true
}

// premulScalar is rank's PreMulSum factor in t's encoding, as nccl-tests'
// ncclVerifiablePremulScalar: 1 on even ranks, 2 on odd ones.
func premulScalar(t numeric.DataType, rank int) uint64 {
	var b [8]byte
	v := numeric.PremulScalar(rank)
	if t.IsFloat() {
		numeric.PutFloat(t, b[:], 0, v)
	} else {
		numeric.PutBits(t, b[:], 0, uint64(v))
	}
	return binary.LittleEndian.Uint64(b[:])
}

// memoryCap is nccl-tests' limit on -e for GPUs with mem bytes each (the
// smallest): keep 1 GiB per 16 GiB installed (at most 4 GiB) plus 1 GiB
// spare, and split the rest between send, receive and, when checking, the
// expected-result buffer.
func memoryCap(mem int64, check bool) int64 {
	const gib = int64(1) << 30
	reserve := min((mem+16*gib-1)/(16*gib)*gib, 4*gib)
	parts := int64(2)
	if check {
		parts = 3
	}
	return (mem - reserve - gib) / parts
}

// parseBusID splits "0000:18:00.0" into domain, bus and device numbers.
func parseBusID(s string) ([3]int, error) {
	var d, b, dev, fn int
	if _, err := fmt.Sscanf(s, "%x:%x:%x.%x", &d, &b, &dev, &fn); err != nil {
		return [3]int{}, fmt.Errorf("unexpected PCI bus id %q", s)
	}
	return [3]int{d, b, dev}, nil
}
