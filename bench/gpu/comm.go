package gpu

/*
#include <stdlib.h>
#include "batch.h"
*/
import "C"

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"time"
	"unsafe"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/numeric"
	"github.com/collbench/collbench/cuda"
	"github.com/collbench/collbench/nccl"
)

// Comm is the communicators of this process's GPUs.
type Comm struct {
	gpus     []*gpu
	nranks   int
	bufBytes int64
	pad      int64 // allocated past bufBytes for -u
	version  nccl.Version
	minSM    int
	cc       *C.cb_comms
	tuning   Tuning
	recorded int // iterations with events since the last IterTimes
	aborted  bool
	closed   bool
	workload bench.Workload // the overlap experiment's, once set
	plan     ctaPlan        // the CTA limits of ranks that share a GPU
	global   []int          // each local GPU's rank in the job, as laid out for C
}

// Notes implements bench.Noter: which ranks share a GPU and the CTA
// limit each of them runs with.
func (c *Comm) Notes() []string { return c.plan.notes }

// Capabilities implements bench.Comm.
func (c *Comm) Capabilities() bench.Capabilities {
	return bench.Capabilities{
		Graphs: true,
		Type:   func(t numeric.DataType) error { return typeSupport(t, c.version, c.minSM) },
		Op:     func(op numeric.RedOp) error { return opSupport(op, c.version) },
		Pair:   pairSupport,
	}
}

// Devices implements bench.Comm.
func (c *Comm) Devices() []bench.Device {
	out := make([]bench.Device, len(c.gpus))
	for i, g := range c.gpus {
		out[i] = g.info
	}
	return out
}

// onDevice runs f with local rank l's context current on a pinned thread.
func (c *Comm) onDevice(l int, f func(g *gpu) error) error {
	if l < 0 || l >= len(c.gpus) {
		return fmt.Errorf("no local rank %d", l)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	g := c.gpus[l]
	if err := g.ctx.SetCurrent(); err != nil {
		return err
	}
	return f(g)
}

func (c *Comm) buffer(g *gpu, buf bench.BufKind, off int64, n int) (cuda.DevicePtr, error) {
	if off < 0 || off+int64(n) > max(c.bufBytes+c.pad, 1) {
		return 0, fmt.Errorf("%d bytes at offset %d overflow the %d-byte buffer", n, off, c.bufBytes+c.pad)
	}
	base := g.send
	if buf == bench.RecvBuf {
		base = g.recv
	}
	return cuda.DevicePtr(base + uintptr(off)), nil
}

// Write implements bench.Comm. A copy from pageable memory may return
// before its DMA lands, and the legacy stream it runs on does not order
// with the non-blocking streams NCCL uses, so the context is synchronised
// before the data is relied on.
func (c *Comm) Write(l int, buf bench.BufKind, off int64, data []byte) error {
	return c.onDevice(l, func(g *gpu) error {
		p, err := c.buffer(g, buf, off, len(data))
		if err != nil {
			return err
		}
		if err := cuda.CopyToDevice(p, data); err != nil {
			return err
		}
		return cuda.Synchronize()
	})
}

// Read implements bench.Comm.
func (c *Comm) Read(l int, buf bench.BufKind, off int64, dst []byte) error {
	return c.onDevice(l, func(g *gpu) error {
		p, err := c.buffer(g, buf, off, len(dst))
		if err != nil {
			return err
		}
		return cuda.CopyFromDevice(dst, p)
	})
}

// cOp describes a batch to the C loop.
func (c *Comm) cOp(b bench.Batch) (C.cb_op, error) {
	code, err := collCode(b.Coll)
	if err != nil {
		return C.cb_op{}, err
	}
	nt, ok := ncclTypes[b.Type]
	if !ok {
		return C.cb_op{}, fmt.Errorf("data type %s has no NCCL equivalent", b.Type)
	}
	op, premul := ncclOp(b.RedOp)
	if premul {
		if c.cc.p.premulCreate == nil {
			return C.cb_op{}, opSupport(b.RedOp, c.version)
		}
		n := int(c.cc.ndev)
		ranks := unsafe.Slice(c.cc.ranks, n)
		for i := range n {
			unsafe.Slice(c.cc.scalars, n)[i] = C.uint64_t(premulScalar(b.Type, int(ranks[i])))
		}
	}
	elt := int64(nt.Size())
	if b.Coll.Traffic != nil {
		c.setShares(b)
	}
	footprint := b.Footprint()
	var steps int64
	if footprint > 0 {
		steps = c.bufBytes / footprint
	}
	o := C.cb_op{coll: C.int(code), dtype: C.int(nt), op: C.int(op), root: C.int(b.Root),
		count: C.size_t(b.Counts.Param), elt: C.size_t(elt),
		footprint: C.size_t(footprint), steps: C.size_t(steps), unalign: C.size_t(b.Unalign),
		iters: C.int(b.Iters), agg: C.int(b.Agg), first_iter: C.int(b.FirstIter)}
	if premul {
		o.premul = 1
	}
	if b.InPlace {
		o.inplace = 1
		o.send_inplace, o.recv_inplace = C.size_t(b.Counts.SendInPlace), C.size_t(b.Counts.RecvInPlace)
	}
	return o, nil
}

// setShares lays out, for the C loop, what each local GPU sends every
// rank and receives from it in an uneven all-to-all, for each of the
// traffic's draws.
func (c *Comm) setShares(b bench.Batch) {
	n, ndev := int(c.cc.nranks), int(c.cc.ndev)
	draws := max(len(b.Coll.Traffic.Draws), 1)
	need := C.size_t(2 * n * ndev * draws)
	if c.cc.share_cap < need {
		C.free(unsafe.Pointer(c.cc.shares))
		c.cc.shares = (*C.size_t)(C.calloc(need, C.size_t(unsafe.Sizeof(C.size_t(0)))))
		c.cc.share_cap = need
	}
	c.cc.share_draws = C.int(draws)
	shares := unsafe.Slice(c.cc.shares, int(need))
	ranks := unsafe.Slice(c.cc.ranks, ndev)
	total := b.Counts.Total(b.Type.Size(), n)
	for k := range draws {
		for d := range ndev {
			me, at := int(ranks[d]), 2*n*(k*ndev+d)
			for p := range n {
				shares[at+p] = C.size_t(b.Coll.Traffic.PeerBytesAt(k, me, p, n, total))
				shares[at+n+p] = C.size_t(b.Coll.Traffic.PeerBytesAt(k, p, me, n, total))
			}
		}
	}
}

// MemoryUse implements bench.MemoryReporter from the free memory each
// GPU had before its communicators, after them, after the buffers (made
// and registered, in nccl-tests' order) and now; each figure is the
// largest over the GPUs, as nccl-tests' -M takes it, and Free the least.
func (c *Comm) MemoryUse() (bench.MemoryUse, error) {
	var u bench.MemoryUse
	for l := range c.gpus {
		err := c.onDevice(l, func(g *gpu) error {
			free, _, err := cuda.MemInfo()
			u.Init = max(u.Init, g.freeBefore-g.freeInit)
			u.Buffers = max(u.Buffers, g.freeInit-g.freeBuffers)
			u.Collective = max(u.Collective, g.freeBuffers-free)
			if l == 0 || free < u.Free {
				u.Free = free
			}
			return err
		})
		if err != nil {
			return u, err
		}
	}
	return u, nil
}

// Enqueue implements bench.Comm: one C call enqueues the whole batch on
// every GPU.
func (c *Comm) Enqueue(b bench.Batch) error {
	if c.aborted {
		return fmt.Errorf("communicators were aborted")
	}
	o, err := c.cOp(b)
	if err != nil {
		return err
	}
	if b.Record {
		if err := c.prepareEvents(b.Iters + 1); err != nil {
			return err
		}
		o.record = 1
	}
	var st C.cb_status
	if C.cb_enqueue(c.cc, &o, &st) != C.CB_OK {
		return c.statusError(st)
	}
	if b.Record {
		c.recorded = b.Iters
	}
	return nil
}

// prepareEvents grows every GPU's events to n and lays them out for C.
func (c *Comm) prepareEvents(n int) error {
	if int(c.cc.event_cap) >= n {
		return nil
	}
	events := make([][]uintptr, len(c.gpus))
	for l := range c.gpus {
		if err := c.onDevice(l, func(g *gpu) error { return g.ensureEvents(n) }); err != nil {
			return err
		}
		for _, e := range c.gpus[l].events[:n] {
			events[l] = append(events[l], e.Handle())
		}
	}
	c.setEvents(events)
	return nil
}

// statusError turns the C loop's failure report into a Go error.
func (c *Comm) statusError(st C.cb_status) error {
	call := C.GoString(st.call)
	where := ""
	if d := int(st.dev); d >= 0 && d < len(c.gpus) {
		where = fmt.Sprintf("rank %d (GPU %d): ", c.gpus[d].info.Rank, c.gpus[d].info.Ordinal)
	}
	if st.kind == C.CB_FAIL_CUDA {
		return fmt.Errorf("%s%w", where, cuda.ResultError(call, int(st.code)))
	}
	return fmt.Errorf("%s%w", where, nccl.ResultError(call, int(st.code), C.GoString(&st.last[0])))
}

// pollSlice is how long one C poll spins before Go checks for
// cancellation; completion itself is noticed at once.
const pollSlice = 2 * time.Millisecond

// Wait implements bench.Comm, polling the streams as nccl-tests does.
func (c *Comm) Wait(ctx context.Context) error {
	for {
		var st C.cb_status
		switch C.cb_wait(c.cc, C.int64_t(pollSlice), &st) {
		case C.CB_OK:
			return nil
		case C.CB_FAILED:
			return c.statusError(st)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// Waiting implements bench.Staller: the ranks whose stream still has
// work, or every rank when the streams cannot be queried.
func (c *Comm) Waiting() []int {
	busy := make([]C.int, len(c.global))
	var st C.cb_status
	failed := len(busy) > 0 && C.cb_busy(c.cc, &busy[0], &st) != C.CB_OK
	var out []int
	for d, rank := range c.global {
		if failed || busy[d] != 0 {
			out = append(out, rank)
		}
	}
	return out
}

// SharedDevices implements bench.DeviceSharer from the placements every
// process gave before the communicators opened.
func (c *Comm) SharedDevices() [][]int {
	var out [][]int
	for _, sg := range c.plan.shared {
		out = append(out, slices.Clone(sg.ranks))
	}
	return out
}

// StallCause implements bench.Staller from the ranks that share a GPU.
func (c *Comm) StallCause() string { return c.plan.stallCause() }

// IterTimes implements bench.Comm from the events of the last recorded
// batch.
func (c *Comm) IterTimes() [][]time.Duration {
	n := c.recorded
	c.recorded = 0
	if n == 0 {
		return nil
	}
	out := make([][]time.Duration, len(c.gpus))
	for d, g := range c.gpus {
		for i := 0; i < n; i++ {
			t, err := cuda.ElapsedHandles(g.events[i].Handle(), g.events[i+1].Handle())
			if err != nil {
				return nil
			}
			out[d] = append(out[d], t)
		}
	}
	return out
}

// Abort implements bench.Comm: every communicator is aborted so no GPU
// stays blocked on a peer.
func (c *Comm) Abort() {
	if c.aborted {
		return
	}
	c.aborted = true
	for _, g := range c.gpus {
		for _, comm := range []*nccl.Comm{g.comm, g.world} {
			if comm != nil {
				comm.Abort()
			}
		}
	}
}

// Close implements bench.Comm.
func (c *Comm) Close() error {
	if c.closed {
		return nil
	}
	c.closed = true
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var first error
	for _, g := range c.gpus {
		if err := g.release(c.aborted); err != nil && first == nil {
			first = err
		}
	}
	if cc := c.cc; cc != nil {
		for _, p := range []unsafe.Pointer{unsafe.Pointer(cc.ctxs), unsafe.Pointer(cc.comms), unsafe.Pointer(cc.streams),
			unsafe.Pointer(cc.send), unsafe.Pointer(cc.recv), unsafe.Pointer(cc.ranks), unsafe.Pointer(cc.scalars),
			unsafe.Pointer(cc.events), unsafe.Pointer(cc.shares)} {
			C.free(p)
		}
		C.free(unsafe.Pointer(cc))
		c.cc = nil
	}
	return first
}

// Capture implements bench.Grapher: the batch is captured on every GPU's
// stream and instantiated, one graph per GPU.
func (c *Comm) Capture(b bench.Batch) (bench.Graph, error) {
	o, err := c.cOp(b)
	if err != nil {
		return nil, err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ptrSize := C.size_t(unsafe.Sizeof(unsafe.Pointer(nil)))
	execs := (*unsafe.Pointer)(C.calloc(C.size_t(len(c.gpus)), ptrSize))
	var st C.cb_status
	if C.cb_capture(c.cc, &o, execs, &st) != C.CB_OK {
		C.free(unsafe.Pointer(execs))
		return nil, c.statusError(st)
	}
	return &graph{c: c, execs: execs}, nil
}

type graph struct {
	c     *Comm
	execs *unsafe.Pointer
}

func (g *graph) Launch(n int) error {
	var st C.cb_status
	if C.cb_graph_launch(g.c.cc, g.execs, C.int(n), &st) != C.CB_OK {
		return g.c.statusError(st)
	}
	return nil
}

func (g *graph) Close() error {
	if g.execs != nil && g.c.cc != nil {
		C.cb_graph_free(g.c.cc, g.execs)
		C.free(unsafe.Pointer(g.execs))
	}
	g.execs = nil
	return nil
}
