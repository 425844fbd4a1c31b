package numeric

import (
	"fmt"
	"strings"
)

// RedOp is a reduction operator. The first five match ncclRedOp_t; MulSum
// stands for the dynamic operator ncclRedOpCreatePreMulSum creates, with the
// per-rank scalar nccl-tests uses (PremulScalar).
type RedOp int

const (
	Sum RedOp = iota
	Prod
	Max
	Min
	Avg
	MulSum
	// NoOp marks collectives that move data without reducing it; it prints
	// as "none" in the redop column.
	NoOp RedOp = -1
)

var opNames = [...]string{Sum: "sum", Prod: "prod", Max: "max", Min: "min", Avg: "avg", MulSum: "mulsum"}

// AllOps lists every reduction operator, as `-o all` runs them.
func AllOps() []RedOp { return []RedOp{Sum, Prod, Max, Min, Avg, MulSum} }

// ParseRedOp accepts nccl-tests' operator names.
func ParseRedOp(s string) (RedOp, error) {
	l := strings.ToLower(s)
	if l == "premulsum" {
		return MulSum, nil
	}
	for i, n := range opNames {
		if n == l {
			return RedOp(i), nil
		}
	}
	return 0, fmt.Errorf("unknown reduction op %q (want one of %s, or all)", s, strings.Join(opNames[:], ", "))
}

// String is nccl-tests' name for the operator.
func (o RedOp) String() string {
	if o == NoOp {
		return "none"
	}
	if o < 0 || int(o) >= len(opNames) {
		return fmt.Sprintf("op(%d)", int(o))
	}
	return opNames[o]
}

// PremulScalar is the factor rank r applies to its input under MulSum:
// 1 on even ranks, 2 on odd ones (nccl-tests' choice, exact in every type).
func PremulScalar(rank int) float64 {
	if rank%2 == 0 {
		return 1
	}
	return 2
}
