// The hot path of the GPU backend: loops that enqueue a whole timed batch
// (iterations × aggregated calls × local GPUs) in one call from Go, so Go
// adds nothing per collective. Entry points come resolved from the nccl
// and cuda packages.
#ifndef COLLBENCH_GPU_BATCH_H
#define COLLBENCH_GPU_BATCH_H

#include <stddef.h>
#include <stdint.h>

typedef int ncclResult_t;
typedef int CUresult;
typedef void* ncclComm_t;
typedef void* stream_t;

typedef struct {
  ncclResult_t (*allReduce)(const void*, void*, size_t, int, int, ncclComm_t, stream_t);
  ncclResult_t (*broadcast)(const void*, void*, size_t, int, int, ncclComm_t, stream_t);
  ncclResult_t (*reduce)(const void*, void*, size_t, int, int, int, ncclComm_t, stream_t);
  ncclResult_t (*allGather)(const void*, void*, size_t, int, ncclComm_t, stream_t);
  ncclResult_t (*reduceScatter)(const void*, void*, size_t, int, int, ncclComm_t, stream_t);
  ncclResult_t (*alltoAll)(const void*, void*, size_t, int, ncclComm_t, stream_t);   // NULL before 2.28
  ncclResult_t (*gather)(const void*, void*, size_t, int, int, ncclComm_t, stream_t); // NULL before 2.28
  ncclResult_t (*scatter)(const void*, void*, size_t, int, int, ncclComm_t, stream_t);// NULL before 2.28
  ncclResult_t (*send)(const void*, size_t, int, int, ncclComm_t, stream_t);
  ncclResult_t (*recv)(void*, size_t, int, int, ncclComm_t, stream_t);
  ncclResult_t (*groupStart)(void);
  ncclResult_t (*groupEnd)(void);
  ncclResult_t (*premulCreate)(int*, void*, int, int, ncclComm_t);
  ncclResult_t (*redOpDestroy)(int, ncclComm_t);
  ncclResult_t (*asyncError)(ncclComm_t, ncclResult_t*);
  CUresult (*eventRecord)(void*, stream_t);
  CUresult (*streamQuery)(stream_t);
  CUresult (*ctxSetCurrent)(void*);
  CUresult (*beginCapture)(stream_t, int);
  CUresult (*endCapture)(stream_t, void**);
  CUresult (*graphInstantiate)(void**, void*, unsigned long long);
  CUresult (*graphLaunch)(void*, stream_t);
  CUresult (*graphDestroy)(void*);
  CUresult (*graphExecDestroy)(void*);
  CUresult (*memcpyD2D)(unsigned long long, unsigned long long, size_t, stream_t);
  const char* (*lastError)(ncclComm_t); // may be NULL (before NCCL 2.13)
  ncclResult_t (*groupSimulateEnd)(void*); // may be NULL (before NCCL 2.22)
} cb_procs;

// The local GPUs of one process, their communicators and buffers. All
// arrays have ndev entries, except events (ndev × event_cap).
typedef struct {
  int ndev, nranks;
  void** ctxs;
  ncclComm_t* comms;
  stream_t* streams;
  uintptr_t* send;    // send buffer base per GPU
  uintptr_t* recv;    // receive buffer base per GPU
  int* ranks;         // global rank per GPU
  uint64_t* scalars;  // PreMulSum scalar per GPU, in the data type's encoding
  void** events;
  int event_cap;
  // The uneven all-to-all's shares in bytes, share_draws patterns of
  // ndev·2·n entries (n = nranks): call k of a batch follows pattern
  // k mod share_draws, in which GPU d sends rank p the bytes at
  // 2·n·d + p and receives from it those at 2·n·d + n + p. Filled for
  // each batch; share_cap entries allocated.
  size_t* shares;
  size_t share_cap;
  int share_draws;
  cb_procs p;
} cb_comms;

// Collective codes.
enum { CB_ALLREDUCE, CB_ALLGATHER, CB_REDUCESCATTER, CB_ALLTOALL, CB_BROADCAST, CB_REDUCE, CB_SENDRECV, CB_GATHER, CB_SCATTER, CB_PIPELINE, CB_ALLTOALLV, CB_HYPERCUBE };

// One batch: the call every GPU makes, repeated iters × agg times.
typedef struct {
  int coll, dtype, op, premul, root, inplace;
  size_t count, elt;
  size_t send_inplace, recv_inplace; // in-place element offsets per rank
  size_t footprint, steps;           // buffer rotation, as nccl-tests
  size_t unalign;                    // bytes every call's data is moved in (-u)
  int iters, agg, first_iter, record;
} cb_op;

// What the calls below return: done, not yet done (cb_wait), or failed,
// with cb_status saying where.
enum { CB_OK = 0, CB_BUSY = 1, CB_FAILED = -1 };

// The libraries' codes the loop reads (cuda.h's and nccl.h's values).
enum { CB_NCCL_SUCCESS = 0, CB_NCCL_IN_PROGRESS = 7 };
enum { CB_CUDA_SUCCESS = 0, CB_CUDA_NOT_READY = 600 };

// Which library a failed call belongs to (cb_status.kind); CB_OK (0)
// while nothing failed.
enum { CB_FAIL_NCCL = 1, CB_FAIL_CUDA = 2 };

// Where a call failed: kind is CB_FAIL_NCCL or CB_FAIL_CUDA. last is NCCL's
// last-error text, read right after the failing call (it is sticky, and
// the clean-up that follows a failure may replace it).
typedef struct {
  int kind, code, dev;
  const char* call;
  char last[256];
} cb_status;

// NCCL's ncclSimInfo_t (ncclSimInfo_v22200, NCCL 2.22 and later), which
// ncclGroupSimulateEnd reads and fills; magic is NCCL_SIM_INFO_INITIALIZER's.
typedef struct {
  size_t size;
  unsigned int magic;
  unsigned int version;
  float estimatedTime; // µs; NCCL_UNDEF_FLOAT (-1) when NCCL gives none
} cb_sim_info;
#define CB_SIM_MAGIC 0x74685283u

int cb_enqueue(cb_comms* c, const cb_op* op, cb_status* st);
int cb_simulate(cb_comms* c, const cb_op* op, unsigned int version, float* us, cb_status* st);
int cb_capture(cb_comms* c, const cb_op* op, void** execs, cb_status* st);
int cb_graph_launch(cb_comms* c, void** execs, int launches, cb_status* st);
void cb_graph_free(cb_comms* c, void** execs);
int cb_wait(cb_comms* c, int64_t spin_ns, cb_status* st);
int cb_busy(cb_comms* c, int* busy, cb_status* st);

#endif
