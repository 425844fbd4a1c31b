package host

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/setting"
)

// Backend is the host backend. Its zero value joins the ranks of one host
// through shared memory where they can share it (TransportAuto).
type Backend struct {
	Transport Transport
	Tuning    Tuning
}

// Name implements bench.Backend.
func (Backend) Name() string { return "host" }

// Precheck implements bench.Prechecker: the settings and the memory the
// ranks of this process would take, which Open checks the same way.
func (b Backend) Precheck(s bench.Setup) error {
	if err := b.Tuning.Check(); err != nil {
		return err
	}
	return checkMemory(s, b.Transport)
}

// Open creates the ranks of this process, their buffers, streams and the
// mesh of links between the ranks of each group, in this process and
// others.
func (b Backend) Open(ctx context.Context, s bench.Setup) (bench.Comm, error) {
	if s.LocalRanks < 1 {
		return nil, fmt.Errorf("need at least one rank (got %d)", s.LocalRanks)
	}
	if s.FirstRank < 0 || s.FirstRank+s.LocalRanks > s.JobRanks {
		return nil, fmt.Errorf("local ranks %d..%d are outside a job of %d", s.FirstRank, s.FirstRank+s.LocalRanks-1, s.JobRanks)
	}
	if s.JobRanks > s.LocalRanks && s.Exchange == nil {
		return nil, fmt.Errorf("a job of %d ranks with %d in this process needs a rendezvous", s.JobRanks, s.LocalRanks)
	}
	if err := s.Groups.Validate(s.JobRanks); err != nil {
		return nil, err
	}
	if err := b.Precheck(s); err != nil {
		return nil, err
	}
	reapSegments()
	var members []member
	for l := 0; l < s.LocalRanks; l++ {
		if group, gr, active := s.Place(l); active {
			members = append(members, member{local: l, global: s.FirstRank + l, group: group, groupRank: gr})
		}
	}
	size := s.Groups.Of(s.JobRanks)
	if err := ensureDescriptors(meshDescriptors(len(members), size),
		fmt.Sprintf("the TCP mesh of %d rank(s) in this process, in groups of %d,", len(members), size)); err != nil {
		return nil, err
	}
	m, err := dialMesh(ctx, s, members, b.Transport)
	if err != nil {
		return nil, err
	}
	ensureProcs(m)
	host, _ := os.Hostname()
	if i := strings.IndexByte(host, '.'); i >= 0 {
		host = host[:i]
	}
	ip := net.ParseIP(s.Addr)
	c := &Comm{mesh: m, host: host, remote: s.Addr != "" && (ip == nil || !ip.IsLoopback()), bufBytes: s.BufBytes}
	var mapping sync.WaitGroup // the buffers' pages, one goroutine a buffer
	for i, mb := range members {
		rk := &rank{
			id: mb.groupRank, n: s.Groups.Of(s.JobRanks), conns: m.conns[i], inline: inlineLimit(m.conns[i]), local: i,
			info: bench.Device{Rank: mb.global, Group: mb.group, GroupRank: mb.groupRank, Ordinal: mb.local},
			send: make([]byte, s.BufBytes+s.Pad), recv: make([]byte, s.BufBytes+s.Pad),
			work: make(chan bench.Batch, 64), tuning: b.Tuning, nodes: m.nodes(s, mb.group),
		}
		mapping.Go(func() { prefault(rk.send) })
		mapping.Go(func() { prefault(rk.recv) })
		c.ranks = append(c.ranks, rk)
		go c.stream(rk)
	}
	mapping.Wait()
	return c, nil
}

// checkMemory refuses ranks whose memory would not fit, so that a large
// -e or -g fails with a sentence instead of the kernel's OOM killer:
// their buffers and, unless every link is TCP, the shared-memory
// segments of their links, which grow with the square of the ranks.
func checkMemory(s bench.Setup, t Transport) error {
	const perRankBuffers = 3 // send, receive, and scratch at most as large
	need := float64(s.BufBytes+s.Pad) * perRankBuffers * float64(s.LocalRanks)
	what := fmt.Sprintf("{MaxBytes} %d bytes on %d ranks", s.BufBytes, s.LocalRanks)
	hint := "; lower {MaxBytes} or {RanksPerProc}"
	if links, bytes := segmentFootprint(s, t); links > 0 {
		need += bytes
		what = fmt.Sprintf("{MaxBytes} %d bytes on %d ranks, with %d shared-memory links of %d KiB,", s.BufBytes, s.LocalRanks,
			links, segmentSize(ringFor(s.Groups.Of(s.JobRanks)))>>10)
		hint = "; lower {MaxBytes} or {RanksPerProc}, or link the ranks over TCP"
	}
	if s.HostProcs > 1 {
		// Every process of the job on this host takes as much, out of
		// the same memory (and, under one launcher, the same cgroup).
		need *= float64(s.HostProcs)
		what = fmt.Sprintf("%d processes on this host, each with %s", s.HostProcs, strings.TrimSuffix(what, ","))
		hint += ", or start fewer processes on each host"
	}
	return fitMemory(need, what, hint)
}

// segmentFootprint is the shared-memory segments this process's ranks
// create, and their bytes: each rank dials, and offers a segment to,
// every lower rank of its group (at most: a peer in another network
// stack gets TCP).
func segmentFootprint(s bench.Setup, t Transport) (links int, bytes float64) {
	if t == TransportTCP {
		return 0, 0
	}
	for l := 0; l < s.LocalRanks; l++ {
		if _, gr, active := s.Place(l); active {
			links += gr
		}
	}
	return links, float64(links) * float64(segmentSize(ringFor(s.Groups.Of(s.JobRanks))))
}

// fitMemory refuses what needs more than this process may take, in a
// sentence naming it (what), the room left under a cgroup's limit and the
// machine's available memory, and the remedy (hint, may be empty).
func fitMemory(need float64, what, hint string) error {
	r := readMemoryRoom(rootFS)
	overCgroup := r.limit > 0 && need > float64(r.left)
	if !overCgroup && (r.avail == 0 || need <= float64(r.avail)) {
		return nil
	}
	room := fmt.Sprintf("only %.1f GiB of memory is available", float64(r.avail)/(1<<30))
	if r.limit > 0 {
		room = fmt.Sprintf("the memory cgroup %s allows %.1f GiB more (limit %.1f GiB) and the machine has %.1f GiB available",
			r.limitGroup, float64(r.left)/(1<<30), float64(r.limit)/(1<<30), float64(r.avail)/(1<<30))
	}
	return setting.Errorf("%w: %s needs %.1f GiB but %s%s", bench.ErrTooLarge, what, need/(1<<30), room, hint)
}

// Comm is the host backend's communicators for the local ranks.
type Comm struct {
	mesh     *mesh
	ranks    []*rank
	host     string
	remote   bool  // connections leave this host
	bufBytes int64 // the buffers' rotation span; -u padding lies beyond it

	pending sync.WaitGroup
	// queues is held for reading while work is sent to the streams and
	// for writing while Close closes their channels, so no send can
	// meet a closed channel. The streams never take it.
	queues  sync.RWMutex
	mu      sync.Mutex
	err     error // first failure since the last Wait
	aborted bool
	times   [][]time.Duration
	closed  bool

	// The overlap experiment's compute streams, made on first use.
	streams   []*computeStream
	loads     []*workload
	computing sync.WaitGroup
}

// Capabilities implements bench.Comm: no CUDA graphs on a CPU.
func (c *Comm) Capabilities() bench.Capabilities { return bench.Capabilities{Timestamps: true} }

// Devices implements bench.Comm. A rank's name says how it reaches its
// peers: shared memory, TCP, or both.
func (c *Comm) Devices() []bench.Device {
	tcp := "TCP loopback"
	if c.remote {
		tcp = "TCP"
	}
	out := make([]bench.Device, len(c.ranks))
	for i, r := range c.ranks {
		shm, sockets := 0, 0
		for _, l := range r.conns {
			switch l.(type) {
			case nil:
			case *shmLink:
				shm++
			default:
				sockets++
			}
		}
		via := tcp
		switch {
		case shm > 0 && sockets > 0:
			via = "shared memory, " + tcp
		case shm > 0:
			via = "shared memory"
		}
		out[i] = r.info
		out[i].Hostname, out[i].PID, out[i].Name = c.host, os.Getpid(), "host CPU ("+via+")"
	}
	return out
}

func (c *Comm) buffer(local int, kind bench.BufKind, off int64, n int) ([]byte, error) {
	if local < 0 || local >= len(c.ranks) {
		return nil, fmt.Errorf("no local rank %d", local)
	}
	b := c.ranks[local].send
	if kind == bench.RecvBuf {
		b = c.ranks[local].recv
	}
	if off < 0 || off+int64(n) > int64(len(b)) {
		return nil, fmt.Errorf("range %d+%d is outside the %d-byte buffer", off, n, len(b))
	}
	return b[off : off+int64(n)], nil
}

// Write implements bench.Comm.
func (c *Comm) Write(local int, kind bench.BufKind, off int64, data []byte) error {
	b, err := c.buffer(local, kind, off, len(data))
	if err == nil {
		copy(b, data)
	}
	return err
}

// Read implements bench.Comm.
func (c *Comm) Read(local int, kind bench.BufKind, off int64, dst []byte) error {
	b, err := c.buffer(local, kind, off, len(dst))
	if err == nil {
		copy(dst, b)
	}
	return err
}

// Enqueue implements bench.Comm: the batch goes onto every rank's stream.
func (c *Comm) Enqueue(b bench.Batch) error {
	c.queues.RLock()
	defer c.queues.RUnlock()
	c.mu.Lock()
	if c.aborted || c.closed {
		c.mu.Unlock()
		return errors.New("communicator was aborted")
	}
	c.mu.Unlock()
	c.pending.Add(len(c.ranks))
	for _, r := range c.ranks {
		r.work <- b
	}
	return nil
}

// Wait implements bench.Comm.
func (c *Comm) Wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() { c.pending.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	err := c.err
	c.err = nil
	return err
}

// IterTimes implements bench.Comm.
func (c *Comm) IterTimes() [][]time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.times
	c.times = nil
	return t
}

// Abort implements bench.Comm: every connection is closed, so calls in
// flight fail and later ones are refused.
func (c *Comm) Abort() {
	c.mu.Lock()
	c.aborted = true
	c.mu.Unlock()
	c.mesh.close()
}

// Close implements bench.Comm. Abort first makes the streams skip what is
// queued, so a send blocked on a full queue completes and Close can take
// the queues.
func (c *Comm) Close() error {
	c.Abort()
	c.queues.Lock()
	defer c.queues.Unlock()
	c.mu.Lock()
	if !c.closed {
		c.closed = true
		for _, r := range c.ranks {
			close(r.work)
		}
		for _, s := range c.streams {
			close(s.work)
		}
	}
	c.mu.Unlock()
	return nil
}

func (c *Comm) fail(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
	}
	first := !c.aborted
	c.aborted = true
	c.mu.Unlock()
	if first {
		c.mesh.close() // wake the peers blocked on this rank
	}
}

// stream executes one rank's batches in order, like a CUDA stream.
func (c *Comm) stream(r *rank) {
	for b := range r.work {
		c.runBatch(r, b)
		c.pending.Done()
	}
}

func (c *Comm) runBatch(r *rank, b bench.Batch) {
	c.mu.Lock()
	aborted := c.aborted
	c.mu.Unlock()
	if aborted {
		return
	}
	var marks []time.Duration
	start := time.Now()
	for it := 0; it < b.Iters; it++ {
		for a := 0; a < b.Agg; a++ {
			iter := b.FirstIter + it*b.Agg + a
			if err := r.run(b.Op, iter, bench.RotationShift(b.Footprint(), c.bufBytes, iter)); err != nil {
				c.fail(fmt.Errorf("rank %d: %s: %w", r.info.Rank, b.Coll.Name, err))
				return
			}
		}
		if b.Record {
			marks = append(marks, time.Since(start))
		}
	}
	if b.Record {
		d := make([]time.Duration, len(marks))
		var prev time.Duration
		for i, m := range marks {
			d[i], prev = m-prev, m
		}
		c.mu.Lock()
		if c.times == nil {
			c.times = make([][]time.Duration, len(c.ranks))
		}
		c.times[r.local] = append(c.times[r.local], d...)
		c.mu.Unlock()
	}
}

// prefault writes one byte in every page of buf, so that the kernel maps
// the pages now and not inside a timed call: the calls walk the buffers
// in steps of their footprint (RotationShift), and a fresh step's first
// touch costs page faults the collective did not cause.
func prefault(buf []byte) {
	page := os.Getpagesize()
	for i := 0; i < len(buf); i += page {
		buf[i] = 0
	}
}
