// Host stand-ins for the CUDA runtime and NCCL declarations that
// nccl-tests' call-building functions use, so those functions can be
// compiled with g++ and their calls recorded instead of made. Every NCCL
// or CUDA call prints one line of the trace that bench/gpu's call-trace
// test compares collbench's own calls with.
#pragma once
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <algorithm>
#include <atomic>
#include <mutex>

#ifndef TRACE_NCCL_CODE
#define TRACE_NCCL_CODE 23007
#endif
#define NCCL_MAJOR (TRACE_NCCL_CODE / 10000)
#define NCCL_MINOR ((TRACE_NCCL_CODE % 10000) / 100)
#define NCCL_VERSION(X, Y, Z) ((X) * 10000 + (Y) * 100 + (Z))
#define NCCL_VERSION_CODE TRACE_NCCL_CODE
#define CUDART_VERSION 13000
#define HAVE_BF16 0
#define HAVE_FP8 0
#define NCCL_WEAK
#define __host__
#define __device__

using std::max;
using std::min;
#define MAX(a, b) ((a) > (b) ? (a) : (b))

typedef enum { ncclSuccess = 0 } ncclResult_t;
typedef enum { ncclInt8, ncclUint8, ncclInt32, ncclUint32, ncclInt64, ncclUint64, ncclFloat16, ncclFloat32,
               ncclFloat64, ncclBfloat16, ncclFloat8e4m3, ncclFloat8e5m2, ncclNumTypes } ncclDataType_t;
typedef enum { ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg, ncclNumOps, ncclMaxRedOp = 0x7fffffff } ncclRedOp_t;
typedef enum { ncclScalarDevice = 0, ncclScalarHostImmediate = 1 } ncclScalarResidence_t;
typedef enum { cudaSuccess = 0 } cudaError_t;
typedef enum { cudaMemcpyDeviceToDevice = 3 } cudaMemcpyKind;
typedef struct { char internal[128]; } ncclUniqueId;
typedef struct { int x; } ncclDevComm;
typedef struct { int x; } ncclConfig_t;
typedef void* cudaEvent_t;

// A communicator is one rank of the traced job; a stream is its rank too.
struct traceComm { int rank, nranks; };
typedef traceComm* ncclComm_t;
typedef traceComm* cudaStream_t;

// half, as nccl-tests' premul scalar union needs it: the IEEE bits.
struct half {
  uint16_t bits;
  half() = default;
  half(float f) {
    uint32_t u; memcpy(&u, &f, 4);
    bits = (uint16_t)(((u >> 16) & 0x8000) | ((((u >> 23) & 0xff) - 112) << 10) | ((u >> 13) & 0x3ff));
    if (f == 0) bits = 0;
  }
};

typedef enum { testSuccess = 0, testInternalError = 1, testCudaError = 2, testNcclError = 3, testTimeout = 4,
               testNotImplemented = 5, testInvalidUsage = 6, testNumResults = 7 } testResult_t;
#define NCCLCHECK(cmd) do { if ((cmd) != ncclSuccess) return testNcclError; } while (0)
#define CUDACHECK(cmd) do { if ((cmd) != cudaSuccess) return testCudaError; } while (0)
#define TESTCHECK(cmd) do { testResult_t r_ = (cmd); if (r_ != testSuccess) return r_; } while (0)
#define PRINT if (is_main_thread) printf
#define SPECIALIZE_KERNEL(...) nullptr
static inline testResult_t testLaunchDeviceKernel(...) { return testNotImplemented; }

extern int is_main_thread, is_main_proc, deviceImpl, blocking_coll, test_ncclVersion;

static inline int wordSize(ncclDataType_t t) {
  switch (t) {
  case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2: return 1;
  case ncclFloat16: case ncclBfloat16: return 2;
  case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
  default: return 8;
  }
}

template <typename T> T ncclVerifiablePremulScalar(int rank_me) { return T(rank_me % 2 == 0 ? 1.0f : 2.0f); }

struct threadArgs;
struct testColl {
  const char name[20];
  void (*getCollByteCount)(size_t*, size_t*, size_t*, size_t*, size_t*, size_t, size_t, int);
  testResult_t (*initData)(struct threadArgs*, ncclDataType_t, ncclRedOp_t, int, int, int);
  void (*getBw)(size_t, size_t, double, double*, double*, int);
  testResult_t (*runColl)(void*, size_t, void*, size_t, size_t, ncclDataType_t, ncclRedOp_t, int, ncclComm_t, cudaStream_t, int);
};

struct threadArgs {
  size_t nbytes, maxbytes;
  int nProcs, proc, nThreads, thread, nGpus;
  int* gpus;
  void** sendbuffs;
  size_t sendBytes, sendInplaceOffset;
  void** recvbuffs;
  size_t recvInplaceOffset;
  ncclComm_t* comms;
  ncclDevComm* devComms;
  cudaStream_t* streams;
  size_t expectedBytes;
  struct testColl* collTest;
  void** sendRegHandles;
  void** recvRegHandles;
};

// The recorded calls (trace.cc).
ncclResult_t ncclGroupStart();
ncclResult_t ncclGroupEnd();
ncclResult_t ncclCommCount(ncclComm_t c, int* n);
ncclResult_t ncclCommUserRank(ncclComm_t c, int* r);
ncclResult_t ncclAllReduce(const void* s, void* r, size_t n, ncclDataType_t t, ncclRedOp_t op, ncclComm_t c, cudaStream_t st);
ncclResult_t ncclBroadcast(const void* s, void* r, size_t n, ncclDataType_t t, int root, ncclComm_t c, cudaStream_t st);
ncclResult_t ncclReduce(const void* s, void* r, size_t n, ncclDataType_t t, ncclRedOp_t op, int root, ncclComm_t c, cudaStream_t st);
ncclResult_t ncclAllGather(const void* s, void* r, size_t n, ncclDataType_t t, ncclComm_t c, cudaStream_t st);
ncclResult_t ncclReduceScatter(const void* s, void* r, size_t n, ncclDataType_t t, ncclRedOp_t op, ncclComm_t c, cudaStream_t st);
ncclResult_t ncclAlltoAll(const void* s, void* r, size_t n, ncclDataType_t t, ncclComm_t c, cudaStream_t st);
ncclResult_t ncclGather(const void* s, void* r, size_t n, ncclDataType_t t, int root, ncclComm_t c, cudaStream_t st);
ncclResult_t ncclScatter(const void* s, void* r, size_t n, ncclDataType_t t, int root, ncclComm_t c, cudaStream_t st);
ncclResult_t ncclSend(const void* s, size_t n, ncclDataType_t t, int peer, ncclComm_t c, cudaStream_t st);
ncclResult_t ncclRecv(void* r, size_t n, ncclDataType_t t, int peer, ncclComm_t c, cudaStream_t st);
ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t t, ncclScalarResidence_t res, ncclComm_t c);
ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t c);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t n, cudaMemcpyKind k, cudaStream_t st);
cudaError_t cudaSetDevice(int d);
testResult_t testStreamSynchronize(int n, cudaStream_t* s, ncclComm_t* c);
void Barrier(struct threadArgs* a);
