package gpu

import (
	"fmt"
	"runtime"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/nccl"
)

// jointDestroySince is the oldest NCCL whose destroys collbench has run
// in one group on a GPU (docs/health.md); before it each Comm is closed on
// its own, as Close does.
var jointDestroySince = nccl.V(2, 28, 0)

// CloseWith implements bench.JointCloser: the communicators of c and of
// others are destroyed in one NCCL group, where NCCL tears them down at
// once, then everything else each holds is freed as Close frees it. A
// Comm already closed or aborted is skipped. others must be this
// backend's.
func (c *Comm) CloseWith(others []bench.Comm) error {
	all := []*Comm{c}
	for _, o := range others {
		oc, ok := o.(*Comm)
		if !ok {
			return fmt.Errorf("closing a %T together with the nccl backend's communicators", o)
		}
		all = append(all, oc)
	}
	var first error
	keep := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	if c.version >= jointDestroySince {
		keep(destroyTogether(all))
	}
	for _, oc := range all {
		keep(oc.Close())
	}
	return first
}

// destroyTogether destroys the communicators of every open Comm in all in
// one NCCL group, after their buffers' registrations are dropped; Close
// then finds them gone.
func destroyTogether(all []*Comm) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var first error
	keep := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	for _, c := range all {
		if c.closed || c.aborted {
			continue
		}
		for _, g := range c.gpus {
			if g.comm != nil {
				keep(g.ctx.SetCurrent())
				keep(g.deregister())
			}
		}
	}
	return nccl.Group(func() error {
		for _, c := range all {
			if c.closed || c.aborted {
				continue
			}
			for _, g := range c.gpus {
				keep(g.ctx.SetCurrent())
				// A borrowed GPU's world is nil: its parent destroys it.
				for _, comm := range []**nccl.Comm{&g.comm, &g.world} {
					if *comm == nil {
						continue
					}
					keep((*comm).Destroy())
					*comm = nil
				}
			}
		}
		return first
	})
}
