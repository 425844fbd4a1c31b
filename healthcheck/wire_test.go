package healthcheck

import (
	"strings"
	"testing"

	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/internal/fixture"
	"github.com/collbench/collbench/judge"
)

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
	c.judgePublished(levelJudgers(fixture.TwoH100Nodes(), []judge.Table{judge.Builtin()}))

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
