package cuda

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "cublas.h"
*/
import "C"

import (
	"fmt"

	"github.com/collbench/collbench/libpath"
)

// Data types of cuBLAS operands (cudaDataType).
const (
	BLASFloat32  = 0  // CUDA_R_32F
	BLASFloat16  = 2  // CUDA_R_16F
	BLASBfloat16 = 14 // CUDA_R_16BF
)

var blasLoaded libpath.Once

// LoadBLAS opens cuBLAS once (explicit: a path or folder, else the search
// order of libpath.CUBLAS) and returns the path that loaded.
func LoadBLAS(explicit string) (string, error) {
	return blasLoaded.Do(func() (string, error) { return loadBLAS(explicit) })
}

func loadBLAS(explicit string) (string, error) {
	lib, err := libpath.Load(libpath.CUBLAS, explicit)
	if err != nil {
		return "", err
	}
	C.cb_cublas_resolve(lib.Handle)
	return lib.Path, nil
}

// BLASError is a failed cuBLAS call.
type BLASError struct {
	Call   string
	Status int
}

func (e *BLASError) Error() string {
	if e.Status == C.CB_CUBLAS_MISSING {
		return fmt.Sprintf("%s: not in the loaded cuBLAS", e.Call)
	}
	if name, ok := blasStatusNames[e.Status]; ok {
		return fmt.Sprintf("%s failed with %s (cuBLAS status %d)", e.Call, name, e.Status)
	}
	return fmt.Sprintf("%s failed with cuBLAS status %d", e.Call, e.Status)
}

// blasStatusNames are cublasStatus_t's names, from cublas_api.h.
var blasStatusNames = map[int]string{
	1: "CUBLAS_STATUS_NOT_INITIALIZED", 3: "CUBLAS_STATUS_ALLOC_FAILED", 7: "CUBLAS_STATUS_INVALID_VALUE",
	8: "CUBLAS_STATUS_ARCH_MISMATCH", 11: "CUBLAS_STATUS_MAPPING_ERROR", 13: "CUBLAS_STATUS_EXECUTION_FAILED",
	14: "CUBLAS_STATUS_INTERNAL_ERROR", 15: "CUBLAS_STATUS_NOT_SUPPORTED", 16: "CUBLAS_STATUS_LICENSE_ERROR",
}

func blasCheck(call string, st C.cublasStatus_t) error {
	if st == 0 {
		return nil
	}
	return &BLASError{Call: call, Status: int(st)}
}

// BLAS is a cuBLAS handle, bound to the context current when it was made.
type BLAS struct{ h C.cublasHandle_t }

// NewBLAS creates a handle in the current context.
func NewBLAS() (*BLAS, error) {
	var h C.cublasHandle_t
	if err := blasCheck("cublasCreate", C.cb_cublasCreate(&h)); err != nil {
		return nil, err
	}
	return &BLAS{h: h}, nil
}

// SetStream makes the handle's work go to s.
func (b *BLAS) SetStream(s *Stream) error {
	return blasCheck("cublasSetStream", C.cb_cublasSetStream(b.h, s.s))
}

// Gemm enqueues C[m×n] = A[m×k]·B[k×n] (column-major) in element type t
// (a BLAS* constant) with fp32 accumulation.
func (b *BLAS) Gemm(m, n, k int, a, bm, c DevicePtr, t int) error {
	return blasCheck("cublasGemmEx", C.cb_gemm(b.h, C.int(m), C.int(n), C.int(k), C.CUdeviceptr(a), C.CUdeviceptr(bm), C.CUdeviceptr(c), C.int(t)))
}

// Destroy releases the handle.
func (b *BLAS) Destroy() error { return blasCheck("cublasDestroy", C.cb_cublasDestroy(b.h)) }

// CopyAsync enqueues a device-to-device copy of n bytes on s.
func CopyAsync(dst, src DevicePtr, n int64, s *Stream) error {
	return check("cuMemcpyDtoDAsync", C.cb_cuMemcpyDtoDAsync(C.CUdeviceptr(dst), C.CUdeviceptr(src), C.size_t(n), s.s))
}
