package run

import (
	"fmt"
	"strings"
	"testing"

	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/judge"
)

// twoH100Nodes is a recorded topology: two nodes of 8 H100s on 18
// NVLinks each, with 8 NDR ports (50 GB/s each way) per node.
func twoH100Nodes() judge.Topology {
	t := judge.Topology{Backend: "nccl", Nodes: 2, RanksPerNode: 8}
	for i := 0; i < 8; i++ {
		t.GPUs = append(t.GPUs, judge.GPU{Bus: fmt.Sprintf("0000:%02x:00", 0x18+i), Name: "NVIDIA H100 80GB HBM3", SM: "9.0", NVLinks: 18, PCIeGen: 5, PCIeWidth: 16})
		t.NICs = append(t.NICs, judge.NIC{Name: fmt.Sprintf("mlx5_%d port 1", i), GBps: 50, Rate: "400 Gb/sec"})
	}
	return t
}

// Each level gets the link it crosses; a node's all-reduce LOW against
// the published 8×H100 figure is flagged against it; every finding says
// its share of the wire and, where a figure applies, its ratio to it.
func TestHealthJudgedAgainstWireAndPublished(t *testing.T) {
	d := &document.Health{Config: document.HealthConfig{NRanks: 16, PairBytes: 128 << 20, ARBytes: 8 << 30},
		Nodes:    []document.HealthNode{{Name: "a"}, {Name: "b"}},
		Intra:    []document.PairFigure{{Node: 0, A: 0, B: 1, BusBW: 300}},
		NodeAR:   []document.NodeFigure{{Node: 0, BusBW: 372}, {Node: 1, BusBW: 250}},
		Inter:    []document.PairFigure{{Node: -1, A: 0, B: 1, BusBW: 20}},
		Job:      &document.BlockFigure{Nodes: []int{0, 1}, BusBW: 340},
		Complete: true,
		Findings: []document.Finding{{Kind: "link", Where: "a ↔ b", Nodes: []int{0, 1}, BusBW: 20, Reference: 45, Against: "peers", Drop: 0.55}}}
	c := &healthCheck{doc: d}
	c.judgePublished(levelJudgers(twoH100Nodes(), []judge.Table{judge.Builtin()}))

	want := map[string]string{"intra": "NVLink4 ×18", "node": "NVLink4 ×18", "inter": "network 8× 400 Gb/sec, shared by 8 rank pairs at once", "job": "network 8× 400 Gb/sec"}
	if len(d.Judged) != 4 {
		t.Fatalf("judged levels %+v, want four", d.Judged)
	}
	for _, l := range d.Judged {
		if l.Limit == nil || l.Limit.What != want[l.Level] {
			t.Errorf("level %s judged against %+v, want %s", l.Level, l.Limit, want[l.Level])
		}
	}
	if d.Judged[2].Limit.GBps != 50 {
		t.Errorf("a node pair's share of 8 NDR ports for 8 pairs is %v GB/s, want 50", d.Judged[2].Limit.GBps)
	}
	if len(d.Findings) != 2 || d.Healthy {
		t.Fatalf("findings %+v, want the link and node b's all-reduce", d.Findings)
	}
	link, node := d.Findings[0], d.Findings[1]
	if link.WireShare != 0.4 || link.Published != "" {
		t.Errorf("the link's finding %+v: want 40 %% of the wire and no published figure (none for send/recv)", link)
	}
	if node.Kind != "node-allreduce" || node.Against != "published" || node.Published != "h100x8-ar-ring" || node.Reference != 370 ||
		!strings.HasPrefix(node.Where, "b ") || node.Drop < 0.32 || node.Drop > 0.33 {
		t.Errorf("node b's finding %+v: want it LOW against the published 370 GB/s, 32 %% below", node)
	}
	if node.WireShare < 0.55 || node.WireShare > 0.56 {
		t.Errorf("node b's share of NVLink %v, want 250/450", node.WireShare)
	}
}

// A run over two nodes of 8 H100s is judged against the network, its
// bottleneck, and against the published two-node figures of NVLink4
// systems: the system is its nodes' link, not the bottleneck's.
func TestRunJudgerTwoNodes(t *testing.T) {
	j := runJudger(twoH100Nodes(), []judge.Table{judge.Builtin()}, "allreduce")
	if l := j.Limit(); l == nil || l.What != "network 8× 400 Gb/sec" {
		t.Errorf("limit %+v, want the nodes' network", l)
	}
	if r := j.Row(judge.Row{Size: 8 << 30, BusBW: 330}); r.Reference == nil || r.Verdict != judge.Normal {
		t.Errorf("8 GiB at 330 GB/s: %+v, want judged normal against a two-node figure", r)
	}
}
