#ifndef COLLBENCH_CALLTRACE_H
#define COLLBENCH_CALLTRACE_H
#include <stddef.h>
#include <stdint.h>

enum { TR_ALLREDUCE, TR_BROADCAST, TR_REDUCE, TR_ALLGATHER, TR_REDUCESCATTER, TR_ALLTOALL, TR_GATHER, TR_SCATTER,
       TR_SEND, TR_RECV, TR_GROUPSTART, TR_GROUPEND, TR_PREMUL, TR_REDOPDESTROY, TR_EVENT, TR_BEGINCAPTURE,
       TR_ENDCAPTURE, TR_GRAPHLAUNCH, TR_MEMCPY, TR_SIMULATE };

// The entry points in the order of their names in calltrace.go.
#define TR_PROCS 27
extern void* trace_procs[TR_PROCS];

int traceLastKind(void);
int traceBusy(void);
// traceEstimate is what the recording ncclGroupSimulateEnd reports, µs.
#define TRACE_ESTIMATE 12.5f
int traceCall(int kind, uintptr_t s, uintptr_t r, size_t n, int t, int op, int root, uintptr_t comm, uintptr_t stream);
#endif
