package gpu

import (
	"fmt"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/cuda"
	"github.com/collbench/collbench/nccl"
)

// gpu is one local rank: its device context, stream, buffers and
// communicator.
type gpu struct {
	info       bench.Device
	sm         int    // compute capability, major·10+minor
	sms        int    // multiprocessors
	bus        string // PCI address, as the driver writes it
	ctx        *cuda.Context
	stream     *cuda.Stream
	send, recv uintptr
	ncclMem    bool       // buffers came from ncclMemAlloc
	comm       *nccl.Comm // the measured communicator
	world      *nccl.Comm // the job-wide one it was split from, if any
	// borrowed: the context, stream, buffers and job-wide communicator
	// belong to the Comm this one was regrouped from (Comm.Regroup);
	// releasing this one leaves them alone.
	borrowed bool
	handles  []uintptr // ncclCommRegister handles (-R 1)
	windows  []uintptr // symmetric windows (-R 2)
	events   []*cuda.Event
	work     *compute // the overlap experiment's stream and operands
	// Free device memory before the communicators, after them, and after
	// the buffers (allocated and registered), for -M.
	freeBefore, freeInit, freeBuffers int64
}

// openDevice makes the device's primary context current, reads what the
// preamble shows, and creates a non-blocking stream (at the device's
// highest priority when commHigh; the NULL stream instead when null). On
// failure it returns what was made so far, for Close.
func openDevice(ordinal int, commHigh, null bool) (*gpu, error) {
	dev := cuda.Device(ordinal)
	ctx, err := dev.PrimaryContext()
	if err != nil {
		return nil, err
	}
	g := &gpu{ctx: ctx, info: bench.Device{Ordinal: ordinal}}
	if err := ctx.SetCurrent(); err != nil {
		return g, err
	}
	if g.info.Name, err = dev.Name(); err != nil {
		return g, err
	}
	if g.bus, err = dev.PCIBusID(); err != nil {
		return g, err
	}
	if g.info.BusID, err = parseBusID(g.bus); err != nil {
		return g, err
	}
	if g.sms, err = dev.Attribute(cuda.AttrMultiprocessorCount); err != nil {
		return g, err
	}
	major, minor, err := dev.ComputeCapability()
	if err != nil {
		return g, err
	}
	g.sm = major*10 + minor
	switch {
	case null:
		g.stream = cuda.NullStream()
	case commHigh:
		var prio int
		if _, prio, err = cuda.StreamPriorityRange(); err != nil {
			return g, err
		}
		g.stream, err = cuda.NewStreamWithPriority(cuda.StreamNonBlocking, prio)
	default:
		// As nccl-tests' cudaStreamCreateWithFlags: no priority given.
		g.stream, err = cuda.NewStream(cuda.StreamNonBlocking)
	}
	if err != nil {
		return g, err
	}
	g.freeBefore, _, err = cuda.MemInfo()
	return g, err
}

// allocBuffers makes the send and receive buffers of bufBytes each, with
// ncclMemAlloc where NCCL has it, once the communicators exist: nccl-tests
// allocates them after initComms, next to each other. The device's
// context must be current.
func (g *gpu) allocBuffers(bufBytes int64) error {
	var err error
	if g.freeInit, _, err = cuda.MemInfo(); err != nil {
		return err
	}
	size := max(bufBytes, 1)
	if nccl.Has("ncclMemAlloc") == nil {
		g.ncclMem = true
		if g.send, err = nccl.MemAlloc(size); err == nil {
			g.recv, err = nccl.MemAlloc(size)
		}
	} else {
		var p cuda.DevicePtr
		if p, err = cuda.MemAlloc(size); err == nil {
			g.send = uintptr(p)
			p, err = cuda.MemAlloc(size)
			g.recv = uintptr(p)
		}
	}
	if err != nil {
		return fmt.Errorf("allocating 2 × %d bytes: %w", size, err)
	}
	return nil
}

// ensureEvents makes sure the GPU has at least n timing events.
func (g *gpu) ensureEvents(n int) error {
	if len(g.events) >= n {
		return nil
	}
	if err := g.ctx.SetCurrent(); err != nil {
		return err
	}
	for len(g.events) < n {
		e, err := cuda.NewEvent(cuda.EventDefault)
		if err != nil {
			return err
		}
		g.events = append(g.events, e)
	}
	return nil
}

// release frees what openDevice and the communicator set-up made; after
// an abort the communicator is already gone. A borrowed GPU frees only
// its own communicator and events.
func (g *gpu) release(aborted bool) error {
	var first error
	keep := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	if err := g.ctx.SetCurrent(); err != nil {
		return err
	}
	if g.work != nil {
		keep(g.work.release())
		g.work = nil
	}
	if g.comm != nil && !aborted {
		keep(g.deregister())
		keep(g.comm.Destroy())
	}
	if g.world != nil && !aborted && !g.borrowed {
		keep(g.world.Destroy())
	}
	g.comm, g.world = nil, nil
	for _, e := range g.events {
		keep(e.Destroy())
	}
	g.events = nil
	if g.borrowed {
		g.send, g.recv, g.stream = 0, 0, nil
		return first
	}
	for _, p := range []uintptr{g.send, g.recv} {
		switch {
		case p == 0:
		case g.ncclMem:
			keep(nccl.MemFree(p))
		default:
			keep(cuda.MemFree(cuda.DevicePtr(p)))
		}
	}
	g.send, g.recv = 0, 0
	if g.stream != nil {
		keep(g.stream.Destroy())
		g.stream = nil
	}
	keep(g.ctx.Release())
	return first
}
