#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include "driver.h"
#include "dl.h"

static void* handle;

#define CB_CUDA_POINTER(name, sym, params, args) static CUresult (*p_##name) params;
CB_CUDA_FUNCS(CB_CUDA_POINTER)
#undef CB_CUDA_POINTER

#define CB_CUDA_WRAP(name, sym, params, args) \
  CUresult cb_##name params { return p_##name ? p_##name args : CB_CUDA_MISSING; }
CB_CUDA_FUNCS(CB_CUDA_WRAP)
#undef CB_CUDA_WRAP

int cb_cuda_load(const char* path, char* err, size_t errlen) {
  if (handle) return 0;
  void* h = cb_dlopen_checked(path, "cuInit", "the CUDA driver library", err, errlen);
  if (!h) return -1;
#define CB_CUDA_RESOLVE(name, sym, params, args) p_##name = dlsym(h, sym);
  CB_CUDA_FUNCS(CB_CUDA_RESOLVE)
#undef CB_CUDA_RESOLVE
  if (!p_cuEventElapsedTime) p_cuEventElapsedTime = dlsym(h, "cuEventElapsedTime"); // drivers before CUDA 12.8
  handle = h;
  return 0;
}

void* cb_cuda_sym(const char* name) {
#define CB_CUDA_LOOKUP(n, sym, params, args) if (strcmp(name, #n) == 0) return (void*)p_##n;
  CB_CUDA_FUNCS(CB_CUDA_LOOKUP)
#undef CB_CUDA_LOOKUP
  return NULL;
}
