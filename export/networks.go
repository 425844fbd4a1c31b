package export

import (
	"fmt"
	"strings"

	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/model"
	"github.com/collbench/collbench/model/profiled"
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

// measured is a curve's sizes and times as every export reads them: the
// one curve (model.Curve), whose table holds the measured medians with the
// fit's outliers given the fit's time, made non-decreasing.
func measured(c *document.ProfileCurve) ([]model.Point, error) {
	m, err := profiled.Curve(c)
	if err != nil {
		return nil, err
	}
	return m.Points(), nil
}

// overall is the curve's single line t = α + β·S (µs, µs per byte)
// (model.Curve.Line), for formats that hold one latency and one
// bandwidth.
func overall(p *document.Profile, op string, l level) (*document.ProfileCurve, model.Line, error) {
	c, err := p.Curve(op, l.n, l.layout)
	if err != nil {
		return nil, model.Line{}, fmt.Errorf("%s tier: %w", l.name, err)
	}
	m, err := profiled.Curve(c)
	if err != nil {
		return nil, model.Line{}, err
	}
	if !(m.Line.Beta > 0) {
		return nil, model.Line{}, noBandwidth(c)
	}
	return c, m.Line, nil
}

// noBandwidth is the error of a curve whose time does not grow with the
// size: a format that needs a bandwidth cannot be written from it.
func noBandwidth(c *document.ProfileCurve) error {
	return fmt.Errorf("%s: the time does not grow with the size, so there is no bandwidth to export", c.Key())
}

// busbw is the bus bandwidth in GB/s of a line's slope.
func busbw(c *document.ProfileCurve, l model.Line) float64 { return c.BusFactor * 1e-3 / l.Beta }

// astraFiles renders ASTRA-sim's analytical network for both of its
// backends, with the system and remote-memory configurations the numbers
// assume (a ring all-reduce, preferred-dataset-splits 1, one active chunk
// per dimension; docs/exports.md), so that the simulator runs on the
// folder as written. One Switch dimension per tier, in the units that code
// uses: its "GB/s" is 2^30 bytes per second (NetworkFunction.cpp
// bw_GBps_to_Bpns), its Switch charges the link latency on both hops of a
// send, and a ring all-reduce sends 2(n−1) chunks of S/n, so the latency
// is α/(4(n−1)) ns. The congestion-unaware backend charges a send
// 2·latency + chunk/bandwidth, and its bandwidth is the tier's all-reduce
// bus bandwidth; the congestion-aware one stores and forwards, each link
// charging latency + chunk/bandwidth (Link.cpp), and gets twice that. A
// simulated all-reduce of S bytes over the tier then takes α + β·S, the
// profile's line, in either.
func astraFiles(p *document.Profile) ([]exportFile, error) {
	return astraNetworkFiles(p, nil)
}

// astraNetworkFiles is astraFiles with a tier's link latency lowered to
// *lowered[i] ns where that is given: an ASTRA-sim trace for a plan whose
// shortest call on a dimension is shorter than its all-reduce's α needs
// it.
func astraNetworkFiles(p *document.Profile, lowered []*float64) ([]exportFile, error) {
	var topo, npus, bws, awareBWs, lats, impl []string
	var twin []any
	latNote := "fitted α / (4(n-1)) ns, since a Switch charges it on both hops of each of a ring's 2(n-1) sends"
	nets, err := astraTraceNets(p)
	if err != nil {
		return nil, err
	}
	for i, net := range nets {
		lat := net.latency
		if i < len(lowered) && lowered[i] != nil {
			lat = *lowered[i]
			latNote = "fitted α / (4(n-1)) ns, where a trace's shortest call allows it; lowered where not (astra_trace.json says which)"
		}
		bw := net.bandwidth
		topo, npus = append(topo, "Switch"), append(npus, fmt.Sprint(net.level.npus))
		bws, awareBWs, lats = append(bws, num(bw)), append(awareBWs, num(2*bw)), append(lats, num(lat))
		impl = append(impl, `"ring"`)
		twin = append(twin, []field{{"tier", net.level.name}, {"topology", "Switch"}, {"npus_count", net.level.npus},
			{"bandwidth_GiBps", bw}, {"congestion_aware_bandwidth_GiBps", 2 * bw}, {"latency_ns", lat},
			{"allreduce_alpha_us", net.alpha}, {"allreduce_busbw_GBps", net.busbw}})
	}
	list := func(v []string) string { return "[ " + strings.Join(v, ", ") + " ]" }
	network := func(backend, bwNote string, bws []string) []byte {
		return []byte(fmt.Sprintf("# ASTRA-sim analytical network (%s backend) from a collbench profile (%s, %d node(s) × %d ranks)\n"+
			"# for the system configuration astra_system.json (ring, preferred-dataset-splits 1,\n"+
			"# active-chunks-per-dimension 1; see collbench's docs/exports.md)\n"+
			"# bandwidth: %s, in ASTRA-sim's GB/s (2^30 B/s);\n"+
			"# latency: %s\n"+
			"topology: %s\nnpus_count: %s\nbandwidth: %s  # GB/s (2^30 B/s)\nlatency: %s  # ns\n",
			backend, p.Created, p.Meta.NumNodes, p.Meta.RanksPerNode, bwNote, latNote, list(topo), list(npus), list(bws), list(lats)))
	}
	system := fmt.Sprintf(`{
    "scheduling-policy": "LIFO",
    "endpoint-delay": 10,
    "active-chunks-per-dimension": 1,
    "preferred-dataset-splits": 1,
    "all-reduce-implementation": %[1]s,
    "all-gather-implementation": %[1]s,
    "reduce-scatter-implementation": %[1]s,
    "all-to-all-implementation": %[1]s,
    "collective-optimization": "baseline"
}
`, list(impl))
	return []exportFile{
		{name: "astra_network.yml", data: network("congestion-unaware", "fitted all-reduce bus bandwidth per tier", bws)},
		{name: "astra_network_congestion_aware.yml", data: network("congestion-aware",
			"twice the fitted all-reduce bus bandwidth per tier, since each of a send's two links charges chunk/bandwidth", awareBWs)},
		{name: "astra_system.json", data: []byte(system)},
		{name: "astra_remote_memory.json", data: []byte("{\n    \"memory-type\": \"NO_MEMORY_EXPANSION\"\n}\n")},
		{name: "astra_network.json", data: orderedJSON([]field{{"dimensions", twin}})},
	}, nil
}
