package gpu

/*
#include <stdlib.h>
#include "batch.h"
*/
import "C"

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"unsafe"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/cuda"
	"github.com/collbench/collbench/nccl"
	"github.com/collbench/collbench/setting"
)

// Backend opens NCCL communicators on the local GPUs.
type Backend struct {
	NCCLLib string // explicit libnccl path or folder; empty searches (libpath)
	CUDALib string // explicit libcuda path or folder
	// Tuning is how NCCL and the streams are set up for the
	// communicators Open opens.
	Tuning Tuning
}

// Tuning is what the nccl backend takes beyond any backend's setup
// (bench.Setup): how NCCL's communicators and the collectives' streams
// are configured. The zero value is nccl-tests' defaults.
type Tuning struct {
	// Register registers the buffers with NCCL, as nccl-tests' -R: 1
	// with each communicator (ncclCommRegister), 2 as symmetric windows.
	Register int
	// HighPriority puts the collectives' streams at the device's highest
	// priority, above the overlap experiment's compute.
	HighPriority bool
	// InitThreads, above 1, initialises the local communicators from that
	// many threads at once, each its own block of consecutive local ranks
	// in its own NCCL group (nccl-tests' -p with -t threads); otherwise
	// one group initialises them all.
	InitThreads int
	// StreamNull runs the collectives on the device's legacy default
	// (NULL) stream instead of a non-blocking one (nccl-tests' -y).
	StreamNull bool
	// MinCTAs and MaxCTAs bound the CTAs (channels) NCCL gives each
	// collective, through its communicator config; 0 keeps its default.
	MinCTAs, MaxCTAs int
	// P2PPeers is the most peers a rank exchanges with point to point in
	// any call these communicators run, where the measurement knows it
	// (a send/receive ring: 2); 0 when unknown. NCCL 2.30 sizes its
	// point-to-point resources by it.
	P2PPeers int
	// CTAPolicy is NCCL's CTA policy (nccl-tests' -x): 1 efficiency
	// (NCCL 2.27), 2 zero (2.28); 0 leaves NCCL's default.
	CTAPolicy int
}

// Tuned is the backend with t as its tuning.
func (b Backend) Tuned(t Tuning) Backend {
	b.Tuning = t
	return b
}

// Name implements bench.Backend.
func (Backend) Name() string { return "nccl" }

// Load opens the CUDA driver and NCCL, returning NCCL's path.
func (b Backend) Load() (string, error) {
	if _, err := cuda.Load(b.CUDALib); err != nil {
		return "", err
	}
	return nccl.Load(b.NCCLLib)
}

// devices resolves the setup's device ordinals and checks them.
func devices(s bench.Setup) ([]int, error) {
	devs := s.Devices
	if len(devs) == 0 {
		for i := 0; i < s.LocalRanks; i++ {
			devs = append(devs, i)
		}
	}
	if len(devs) != s.LocalRanks {
		return nil, fmt.Errorf("%d device ordinals given for %d local ranks", len(devs), s.LocalRanks)
	}
	n, err := cuda.DeviceCount()
	if err != nil {
		return nil, err
	}
	for _, d := range devs {
		if d < 0 || d >= n {
			vis := ""
			if v, ok := os.LookupEnv("CUDA_VISIBLE_DEVICES"); ok {
				vis = fmt.Sprintf(" (CUDA_VISIBLE_DEVICES=%q)", v)
			}
			return nil, setting.Errorf("GPU %d does not exist: %d GPU(s) visible%s; lower {RanksPerProc} or pick other {Devices}", d, n, vis)
		}
	}
	return devs, nil
}

// MaxBytes implements bench.MemoryLimiter with nccl-tests' rule on the
// smallest GPU in use.
func (b Backend) MaxBytes(s bench.Setup, check bool) (int64, error) {
	if _, err := b.Load(); err != nil {
		return 0, err
	}
	devs, err := devices(s)
	if err != nil {
		return 0, err
	}
	var least int64 = -1
	for _, d := range devs {
		m, err := cuda.Device(d).TotalMem()
		if err != nil {
			return 0, err
		}
		if least < 0 || m < least {
			least = m
		}
	}
	return memoryCap(least, check), nil
}

// Open implements bench.Backend.
func (b Backend) Open(ctx context.Context, s bench.Setup) (bench.Comm, error) {
	if _, err := b.Load(); err != nil {
		return nil, err
	}
	devs, err := devices(s)
	if err != nil {
		return nil, err
	}
	if err := s.Groups.Validate(s.JobRanks); err != nil {
		return nil, err
	}
	if s.JobRanks != s.LocalRanks && s.Exchange == nil {
		return nil, fmt.Errorf("a job of %d ranks with %d in this process needs a rendezvous to share the NCCL id", s.JobRanks, s.LocalRanks)
	}
	// CUDA contexts and NCCL groups belong to the OS thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	t := b.Tuning
	c := &Comm{nranks: s.JobRanks, bufBytes: s.BufBytes, pad: s.Pad, version: nccl.RuntimeVersion(), minSM: 1 << 30, tuning: t}
	ok := false
	defer func() {
		if !ok {
			c.Abort()
			c.Close()
		}
	}()
	if (t.MinCTAs > 0 || t.MaxCTAs > 0) && c.version < nccl.V(2, 17, 0) {
		return nil, fmt.Errorf("CTA limits (minCTAs, maxCTAs) need NCCL 2.17 or later; %s is loaded", c.version)
	}
	if err := ctaPolicySupport(t.CTAPolicy, c.version); err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	if i := strings.IndexByte(host, '.'); i >= 0 {
		host = host[:i]
	}
	for i, d := range devs {
		g, err := openDevice(d, t.HighPriority, t.StreamNull)
		if g != nil {
			c.gpus = append(c.gpus, g)
		}
		if err != nil {
			return nil, fmt.Errorf("GPU %d: %w", d, err)
		}
		g.info.Rank, g.info.Hostname, g.info.PID = s.FirstRank+i, host, os.Getpid()
		g.info.Group, g.info.GroupRank, _ = s.Place(i)
		c.minSM = min(c.minSM, g.sm)
	}
	id, err := c.place(ctx, s)
	if err != nil {
		return nil, err
	}
	if err := c.initComms(id, s); err != nil {
		return nil, err
	}
	if !s.Groups.JobWide(s.JobRanks) {
		if err := c.split(s); err != nil {
			return nil, err
		}
	}
	for l := range c.gpus {
		if err := c.onDevice(l, func(g *gpu) error { return g.allocBuffers(s.BufBytes + s.Pad) }); err != nil {
			return nil, fmt.Errorf("GPU %d: %w", c.gpus[l].info.Ordinal, err)
		}
	}
	if t.Register > 0 {
		if err := c.register(t.Register); err != nil {
			return nil, err
		}
	}
	for l := range c.gpus {
		if err := c.onDevice(l, func(g *gpu) (err error) { g.freeBuffers, _, err = cuda.MemInfo(); return err }); err != nil {
			return nil, err
		}
	}
	if err := c.buildC(); err != nil {
		return nil, err
	}
	ok = true
	return c, nil
}

// place shares the NCCL id of the process holding rank 0 and every
// process's GPUs, and plans each local rank's CTAs from the ranks that
// share its GPU.
func (c *Comm) place(ctx context.Context, s bench.Setup) (nccl.UniqueID, error) {
	var id nccl.UniqueID
	mine := placement{Host: machineID(), First: s.FirstRank}
	for _, g := range c.gpus {
		mine.GPUs = append(mine.GPUs, gpuSeat{Bus: g.bus, Ordinal: g.info.Ordinal, SMs: g.sms})
	}
	if s.FirstRank == 0 {
		var err error
		if id, err = nccl.GetUniqueID(); err != nil {
			return id, err
		}
		mine.ID = id[:]
	}
	all, err := exchangePlacements(ctx, s, mine)
	if err != nil {
		return id, fmt.Errorf("sharing the NCCL id: %w", err)
	}
	if got := len(all[0].ID); got != len(id) {
		return id, fmt.Errorf("sharing the NCCL id: got %d bytes, want %d", got, len(id))
	}
	copy(id[:], all[0].ID)
	me := slices.IndexFunc(all, func(p placement) bool { return p.First == s.FirstRank })
	if me < 0 {
		return id, fmt.Errorf("sharing the NCCL id: no process reported rank %d", s.FirstRank)
	}
	c.plan = planCTAs(all, me, c.tuning.MaxCTAs, c.tuning.MinCTAs, os.Getenv("NCCL_MAX_CTAS"))
	return id, nil
}

// config is local rank i's communicator config: nccl-tests' (commConfig)
// with the CTA limit the plan gives a rank whose GPU is shared.
func (c *Comm) config(i int) nccl.Config {
	cfg := commConfig(c.version, c.tuning)
	if i < len(c.plan.limits) && c.plan.limits[i] > 0 {
		cfg.MaxCTAs = c.plan.limits[i]
	}
	return cfg
}

// commConfig is nccl-tests' communicator config: defaults, plus
// nvlinkCentricSched on 2.28 and later, plus the CTA limits asked for, plus
// from 2.30 the peers a rank exchanges with where a collective's are few
// (nccl-tests' sendrecv sets maxP2pPeers to 2).
func commConfig(v nccl.Version, t Tuning) nccl.Config {
	cfg := nccl.DefaultConfig()
	if v >= nccl.V(2, 28, 0) {
		cfg.NvlinkCentricSched = 1
	}
	if t.P2PPeers > 0 && v >= nccl.V(2, 30, 0) {
		cfg.MaxP2pPeers = t.P2PPeers
	}
	if t.MinCTAs > 0 {
		cfg.MinCTAs = t.MinCTAs
	}
	if t.MaxCTAs > 0 {
		cfg.MaxCTAs = t.MaxCTAs
	}
	if t.CTAPolicy > 0 {
		cfg.CTAPolicy = t.CTAPolicy
	}
	return cfg
}

// ctaPolicySupport says why the loaded NCCL cannot take CTA policy p:
// the config member arrived in 2.27 with the efficiency policy (1), the
// zero policy (2) in 2.28.
func ctaPolicySupport(p int, v nccl.Version) error {
	switch {
	case p == 1 && v < nccl.V(2, 27, 0), p == 2 && v < nccl.V(2, 28, 0):
		need := map[int]string{1: "2.27", 2: "2.28"}[p]
		return setting.Errorf("CTA policy %d ({CTAPolicy}) needs NCCL %s or later; %s is loaded", p, need, v)
	case p < 0 || p > 2:
		return setting.Errorf("CTA policy ({CTAPolicy}) must be 0, 1 or 2 (got %d)", p)
	}
	return nil
}

// inGroup runs f for every local GPU, with its context current, between
// one ncclGroupStart and ncclGroupEnd, so that calls that need all local
// ranks at once (init, split) can complete. The first error wins.
func (c *Comm) inGroup(what string, f func(i int, g *gpu) error) error {
	// An NCCL group belongs to the thread that started it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := nccl.GroupStart(); err != nil {
		return err
	}
	var first error
	for i, g := range c.gpus {
		if err := g.ctx.SetCurrent(); err != nil {
			first = err
			break
		}
		if err := f(i, g); err != nil {
			first = err
			break
		}
	}
	if err := nccl.GroupEnd(); err != nil && first == nil {
		first = fmt.Errorf("%s %d communicator(s): %w", what, len(c.gpus), err)
	}
	return first
}

// initComms creates every local communicator in one NCCL group, as
// nccl-tests' initComms does, or, with InitThreads above 1, one group per
// thread, the threads at once, as its -p does.
func (c *Comm) initComms(id nccl.UniqueID, s bench.Setup) error {
	firstRank := s.FirstRank
	// NCCL writes each handle at the end of its group, so they are read
	// after it (nccl.Pending).
	pending := make([]*nccl.Pending, len(c.gpus))
	initOne := func(i int, g *gpu) error {
		cfg := c.config(i)
		p, err := nccl.StartInitRank(c.nranks, id, firstRank+i, &cfg)
		if err != nil {
			return fmt.Errorf("rank %d on GPU %d: %w", firstRank+i, g.info.Ordinal, err)
		}
		pending[i] = p
		return nil
	}
	defer func() {
		for i, p := range pending {
			if p != nil {
				c.gpus[i].comm = p.Comm()
			}
		}
	}()
	threads := c.tuning.InitThreads
	if threads <= 1 || len(c.gpus)%threads != 0 {
		return c.inGroup("initialising", initOne)
	}
	per := len(c.gpus) / threads
	errs := make(chan error, threads)
	for t := 0; t < threads; t++ {
		block := &Comm{gpus: c.gpus[t*per : (t+1)*per]}
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			errs <- block.inGroup("initialising", func(i int, g *gpu) error { return initOne(t*per+i, g) })
		}()
	}
	var first error
	for t := 0; t < threads; t++ {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// split replaces every job-wide communicator with its group's, made by
// ncclCommSplit in one NCCL group (the new handles are read after the
// group ends, when NCCL has written them): the color is the group, the key the
// global rank, so group ranks follow the layout. Ranks that sit out an
// isolated run pass NCCL_SPLIT_NOCOLOR and are dropped.
func (c *Comm) split(s bench.Setup) error {
	if err := nccl.Has("ncclCommSplit"); err != nil {
		return setting.Errorf("groups ({GroupSize}) need ncclCommSplit: %w", err)
	}
	// Inside the group NCCL writes the new handles only at its end.
	pending := make([]*nccl.Pending, len(c.gpus))
	err := c.inGroup("splitting", func(i int, g *gpu) error {
		cfg := c.config(i)
		color := g.info.Group
		if _, _, active := s.Place(i); !active {
			color = nccl.NoColor
		}
		p, err := g.comm.StartSplit(color, g.info.Rank, &cfg)
		if err != nil {
			return fmt.Errorf("splitting rank %d into group %d: %w", g.info.Rank, g.info.Group, err)
		}
		pending[i] = p
		return nil
	})
	for i, p := range pending {
		switch {
		case p == nil:
		case err != nil:
			p.Release()
		default:
			c.gpus[i].world, c.gpus[i].comm = c.gpus[i].comm, p.Comm()
		}
	}
	if err != nil {
		return err
	}
	kept := c.gpus[:0]
	for _, g := range c.gpus {
		if g.comm != nil {
			kept = append(kept, g)
		} else if err := g.release(false); err != nil {
			return err
		}
	}
	c.gpus = kept
	c.nranks = s.Groups.Of(s.JobRanks)
	return nil
}

// handles are one GPU's objects as the C loop sees them.
type handles struct {
	ctx, comm, stream uintptr
	send, recv        uintptr
	rank              int // in the measured communicator
	global            int // in the job
}

// buildC lays the communicators out for the C loop, with every entry point
// it calls.
func (c *Comm) buildC() error {
	hs := make([]handles, len(c.gpus))
	for i, g := range c.gpus {
		hs[i] = handles{ctx: g.ctx.Handle(), comm: g.comm.Handle(), stream: g.stream.Handle(), send: g.send, recv: g.recv,
			rank: g.info.GroupRank, global: g.info.Rank}
	}
	c.layout(hs)
	return c.useProcs(func(name string) unsafe.Pointer {
		if strings.HasPrefix(name, "cu") {
			return cuda.Proc(name)
		}
		return nccl.Proc(name)
	})
}

// layout allocates the C view of the local GPUs.
func (c *Comm) layout(hs []handles) {
	n := len(hs)
	ptr := C.size_t(unsafe.Sizeof(uintptr(0)))
	cc := (*C.cb_comms)(C.calloc(1, C.size_t(unsafe.Sizeof(C.cb_comms{}))))
	c.cc = cc
	cc.ndev, cc.nranks = C.int(n), C.int(c.nranks)
	cc.ctxs = (*unsafe.Pointer)(C.calloc(C.size_t(n), ptr))
	cc.comms = (*C.ncclComm_t)(C.calloc(C.size_t(n), ptr))
	cc.streams = (*C.stream_t)(C.calloc(C.size_t(n), ptr))
	cc.send = (*C.uintptr_t)(C.calloc(C.size_t(n), ptr))
	cc.recv = (*C.uintptr_t)(C.calloc(C.size_t(n), ptr))
	cc.ranks = (*C.int)(C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof(C.int(0)))))
	cc.scalars = (*C.uint64_t)(C.calloc(C.size_t(n), 8))
	c.global = make([]int, n)
	for i, h := range hs {
		c.global[i] = h.global
		setPtr(cc.ctxs, i, h.ctx)
		setPtr((*unsafe.Pointer)(unsafe.Pointer(cc.comms)), i, h.comm)
		setPtr((*unsafe.Pointer)(unsafe.Pointer(cc.streams)), i, h.stream)
		unsafe.Slice(cc.send, n)[i] = C.uintptr_t(h.send)
		unsafe.Slice(cc.recv, n)[i] = C.uintptr_t(h.recv)
		unsafe.Slice(cc.ranks, n)[i] = C.int(h.rank)
	}
}

// setEvents lays out the timing events of every GPU (events[d][i]) for C.
func (c *Comm) setEvents(events [][]uintptr) {
	if c.cc.events != nil {
		C.free(unsafe.Pointer(c.cc.events))
	}
	n := 0
	if len(events) > 0 {
		n = len(events[0])
	}
	c.cc.events = (*unsafe.Pointer)(C.calloc(C.size_t(max(n*len(events), 1)), C.size_t(unsafe.Sizeof(uintptr(0)))))
	for d, evs := range events {
		for i, e := range evs {
			setPtr(c.cc.events, d*n+i, e)
		}
	}
	c.cc.event_cap = C.int(n)
}

// setPtr stores a C handle, carried through Go as an integer, in a C array.
func setPtr(arr *unsafe.Pointer, i int, h uintptr) {
	*(*uintptr)(unsafe.Add(unsafe.Pointer(arr), i*int(unsafe.Sizeof(h)))) = h
}

// useProcs resolves the entry points of the C loop through lookup. The
// all-to-all, gather and scatter entry points may be nil (before NCCL
// 2.28), which makes the loop use grouped send/receive as nccl-tests does.
func (c *Comm) useProcs(lookup func(name string) unsafe.Pointer) error {
	p := &c.cc.p
	required := []struct {
		dst  **[0]byte
		name string
	}{
		{&p.allReduce, "ncclAllReduce"}, {&p.broadcast, "ncclBroadcast"}, {&p.reduce, "ncclReduce"},
		{&p.allGather, "ncclAllGather"}, {&p.reduceScatter, "ncclReduceScatter"},
		{&p.send, "ncclSend"}, {&p.recv, "ncclRecv"},
		{&p.groupStart, "ncclGroupStart"}, {&p.groupEnd, "ncclGroupEnd"},
		{&p.eventRecord, "cuEventRecord"}, {&p.streamQuery, "cuStreamQuery"},
		{&p.ctxSetCurrent, "cuCtxSetCurrent"}, {&p.beginCapture, "cuStreamBeginCapture"},
		{&p.endCapture, "cuStreamEndCapture"}, {&p.graphInstantiate, "cuGraphInstantiate"},
		{&p.graphLaunch, "cuGraphLaunch"}, {&p.graphDestroy, "cuGraphDestroy"},
		{&p.graphExecDestroy, "cuGraphExecDestroy"}, {&p.memcpyD2D, "cuMemcpyDtoDAsync"},
	}
	for _, r := range required {
		addr := lookup(r.name)
		if addr == nil {
			return fmt.Errorf("the loaded libraries lack %s", r.name)
		}
		*r.dst = (*[0]byte)(addr)
	}
	optional := []struct {
		dst  **[0]byte
		name string
	}{
		{&p.alltoAll, "ncclAlltoAll"}, {&p.gather, "ncclGather"}, {&p.scatter, "ncclScatter"},
		{&p.premulCreate, "ncclRedOpCreatePreMulSum"}, {&p.redOpDestroy, "ncclRedOpDestroy"},
		{&p.asyncError, "ncclCommGetAsyncError"}, {&p.lastError, "ncclGetLastError"},
		{&p.groupSimulateEnd, "ncclGroupSimulateEnd"},
	}
	for _, o := range optional {
		*o.dst = (*[0]byte)(lookup(o.name))
	}
	return nil
}
