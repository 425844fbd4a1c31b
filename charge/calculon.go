package charge

import (
	"encoding/json"
	"fmt"

	"github.com/collbench/collbench/export"
)

// calculonNet is one entry of a system's networks, as Calculon's Network
// takes it.
type calculonNet struct {
	Bandwidth  float64                `json:"bandwidth"` // GB/s (10⁹ B/s)
	Efficiency float64                `json:"efficiency"`
	Latency    float64                `json:"latency"` // s
	Ops        map[string][2]*float64 `json:"ops"`     // scalar, offset
}

// time is Calculon's Network.time (calculon/network.py): the latency plus
// S·scalar·(1 + offset/n) at the bandwidth times the efficiency, in s.
func (n calculonNet) time(op string, bytes float64, comm int) (float64, error) {
	o, ok := n.Ops[op]
	if !ok || o[0] == nil {
		return 0, fmt.Errorf("the network has no %s op", op)
	}
	size := bytes * *o[0]
	if o[1] != nil {
		size += size / float64(comm) * *o[1]
	}
	return n.Latency + size/(n.Bandwidth*1e9*n.Efficiency), nil
}

// calculon is the networks collbench exported for Calculon, with the
// groups the later ones describe.
type calculon struct {
	Networks []calculonNet `json:"networks"`
	Groups   []struct {
		Size        int    `json:"group_size"`
		Layout      string `json:"layout"`
		Collectives int    `json:"collectives"`
		P2P         int    `json:"p2p"`
	} `json:"groups"`
}

func (calculon) Name() string { return "calculon" }

func readCalculon(path string) (Planner, error) {
	data, err := readExport(path)
	if err != nil {
		return nil, err
	}
	var c calculon
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, err
	}
	for _, g := range c.Groups {
		if g.Collectives < 0 || g.Collectives >= len(c.Networks) || g.P2P < 0 || g.P2P >= len(c.Networks) {
			return nil, fmt.Errorf("group of %d %s names a network that is not there", g.Size, g.Layout)
		}
	}
	return c, nil
}

// Charge is Network.time on the network a plan gives the call's
// dimension, the group's own (tensor_par_net, data_par_net: its
// collectives network; pipeline_par_net: its p2p network, a send between
// two), as calculon_networks.json's groups list them.
func (c calculon) Charge(call Call) (float64, error) {
	op := export.CalculonOp(call.Coll)
	if op == "" {
		return 0, fmt.Errorf("Calculon's networks have no %s", call.Coll)
	}
	// A group of the whole world is both layouts; the file lists it once.
	world := 0
	for _, g := range c.Groups {
		world = max(world, g.Size)
	}
	for _, g := range c.Groups {
		if g.Size != call.Group || g.Layout != call.Layout && g.Size != world {
			continue
		}
		net, comm := c.Networks[g.Collectives], call.Group
		if op == "p2p" {
			net, comm = c.Networks[g.P2P], 2
		}
		s, err := net.time(op, call.Bytes, comm)
		return s * 1e6, err
	}
	return 0, fmt.Errorf("no network of Calculon's describes %d %s ranks", call.Group, call.Layout)
}
