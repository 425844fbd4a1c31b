package run

import (
	"testing"

	"github.com/collbench/collbench/internal/fixture"
	"github.com/collbench/collbench/judge"
)

// A run over two nodes of 8 H100s is judged against the network, its
// bottleneck, and against the published two-node figures of NVLink4
// systems: the system is its nodes' link, not the bottleneck's.
func TestRunJudgerTwoNodes(t *testing.T) {
	j := runJudger(fixture.TwoH100Nodes(), []judge.Table{judge.Builtin()}, "allreduce")
	if l := j.Limit(); l == nil || l.What != "network 8× 400 Gb/sec" {
		t.Errorf("limit %+v, want the nodes' network", l)
	}
	if r := j.Row(judge.Row{Size: 8 << 30, BusBW: 330}); r.Reference == nil || r.Verdict != judge.Normal {
		t.Errorf("8 GiB at 330 GB/s: %+v, want judged normal against a two-node figure", r)
	}
}
