package nccl

/*
#include <stdlib.h>
#include <string.h>
#include "library.h"

// Device pointers and streams travel through Go as integers.
#define P(x) ((void*)(uintptr_t)(x))
#define S(x) ((cudaStream_t)(uintptr_t)(x))

static ncclResult_t cb_init_rank_config(ncclComm_t* c, int n, void* id, int rank, void* cfg) {
  ncclUniqueId u;
  memcpy(&u, id, sizeof(u));
  return cfg ? cb_ncclCommInitRankConfig(c, n, u, rank, cfg) : cb_ncclCommInitRank(c, n, u, rank);
}
static void cb_put_ptr(void* cfg, int off, const char* s) { memcpy((char*)cfg + off, &s, sizeof(s)); }
static ncclResult_t cb_mem_alloc(uintptr_t* p, size_t n) { void* q = NULL; ncclResult_t r = cb_ncclMemAlloc(&q, n); *p = (uintptr_t)q; return r; }
static ncclResult_t cb_mem_free(uintptr_t p) { return cb_ncclMemFree(P(p)); }
static ncclResult_t cb_register(ncclComm_t c, uintptr_t p, size_t n, uintptr_t* h) { void* q = NULL; ncclResult_t r = cb_ncclCommRegister(c, P(p), n, &q); *h = (uintptr_t)q; return r; }
static ncclResult_t cb_deregister(ncclComm_t c, uintptr_t h) { return cb_ncclCommDeregister(c, P(h)); }
static ncclResult_t cb_win_register(ncclComm_t c, uintptr_t p, size_t n, void** w, int flags) { return cb_ncclCommWindowRegister(c, P(p), n, w, flags); }
static ncclResult_t cb_win_deregister(ncclComm_t c, uintptr_t w) { return cb_ncclCommWindowDeregister(c, P(w)); }
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// UniqueID is ncclUniqueId: the 128 bytes rank 0 creates and every rank
// needs to join the communicator.
type UniqueID [128]byte

// GetUniqueID creates a new communicator id. The calling process hosts
// the bootstrap root for it.
func GetUniqueID() (UniqueID, error) {
	var id C.ncclUniqueId
	if err := call("ncclGetUniqueId", C.cb_ncclGetUniqueId(&id)); err != nil {
		return UniqueID{}, err
	}
	return *(*UniqueID)(unsafe.Pointer(&id)), nil
}

// Comm is one rank's communicator.
type Comm struct{ c C.ncclComm_t }

// Handle is the ncclComm_t for C code.
func (c *Comm) Handle() uintptr { return uintptr(unsafe.Pointer(c.c)) }

// cConfig lays cfg out for the loaded library in C memory; free releases
// the struct, which NCCL copies when the call starts. NCCL keeps the
// netName and commName pointers for the communicator's life, so those
// strings are never freed (a few bytes per communicator). It returns nil
// when the library has no config.
func cConfig(cfg *Config) (p unsafe.Pointer, free func()) {
	layout, ok := LayoutFor(RuntimeVersion())
	if cfg == nil || !ok {
		return nil, func() {}
	}
	buf, strs := layout.Encode(*cfg)
	p = C.malloc(C.size_t(len(buf)))
	C.memcpy(p, unsafe.Pointer(&buf[0]), C.size_t(len(buf)))
	for off, s := range strs {
		C.cb_put_ptr(p, C.int(off), C.CString(s))
	}
	return p, func() { C.free(p) }
}

// InitRank joins rank of an nranks communicator on the current device
// (the CUDA context current on the calling thread). cfg is sent with the
// layout the loaded library knows (ncclCommInitRankConfig, 2.14+); with an
// older library, or a nil cfg, plain ncclCommInitRank is used. Outside an
// NCCL group it returns the communicator; inside one, use StartInitRank.
func InitRank(nranks int, id UniqueID, rank int, cfg *Config) (*Comm, error) {
	p, err := StartInitRank(nranks, id, rank, cfg)
	if err != nil {
		return nil, err
	}
	return p.Comm(), nil
}

// StartInitRank calls ncclCommInitRank(Config); the communicator is read
// with Comm once the enclosing group, if any, has ended.
func StartInitRank(nranks int, id UniqueID, rank int, cfg *Config) (*Pending, error) {
	name := "ncclCommInitRank"
	p := newPending(cfg)
	if p.cfg != nil {
		name = "ncclCommInitRankConfig"
	}
	r := C.cb_init_rank_config(p.slot, C.int(nranks), unsafe.Pointer(&id[0]), C.int(rank), p.cfg)
	if err := call(name, r); err != nil {
		p.Release()
		return nil, err
	}
	return p, nil
}

// Pending is a communicator (or a window) NCCL is making. NCCL writes the
// new handle through the pointer it was given when the making ends, which
// inside an NCCL group is at ncclGroupEnd, after the call has returned: for
// a split or a window it is still NULL until then (NCCL 2.28), and an init
// writes it once more. So the handle's slot, and the config, live in C
// memory until Comm (or Window) reads them after the group.
type Pending struct {
	slot *C.ncclComm_t
	cfg  unsafe.Pointer
	free func()
}

func newPending(cfg *Config) *Pending {
	cp, freeCfg := cConfig(cfg)
	slot := (*C.ncclComm_t)(C.calloc(1, C.size_t(unsafe.Sizeof(C.ncclComm_t(nil)))))
	return &Pending{slot: slot, cfg: cp, free: func() { freeCfg(); C.free(unsafe.Pointer(slot)) }}
}

// Comm returns the new communicator (nil for a split with NoColor) and
// frees what the call held; call it once, after the group has ended.
func (p *Pending) Comm() *Comm {
	out := *p.slot
	p.free()
	if out == nil {
		return nil
	}
	return &Comm{c: out}
}

// Release frees what the call held without reading it, for a call whose
// group failed; NCCL writes no handle once the group has ended.
func (p *Pending) Release() { p.free() }

// NoColor is the color that leaves a rank out of every split communicator.
const NoColor = -1

// Split makes a communicator of the ranks that pass the same color,
// ordered by key (ncclCommSplit, 2.18+). With NoColor it returns nil.
// Outside an NCCL group it returns the new communicator; inside one, use
// StartSplit.
func (c *Comm) Split(color, key int, cfg *Config) (*Comm, error) {
	p, err := c.StartSplit(color, key, cfg)
	if err != nil {
		return nil, err
	}
	return p.Comm(), nil
}

// StartSplit calls ncclCommSplit; the communicator is read with Comm once
// the enclosing group, if any, has ended.
func (c *Comm) StartSplit(color, key int, cfg *Config) (*Pending, error) {
	if err := Has("ncclCommSplit"); err != nil {
		return nil, err
	}
	p := newPending(cfg)
	if err := callComm("ncclCommSplit", C.cb_ncclCommSplit(c.c, C.int(color), C.int(key), p.slot, p.cfg), c.c); err != nil {
		p.Release()
		return nil, err
	}
	return p, nil
}

// Destroy frees the communicator once its work is done.
func (c *Comm) Destroy() error { return callComm("ncclCommDestroy", C.cb_ncclCommDestroy(c.c), nil) }

// Abort frees the communicator at once, failing work in flight, so that no
// rank stays blocked on a peer that is gone.
func (c *Comm) Abort() error { return callComm("ncclCommAbort", C.cb_ncclCommAbort(c.c), nil) }

// GroupStart opens a group; the calls up to GroupEnd are launched together.
// The calling goroutine must stay on its OS thread until GroupEnd.
func GroupStart() error { return call("ncclGroupStart", C.cb_ncclGroupStart()) }

// GroupEnd launches the group.
func GroupEnd() error { return call("ncclGroupEnd", C.cb_ncclGroupEnd()) }

// Group runs f between GroupStart and GroupEnd on one OS thread.
func Group(f func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := GroupStart(); err != nil {
		return err
	}
	ferr := f()
	if err := GroupEnd(); err != nil && ferr == nil {
		ferr = err
	}
	return ferr
}

// MemAlloc allocates device memory suited to NCCL's transports on the
// current device (ncclMemAlloc, 2.19+).
func MemAlloc(n int64) (uintptr, error) {
	if err := Has("ncclMemAlloc"); err != nil {
		return 0, err
	}
	var p C.uintptr_t
	if err := call("ncclMemAlloc", C.cb_mem_alloc(&p, C.size_t(n))); err != nil {
		return 0, err
	}
	return uintptr(p), nil
}

// MemFree releases memory from MemAlloc.
func MemFree(p uintptr) error { return call("ncclMemFree", C.cb_mem_free(C.uintptr_t(p))) }

// Register registers a buffer with the communicator for zero-copy
// transports (ncclCommRegister, 2.19+) and returns its handle.
func (c *Comm) Register(p uintptr, n int64) (uintptr, error) {
	if err := Has("ncclCommRegister"); err != nil {
		return 0, err
	}
	var h C.uintptr_t
	if err := callComm("ncclCommRegister", C.cb_register(c.c, C.uintptr_t(p), C.size_t(n), &h), c.c); err != nil {
		return 0, err
	}
	return uintptr(h), nil
}

// Deregister releases a handle from Register.
func (c *Comm) Deregister(h uintptr) error {
	return callComm("ncclCommDeregister", C.cb_deregister(c.c, C.uintptr_t(h)), c.c)
}

// WinCollSymmetric is NCCL_WIN_COLL_SYMMETRIC: every rank registers a
// buffer of the same size, enabling symmetric-memory kernels.
const WinCollSymmetric = 0x01

// WindowRegister registers a buffer as a window (ncclCommWindowRegister,
// 2.27+). It is collective: every rank calls it. Outside an NCCL group it
// returns the window; inside one, use StartWindowRegister.
func (c *Comm) WindowRegister(p uintptr, n int64, flags int) (uintptr, error) {
	w, err := c.StartWindowRegister(p, n, flags)
	if err != nil {
		return 0, err
	}
	return w.Window(), nil
}

// StartWindowRegister calls ncclCommWindowRegister, which inside a group
// is a task ncclGroupEnd runs, writing the window then; read it with
// Window once the group has ended.
func (c *Comm) StartWindowRegister(p uintptr, n int64, flags int) (*Pending, error) {
	if err := Has("ncclCommWindowRegister"); err != nil {
		return nil, err
	}
	w := newPending(nil)
	if err := callComm("ncclCommWindowRegister", C.cb_win_register(c.c, C.uintptr_t(p), C.size_t(n), (*unsafe.Pointer)(unsafe.Pointer(w.slot)), C.int(flags)), c.c); err != nil {
		w.Release()
		return nil, err
	}
	return w, nil
}

// Window returns the registered window (0 when NCCL registered none) and
// frees the slot; call it once, after the group has ended.
func (p *Pending) Window() uintptr {
	out := uintptr(unsafe.Pointer(*p.slot))
	p.free()
	return out
}

// WindowDeregister releases a window.
func (c *Comm) WindowDeregister(w uintptr) error {
	return callComm("ncclCommWindowDeregister", C.cb_win_deregister(c.c, C.uintptr_t(w)), c.c)
}
