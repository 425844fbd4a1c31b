// Declarations of the NCCL entry points collbench uses, spelled out so the
// package builds without NCCL or CUDA headers. The library is opened with
// dlopen at run time; an entry point an older NCCL lacks stays NULL and its
// wrapper returns CB_NCCL_MISSING.
#ifndef COLLBENCH_NCCL_LIBRARY_H
#define COLLBENCH_NCCL_LIBRARY_H

#include <stddef.h>
#include <stdint.h>

typedef int ncclResult_t;
typedef int ncclDataType_t;
typedef int ncclRedOp_t;
typedef struct { char internal[128]; } ncclUniqueId;
typedef struct ncclComm* ncclComm_t;
typedef struct CUstream_st* cudaStream_t;

#define CB_NCCL_MISSING (-1)

// X(name, parameters, arguments) for every entry point returning
// ncclResult_t; the symbol is the name.
#define CB_NCCL_FUNCS(X) \
  X(ncclGetVersion, (int* v), (v)) \
  X(ncclGetUniqueId, (ncclUniqueId* id), (id)) \
  X(ncclCommInitRank, (ncclComm_t* c, int n, ncclUniqueId id, int rank), (c, n, id, rank)) \
  X(ncclCommInitRankConfig, (ncclComm_t* c, int n, ncclUniqueId id, int rank, void* cfg), (c, n, id, rank, cfg)) \
  X(ncclCommInitAll, (ncclComm_t* c, int n, const int* devs), (c, n, devs)) \
  X(ncclCommSplit, (ncclComm_t c, int color, int key, ncclComm_t* out, void* cfg), (c, color, key, out, cfg)) \
  X(ncclCommFinalize, (ncclComm_t c), (c)) \
  X(ncclCommDestroy, (ncclComm_t c), (c)) \
  X(ncclCommAbort, (ncclComm_t c), (c)) \
  X(ncclCommGetAsyncError, (ncclComm_t c, ncclResult_t* r), (c, r)) \
  X(ncclCommCount, (ncclComm_t c, int* n), (c, n)) \
  X(ncclCommCuDevice, (ncclComm_t c, int* d), (c, d)) \
  X(ncclCommUserRank, (ncclComm_t c, int* r), (c, r)) \
  X(ncclMemAlloc, (void** p, size_t n), (p, n)) \
  X(ncclMemFree, (void* p), (p)) \
  X(ncclCommRegister, (ncclComm_t c, void* p, size_t n, void** h), (c, p, n, h)) \
  X(ncclCommDeregister, (ncclComm_t c, void* h), (c, h)) \
  X(ncclCommWindowRegister, (ncclComm_t c, void* p, size_t n, void** w, int flags), (c, p, n, w, flags)) \
  X(ncclCommWindowDeregister, (ncclComm_t c, void* w), (c, w)) \
  X(ncclRedOpCreatePreMulSum, (ncclRedOp_t* op, void* scalar, ncclDataType_t t, int residence, ncclComm_t c), (op, scalar, t, residence, c)) \
  X(ncclRedOpDestroy, (ncclRedOp_t op, ncclComm_t c), (op, c)) \
  X(ncclAllReduce, (const void* s, void* r, size_t n, ncclDataType_t t, ncclRedOp_t op, ncclComm_t c, cudaStream_t st), (s, r, n, t, op, c, st)) \
  X(ncclBroadcast, (const void* s, void* r, size_t n, ncclDataType_t t, int root, ncclComm_t c, cudaStream_t st), (s, r, n, t, root, c, st)) \
  X(ncclReduce, (const void* s, void* r, size_t n, ncclDataType_t t, ncclRedOp_t op, int root, ncclComm_t c, cudaStream_t st), (s, r, n, t, op, root, c, st)) \
  X(ncclAllGather, (const void* s, void* r, size_t n, ncclDataType_t t, ncclComm_t c, cudaStream_t st), (s, r, n, t, c, st)) \
  X(ncclReduceScatter, (const void* s, void* r, size_t n, ncclDataType_t t, ncclRedOp_t op, ncclComm_t c, cudaStream_t st), (s, r, n, t, op, c, st)) \
  X(ncclAlltoAll, (const void* s, void* r, size_t n, ncclDataType_t t, ncclComm_t c, cudaStream_t st), (s, r, n, t, c, st)) \
  X(ncclGather, (const void* s, void* r, size_t n, ncclDataType_t t, int root, ncclComm_t c, cudaStream_t st), (s, r, n, t, root, c, st)) \
  X(ncclScatter, (const void* s, void* r, size_t n, ncclDataType_t t, int root, ncclComm_t c, cudaStream_t st), (s, r, n, t, root, c, st)) \
  X(ncclSend, (const void* s, size_t n, ncclDataType_t t, int peer, ncclComm_t c, cudaStream_t st), (s, n, t, peer, c, st)) \
  X(ncclRecv, (void* r, size_t n, ncclDataType_t t, int peer, ncclComm_t c, cudaStream_t st), (r, n, t, peer, c, st)) \
  X(ncclGroupStart, (void), ()) \
  X(ncclGroupEnd, (void), ()) \
  X(ncclGroupSimulateEnd, (void* simInfo), (simInfo))

#define CB_NCCL_DECLARE(name, params, args) ncclResult_t cb_##name params;
CB_NCCL_FUNCS(CB_NCCL_DECLARE)
#undef CB_NCCL_DECLARE

// The two entry points that return strings; NULL when missing.
const char* cb_ncclGetErrorString(ncclResult_t r);
const char* cb_ncclGetLastError(ncclComm_t c);

// cb_nccl_resolve resolves every entry point from the handle of the
// library libpath opened.
void cb_nccl_resolve(void* h);
// cb_nccl_sym returns a resolved entry point by name, or NULL.
void* cb_nccl_sym(const char* name);

#endif
