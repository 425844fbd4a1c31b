#define _GNU_SOURCE  // dladdr
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include "library.h"

static void* handle;

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

int cb_nccl_load(const char* path, char* err, size_t errlen) {
  if (handle) return 0;
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    snprintf(err, errlen, "%s", e ? e : "dlopen failed");
    return -1;
  }
  if (!dlsym(h, "ncclGetVersion") || !dlsym(h, "ncclCommInitRank")) {
    snprintf(err, errlen, "%s has no ncclGetVersion/ncclCommInitRank; it is not an NCCL library", path);
    dlclose(h);
    return -1;
  }
#define CB_NCCL_RESOLVE(name, params, args) p_##name = dlsym(h, #name);
  CB_NCCL_FUNCS(CB_NCCL_RESOLVE)
#undef CB_NCCL_RESOLVE
  p_ncclGetErrorString = dlsym(h, "ncclGetErrorString");
  p_ncclGetLastError = dlsym(h, "ncclGetLastError");
  handle = h;
  return 0;
}

// cb_nccl_file writes the file the loaded library was mapped from: the
// loader's search may have found a bare soname anywhere on its path.
int cb_nccl_file(char* buf, size_t len) {
  Dl_info info;
  if (!p_ncclGetVersion || !dladdr((void*)p_ncclGetVersion, &info) || !info.dli_fname) return -1;
  snprintf(buf, len, "%s", info.dli_fname);
  return 0;
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
