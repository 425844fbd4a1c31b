#include <dlfcn.h>
#include <string.h>
#include "driver.h"

#define CB_CUDA_POINTER(name, sym, params, args) static CUresult (*p_##name) params;
CB_CUDA_FUNCS(CB_CUDA_POINTER)
#undef CB_CUDA_POINTER

#define CB_CUDA_WRAP(name, sym, params, args) \
  CUresult cb_##name params { return p_##name ? p_##name args : CB_CUDA_MISSING; }
CB_CUDA_FUNCS(CB_CUDA_WRAP)
#undef CB_CUDA_WRAP

void cb_cuda_resolve(void* h) {
#define CB_CUDA_RESOLVE(name, sym, params, args) p_##name = dlsym(h, sym);
  CB_CUDA_FUNCS(CB_CUDA_RESOLVE)
#undef CB_CUDA_RESOLVE
  if (!p_cuEventElapsedTime) p_cuEventElapsedTime = dlsym(h, "cuEventElapsedTime"); // drivers before CUDA 12.8
}

void* cb_cuda_sym(const char* name) {
#define CB_CUDA_LOOKUP(n, sym, params, args) if (strcmp(name, #n) == 0) return (void*)p_##n;
  CB_CUDA_FUNCS(CB_CUDA_LOOKUP)
#undef CB_CUDA_LOOKUP
  return NULL;
}
