package gpu

import (
	"errors"
	"runtime"

	"github.com/collbench/collbench/bench"
)

// Regroup implements bench.Regrouper: every local rank's job-wide
// communicator is split by g (ncclCommSplit in one NCCL group, the color
// the rank's group, the key its rank), and the new communicators run on
// the same contexts, streams and buffers, which stay this Comm's. Making
// a new job-wide set first (ncclCommInitRank) and splitting that, as
// Open does, cost twice as much on an H100 shared by four or eight ranks,
// to make and to destroy. Ranks that g leaves out take no part.
func (c *Comm) Regroup(g bench.Grouping) (bench.Comm, error) {
	if c.closed || c.aborted {
		return nil, errors.New("regrouping communicators already closed")
	}
	if len(c.gpus) == 0 {
		return nil, errors.New("regrouping a process without ranks")
	}
	for _, pg := range c.gpus {
		if pg.world != nil || pg.borrowed {
			return nil, errors.New("only job-wide communicators can be regrouped; these were split into groups already")
		}
	}
	if err := g.Validate(c.nranks); err != nil {
		return nil, err
	}
	// The local ranks of a job-wide Comm are consecutive (Open).
	s := bench.Setup{JobRanks: c.nranks, FirstRank: c.gpus[0].info.Rank, LocalRanks: len(c.gpus), Groups: g}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	n := &Comm{nranks: c.nranks, bufBytes: c.bufBytes, pad: c.pad, version: c.version, minSM: c.minSM, tuning: c.tuning,
		plan: c.plan}
	for i, pg := range c.gpus {
		child := &gpu{info: pg.info, sm: pg.sm, sms: pg.sms, bus: pg.bus, ctx: pg.ctx, stream: pg.stream,
			send: pg.send, recv: pg.recv, ncclMem: pg.ncclMem, comm: pg.comm, borrowed: true,
			freeBefore: pg.freeBefore, freeInit: pg.freeInit, freeBuffers: pg.freeBuffers}
		child.info.Group, child.info.GroupRank, _ = s.Place(i)
		n.gpus = append(n.gpus, child)
	}
	err := n.split(s)
	// A split rank holds the job-wide communicator as its world, the
	// others still as their comm: either way it is this Comm's, and an
	// abort or close of n must not reach it.
	for _, child := range n.gpus {
		if child.world != nil {
			child.world = nil
		} else {
			child.comm = nil
		}
	}
	ok := false
	defer func() {
		if !ok {
			n.Abort()
			n.Close()
		}
	}()
	if err != nil {
		return nil, err
	}
	if t := c.tuning.Register; t > 0 {
		if err := n.register(t); err != nil {
			return nil, err
		}
	}
	if err := n.buildC(); err != nil {
		return nil, err
	}
	ok = true
	return n, nil
}
