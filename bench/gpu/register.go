package gpu

import (
	"github.com/collbench/collbench/nccl"
	"github.com/collbench/collbench/setting"
)

// register registers every GPU's send and receive buffers with its
// communicator as nccl-tests' -R does: mode 1 with ncclCommRegister, mode 2
// as symmetric windows (a collective call, so all GPUs register in one
// group).
func (c *Comm) register(mode int) error {
	size := max(c.bufBytes, 1)
	switch mode {
	case 1:
		for _, g := range c.gpus {
			for _, p := range []uintptr{g.send, g.recv} {
				h, err := g.comm.Register(p, size)
				if err != nil {
					return setting.Errorf("{Register} 1: %w", err)
				}
				g.handles = append(g.handles, h)
			}
		}
	case 2:
		// Inside the group NCCL writes each window at its end.
		pending := make([][]*nccl.Pending, len(c.gpus))
		err := nccl.Group(func() error {
			for i, g := range c.gpus {
				for _, p := range []uintptr{g.send, g.recv} {
					w, err := g.comm.StartWindowRegister(p, size, nccl.WinCollSymmetric)
					if err != nil {
						return err
					}
					pending[i] = append(pending[i], w)
				}
			}
			return nil
		})
		for i, ws := range pending {
			for _, w := range ws {
				if h := w.Window(); h != 0 {
					c.gpus[i].windows = append(c.gpus[i].windows, h)
				}
			}
		}
		if err != nil {
			return setting.Errorf("{Register} 2: %w", err)
		}
	}
	return nil
}

// deregister undoes register before the communicator is destroyed.
func (g *gpu) deregister() error {
	var first error
	for _, h := range g.handles {
		if err := g.comm.Deregister(h); err != nil && first == nil {
			first = err
		}
	}
	for _, w := range g.windows {
		if err := g.comm.WindowDeregister(w); err != nil && first == nil {
			first = err
		}
	}
	g.handles, g.windows = nil, nil
	return first
}
