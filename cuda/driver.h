// Declarations of the CUDA driver API entry points collbench uses. The types
// are spelled out here so the package builds without CUDA headers; the
// library itself is opened with dlopen at run time.
#ifndef COLLBENCH_CUDA_DRIVER_H
#define COLLBENCH_CUDA_DRIVER_H

#include <stddef.h>

typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st* CUcontext;
typedef struct CUstream_st* CUstream;
typedef struct CUevent_st* CUevent;
typedef struct CUgraph_st* CUgraph;
typedef struct CUgraphExec_st* CUgraphExec;
typedef unsigned long long CUdeviceptr;

// Returned by the wrappers when the loaded driver lacks the entry point.
#define CB_CUDA_MISSING (-1)

// X(name, symbol, parameters, arguments): every entry point, by the symbol
// the driver exports (the _v2 names are the current ABI). CUDA 13's headers
// declare only cuEventElapsedTime_v2 (drivers since CUDA 12.8 export it);
// older drivers' cuEventElapsedTime takes the same arguments and is the
// fallback (cb_cuda_resolve).
#define CB_CUDA_FUNCS(X) \
  X(cuInit, "cuInit", (unsigned int flags), (flags)) \
  X(cuDriverGetVersion, "cuDriverGetVersion", (int* v), (v)) \
  X(cuDeviceGetCount, "cuDeviceGetCount", (int* n), (n)) \
  X(cuDeviceGet, "cuDeviceGet", (CUdevice* d, int ordinal), (d, ordinal)) \
  X(cuDeviceGetName, "cuDeviceGetName", (char* name, int len, CUdevice d), (name, len, d)) \
  X(cuDeviceGetAttribute, "cuDeviceGetAttribute", (int* v, int attr, CUdevice d), (v, attr, d)) \
  X(cuDeviceTotalMem, "cuDeviceTotalMem_v2", (size_t* bytes, CUdevice d), (bytes, d)) \
  X(cuDeviceGetPCIBusId, "cuDeviceGetPCIBusId", (char* id, int len, CUdevice d), (id, len, d)) \
  X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", (CUcontext* c, CUdevice d), (c, d)) \
  X(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", (CUdevice d), (d)) \
  X(cuCtxSetCurrent, "cuCtxSetCurrent", (CUcontext c), (c)) \
  X(cuCtxSynchronize, "cuCtxSynchronize", (void), ()) \
  X(cuCtxGetStreamPriorityRange, "cuCtxGetStreamPriorityRange", (int* least, int* greatest), (least, greatest)) \
  X(cuMemAlloc, "cuMemAlloc_v2", (CUdeviceptr* p, size_t n), (p, n)) \
  X(cuMemGetInfo, "cuMemGetInfo_v2", (size_t* free, size_t* total), (free, total)) \
  X(cuMemFree, "cuMemFree_v2", (CUdeviceptr p), (p)) \
  X(cuMemcpyHtoD, "cuMemcpyHtoD_v2", (CUdeviceptr dst, const void* src, size_t n), (dst, src, n)) \
  X(cuMemcpyDtoH, "cuMemcpyDtoH_v2", (void* dst, CUdeviceptr src, size_t n), (dst, src, n)) \
  X(cuMemsetD8, "cuMemsetD8_v2", (CUdeviceptr p, unsigned char v, size_t n), (p, v, n)) \
  X(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2", (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s), (dst, src, n, s)) \
  X(cuStreamCreate, "cuStreamCreate", (CUstream* s, unsigned int flags), (s, flags)) \
  X(cuStreamCreateWithPriority, "cuStreamCreateWithPriority", (CUstream* s, unsigned int flags, int prio), (s, flags, prio)) \
  X(cuStreamDestroy, "cuStreamDestroy_v2", (CUstream s), (s)) \
  X(cuStreamQuery, "cuStreamQuery", (CUstream s), (s)) \
  X(cuEventCreate, "cuEventCreate", (CUevent* e, unsigned int flags), (e, flags)) \
  X(cuEventDestroy, "cuEventDestroy_v2", (CUevent e), (e)) \
  X(cuEventRecord, "cuEventRecord", (CUevent e, CUstream s), (e, s)) \
  X(cuEventElapsedTime, "cuEventElapsedTime_v2", (float* ms, CUevent start, CUevent end), (ms, start, end)) \
  X(cuStreamBeginCapture, "cuStreamBeginCapture_v2", (CUstream s, int mode), (s, mode)) \
  X(cuStreamEndCapture, "cuStreamEndCapture", (CUstream s, CUgraph* g), (s, g)) \
  X(cuGraphInstantiate, "cuGraphInstantiateWithFlags", (CUgraphExec* e, CUgraph g, unsigned long long flags), (e, g, flags)) \
  X(cuGraphLaunch, "cuGraphLaunch", (CUgraphExec e, CUstream s), (e, s)) \
  X(cuGraphExecDestroy, "cuGraphExecDestroy", (CUgraphExec e), (e)) \
  X(cuGraphDestroy, "cuGraphDestroy", (CUgraph g), (g)) \
  X(cuGetErrorName, "cuGetErrorName", (CUresult r, const char** s), (r, s)) \
  X(cuGetErrorString, "cuGetErrorString", (CUresult r, const char** s), (r, s))

#define CB_CUDA_DECLARE(name, sym, params, args) CUresult cb_##name params;
CB_CUDA_FUNCS(CB_CUDA_DECLARE)
#undef CB_CUDA_DECLARE

// cb_cuda_resolve resolves every entry point from the handle of the
// library libpath opened.
void cb_cuda_resolve(void* h);
// cb_cuda_sym returns a resolved entry point by its name in CB_CUDA_FUNCS
// (e.g. "cuEventRecord"), or NULL.
void* cb_cuda_sym(const char* name);

#endif
