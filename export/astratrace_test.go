package export

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/collbench/collbench/chakra"
	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/internal/fixture"
	"github.com/collbench/collbench/model"
	"github.com/collbench/collbench/model/profiled"
)

const (
	hostKept = "../docs/measured/host-2026-11-26/profile-4ranks.json"
	h100Kept = "../docs/measured/h100-2026-11-26/profile-g2-float.json"
)

// planOf is predict's prediction of a preset under s on p, with predict's
// defaults (tp, pp and ep 1, sequence 2048, micro-batch 1, bfloat16,
// 25 MiB buckets) as edit leaves them.
func planOf(t *testing.T, p *document.Profile, preset string, s model.Strategy, edit func(*model.Request)) model.Prediction {
	t.Helper()
	s.TP, s.PP, s.EP = max(s.TP, 1), max(s.PP, 1), max(s.EP, 1)
	r := model.Request{Preset: preset, Given: func(string) bool { return false }, Seq: 2048, Micro: 1, DType: "bfloat16", Bucket: 25 << 20, Strategy: s}
	if edit != nil {
		edit(&r)
	}
	pred, err := r.Predict(p.Meta.WorldSize, profiled.Machine(p, 0))
	if err != nil {
		t.Fatal(err)
	}
	return pred
}

// tracedSummary is astra_trace.json.
type tracedSummary struct {
	LatencyNs []float64    `json:"latency_ns"`
	Lowered   []bool       `json:"latency_lowered"`
	Calls     []TracedCall `json:"calls"`
}

func writeTrace(t *testing.T, p *document.Profile, pred model.Prediction) (string, tracedSummary) {
	t.Helper()
	dir := t.TempDir()
	if _, _, err := WriteAstraTrace(context.Background(), p, TraceCalls(pred), dir, nil); err != nil {
		t.Fatal(err)
	}
	var s tracedSummary
	readJSON(t, filepath.Join(dir, AstraTraceFile), &s)
	return dir, s
}

// ASTRA-sim times the step of each plan's trace as collbench does: the
// figures are the cycles every rank finished at when astra-sim c459ab61's
// congestion-unaware analytical binary (chakra 214f2c55,
// astra-network-analytical 599a0473) ran the trace written here, with the
// folder's network, system and groups. Its calls run one after another,
// so the step is the calls' sum; on two nodes each group runs on the
// dimension it lies in. The H100 plans' shortest calls (a 1 MiB
// bucket, a 400 KB pipeline send) are shorter than the all-reduce's α, so
// their traces lower the network's latency.
func TestAstraTraceTimedByTheSimulator(t *testing.T) {
	twoNodes := "two nodes of 4 (synthetic)"
	global16 := func(r *model.Request) { r.Global = 16 }
	for _, c := range []struct {
		profile, preset string
		s               model.Strategy
		edit            func(*model.Request)
		cycles          float64
		lowered         bool
	}{
		{hostKept, "llama2-7b", model.Strategy{TP: 2, PP: 2, SP: true}, nil, 435343527168, false},
		{hostKept, "mixtral-8x7b", model.Strategy{EP: 2}, nil, 303859842150, false},
		{hostKept, "llama2-7b", model.Strategy{ZeRO: 3}, nil, 176147993568, false},
		{h100Kept, "gpt2-1.5b", model.Strategy{}, func(r *model.Request) { r.Bucket = 1 << 20 }, 107464112, true},
		{h100Kept, "gpt2-1.5b", model.Strategy{PP: 2}, func(r *model.Request) { r.Seq = 128 }, 862528, true},
		{h100Kept, "llama2-7b", model.Strategy{TP: 2, SP: true}, nil, 650457088, false},
		// Two dimensions: TP inside the nodes, DP and PP across them.
		{twoNodes, "llama2-7b", model.Strategy{TP: 4}, global16, 422053522, false},
		{twoNodes, "llama2-7b", model.Strategy{TP: 4, PP: 2}, global16, 228270208, false},
	} {
		t.Run(fmt.Sprintf("%s %s %+v", filepath.Base(filepath.Dir(c.profile)), c.preset, c.s), func(t *testing.T) {
			var p *document.Profile
			if c.profile == twoNodes {
				p = fixture.ProfileWith(t, 2, 4, opAlpha)
			} else {
				p = fixture.Kept(t, c.profile)
			}
			_, s := writeTrace(t, p, planOf(t, p, c.preset, c.s, c.edit))
			var astra, collbench float64
			for _, call := range s.Calls {
				astra += float64(call.Calls) * call.AstraUs * 1e3
				collbench += float64(call.Calls) * call.Us * 1e3
			}
			// ASTRA-sim's endpoint delays and integer sizes leave 2.3·10⁻⁴
			// at most, on the 1 MiB bucket.
			if math.Abs(astra/c.cycles-1) > 3e-4 || math.Abs(collbench/c.cycles-1) > 3e-4 {
				t.Errorf("ASTRA-sim ran the step in %.0f ns; astra_trace.json says %.0f, collbench %.0f", c.cycles, astra, collbench)
			}
			if s.Lowered[0] != c.lowered {
				t.Errorf("latency lowered %v (%v ns), want %v", s.Lowered, s.LatencyNs, c.lowered)
			}
		})
	}
}

// The trace holds, per rank, the step's calls one after another: each
// collective in a group of comm_groups.json that holds the rank and is the
// call's size, each send meeting a receive of the same size and tag, and
// every call kind timed as collbench times it.
func TestAstraTraceStructure(t *testing.T) {
	p := fixture.ProfileWith(t, 1, 4, opAlpha)
	kinds := map[string]bool{}
	for _, s := range []model.Strategy{{TP: 2, PP: 2, SP: true}, {TP: 2, ZeRO: 1}} {
		checkTrace(t, p, planOf(t, p, "llama2-7b", s, func(r *model.Request) { r.Global = 8 }), kinds)
	}
	for _, want := range []string{"TP allgather", "TP reducescatter", "TP allreduce", "DP reducescatter", "DP allgather", "PP pipeline"} {
		if !kinds[want] {
			t.Errorf("no %s in the traces (%v)", want, kinds)
		}
	}
}

func checkTrace(t *testing.T, p *document.Profile, pred model.Prediction, kinds map[string]bool) {
	t.Helper()
	dir, s := writeTrace(t, p, pred)
	var groups map[string][]int
	readJSON(t, filepath.Join(dir, "comm_groups.json"), &groups)
	type p2p struct{ src, dst, tag, size int64 }
	var sends, recvs []p2p
	for r := 0; r < p.Meta.WorldSize; r++ {
		f, err := os.Open(filepath.Join(dir, fmt.Sprintf("workload.%d.et", r)))
		if err != nil {
			t.Fatal(err)
		}
		version, nodes, err := chakra.Read(f)
		f.Close()
		if err != nil || version != chakra.Version || len(nodes) == 0 {
			t.Fatalf("rank %d: %v %s %d nodes", r, err, version, len(nodes))
		}
		for i, n := range nodes {
			if i > 0 && (len(n.DataDeps) != 1 || n.DataDeps[0] != nodes[i-1].ID) {
				t.Fatalf("rank %d node %d depends on %v, not the one before", r, n.ID, n.DataDeps)
			}
			kinds[n.Name] = true
			attr := func(name string) int64 {
				a, ok := n.Attr(name)
				if !ok {
					t.Fatalf("rank %d node %d (%s) has no %s", r, n.ID, n.Name, name)
				}
				return a.Int
			}
			switch n.Type {
			case chakra.CommColl:
				a, _ := n.Attr("pg_name")
				g := groups[a.String]
				if !slices.Contains(g, r) {
					t.Fatalf("rank %d's %s runs in group %s = %v", r, n.Name, a.String, g)
				}
				for _, c := range s.Calls {
					if c.Dim+" "+c.Coll == n.Name && (c.Group != len(g) || c.CommSize != attr("comm_size")) {
						t.Fatalf("%s: group %v, comm_size %d; the summary says %d ranks, %d", n.Name, g, attr("comm_size"), c.Group, c.CommSize)
					}
				}
			case chakra.CommSend:
				sends = append(sends, p2p{attr("comm_src"), attr("comm_dst"), attr("comm_tag"), attr("comm_size")})
			case chakra.CommRecv:
				recvs = append(recvs, p2p{attr("comm_src"), attr("comm_dst"), attr("comm_tag"), attr("comm_size")})
			default:
				t.Fatalf("node type %d", n.Type)
			}
		}
	}
	order := func(a, b p2p) int { return int(a.tag-b.tag)*64 + int(a.src-b.src)*8 + int(a.dst-b.dst) }
	slices.SortFunc(sends, order)
	slices.SortFunc(recvs, order)
	if !slices.Equal(sends, recvs) || (len(sends) == 0) == (pred.Strategy.PP > 1) {
		t.Errorf("sends %v\nreceives %v", sends, recvs)
	}
	for _, c := range s.Calls {
		if math.Abs(c.AstraUs/c.Us-1) > 1e-6 {
			t.Errorf("%s %s: ASTRA-sim %v µs for collbench's %v", c.Dim, c.Coll, c.AstraUs, c.Us)
		}
	}
	// The all-gather's comm_size is one rank's shard: (n−1) of them cross
	// each link, against (n−1)/n of a reduce-scatter's buffer.
	var ag, rs TracedCall
	for _, c := range s.Calls {
		switch c.Dim + " " + c.Coll {
		case "TP allgather":
			ag = c
		case "TP reducescatter":
			rs = c
		}
	}
	if ag.Group == 0 || rs.Group == 0 {
		return
	}
	nets, err := astraTraceNets(p)
	if err != nil {
		t.Fatal(err)
	}
	net := nets[0]
	net.latency = s.LatencyNs[0]
	moved := func(c TracedCall, factor float64) float64 {
		return (c.AstraUs - net.astraTime(c.Coll, c.Group, 0)) / factor
	}
	if got := moved(ag, float64(ag.Group-1)) / moved(rs, float64(rs.Group-1)/float64(rs.Group)); math.Abs(got*float64(rs.CommSize)/float64(ag.CommSize)-1) > 1e-6 {
		t.Errorf("all-gather comm_size %d against reduce-scatter's %d: time per byte off by %v", ag.CommSize, rs.CommSize, got)
	}
}

func TestAstraTraceRefusals(t *testing.T) {
	p := fixture.Profile(t, 2, 4)
	pred := planOf(t, p, "llama2-7b", model.Strategy{TP: 8}, nil)
	if _, _, err := WriteAstraTrace(context.Background(), p, TraceCalls(pred), t.TempDir(), nil); err == nil || !strings.Contains(err.Error(), "TP allreduce: the group [0 1 2 3 4 5 6 7] spans both the node's GPUs and the nodes") {
		t.Errorf("a group across both tiers: %v", err)
	}
	one := fixture.Profile(t, 1, 4)
	for _, c := range []struct {
		call TraceCall
		want string
	}{
		{TraceCall{Dim: "TP", Coll: "broadcast", Calls: 1, Groups: [][]int{{0, 1}}, Us: 10}, "simulates no broadcast"},
		{TraceCall{Dim: "TP", Coll: "allreduce", Calls: 1, Groups: [][]int{{0, 7}}, Us: 10}, "rank 7 is not one of the profile's 4"},
		{TraceCall{Dim: "TP", Coll: "allreduce", Calls: 1, Groups: [][]int{{0}, {1}}, Us: 10}, "2 ranks or more (one has 1)"},
		{TraceCall{Dim: "TP", Coll: "allreduce", Calls: 1, Groups: [][]int{{0, 1}, {2}}, Us: 10}, "the same size"},
	} {
		if _, _, err := WriteAstraTrace(context.Background(), one, []TraceCall{c.call}, t.TempDir(), nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.call, err, c.want)
		}
	}
	// A group id is a positive number, as ASTRA-sim asserts.
	dir, _ := writeTrace(t, one, planOf(t, one, "llama2-7b", model.Strategy{TP: 2}, nil))
	var groups map[string][]int
	readJSON(t, filepath.Join(dir, "comm_groups.json"), &groups)
	for id := range groups {
		if n, err := strconv.Atoi(id); err != nil || n < 1 {
			t.Errorf("group id %q", id)
		}
	}
}
