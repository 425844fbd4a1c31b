// Declarations of the cuBLAS entry points the overlap experiment uses,
// spelled out so the package builds without CUDA headers; libcublas is
// opened with dlopen at run time, only when a GEMM is asked for.
#ifndef COLLBENCH_CUBLAS_H
#define COLLBENCH_CUBLAS_H

#include <stddef.h>
#include "driver.h"

typedef int cublasStatus_t;
typedef struct cublasContext* cublasHandle_t;

#define CB_CUBLAS_MISSING (-1)

#define CB_CUBLAS_FUNCS(X) \
  X(cublasCreate, "cublasCreate_v2", (cublasHandle_t* h), (h)) \
  X(cublasDestroy, "cublasDestroy_v2", (cublasHandle_t h), (h)) \
  X(cublasSetStream, "cublasSetStream_v2", (cublasHandle_t h, CUstream s), (h, s)) \
  X(cublasGemmEx, "cublasGemmEx", \
    (cublasHandle_t h, int transa, int transb, int m, int n, int k, const void* alpha, const void* A, int Atype, \
     int lda, const void* B, int Btype, int ldb, const void* beta, void* C, int Ctype, int ldc, int computeType, int algo), \
    (h, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype, ldc, computeType, algo))

#define CB_CUBLAS_DECLARE(name, sym, params, args) cublasStatus_t cb_##name params;
CB_CUBLAS_FUNCS(CB_CUBLAS_DECLARE)
#undef CB_CUBLAS_DECLARE

// cb_cublas_resolve resolves every entry point from the handle of the
// library libpath opened.
void cb_cublas_resolve(void* h);

// cb_gemm runs C = A·B (column-major, no transposes) with float scalars
// 1 and 0 and fp32 accumulation.
cublasStatus_t cb_gemm(cublasHandle_t h, int m, int n, int k, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, int type);

#endif
