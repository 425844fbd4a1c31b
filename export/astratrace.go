package export

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/collbench/collbench/chakra"
	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/model"
)

// TraceCall is one kind of call of a training plan, for an ASTRA-sim
// trace: its dimension and collective, its size as nccl-tests counts it,
// how many a step makes, the groups of ranks it runs over (for a pipeline,
// each group is one chain of stages in order), and collbench's time for
// one call in µs.
type TraceCall struct {
	Dim    string
	Coll   string
	Bytes  float64
	Calls  int
	Groups [][]int
	Us     float64
}

// TraceCalls is a prediction's calls as a trace takes them: each kind
// with every group it runs over (Megatron's, model.Strategy.Groups), its
// calls per step rounded, and collbench's time for one.
func TraceCalls(p model.Prediction) []TraceCall {
	var out []TraceCall
	for _, tr := range p.Traffic {
		groups, err := p.Strategy.Groups(tr.Dim)
		if err != nil || tr.Calls <= 0 {
			continue
		}
		out = append(out, TraceCall{Dim: tr.Dim, Coll: tr.Coll, Bytes: tr.Bytes, Calls: max(1, int(math.Round(tr.Calls))),
			Groups: groups, Us: tr.Time / tr.Calls})
	}
	return out
}

// TracedCall is what the trace holds for one kind of call: the comm_size
// written for it and the time ASTRA-sim's analytical backends give that
// size on the exported network, beside collbench's.
type TracedCall struct {
	Dim   string  `json:"dim"`
	Coll  string  `json:"collective"`
	Group int     `json:"group_size"`
	Bytes float64 `json:"bytes"`
	Calls int     `json:"calls_per_step"`
	// Dimension is the network dimension the call's groups lie in: 0 the
	// first astra_network.yml lists.
	Dimension int     `json:"dimension"`
	CommSize  int64   `json:"comm_size"`
	Us        float64 `json:"collbench_us"`
	AstraUs   float64 `json:"astra_us"`
}

// AstraTraceFile is the summary a trace folder carries, which
// charge reads back.
const AstraTraceFile = "astra_trace.json"

// astraNet is one dimension of the exported network: its link latency in
// ns and bandwidth in ASTRA-sim's GB/s (2^30 B/s), and the system's
// endpoint delay in ns; and the tier and all-reduce line (α in µs, bus
// bandwidth in GB/s) they come from.
type astraNet struct {
	latency, bandwidth, delay float64
	level                     level
	alpha, busbw              float64
}

// astraOp is how ASTRA-sim's ring implementations (congestion-unaware
// backend, one Switch dimension, one chunk) time a collective of comm_size
// c over n NPUs: `hops` link latencies (a Switch charges one on each of a
// send's two hops), `steps` endpoint delays, and `moved`·c bytes sent
// by each NPU. comm_size is the whole buffer for an all-reduce, a
// reduce-scatter and an all-to-all, and one NPU's shard for an
// all-gather; the ring all-to-all sends n(n−1)/2 messages of c/n.
type astraOp struct {
	comm        chakra.CommType
	hops, steps func(n float64) float64
	moved       func(n float64) float64
}

var astraOps = map[string]astraOp{
	"allreduce": {comm: chakra.AllReduce, hops: func(n float64) float64 { return 4 * (n - 1) },
		steps: func(n float64) float64 { return 2 * (n - 1) }, moved: func(n float64) float64 { return 2 * (n - 1) / n }},
	"allgather": {comm: chakra.AllGather, hops: func(n float64) float64 { return 2 * (n - 1) },
		steps: func(n float64) float64 { return n - 1 }, moved: func(n float64) float64 { return n - 1 }},
	"reducescatter": {comm: chakra.ReduceScatter, hops: func(n float64) float64 { return 2 * (n - 1) },
		steps: func(n float64) float64 { return n - 1 }, moved: func(n float64) float64 { return (n - 1) / n }},
	"alltoall": {comm: chakra.AllToAll, hops: func(n float64) float64 { return n * (n - 1) },
		steps: func(n float64) float64 { return 2 * (n - 1) }, moved: func(n float64) float64 { return (n - 1) / 2 }},
	"send": {hops: func(float64) float64 { return 2 },
		steps: func(float64) float64 { return 0 }, moved: func(float64) float64 { return 1 }},
}

// astraOpOf is the ASTRA-sim operation a collbench collective runs as.
func astraOpOf(coll string) (string, bool) {
	switch coll {
	case "alltoallv":
		return "alltoall", true
	case "pipeline", "sendrecv":
		return "send", true
	}
	_, ok := astraOps[coll]
	return coll, ok
}

// bytesPerNs is the dimension's bandwidth as ASTRA-sim converts its GB/s.
func (net astraNet) bytesPerNs() float64 { return net.bandwidth * (1 << 30) / 1e9 }

// astraTime is ASTRA-sim's time in µs for comm_size c of op over n NPUs.
func (net astraNet) astraTime(op string, n int, c float64) float64 {
	o, f := astraOps[op], float64(n)
	return (o.hops(f)*net.latency + o.steps(f)*net.delay + o.moved(f)*c/net.bytesPerNs()) / 1e3
}

// commSize is the comm_size that makes ASTRA-sim's time us, or 1 where
// its latencies alone exceed us (a call smaller than the network's α).
func (net astraNet) commSize(op string, n int, us float64) int64 {
	o, f := astraOps[op], float64(n)
	fixed := net.astraTime(op, n, 0)
	if us <= fixed {
		return 1
	}
	return max(1, int64(math.Round((us-fixed)*1e3*net.bytesPerNs()/o.moved(f))))
}

// astraTraceNets are the dimensions astraFiles writes for p, in its
// order (the node's GPUs, then the nodes): each tier's all-reduce line in
// ASTRA-sim's terms.
func astraTraceNets(p *document.Profile) ([]astraNet, error) {
	var nets []astraNet
	for _, l := range levels(p) {
		c, line, err := overall(p, "allreduce", l)
		if err != nil {
			return nil, err
		}
		nets = append(nets, astraNet{
			latency:   line.Alpha * 1e3 / float64(4*(l.n-1)),
			bandwidth: busbw(c, line) * 1e9 / (1 << 30),
			delay:     astraEndpointDelay,
			level:     l,
			alpha:     line.Alpha,
			busbw:     busbw(c, line),
		})
	}
	if len(nets) == 0 {
		return nil, fmt.Errorf("the profile has no tier with two ranks or more")
	}
	return nets, nil
}

// astraDim is the dimension of ASTRA-sim's network a group lies in: the
// node's when its ranks share a node, the nodes' when they share their
// place in their nodes. ASTRA-sim times such a group as a ring on that
// dimension alone; a group across both tiers it times hierarchically,
// which collbench has not checked, so it is refused.
func astraDim(p *document.Profile, g []int) (int, error) {
	if len(levels(p)) == 1 {
		return 0, nil
	}
	per := p.Meta.RanksPerNode
	sameNode, samePlace := true, true
	for _, r := range g[1:] {
		sameNode = sameNode && r/per == g[0]/per
		samePlace = samePlace && r%per == g[0]%per
	}
	switch {
	case sameNode:
		return 0, nil
	case samePlace:
		return 1, nil
	}
	return 0, fmt.Errorf("the group %v spans both the node's GPUs and the nodes, which ASTRA-sim times hierarchically and collbench has not checked; choose a plan whose groups lie in one node or take one rank per node", g)
}

// astraEndpointDelay is astra_system.json's endpoint-delay, in ns.
const astraEndpointDelay = 10

// WriteAstraTrace writes into dir an ASTRA-sim workload for a training
// step of the plan whose calls are given, with the astra-sim export of p
// it was made for: a Chakra trace per rank (workload.{rank}.et, each
// rank's calls one after another, collectives in their process groups),
// the groups (comm_groups.json) and astra_trace.json, which says what was
// written for each kind of call. ASTRA-sim's analytical network holds one
// latency and bandwidth per dimension (the all-reduce's line), so every
// other call would be charged by that line; the trace instead gives each
// kind of call the comm_size whose simulated time is collbench's time
// for it on the dimension its groups lie in. Run it with ASTRA-sim's
// workload configuration DIR/workload, its communicator groups
// DIR/comm_groups.json and the folder's network and system files.
func WriteAstraTrace(ctx context.Context, p *document.Profile, calls []TraceCall, dir string, keep []string) ([]string, []TracedCall, error) {
	nets, err := astraTraceNets(p)
	if err != nil {
		return nil, nil, err
	}
	world := p.Meta.WorldSize
	// Each call kind runs on the dimension its groups lie in, every
	// group of it on the same one.
	dims := make([]int, len(calls))
	for i, c := range calls {
		for j, g := range c.Groups {
			if len(g) < 2 || len(g) != len(c.Groups[0]) {
				return nil, nil, fmt.Errorf("%s %s: its groups must all have the same size, 2 ranks or more (one has %d)", c.Dim, c.Coll, len(g))
			}
			d, err := astraDim(p, g)
			if err == nil && j > 0 && d != dims[i] {
				err = fmt.Errorf("its groups lie in different dimensions of the network")
			}
			if err != nil {
				return nil, nil, fmt.Errorf("%s %s: %w", c.Dim, c.Coll, err)
			}
			dims[i] = d
		}
	}
	// A dimension holds one latency, the all-reduce's; a call shorter
	// than the latencies it would charge lowers it for the whole trace,
	// and every call's comm_size makes up the rest.
	lowered := make([]bool, len(nets))
	for i, c := range calls {
		op, ok := astraOpOf(c.Coll)
		if !ok || len(c.Groups) == 0 {
			continue
		}
		o, n, net := astraOps[op], float64(len(c.Groups[0])), &nets[dims[i]]
		if fits := (c.Us*1e3 - o.steps(n)*net.delay) / o.hops(n); fits < net.latency {
			net.latency, lowered[dims[i]] = max(0, fits), true
		}
	}
	latencies := make([]*float64, len(nets))
	for d := range nets {
		if lowered[d] {
			latencies[d] = &nets[d].latency
		}
	}
	files, err := astraNetworkFiles(p, latencies)
	if err != nil {
		return nil, nil, err
	}
	ids := map[string]int{}
	var groupList [][]int // ASTRA-sim's group ids start at 1: groupList[id-1]
	groupOf := func(g []int) int {
		k := fmt.Sprint(g)
		if id, ok := ids[k]; ok {
			return id
		}
		groupList = append(groupList, g)
		ids[k] = len(groupList)
		return ids[k]
	}
	nodes := make([][]chakra.Node, world)
	add := func(rank int, n chakra.Node) {
		prev := nodes[rank]
		n.ID = uint64(len(prev) + 1)
		if len(prev) > 0 {
			n.DataDeps = []uint64{prev[len(prev)-1].ID}
		}
		nodes[rank] = append(prev, n)
	}
	var traced []TracedCall
	tag := int32(0)
	for i, c := range calls {
		op, ok := astraOpOf(c.Coll)
		if !ok {
			return nil, nil, fmt.Errorf("ASTRA-sim simulates no %s", c.Coll)
		}
		if len(c.Groups) == 0 || c.Calls < 1 {
			continue
		}
		n, net := len(c.Groups[0]), nets[dims[i]]
		size := net.commSize(op, n, c.Us)
		traced = append(traced, TracedCall{Dim: c.Dim, Coll: c.Coll, Group: n, Bytes: c.Bytes, Calls: c.Calls,
			Dimension: dims[i], CommSize: size, Us: c.Us, AstraUs: net.astraTime(op, n, float64(size))})
		name := c.Dim + " " + c.Coll
		for _, g := range c.Groups {
			for _, r := range g {
				if r < 0 || r >= world {
					return nil, nil, fmt.Errorf("%s: rank %d is not one of the profile's %d", name, r, world)
				}
			}
			if op == "send" {
				tag = pipelineNodes(add, name, g, c.Calls, size, tag)
				continue
			}
			id := groupOf(g)
			for _, r := range g {
				for range c.Calls {
					add(r, chakra.Node{Name: name, Type: chakra.CommColl, Attrs: []chakra.Attr{
						chakra.Bool("is_cpu_op", false), chakra.Int64("comm_type", int64(astraOps[op].comm)),
						chakra.Int64("comm_size", size), chakra.String("pg_name", strconv.Itoa(id))}})
				}
			}
		}
	}
	for r, ns := range nodes {
		var b bytes.Buffer
		if err := chakra.Write(&b, ns); err != nil {
			return nil, nil, err
		}
		files = append(files, exportFile{name: fmt.Sprintf("workload.%d.et", r), data: b.Bytes()})
	}
	groups := make([]field, len(groupList))
	for i, g := range groupList {
		ranks := make([]any, len(g))
		for j, r := range g {
			ranks[j] = r
		}
		groups[i] = field{strconv.Itoa(i + 1), ranks}
	}
	files = append(files, exportFile{name: "comm_groups.json", data: orderedJSON(groups)})
	latencyNs := make([]float64, len(nets))
	for d, net := range nets {
		latencyNs[d] = net.latency
	}
	summary, err := json.MarshalIndent(struct {
		Workload  string       `json:"workload"`
		Groups    string       `json:"comm_groups"`
		LatencyNs []float64    `json:"latency_ns"`
		Lowered   []bool       `json:"latency_lowered"`
		Calls     []TracedCall `json:"calls"`
	}{"workload", "comm_groups.json", latencyNs, lowered, traced}, "", "  ")
	if err != nil {
		return nil, nil, err
	}
	files = append(files, exportFile{name: AstraTraceFile, data: append(summary, '\n')})
	paths, err := writeFiles(ctx, files, dir, keep)
	if err == nil {
		err = recordProvenance(ctx, dir, "astra-sim", p, keep)
	}
	return paths, traced, err
}

// pipelineNodes adds a step's sends along one pipeline chain: calls/2
// micro-batches forward (each stage receives from the one before and
// sends to the one after) and as many backward, tagged from tag on so
// that each send meets its receive. It returns the next free tag.
func pipelineNodes(add func(int, chakra.Node), name string, chain []int, calls int, size int64, tag int32) int32 {
	micro := max(1, calls/2)
	p2p := func(t chakra.NodeType, src, dst int, tag int32) chakra.Node {
		return chakra.Node{Name: name, Type: t, Attrs: []chakra.Attr{chakra.Bool("is_cpu_op", false),
			chakra.Int32("comm_src", int32(src)), chakra.Int32("comm_dst", int32(dst)),
			chakra.Int32("comm_tag", tag), chakra.Int64("comm_size", size)}}
	}
	for dir := 0; dir < 2; dir++ {
		for m := 0; m < micro; m++ {
			for i := range chain {
				from, to := i-1, i+1
				if dir == 1 {
					from, to = i+1, i-1
				}
				if from >= 0 && from < len(chain) {
					add(chain[i], p2p(chakra.CommRecv, chain[from], chain[i], tag))
				}
				if to >= 0 && to < len(chain) {
					add(chain[i], p2p(chakra.CommSend, chain[i], chain[to], tag))
				}
			}
			tag++
		}
	}
	return tag
}
