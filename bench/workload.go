package bench

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/collbench/collbench/bench/numeric"
	"github.com/collbench/collbench/setting"
)

// WorkKind is the kind of compute that runs next to a collective.
type WorkKind int

const (
	// GEMM is a matrix multiply C[m×n] = A[m×k]·B[k×n]: compute-bound.
	GEMM WorkKind = iota
	// Copy moves a buffer to another on the device: memory-bound, so it
	// shows the contention for memory bandwidth.
	Copy
)

// Workload is the compute of the overlap experiment.
type Workload struct {
	Kind    WorkKind
	M, N, K int              // GEMM shape
	Type    numeric.DataType // GEMM element type
	Bytes   int64            // Copy: bytes moved per run
}

// FLOPs is the floating-point work of one GEMM run (2·m·n·k); 0 for a copy.
func (w Workload) FLOPs() float64 {
	if w.Kind != GEMM {
		return 0
	}
	return 2 * float64(w.M) * float64(w.N) * float64(w.K)
}

// String names the workload in output: "gemm 4096x4096x4096 bfloat16" or
// "copy 1073741824 B".
func (w Workload) String() string {
	if w.Kind == Copy {
		return fmt.Sprintf("copy %d B", w.Bytes)
	}
	return fmt.Sprintf("gemm %dx%dx%d %s", w.M, w.N, w.K, w.Type)
}

// ParseGEMM reads a --gemm value "m,n,k".
func ParseGEMM(s string, t numeric.DataType) (Workload, error) {
	parts := strings.Split(s, ",")
	if len(parts) != 3 {
		return Workload{}, setting.Errorf("{GEMMs} %q: want m,n,k (three positive integers)", s)
	}
	var dims [3]int
	for i, p := range parts {
		v, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || v < 1 || v > 1<<20 {
			return Workload{}, setting.Errorf("{GEMMs} %q: %q is not a dimension between 1 and 1048576", s, p)
		}
		dims[i] = v
	}
	return Workload{Kind: GEMM, M: dims[0], N: dims[1], K: dims[2], Type: t}, nil
}

// Bytes of memory the workload needs on each rank (operands and result,
// or source and destination).
func (w Workload) Footprint() int64 {
	if w.Kind == Copy {
		return 2 * w.Bytes
	}
	elt := int64(w.Type.Size())
	return elt * (int64(w.M)*int64(w.K) + int64(w.K)*int64(w.N) + int64(w.M)*int64(w.N))
}
