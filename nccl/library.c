#include <dlfcn.h>
#include <string.h>
#include "library.h"

#define CB_NCCL_POINTER(name, params, args) static ncclResult_t (*p_##name) params;
CB_NCCL_FUNCS(CB_NCCL_POINTER)
#undef CB_NCCL_POINTER
static const char* (*p_ncclGetErrorString)(ncclResult_t);
static const char* (*p_ncclGetLastError)(ncclComm_t);

#define CB_NCCL_WRAP(name, params, args) \
  ncclResult_t cb_##name params { return p_##name ? p_##name args : CB_NCCL_MISSING; }
CB_NCCL_FUNCS(CB_NCCL_WRAP)
#undef CB_NCCL_WRAP

const char* cb_ncclGetErrorString(ncclResult_t r) { return p_ncclGetErrorString ? p_ncclGetErrorString(r) : NULL; }
const char* cb_ncclGetLastError(ncclComm_t c) { return p_ncclGetLastError ? p_ncclGetLastError(c) : NULL; }

void cb_nccl_resolve(void* h) {
#define CB_NCCL_RESOLVE(name, params, args) p_##name = dlsym(h, #name);
  CB_NCCL_FUNCS(CB_NCCL_RESOLVE)
#undef CB_NCCL_RESOLVE
  p_ncclGetErrorString = dlsym(h, "ncclGetErrorString");
  p_ncclGetLastError = dlsym(h, "ncclGetLastError");
}

void* cb_nccl_sym(const char* name) {
#define CB_NCCL_LOOKUP(n, params, args) if (strcmp(name, #n) == 0) return (void*)p_##n;
  CB_NCCL_FUNCS(CB_NCCL_LOOKUP)
#undef CB_NCCL_LOOKUP
  // Resolved apart from the list, as every caller needs them.
  if (strcmp(name, "ncclGetErrorString") == 0) return (void*)p_ncclGetErrorString;
  if (strcmp(name, "ncclGetLastError") == 0) return (void*)p_ncclGetLastError;
  return NULL;
}
