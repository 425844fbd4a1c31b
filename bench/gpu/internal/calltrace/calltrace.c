// C entry points with NCCL's and the CUDA driver's signatures that record
// each call instead of doing it, so tests can check exactly what the GPU
// backend's enqueue loop asks of the libraries.
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "calltrace.h"

#define U(x) ((uintptr_t)(x))

static int allReduce(const void* s, void* r, size_t n, int t, int op, void* c, void* st) { return traceCall(TR_ALLREDUCE, U(s), U(r), n, t, op, -1, U(c), U(st)); }
static int broadcast(const void* s, void* r, size_t n, int t, int root, void* c, void* st) { return traceCall(TR_BROADCAST, U(s), U(r), n, t, -1, root, U(c), U(st)); }
static int reduce(const void* s, void* r, size_t n, int t, int op, int root, void* c, void* st) { return traceCall(TR_REDUCE, U(s), U(r), n, t, op, root, U(c), U(st)); }
static int allGather(const void* s, void* r, size_t n, int t, void* c, void* st) { return traceCall(TR_ALLGATHER, U(s), U(r), n, t, -1, -1, U(c), U(st)); }
static int reduceScatter(const void* s, void* r, size_t n, int t, int op, void* c, void* st) { return traceCall(TR_REDUCESCATTER, U(s), U(r), n, t, op, -1, U(c), U(st)); }
static int alltoAll(const void* s, void* r, size_t n, int t, void* c, void* st) { return traceCall(TR_ALLTOALL, U(s), U(r), n, t, -1, -1, U(c), U(st)); }
static int gather(const void* s, void* r, size_t n, int t, int root, void* c, void* st) { return traceCall(TR_GATHER, U(s), U(r), n, t, -1, root, U(c), U(st)); }
static int scatter(const void* s, void* r, size_t n, int t, int root, void* c, void* st) { return traceCall(TR_SCATTER, U(s), U(r), n, t, -1, root, U(c), U(st)); }
static int sendFn(const void* s, size_t n, int t, int peer, void* c, void* st) { return traceCall(TR_SEND, U(s), 0, n, t, -1, peer, U(c), U(st)); }
static int recvFn(void* r, size_t n, int t, int peer, void* c, void* st) { return traceCall(TR_RECV, 0, U(r), n, t, -1, peer, U(c), U(st)); }
static int groupStart(void) { return traceCall(TR_GROUPSTART, 0, 0, 0, 0, -1, -1, 0, 0); }
static int groupEnd(void) { return traceCall(TR_GROUPEND, 0, 0, 0, 0, -1, -1, 0, 0); }
static int premulCreate(int* op, void* scalar, int t, int residence, void* c) {
  *op = 5;
  return traceCall(TR_PREMUL, *(uint64_t*)scalar, (uintptr_t)residence, 0, t, 5, -1, U(c), 0);
}
static int redOpDestroy(int op, void* c) { return traceCall(TR_REDOPDESTROY, 0, 0, 0, 0, op, -1, U(c), 0); }
static int asyncError(void* c, int* r) { *r = 0; return 0; }
static int eventRecord(void* e, void* st) { return traceCall(TR_EVENT, U(e), 0, 0, 0, -1, -1, 0, U(st)); }
static int streamQuery(void* st) { return traceBusy() ? 600 /* CUDA_ERROR_NOT_READY */ : 0; }
static int ctxSetCurrent(void* c) { return 0; }
static int beginCapture(void* st, int mode) { return traceCall(TR_BEGINCAPTURE, 0, 0, 0, 0, mode, -1, 0, U(st)); }
static int endCapture(void* st, void** g) { *g = st; return traceCall(TR_ENDCAPTURE, 0, 0, 0, 0, -1, -1, 0, U(st)); }
static int graphInstantiate(void** e, void* g, unsigned long long flags) { *e = g; return 0; }
static int graphLaunch(void* e, void* st) { return traceCall(TR_GRAPHLAUNCH, U(e), 0, 0, 0, -1, -1, 0, U(st)); }
static int graphDestroy(void* g) { return 0; }
// groupSimulateEnd stands for ncclGroupSimulateEnd: it records the
// ncclSimInfo_t it is given (size, magic, version) and, when the size
// and magic are NCCL_SIM_INFO_INITIALIZER's, reports TRACE_ESTIMATE;
// otherwise it fails as NCCL does (ncclInvalidArgument).
typedef struct { size_t size; unsigned int magic; unsigned int version; float estimatedTime; } simInfo;
static int groupSimulateEnd(void* p) {
  simInfo* info = (simInfo*)p;
  int r = traceCall(TR_SIMULATE, info->size, info->magic, info->version, 0, -1, -1, 0, 0);
  if (r != 0) return r;
  if (info->size != sizeof(simInfo) || info->magic != 0x74685283u) return 4;
  info->estimatedTime = TRACE_ESTIMATE;
  return 0;
}
static int memcpyD2D(unsigned long long dst, unsigned long long src, size_t n, void* st) { return traceCall(TR_MEMCPY, U(src), U(dst), n, 0, -1, -1, 0, U(st)); }

// lastError stands for ncclGetLastError: it names the most recent traced
// call, failed or not, so a test can tell when it was read.
static const char* kindNames[] = {"AllReduce", "Broadcast", "Reduce", "AllGather", "ReduceScatter", "AlltoAll", "Gather",
  "Scatter", "Send", "Recv", "GroupStart", "GroupEnd", "PreMulSum", "RedOpDestroy", "EventRecord", "BeginCapture",
  "EndCapture", "GraphLaunch", "Memcpy", "GroupSimulateEnd"};
static char lastText[64];
static const char* lastError(void* c) {
  int k = traceLastKind();
  if (k < 0) return "";
  snprintf(lastText, sizeof lastText, "calltrace: last call %s", kindNames[k]);
  return lastText;
}

void* trace_procs[TR_PROCS] = {
  (void*)allReduce, (void*)broadcast, (void*)reduce, (void*)allGather, (void*)reduceScatter,
  (void*)alltoAll, (void*)gather, (void*)scatter, (void*)sendFn, (void*)recvFn,
  (void*)groupStart, (void*)groupEnd, (void*)premulCreate, (void*)redOpDestroy, (void*)asyncError,
  (void*)eventRecord, (void*)streamQuery, (void*)ctxSetCurrent, (void*)beginCapture, (void*)endCapture,
  (void*)graphInstantiate, (void*)graphLaunch, (void*)graphDestroy, (void*)graphDestroy, (void*)lastError,
  (void*)memcpyD2D, (void*)groupSimulateEnd,
};
