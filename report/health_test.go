package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/internal/golden"
	"github.com/collbench/collbench/judge"
)

// The health summary of four nodes of two ranks, one of them flagged, as
// testdata/health.golden holds it.
func TestHealthSummary(t *testing.T) {
	z := 12.25
	d := &document.Health{Stamp: document.Stamp{Collbench: "test", Backend: "host"},
		Config: document.HealthConfig{NRanks: 8, NProcs: 8, PairBytes: 1 << 20, ARBytes: 4 << 20, Type: "float", Warmup: 2, Iters: 10, Passes: 2,
			MinDrop: 0.1, Z: 3.5, Expect: map[string]float64{"job": 2, "inter": 1}},
		Noise:     map[string]float64{"intra": 0.012, "inter": 0.034},
		Job:       &document.BlockFigure{Nodes: []int{0, 1, 2, 3}, BusBW: 0.25},
		Bisection: []document.BlockFigure{{Level: 1, Nodes: []int{0, 1}, BusBW: 0.6}, {Level: 1, Nodes: []int{2, 3}, BusBW: 0.05}},
		Findings: []document.Finding{
			{Kind: "node", Where: "host3 (slow with 3 partner nodes)", Nodes: []int{2}, BusBW: 0.012, Reference: 0.5, Against: "peers", Drop: 0.976, Z: &z},
			{Kind: "job", Where: "all 8 ranks (all-reduce)", BusBW: 0.25, Reference: 2, Against: "expect", Drop: 0.875},
		}}
	for n := 0; n < 4; n++ {
		d.Nodes = append(d.Nodes, document.HealthNode{Name: "host" + string(rune('1'+n)), Ranks: []int{2 * n, 2*n + 1}})
		d.Intra = append(d.Intra, document.PairFigure{Node: n, A: 2 * n, B: 2*n + 1, BusBW: 1 + float64(n)/10})
		d.NodeAR = append(d.NodeAR, document.NodeFigure{Node: n, BusBW: 0.7})
		for m := n + 1; m < 4; m++ {
			bw := 0.5
			if n == 2 || m == 2 {
				bw = 0.012
			}
			d.Inter = append(d.Inter, document.PairFigure{Node: -1, A: n, B: m, BusBW: bw})
		}
	}
	var b bytes.Buffer
	Health(&b, d)
	golden.Check(t, "health.golden", b.Bytes())
}

// With --judge: each level's wire limit heads the summary, and findings
// say their share of the wire and how they stand against the published
// figure (testdata/health_judged.golden).
func TestHealthSummaryJudged(t *testing.T) {
	d := &document.Health{Stamp: document.Stamp{Collbench: "test", Backend: "nccl"}, NCCLVersion: "2.30.7",
		Config: document.HealthConfig{NRanks: 16, NProcs: 2, PairBytes: 128 << 20, ARBytes: 8 << 30, Type: "float", Warmup: 2, Iters: 10, Passes: 2,
			MinDrop: 0.1, Z: 3.5},
		Nodes:  []document.HealthNode{{Name: "a", Ranks: []int{0, 1, 2, 3, 4, 5, 6, 7}}, {Name: "b", Ranks: []int{8, 9, 10, 11, 12, 13, 14, 15}}},
		NodeAR: []document.NodeFigure{{Node: 0, BusBW: 372}, {Node: 1, BusBW: 250}},
		Judged: []document.HealthLevel{
			{Level: "node", Limit: &judge.Limit{GBps: 450, What: "NVLink4 ×18", From: "NVML"}},
			{Level: "inter", NoLimit: "no figure for the links (NVML or sysfs gave none)"}},
		Findings: []document.Finding{
			{Kind: "node-allreduce", Where: "b (all-reduce over its GPUs)", Nodes: []int{1}, BusBW: 250, Reference: 370, Against: "published",
				Drop: 0.324, WireShare: 0.556, PublishedRatio: 0.676, Published: "h100x8-ar-ring"},
			{Kind: "node-allreduce", Where: "b (all-reduce over its GPUs)", Nodes: []int{1}, BusBW: 250, Reference: 372, Against: "expect",
				Drop: 0.328, WireShare: 0.556, PublishedRatio: 0.676, Published: "h100x8-ar-ring"},
		}}
	var b bytes.Buffer
	Health(&b, d)
	golden.Check(t, "health_judged.golden", b.Bytes())
}

// A rack-aware screening's suspects measured again, the arrival run, the
// communicators' set-up and a straggler, as testdata/health_arrivals.golden
// holds them.
func TestHealthArrivals(t *testing.T) {
	d := &document.Health{Stamp: document.Stamp{Collbench: "test", Backend: "host"},
		Config: document.HealthConfig{NRanks: 4, NProcs: 4, PairBytes: 1 << 20, ARBytes: 1 << 20, Type: "float", Warmup: 1, Iters: 5, Passes: 2,
			MinDrop: 0.5, Z: 3.5},
		Job: &document.BlockFigure{Nodes: []int{0, 1, 2, 3}, BusBW: 0.5},
		Arrivals: &document.Arrivals{Calls: 20, Bytes: 1024, Workload: "gemm 256x256x256 float", GapUs: 788.5, Procs: []document.ProcArrival{
			{Proc: 0, Node: 0, Ranks: []int{0}, Last: 2, LateUs: 310, WorkUs: 700},
			{Proc: 1, Node: 1, Ranks: []int{1}, Last: 1, LateUs: 120, WorkUs: 690},
			{Proc: 2, Node: 2, Ranks: []int{2}, Last: 16, LateUs: 9083, WorkUs: 692},
			{Proc: 3, Node: 3, Ranks: []int{3}, Last: 1, LateUs: 90, WorkUs: 701}}},
		Setup: []document.PhaseSetup{{Phase: "node pairs", Waves: 6, TotalS: 0.31, MaxS: 0.069, Closes: 6, CloseTotalS: 2.4, CloseMaxS: 0.45}},
		Findings: []document.Finding{{Kind: "straggler", Where: "host3 ranks 2 (reached the job's all-reduce last in 16 of 20 calls, a median 9.083ms after the first; its compute 692µs)",
			Nodes: []int{2}, Ranks: []int{2}, Drop: 11.52, Against: "peers"}}}
	for n := 0; n < 4; n++ {
		d.Nodes = append(d.Nodes, document.HealthNode{Name: "host" + string(rune('1'+n)), Rack: "r" + string(rune('0'+n/2)), Ranks: []int{n}})
	}
	seed := uint64(1234567)
	d.Config.ScreenRounds, d.Config.Racks, d.Config.ScreenSeed = 1, 2, &seed
	d.Inter = []document.PairFigure{{Node: -1, A: 0, B: 2, BusBW: 0.2}, {Node: -1, A: 1, B: 3, BusBW: 1.1}}
	d.Confirmation = []document.PairFigure{{Node: -1, A: 1, B: 2, BusBW: 0.21}, {Node: -1, A: 2, B: 3, BusBW: 0.19}, {Node: -1, A: 2, B: 3, BusBW: 0.18}}
	var b bytes.Buffer
	Health(&b, d)
	golden.Check(t, "health_arrivals.golden", b.Bytes())

	// The same arrivals where processes share a GPU: no straggler named,
	// and the summary says why (testdata/health_unjudged.golden).
	d.Arrivals.Unjudged = "ranks 0-3 of 4 processes share one GPU: who reaches a call last is the turn the GPU gives each, not a slow host"
	d.Findings = nil
	b.Reset()
	Health(&b, d)
	golden.Check(t, "health_unjudged.golden", b.Bytes())
}

// A record's text from elsewhere (a host name, a finding's place) cannot
// act on the terminal: its control characters are written out.
func TestHealthPrintable(t *testing.T) {
	d := &document.Health{Stamp: document.Stamp{Collbench: "test", Backend: "host"},
		Config: document.HealthConfig{NRanks: 2, NProcs: 2, Type: "float", Passes: 1, MinDrop: 0.1, Z: 3.5},
		Nodes:  []document.HealthNode{{Name: "evil\x1b[2J", Ranks: []int{0}}, {Name: "b", Ranks: []int{1}}},
		Findings: []document.Finding{{Kind: "node", Where: "evil\x1b[2J\nHealthy: nothing flagged", Nodes: []int{0}, BusBW: 1, Reference: 2,
			Against: "peers", Drop: 0.5}}}
	var b bytes.Buffer
	Health(&b, d)
	if out := b.String(); strings.Contains(out, "\x1b") || !strings.Contains(out, `evil\x1b[2J\nHealthy: nothing flagged`) {
		t.Errorf("control characters reached the output:\n%q", out)
	}
	if d.Nodes[0].Name != "evil\x1b[2J" {
		t.Error("the record itself was changed")
	}
}
