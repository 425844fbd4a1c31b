package export

import (
	"fmt"
	"strings"

	"github.com/collbench/collbench/document"
)

// level is one tier of the machine as simulators see it: the GPUs inside
// a node, or the nodes. Its figures come from the curve whose groups
// span exactly that tier: consecutive groups of a node's ranks, or
// strided groups with one rank per node.
type level struct {
	name   string // intra-node or inter-node
	npus   int    // ranks the tier connects (a node's, or the nodes)
	n      int    // group size of the curve that describes it
	layout string
}

func levels(p *document.Profile) []level {
	m := p.Meta
	var out []level
	if m.RanksPerNode > 1 {
		out = append(out, level{"intra-node", m.RanksPerNode, m.RanksPerNode, "consecutive"})
	}
	if m.NumNodes > 1 {
		out = append(out, level{"inter-node", m.NumNodes, m.NumNodes, "strided"})
	}
	return out
}

// fitted returns the fitted busbw∞ (GB/s) and α (µs) of op on a tier.
func fitted(p *document.Profile, op string, l level) (busbw, alpha float64, err error) {
	c, err := p.Curve(op, l.n, l.layout)
	if err != nil {
		return 0, 0, fmt.Errorf("%s tier: %w", l.name, err)
	}
	m, err := c.Model()
	if err != nil {
		return 0, 0, err
	}
	if m.Fit.BusBWInf <= 0 {
		return 0, 0, fmt.Errorf("%s: the fit found no bandwidth term", c.Key())
	}
	return m.Fit.BusBWInf, m.Fit.Alpha, nil
}

// calculonFiles renders Calculon's networks[] entries: time = latency +
// S·scalar·(1 + offset/n)/(bandwidth·efficiency). bandwidth is the
// tier's fitted all-reduce busbw∞ with efficiency 1; each op's scalar is
// its own bus factor and busbw∞ relative to it (all-reduce 2·(1−1/n),
// all-gather and reduce-scatter (1−1/n), so offset −1), latency the
// all-reduce α in seconds, processor_usage 1 − 1/compute slowdown.
func calculonFiles(p *document.Profile) ([]exportFile, error) {
	probe, err := p.PlannerProbe()
	if err != nil {
		return nil, err
	}
	var nets []any
	for i, l := range levels(p) {
		bw, alpha, err := fitted(p, "allreduce", l)
		if err != nil {
			return nil, err
		}
		ops := []field{}
		for _, op := range []struct {
			key, coll string
			factor    float64
		}{{"p2p", "sendrecv", 1}, {"reduce_scatter", "reducescatter", 1}, {"all_gather", "allgather", 1}, {"all_reduce", "allreduce", 2}} {
			obw, _, err := fitted(p, op.coll, l)
			if err != nil {
				return nil, err
			}
			var offset any = -1
			if op.key == "p2p" {
				offset = nil
			}
			ops = append(ops, field{op.key, []any{op.factor * bw / obw, offset}})
		}
		size := l.npus
		if l.name == "inter-node" {
			size = p.Meta.WorldSize
		}
		nets = append(nets, []field{
			{"bandwidth", bw}, {"efficiency", 1.0}, {"size", size}, {"latency", alpha * 1e-6},
			{"ops", ops}, {"must_be_filled", i == 0 && l.name == "intra-node"},
			{"processor_usage", min(probe.ProcessorUsage, 0.99)},
		})
	}
	if len(nets) == 0 {
		return nil, fmt.Errorf("the profile has no tier with two ranks or more")
	}
	return []exportFile{{name: "calculon_networks.json", data: orderedJSON([]field{{"networks", nets}})}}, nil
}

// astraFiles renders ASTRA-sim's analytical network: one Switch
// dimension per tier, bandwidth the tier's all-reduce busbw∞ (GB/s) and
// latency its α spread over a ring's 2(n−1) steps (ns), plus a JSON twin.
func astraFiles(p *document.Profile) ([]exportFile, error) {
	var topo, npus, bws, lats []string
	var twin []any
	for _, l := range levels(p) {
		bw, alpha, err := fitted(p, "allreduce", l)
		if err != nil {
			return nil, err
		}
		lat := alpha * 1e3 / float64(2*(l.n-1))
		topo, npus = append(topo, "Switch"), append(npus, fmt.Sprint(l.npus))
		bws, lats = append(bws, num(bw)), append(lats, num(lat))
		twin = append(twin, []field{{"tier", l.name}, {"topology", "Switch"}, {"npus_count", l.npus},
			{"bandwidth_GBps", bw}, {"latency_ns", lat}})
	}
	if len(topo) == 0 {
		return nil, fmt.Errorf("the profile has no tier with two ranks or more")
	}
	list := func(v []string) string { return "[ " + strings.Join(v, ", ") + " ]" }
	yml := fmt.Sprintf("# ASTRA-sim analytical network from a collbench profile (%s, %d node(s) × %d ranks)\n"+
		"# bandwidth: fitted all-reduce bus bandwidth per tier, GB/s; latency: fitted α / (2(n-1)) per step, ns\n"+
		"topology: %s\nnpus_count: %s\nbandwidth: %s  # GB/s\nlatency: %s  # ns\n",
		p.Created, p.Meta.NumNodes, p.Meta.RanksPerNode, list(topo), list(npus), list(bws), list(lats))
	return []exportFile{
		{name: "astra_network.yml", data: []byte(yml)},
		{name: "astra_network.json", data: orderedJSON([]field{{"dimensions", twin}})},
	}, nil
}

// simaiFiles renders SimAI's busbw.yaml: per parallel dimension, the bus
// bandwidth (fitted busbw∞, GB/s) of each collective at that dimension's
// group size and layout; null where the profile has no such curve.
func simaiFiles(p *document.Profile, o Options) ([]exportFile, error) {
	w, rpn := p.Meta.WorldSize, p.Meta.RanksPerNode
	tp, dp, ep, pp := o.TP, o.DP, o.EP, o.PP
	if tp == 0 {
		tp = rpn
	}
	if dp == 0 {
		dp = w / tp
	}
	if ep == 0 {
		ep = tp
	}
	if pp == 0 {
		pp = min(2, w)
	}
	for name, n := range map[string]int{"TP": tp, "DP": dp, "EP": ep, "PP": pp} {
		if n < 1 || n > w || w%n != 0 {
			return nil, fmt.Errorf("%s size %d does not divide the world size %d", name, n, w)
		}
	}
	name := o.Name
	if name == "" {
		name = "collbench"
	}
	bw := func(coll string, n int, layout string) string {
		c, err := p.Curve(coll, n, layout)
		if err != nil || n < 2 {
			return "null"
		}
		m, err := c.Model()
		if err != nil || m.Fit.BusBWInf <= 0 {
			return "null"
		}
		return num(m.Fit.BusBWInf)
	}
	var b strings.Builder
	b.WriteString(name + "\n")
	for _, dim := range []struct {
		name   string
		n      int
		layout string
	}{{"TP", tp, "consecutive"}, {"DP", dp, "strided"}, {"EP", ep, "consecutive"}} {
		fmt.Fprintf(&b, "%s:\n", dim.name)
		for _, op := range []struct{ key, coll string }{{"allreduce", "allreduce"}, {"allgather", "allgather"}, {"reducescatter", "reducescatter"}, {"alltoall", "alltoall"}} {
			fmt.Fprintf(&b, "%s,: %s\n", op.key, bw(op.coll, dim.n, dim.layout))
		}
	}
	fmt.Fprintf(&b, "PP:\nbusbw: %s\n", bw("sendrecv", pp, "strided"))
	return []exportFile{{name: "busbw.yaml", data: []byte(b.String())}}, nil
}
