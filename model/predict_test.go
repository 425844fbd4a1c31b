package model

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// flatNet is a network where every call takes 10 µs plus 1 µs per kB,
// whatever the collective, group size or layout.
type flatNet struct {
	asked   []string
	routed  bool            // has a routed all-to-all curve
	missing map[string]bool // collectives it has no curve of
}

func (n *flatNet) Curve(op string, size int, layout string) (*Curve, error) {
	n.asked = append(n.asked, fmt.Sprintf("%s/%d/%s", op, size, layout))
	if op == RoutedAllToAll && !n.routed {
		return nil, fmt.Errorf("no routed curve")
	}
	if n.missing[op] {
		return nil, fmt.Errorf("no %s curve", op)
	}
	var pts []Point
	for s := 1e3; s <= 1e9; s *= 4 {
		pts = append(pts, Point{Bytes: s, Time: 10 + s/1e3})
	}
	return NewCurve(op, size, layout, 1, pts)
}

// tiny is a two-layer model small enough to count by hand: per layer
// attention 4·64² = 16384 and feed-forward 2·64·256 = 32768 parameters,
// no embeddings: 98304 in all.
var tiny = Transformer{Name: "tiny", Layers: 2, Hidden: 64, FFN: 256, Heads: 4}

func TestParams(t *testing.T) {
	if got := tiny.Params(); got != 98304 {
		t.Errorf("tiny: %v parameters, want 98304", got)
	}
	for name, want := range map[string]float64{
		"gpt2-1.5b": 1.558e9, "gpt3-175b": 175e9, "llama2-7b": 6.74e9, "llama2-13b": 13.02e9,
		"llama2-70b": 68.98e9, "mixtral-8x7b": 46.7e9,
	} {
		if got := Presets[name].Params(); math.Abs(got-want) > 0.01*want {
			t.Errorf("%s: %.4g parameters, published %.4g", name, got, want)
		}
	}
	if a, all := Presets["mixtral-8x7b"].ActiveParams(), Presets["mixtral-8x7b"].Params(); a > 0.3*all || a < 0.25*all {
		t.Errorf("mixtral active %.3g of %.3g", a, all)
	}
}

func TestPredictVolumes(t *testing.T) {
	const P, bytes = 98304.0, 2.0
	tr := Training{Seq: 16, MicroBatch: 1, GlobalBatch: 4, Bytes: 2}
	act := 1.0 * 16 * 64 * bytes // b·s·h·bytes = 2048
	cases := []struct {
		name     string
		s        Strategy
		training Training
		want     map[string]float64 // dim/collective → bytes each GPU sends per step
		calls    map[string]float64
	}{
		{"dp all-reduce", Strategy{DP: 4, TP: 1, PP: 1, EP: 1}, tr,
			map[string]float64{"DP/allreduce": 2 * 3.0 / 4 * P * bytes}, map[string]float64{"DP/allreduce": 1}},
		{"zero-1", Strategy{DP: 4, TP: 1, PP: 1, EP: 1, ZeRO: 1}, tr,
			map[string]float64{"DP/reducescatter": 3.0 / 4 * P * bytes, "DP/allgather": 3.0 / 4 * P * bytes}, nil},
		{"zero-3 is 1.5× dp", Strategy{DP: 4, TP: 1, PP: 1, EP: 1, ZeRO: 3}, tr,
			map[string]float64{"DP/allgather": 2 * 3.0 / 4 * P * bytes, "DP/reducescatter": 3.0 / 4 * P * bytes},
			map[string]float64{"DP/allgather": 4, "DP/reducescatter": 2}},
		// 4 micro-batches × 2 layers × 4 all-reduces of b·s·h.
		{"tp", Strategy{DP: 1, TP: 2, PP: 1, EP: 1}, tr,
			map[string]float64{"TP/allreduce": 32 * act * 2 * 1.0 / 2, "DP/allreduce": 0}, map[string]float64{"TP/allreduce": 32}},
		{"tp with sp", Strategy{DP: 1, TP: 2, PP: 1, EP: 1, SP: true}, tr,
			map[string]float64{"TP/allgather": 32 * act / 2, "TP/reducescatter": 32 * act / 2}, nil},
		// Each of 4 micro-batches crosses the boundary forward and back.
		{"pp", Strategy{DP: 1, TP: 1, PP: 2, EP: 1}, tr,
			map[string]float64{"PP/pipeline": 2 * 4 * act}, map[string]float64{"PP/pipeline": 8}},
		{"dp buckets", Strategy{DP: 2, TP: 1, PP: 1, EP: 1}, Training{Seq: 16, MicroBatch: 1, GlobalBatch: 4, Bytes: 2, BucketBytes: 50000},
			map[string]float64{"DP/allreduce": 2 * 1.0 / 2 * P * bytes}, map[string]float64{"DP/allreduce": 4}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			net := &flatNet{}
			p, err := Predict(tiny, c.training, c.s, Machine{Net: net})
			if err != nil {
				t.Fatal(err)
			}
			got, calls := map[string]float64{}, map[string]float64{}
			var sum float64
			for _, tr := range p.Traffic {
				got[tr.Dim+"/"+tr.Coll] += tr.Volume
				calls[tr.Dim+"/"+tr.Coll] += tr.Calls
				if want := tr.Calls * (10 + tr.Bytes/1e3); math.Abs(tr.Time-want) > 1e-6*want {
					t.Errorf("%s %s: %v µs, want %v", tr.Dim, tr.Coll, tr.Time, want)
				}
				sum += tr.Time
			}
			for k, want := range c.want {
				if math.Abs(got[k]-want) > 1e-6*max(want, 1) {
					t.Errorf("%s: volume %v, want %v (all: %v)", k, got[k], want, got)
				}
			}
			for k, want := range c.calls {
				if calls[k] != want {
					t.Errorf("%s: %v calls, want %v", k, calls[k], want)
				}
			}
			if math.Abs(p.CommTime-sum) > 1e-9*sum || p.Exposed != p.CommTime {
				t.Errorf("total %v (sum %v), exposed %v without a compute rate", p.CommTime, sum, p.Exposed)
			}
		})
	}
}

// Each group is timed on the curve of its own ranks, in Megatron's order
// (rank = t + TP·(d + DP·p)), or refused when the profile has no such
// layout.
func TestPredictLayouts(t *testing.T) {
	moe := Transformer{Name: "moe", Layers: 2, Hidden: 64, FFN: 256, Heads: 4, Experts: 4, TopK: 2}
	for _, c := range []struct {
		m          Transformer
		s          Strategy
		want, fail string
	}{
		// DP [0,2],[1,3]: stride 2 of 4 is strided.
		{tiny, Strategy{DP: 2, TP: 2, PP: 1, EP: 1}, "allreduce/2/strided allreduce/2/consecutive", ""},
		// EP [0,1],[2,3] consecutive; the experts' data-parallel group
		// [0,2],[1,3] is strided, not consecutive.
		// EP asks for a routed all-to-all first (none here), then the balanced one.
		{moe, Strategy{DP: 4, TP: 1, PP: 1, EP: 2}, "allreduce/4/consecutive allreduce/2/strided alltoall/2/consecutive alltoallv:routed/2/consecutive", ""},
		// DP [0,2] in a world of 8: stride TP = 2, not 4 (the PP pairs).
		{tiny, Strategy{DP: 2, TP: 2, PP: 2, EP: 1}, "", "the DP groups are 2 ranks 2 apart"},
		// EP [0,2],[1,3] of 8 ranks: neither layout.
		{moe, Strategy{DP: 4, TP: 2, PP: 1, EP: 2}, "", "the EP groups are 2 ranks 2 apart"},
	} {
		net := &flatNet{}
		_, err := Predict(c.m, Training{Seq: 16, MicroBatch: 1, GlobalBatch: 8, Bytes: 2}, c.s, Machine{Net: net})
		switch {
		case c.fail != "" && (err == nil || !strings.Contains(err.Error(), c.fail)):
			t.Errorf("%s: %v, want %q", c.s, err, c.fail)
		case c.fail == "" && err != nil:
			t.Errorf("%s: %v", c.s, err)
		case c.fail == "" && strings.Join(net.asked, " ") != c.want:
			t.Errorf("%s: curves asked %q, want %q", c.s, strings.Join(net.asked, " "), c.want)
		}
	}
}

func TestMemory(t *testing.T) {
	const P = 98304.0
	for zero, perParam := range map[int]float64{0: 16, 1: 4 + 12.0/4, 2: 2 + 14.0/4, 3: 16.0 / 4} {
		p, err := Predict(tiny, Training{Seq: 16, MicroBatch: 1, GlobalBatch: 4, Bytes: 2}, Strategy{DP: 4, TP: 1, PP: 1, EP: 1, ZeRO: zero}, Machine{Net: &flatNet{}})
		if err != nil {
			t.Fatal(err)
		}
		if want := perParam * P; math.Abs(p.Memory.Total-want) > 1e-6 {
			t.Errorf("ZeRO-%d: %v bytes, want %v", zero, p.Memory.Total, want)
		}
	}
}

func TestOverlapped(t *testing.T) {
	cases := []struct{ comm, comp, sc, sp, want float64 }{
		{10, 20, 1.2, 1.1, 12 + (20 - 12/1.1)}, // compute outlasts
		{30, 20, 1.2, 1.2, 24 + (30 - 20)},     // Galvatron: bct·coe + (msg·dc − bct)
		{10, 20, 1, 1, 20},                     // no slowdown: fully hidden
		{0, 20, 1.3, 1.3, 20},
	}
	for _, c := range cases {
		if got := Overlapped(c.comm, c.comp, c.sc, c.sp); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("Overlapped(%v, %v, %v, %v) = %v, want %v", c.comm, c.comp, c.sc, c.sp, got, c.want)
		}
	}
}

// With a compute rate the data-parallel sync hides behind backward.
func TestPredictOverlap(t *testing.T) {
	tr := Training{Seq: 16, MicroBatch: 1, GlobalBatch: 4, Bytes: 2}
	s := Strategy{DP: 4, TP: 1, PP: 1, EP: 1}
	flops := tiny.StepFLOPs(4*16, 16) / 4 // per GPU
	// Compute of 3000 µs per step: backward 2000 µs hides the ~403 µs sync.
	p, err := Predict(tiny, tr, s, Machine{Net: &flatNet{}, CommSlowdown: 1.2, ComputeSlowdown: 1.1, FLOPS: flops / 3000e-6})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(p.Compute-3000) > 1e-6 {
		t.Fatalf("compute %v µs", p.Compute)
	}
	want := Overlapped(p.CommTime, 2000, 1.2, 1.1) - 2000
	if math.Abs(p.Exposed-want) > 1e-9 || p.Exposed >= p.CommTime || p.StepOverlap != 3000+want || p.StepNoOverlap != 3000+p.CommTime {
		t.Errorf("exposed %v (want %v of %v), steps %v / %v", p.Exposed, want, p.CommTime, p.StepOverlap, p.StepNoOverlap)
	}
}

func TestStrategyErrors(t *testing.T) {
	tr := Training{Seq: 16, MicroBatch: 1, GlobalBatch: 4, Bytes: 2}
	for _, c := range []struct {
		s    Strategy
		want string
	}{
		{Strategy{DP: 3, TP: 1, PP: 1, EP: 1}, "global batch"},
		{Strategy{DP: 1, TP: 1, PP: 4, EP: 1}, "does not divide the 2 layers"},
		{Strategy{DP: 1, TP: 8, PP: 1, EP: 1}, "attention heads"},
		{Strategy{DP: 2, TP: 1, PP: 1, EP: 2}, "needs a model with experts"},
		{Strategy{DP: 2, TP: 1, PP: 1, EP: 1, ZeRO: 4}, "ZeRO stage"},
		{Strategy{DP: 2, TP: 1, PP: 1, EP: 1, SP: true}, "sequence parallelism"},
		{Strategy{DP: 0, TP: 1, PP: 1, EP: 1}, "at least 1"},
	} {
		_, err := Predict(tiny, tr, c.s, Machine{Net: &flatNet{}})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.s, err, c.want)
		}
	}
}

func TestRank(t *testing.T) {
	m := Transformer{Name: "m", Layers: 4, Hidden: 256, FFN: 1024, Heads: 8}
	ranked, skipped := Rank(8, m, Training{Seq: 128, MicroBatch: 1, GlobalBatch: 64, Bytes: 2}, Strategy{EP: 1}, Machine{Net: &flatNet{}})
	// (tp, pp) with tp·pp | 8: 10 pairs; pp=8 cannot split 4 layers, and
	// dp=2 tp=2 pp=2's DP groups (stride 2 of 8) are no layout a profile has.
	if len(ranked)+len(skipped) != 10 || len(skipped) != 2 || !strings.Contains(skipped["dp=1 tp=1 pp=8"], "layers") ||
		!strings.Contains(skipped["dp=2 tp=2 pp=2"], "2 apart") {
		t.Fatalf("%d ranked, skipped %v", len(ranked), skipped)
	}
	for i := 1; i < len(ranked); i++ {
		if ranked[i].Exposed < ranked[i-1].Exposed {
			t.Fatalf("not sorted at %d", i)
		}
	}
}

// A strategy and a training complete themselves for a world: DP from the
// ranks TP×PP leave, 16 micro-batches per rank by default.
func TestForWorld(t *testing.T) {
	for _, tt := range []struct {
		s      Strategy
		world  int
		wantDP int
		ok     bool
	}{
		{Strategy{TP: 2, PP: 2}, 16, 4, true},
		{Strategy{DP: 3, TP: 2, PP: 1}, 16, 3, true}, // given, kept
		{Strategy{TP: 3, PP: 1}, 16, 0, false},
		{Strategy{TP: 0, PP: 1}, 16, 0, false},
	} {
		got, err := tt.s.ForWorld(tt.world)
		if (err == nil) != tt.ok || (tt.ok && got.DP != tt.wantDP) {
			t.Errorf("%+v on %d: %+v, %v", tt.s, tt.world, got, err)
		}
	}
	if got := (Training{MicroBatch: 2}).ForWorld(8); got.GlobalBatch != 256 {
		t.Errorf("global batch %d, want 256", got.GlobalBatch)
	}
	if got := (Training{MicroBatch: 2, GlobalBatch: 64}).ForWorld(8); got.GlobalBatch != 64 {
		t.Errorf("a given global batch changed: %d", got.GlobalBatch)
	}
}

// Expert parallelism is timed on a routed all-to-all curve where the
// network has one, and named so; otherwise on the balanced all-to-all.
func TestPredictRoutedAllToAll(t *testing.T) {
	moe := Transformer{Name: "moe", Layers: 2, Hidden: 64, FFN: 256, Heads: 4, Experts: 4, TopK: 2}
	for _, routed := range []bool{false, true} {
		p, err := Predict(moe, Training{Seq: 16, MicroBatch: 1, GlobalBatch: 8, Bytes: 2}, Strategy{DP: 4, TP: 1, PP: 1, EP: 2},
			Machine{Net: &flatNet{routed: routed}})
		if err != nil {
			t.Fatal(err)
		}
		want := map[bool]string{false: "alltoall", true: "alltoallv"}[routed]
		found := false
		for _, tr := range p.Traffic {
			if tr.Dim == "EP" {
				found = true
				if tr.Coll != want || tr.Time <= 0 {
					t.Errorf("routed curve %v: EP timed on %s (%g ms)", routed, tr.Coll, tr.Time)
				}
			}
		}
		if !found {
			t.Fatal("no EP traffic")
		}
	}
}

// Pipeline traffic is timed on the pipeline chain, else on send/recv's
// ring, else not at all: the error names the chain.
func TestPredictPipelineFallsBack(t *testing.T) {
	for _, c := range []struct {
		missing []string
		want    string // the collective PP is timed on; "" for an error
	}{
		{nil, "pipeline"},
		{[]string{"pipeline"}, "sendrecv"},
		{[]string{"pipeline", "sendrecv"}, ""},
	} {
		net := &flatNet{missing: map[string]bool{}}
		for _, op := range c.missing {
			net.missing[op] = true
		}
		p, err := Predict(tiny, Training{Seq: 16, MicroBatch: 1, GlobalBatch: 8, Bytes: 2}, Strategy{DP: 1, TP: 1, PP: 2, EP: 1}, Machine{Net: net})
		if c.want == "" {
			if err == nil || !strings.Contains(err.Error(), "no pipeline curve") {
				t.Errorf("without %v: %v, want the chain's error", c.missing, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("without %v: %v", c.missing, err)
		}
		for _, tr := range p.Traffic {
			if tr.Dim == "PP" && (tr.Coll != c.want || tr.Time <= 0) {
				t.Errorf("without %v: PP timed on %s (%g), want %s", c.missing, tr.Coll, tr.Time, c.want)
			}
		}
	}
}
