#include <dlfcn.h>
#include "cublas.h"

#define CB_CUBLAS_POINTER(name, sym, params, args) static cublasStatus_t (*p_##name) params;
CB_CUBLAS_FUNCS(CB_CUBLAS_POINTER)
#undef CB_CUBLAS_POINTER

#define CB_CUBLAS_WRAP(name, sym, params, args) \
  cublasStatus_t cb_##name params { return p_##name ? p_##name args : CB_CUBLAS_MISSING; }
CB_CUBLAS_FUNCS(CB_CUBLAS_WRAP)
#undef CB_CUBLAS_WRAP

void cb_cublas_resolve(void* h) {
#define CB_CUBLAS_RESOLVE(name, sym, params, args) p_##name = dlsym(h, sym);
  CB_CUBLAS_FUNCS(CB_CUBLAS_RESOLVE)
#undef CB_CUBLAS_RESOLVE
}

// cuBLAS enum values (cublas_api.h, library_types.h).
enum { OP_N = 0, COMPUTE_32F = 68, GEMM_DEFAULT = -1 };

cublasStatus_t cb_gemm(cublasHandle_t h, int m, int n, int k, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, int type) {
  const float one = 1.0f, zero = 0.0f;
  return cb_cublasGemmEx(h, OP_N, OP_N, m, n, k, &one, (const void*)a, type, m, (const void*)b, type, k, &zero,
                         (void*)c, type, m, COMPUTE_32F, GEMM_DEFAULT);
}
