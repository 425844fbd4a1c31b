package nccl

/*
#include "library.h"

#define P(x) ((void*)(uintptr_t)(x))
#define S(x) ((cudaStream_t)(uintptr_t)(x))

static ncclResult_t cb_all_reduce(uintptr_t s, uintptr_t r, size_t n, int t, int op, ncclComm_t c, uintptr_t st) { return cb_ncclAllReduce(P(s), P(r), n, t, op, c, S(st)); }
static ncclResult_t cb_broadcast(uintptr_t s, uintptr_t r, size_t n, int t, int root, ncclComm_t c, uintptr_t st) { return cb_ncclBroadcast(P(s), P(r), n, t, root, c, S(st)); }
static ncclResult_t cb_reduce(uintptr_t s, uintptr_t r, size_t n, int t, int op, int root, ncclComm_t c, uintptr_t st) { return cb_ncclReduce(P(s), P(r), n, t, op, root, c, S(st)); }
static ncclResult_t cb_all_gather(uintptr_t s, uintptr_t r, size_t n, int t, ncclComm_t c, uintptr_t st) { return cb_ncclAllGather(P(s), P(r), n, t, c, S(st)); }
static ncclResult_t cb_reduce_scatter(uintptr_t s, uintptr_t r, size_t n, int t, int op, ncclComm_t c, uintptr_t st) { return cb_ncclReduceScatter(P(s), P(r), n, t, op, c, S(st)); }
static ncclResult_t cb_all_to_all(uintptr_t s, uintptr_t r, size_t n, int t, ncclComm_t c, uintptr_t st) { return cb_ncclAlltoAll(P(s), P(r), n, t, c, S(st)); }
static ncclResult_t cb_gather(uintptr_t s, uintptr_t r, size_t n, int t, int root, ncclComm_t c, uintptr_t st) { return cb_ncclGather(P(s), P(r), n, t, root, c, S(st)); }
static ncclResult_t cb_scatter(uintptr_t s, uintptr_t r, size_t n, int t, int root, ncclComm_t c, uintptr_t st) { return cb_ncclScatter(P(s), P(r), n, t, root, c, S(st)); }
static ncclResult_t cb_send(uintptr_t s, size_t n, int t, int peer, ncclComm_t c, uintptr_t st) { return cb_ncclSend(P(s), n, t, peer, c, S(st)); }
static ncclResult_t cb_recv(uintptr_t r, size_t n, int t, int peer, ncclComm_t c, uintptr_t st) { return cb_ncclRecv(P(r), n, t, peer, c, S(st)); }
*/
import "C"

import "unsafe"

// DataType is ncclDataType_t.
type DataType int

// NCCL's data types; Bfloat16 from 2.10, the fp8 types from 2.24.
const (
	Int8 DataType = iota
	Uint8
	Int32
	Uint32
	Int64
	Uint64
	Float16
	Float32
	Float64
	Bfloat16
	Float8e4m3
	Float8e5m2
)

// TypeSince is the first release that has a data type.
func TypeSince(t DataType) Version {
	switch {
	case t >= Float8e4m3:
		return V(2, 24, 0)
	case t == Bfloat16:
		return V(2, 10, 0)
	}
	return 0
}

// RedOp is ncclRedOp_t; values from NumOps on are per-communicator ops
// made by CreatePreMulSum.
type RedOp int

// NCCL's built-in reduction operators; Avg from 2.10.
const (
	Sum RedOp = iota
	Prod
	Max
	Min
	Avg
	NumOps
)

// Scalar residence for CreatePreMulSum.
const (
	ScalarDevice        = 0
	ScalarHostImmediate = 1
)

// CreatePreMulSum makes the operator that multiplies each input by scalar
// (given in the data type's own encoding, host-resident) before summing
// (ncclRedOpCreatePreMulSum, 2.11+).
func (c *Comm) CreatePreMulSum(scalar []byte, t DataType) (RedOp, error) {
	if err := Has("ncclRedOpCreatePreMulSum"); err != nil {
		return 0, err
	}
	var buf [8]byte // the largest scalar, so NCCL never reads past it
	copy(buf[:], scalar)
	var op C.ncclRedOp_t
	err := callComm("ncclRedOpCreatePreMulSum", C.cb_ncclRedOpCreatePreMulSum(&op, unsafe.Pointer(&buf[0]), C.int(t), ScalarHostImmediate, c.c), c.c)
	return RedOp(op), err
}

// DestroyRedOp releases an operator from CreatePreMulSum.
func (c *Comm) DestroyRedOp(op RedOp) error {
	return callComm("ncclRedOpDestroy", C.cb_ncclRedOpDestroy(C.int(op), c.c), c.c)
}

// Buffers and streams are device addresses and CUstream handles.

// AllReduce reduces count elements across ranks into every rank's recv.
func (c *Comm) AllReduce(send, recv uintptr, count int64, t DataType, op RedOp, stream uintptr) error {
	return callComm("ncclAllReduce", C.cb_all_reduce(C.uintptr_t(send), C.uintptr_t(recv), C.size_t(count), C.int(t), C.int(op), c.c, C.uintptr_t(stream)), c.c)
}

// Broadcast copies root's count elements to every rank.
func (c *Comm) Broadcast(send, recv uintptr, count int64, t DataType, root int, stream uintptr) error {
	return callComm("ncclBroadcast", C.cb_broadcast(C.uintptr_t(send), C.uintptr_t(recv), C.size_t(count), C.int(t), C.int(root), c.c, C.uintptr_t(stream)), c.c)
}

// Reduce reduces count elements across ranks into root's recv.
func (c *Comm) Reduce(send, recv uintptr, count int64, t DataType, op RedOp, root int, stream uintptr) error {
	return callComm("ncclReduce", C.cb_reduce(C.uintptr_t(send), C.uintptr_t(recv), C.size_t(count), C.int(t), C.int(op), C.int(root), c.c, C.uintptr_t(stream)), c.c)
}

// AllGather concatenates every rank's sendcount elements in rank order.
func (c *Comm) AllGather(send, recv uintptr, sendcount int64, t DataType, stream uintptr) error {
	return callComm("ncclAllGather", C.cb_all_gather(C.uintptr_t(send), C.uintptr_t(recv), C.size_t(sendcount), C.int(t), c.c, C.uintptr_t(stream)), c.c)
}

// ReduceScatter reduces and leaves block rank (recvcount elements) on each
// rank.
func (c *Comm) ReduceScatter(send, recv uintptr, recvcount int64, t DataType, op RedOp, stream uintptr) error {
	return callComm("ncclReduceScatter", C.cb_reduce_scatter(C.uintptr_t(send), C.uintptr_t(recv), C.size_t(recvcount), C.int(t), C.int(op), c.c, C.uintptr_t(stream)), c.c)
}

// Send sends count elements to peer; pair it with Recv inside a group.
func (c *Comm) Send(send uintptr, count int64, t DataType, peer int, stream uintptr) error {
	if err := Has("ncclSend"); err != nil {
		return err
	}
	return callComm("ncclSend", C.cb_send(C.uintptr_t(send), C.size_t(count), C.int(t), C.int(peer), c.c, C.uintptr_t(stream)), c.c)
}

// Recv receives count elements from peer.
func (c *Comm) Recv(recv uintptr, count int64, t DataType, peer int, stream uintptr) error {
	if err := Has("ncclRecv"); err != nil {
		return err
	}
	return callComm("ncclRecv", C.cb_recv(C.uintptr_t(recv), C.size_t(count), C.int(t), C.int(peer), c.c, C.uintptr_t(stream)), c.c)
}

func (c *Comm) rankAndCount() (rank, n int, err error) {
	if rank, err = c.UserRank(); err != nil {
		return 0, 0, err
	}
	n, err = c.Count()
	return rank, n, err
}

// AllToAll sends block i of count elements to rank i (ncclAlltoAll on
// 2.28+, a group of sends and receives before).
func (c *Comm) AllToAll(send, recv uintptr, count int64, t DataType, stream uintptr) error {
	if Has("ncclAlltoAll") == nil {
		return callComm("ncclAlltoAll", C.cb_all_to_all(C.uintptr_t(send), C.uintptr_t(recv), C.size_t(count), C.int(t), c.c, C.uintptr_t(stream)), c.c)
	}
	_, n, err := c.rankAndCount()
	if err != nil {
		return err
	}
	block := uintptr(count) * uintptr(t.Size())
	return Group(func() error {
		for r := 0; r < n; r++ {
			if err := c.Send(send+uintptr(r)*block, count, t, r, stream); err != nil {
				return err
			}
			if err := c.Recv(recv+uintptr(r)*block, count, t, r, stream); err != nil {
				return err
			}
		}
		return nil
	})
}

// Gather collects every rank's count elements on root, in rank order
// (ncclGather on 2.28+, grouped sends and receives before).
func (c *Comm) Gather(send, recv uintptr, count int64, t DataType, root int, stream uintptr) error {
	if Has("ncclGather") == nil {
		return callComm("ncclGather", C.cb_gather(C.uintptr_t(send), C.uintptr_t(recv), C.size_t(count), C.int(t), C.int(root), c.c, C.uintptr_t(stream)), c.c)
	}
	rank, n, err := c.rankAndCount()
	if err != nil {
		return err
	}
	block := uintptr(count) * uintptr(t.Size())
	return Group(func() error {
		if err := c.Send(send, count, t, root, stream); err != nil {
			return err
		}
		for r := 0; rank == root && r < n; r++ {
			if err := c.Recv(recv+uintptr(r)*block, count, t, r, stream); err != nil {
				return err
			}
		}
		return nil
	})
}

// Scatter sends block i of root's buffer to rank i (ncclScatter on 2.28+,
// grouped sends and receives before).
func (c *Comm) Scatter(send, recv uintptr, count int64, t DataType, root int, stream uintptr) error {
	if Has("ncclScatter") == nil {
		return callComm("ncclScatter", C.cb_scatter(C.uintptr_t(send), C.uintptr_t(recv), C.size_t(count), C.int(t), C.int(root), c.c, C.uintptr_t(stream)), c.c)
	}
	rank, n, err := c.rankAndCount()
	if err != nil {
		return err
	}
	block := uintptr(count) * uintptr(t.Size())
	return Group(func() error {
		for r := 0; rank == root && r < n; r++ {
			if err := c.Send(send+uintptr(r)*block, count, t, r, stream); err != nil {
				return err
			}
		}
		return c.Recv(recv, count, t, root, stream)
	})
}

// Size is the element size in bytes.
func (t DataType) Size() int {
	switch t {
	case Int8, Uint8, Float8e4m3, Float8e5m2:
		return 1
	case Float16, Bfloat16:
		return 2
	case Int32, Uint32, Float32:
		return 4
	}
	return 8
}
