// Package calltrace records the calls the GPU backend's C loop makes, in
// place of NCCL and the CUDA driver, for tests that run without a GPU.
package calltrace

/*
#include "calltrace.h"
*/
import "C"

import (
	"fmt"
	"sync"
	"unsafe"
)

// Names are the entry points the C loop resolves, in the order of
// trace_procs.
var Names = []string{
	"ncclAllReduce", "ncclBroadcast", "ncclReduce", "ncclAllGather", "ncclReduceScatter",
	"ncclAlltoAll", "ncclGather", "ncclScatter", "ncclSend", "ncclRecv",
	"ncclGroupStart", "ncclGroupEnd", "ncclRedOpCreatePreMulSum", "ncclRedOpDestroy", "ncclCommGetAsyncError",
	"cuEventRecord", "cuStreamQuery", "cuCtxSetCurrent", "cuStreamBeginCapture", "cuStreamEndCapture",
	"cuGraphInstantiate", "cuGraphLaunch", "cuGraphDestroy", "cuGraphExecDestroy", "ncclGetLastError",
	"cuMemcpyDtoDAsync", "ncclGroupSimulateEnd",
}

var kinds = []string{"AllReduce", "Broadcast", "Reduce", "AllGather", "ReduceScatter", "AlltoAll", "Gather", "Scatter",
	"Send", "Recv", "GroupStart", "GroupEnd", "PreMulSum", "RedOpDestroy", "EventRecord", "BeginCapture", "EndCapture", "GraphLaunch", "Memcpy",
	"GroupSimulateEnd"}

// Procs returns every recording entry point by name.
func Procs() map[string]unsafe.Pointer {
	out := map[string]unsafe.Pointer{}
	procs := unsafe.Slice(&C.trace_procs[0], C.TR_PROCS)
	for i, n := range Names {
		out[n] = procs[i]
	}
	return out
}

// Call is one recorded call. Pointers and handles are the integers the
// backend passed.
type Call struct {
	Kind           string
	Send, Recv     uint64
	Count          uint64
	Type, Op, Root int
	Comm, Stream   uint64
	Failed         bool // the call returned the injected error
}

func (c Call) String() string {
	return fmt.Sprintf("%s(s=%#x r=%#x n=%d t=%d op=%d root=%d comm=%d stream=%#x)", c.Kind, c.Send, c.Recv, c.Count, c.Type, c.Op, c.Root, c.Comm, c.Stream)
}

var (
	mu    sync.Mutex
	calls []Call
	// The failure to inject: the failAt-th call traced since FailAt
	// returns failCode.
	failAt, failCode, traced = -1, 0, 0
	lastKind                 = -1 // the most recent traced call, for ncclGetLastError
)

// busy makes every stream report work in progress, as streams whose
// kernels never finish do.
var busy bool

// Busy makes every stream query say the stream still has work (true) or
// is idle (false, the default).
func Busy(b bool) {
	mu.Lock()
	defer mu.Unlock()
	busy = b
}

//export traceBusy
func traceBusy() C.int {
	mu.Lock()
	defer mu.Unlock()
	if busy {
		return 1
	}
	return 0
}

//export traceLastKind
func traceLastKind() C.int {
	mu.Lock()
	defer mu.Unlock()
	return C.int(lastKind)
}

// FailAt makes the n-th traced call from now on (counting from 0) return
// code, as a failing NCCL or CUDA call would; n < 0 injects nothing.
func FailAt(n, code int) {
	mu.Lock()
	defer mu.Unlock()
	failAt, failCode, traced = n, code, 0
}

//export traceCall
func traceCall(kind C.int, s, r C.uintptr_t, n C.size_t, t, op, root C.int, comm, stream C.uintptr_t) C.int {
	mu.Lock()
	defer mu.Unlock()
	rc := 0
	if traced == failAt {
		rc = failCode
	}
	traced++
	lastKind = int(kind)
	calls = append(calls, Call{Kind: kinds[kind], Send: uint64(s), Recv: uint64(r), Count: uint64(n), Type: int(t), Op: int(op),
		Root: int(root), Comm: uint64(comm), Stream: uint64(stream), Failed: rc != 0})
	return C.int(rc)
}

// Take returns the calls recorded so far and forgets them.
func Take() []Call {
	mu.Lock()
	defer mu.Unlock()
	out := calls
	calls = nil
	return out
}
