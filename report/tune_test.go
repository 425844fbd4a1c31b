package report

import (
	"bytes"
	"math"
	"testing"

	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/internal/golden"
)

// A tuning on NCCL as testdata/tune.golden holds it: the library's own
// choice, a setting NCCL refused, a twin, the one that won at the small
// sizes, its band held in the proof, a pinned band, a size where the
// steered library did not do what the file says.
func TestTuneTable(t *testing.T) {
	p := func(v float64) *float64 { return &v }
	held := true
	fig := func(arm int, median, ratio float64, adj *float64, verdict string) document.ABFigure {
		return document.ABFigure{Arm: arm, Rounds: 8, Median: median, Ratio: ratio, P: adj, PAdjusted: adj, Verdict: verdict}
	}
	logged := func(algo, proto string, ch int, sizes ...int64) []document.TuneLogged {
		var out []document.TuneLogged
		for _, s := range sizes {
			out = append(out, document.TuneLogged{Size: s, TuneChoice: document.TuneChoice{Algorithm: algo, Protocol: proto, Channels: ch}})
		}
		return out
	}
	ll := document.TuneChoice{Algorithm: "ring", Protocol: "ll", Channels: 2}
	rec := &document.TuneRun{
		Stamp:   document.Stamp{Backend: "nccl"},
		Command: []string{"allreduce", "-g", "2", "--devices", "0,0", "-b", "1M", "-e", "16M", "-f", "4"}, Collective: "allreduce",
		Ranks: 2, Nodes: 1, NCCLVersion: "2.30.7", Rounds: 8, Threshold: 0.05, Alpha: 0.01, Correction: "bh",
		Arms: []document.TuneArm{
			{Letter: "A", Label: "the library's own choice", Default: true, Choices: logged("ring", "simple", 4, 1<<20, 4<<20, 16<<20)},
			{Letter: "B", Label: "nvls/ll", Refused: "failed in its trial (exit 1): collbench allreduce: ncclGroupEnd: ncclInvalidUsage"},
			{Letter: "C", Label: "ring/simple", SameAs: "A"},
			{Letter: "D", Label: "ring/ll", Choices: logged("ring", "ll", 2, 1<<20, 4<<20, 16<<20)},
		},
		Sizes: []document.TuneSize{
			{Size: 1 << 20, Arms: []document.ABFigure{fig(0, 40.1, 1, nil, "base"), fig(3, 22.3, 0.556, p(0.0006), "faster")}, Winner: 3, Choice: &ll, Ratio: 0.556},
			{Size: 4 << 20, Arms: []document.ABFigure{fig(0, 61.0, 1, nil, "base"), fig(3, 50.0, 0.820, p(0.0009), "faster")}, Winner: 3, Choice: &ll, Ratio: 0.820},
			{Size: 16 << 20, Arms: []document.ABFigure{fig(0, 100.9, 1, nil, "base"), fig(3, 137.1, 1.359, p(0.0006), "slower")}, Winner: -1, Ratio: 1},
		},
		Bands: []document.TuneBand{
			{From: 0, To: 1<<20 - 1, Choice: document.TuneChoice{Algorithm: "ring", Protocol: "simple", Channels: 4}, Own: true, Predicted: 1},
			{From: 1 << 20, To: 10485760, Sizes: []int64{1 << 20, 4 << 20}, Choice: ll, Predicted: math.Sqrt(0.556 * 0.820), Realised: p(0.71), Held: &held},
			{From: 10485761, To: math.MaxUint64, Sizes: []int64{16 << 20}, Choice: document.TuneChoice{Algorithm: "ring", Protocol: "simple", Channels: 4}, Own: true, Predicted: 1},
		},
		Proof: &document.TuneProof{Rounds: 8, Env: []string{"NCCL_TUNER_PLUGIN=libnccl-tuner-example.so", "NCCL_TUNER_CONFIG_FILE=tuned.conf"},
			Choices:    append(logged("ring", "ll", 2, 1<<20, 4<<20), logged("ring", "simple", 8, 16<<20)...),
			Mismatches: []string{"16M: the file says ring/simple/4ch, the library chose ring/simple/8ch"},
			Sizes: []document.TuneProofSize{
				{Size: 1 << 20, Default: 40.5, Tuned: 23.0, Ratio: 0.568, Predicted: 0.556, P: p(0.0003), PAdjusted: p(0.0009), Verdict: "faster"},
				{Size: 4 << 20, Default: 60.2, Tuned: 53.3, Ratio: 0.885, Predicted: 0.820, P: p(0.0003), PAdjusted: p(0.0009), Verdict: "faster"},
				{Size: 16 << 20, Default: 101.0, Tuned: 100.2, Ratio: 0.992, Predicted: 1, P: p(0.6), PAdjusted: p(0.6), Verdict: "same"},
			}},
		Rows: []document.TunerRow{
			{Collective: "allreduce", MinBytes: 0, MaxBytes: 1<<20 - 1, TuneChoice: document.TuneChoice{Algorithm: "ring", Protocol: "simple", Channels: 4},
				Nodes: 1, Ranks: 2, PipeOps: -1, RegBuff: -1, Why: "0–1048575 B (not measured): the library's own choice, pinned"},
			{Collective: "allreduce", MinBytes: 1 << 20, MaxBytes: 10485760, TuneChoice: ll, Nodes: 1, Ranks: 2, PipeOps: -1, RegBuff: -1,
				Why: "measured at 1M–4M: ring/ll/2ch, 0.675× the library's own time in the search, 0.710× in the proof"},
		},
		Notes: []string{"the rows match communicators of 2 rank(s) on 1 node(s) only"},
	}
	var b bytes.Buffer
	Tune(&b, rec)
	golden.Check(t, "tune.golden", b.Bytes())
}
