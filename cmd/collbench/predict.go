package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/spf13/pflag"

	"github.com/collbench/collbench/charge"
	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/export"
	"github.com/collbench/collbench/model"
	"github.com/collbench/collbench/model/profiled"
	"github.com/collbench/collbench/report"
)

// predictFlags are collbench predict's flags.
type predictFlags struct {
	model.Request
	fs      *pflag.FlagSet
	profile string
	rank    bool
	format  string
	charges string // a folder of exports
	astra   string // a folder for the plan's ASTRA-sim workload
}

func newPredictFlags() *predictFlags {
	f := &predictFlags{fs: newFlagSet("predict")}
	fs, r := f.fs, &f.Request
	r.Given, r.Bucket = fs.Changed, 25<<20
	fs.StringVar(&f.profile, "profile", "", "the profile from collbench profile (required)")
	fs.StringVar(&r.Preset, "model", "", "a preset: "+strings.Join(model.PresetNames(), ", ")+" (the shape flags below override it)")
	fs.IntVar(&r.Shape.Layers, "layers", 0, "transformer layers")
	fs.IntVar(&r.Shape.Hidden, "hidden", 0, "hidden size")
	fs.IntVar(&r.Shape.FFN, "ffn", 0, "feed-forward width (default 4×hidden)")
	fs.BoolVar(&r.Shape.Gated, "gated", false, "gated feed-forward (SwiGLU, three matrices)")
	fs.IntVar(&r.Shape.Heads, "heads", 0, "attention heads (tp must divide them)")
	fs.IntVar(&r.Shape.KVHeads, "kv-heads", 0, "key/value heads for grouped-query attention")
	fs.IntVar(&r.Shape.Vocab, "vocab", 0, "vocabulary size")
	fs.IntVar(&r.Shape.Experts, "experts", 0, "experts per layer (mixture of experts)")
	fs.IntVar(&r.Shape.TopK, "top-k", 0, "experts per token")
	fs.IntVar(&r.Seq, "seq", 2048, "sequence length")
	fs.IntVar(&r.Micro, "micro-batch", 1, "sequences per micro-batch")
	fs.IntVar(&r.Global, "global-batch", 0, "sequences per step (default 16 per rank)")
	fs.StringVar(&r.DType, "dtype", "bfloat16", "parameter, gradient and activation type: bfloat16, half or float")
	fs.IntVar(&r.Strategy.DP, "dp", 0, "data-parallel size (default: the ranks left by tp and pp)")
	fs.IntVar(&r.Strategy.TP, "tp", 1, "tensor-parallel size")
	fs.IntVar(&r.Strategy.PP, "pp", 1, "pipeline-parallel size")
	fs.IntVar(&r.Strategy.EP, "ep", 1, "expert-parallel size (inside the data-parallel group)")
	fs.IntVar(&r.Strategy.ZeRO, "zero", 0, "ZeRO stage 0-3")
	fs.BoolVar(&r.FSDP, "fsdp", false, "fully sharded data parallel (ZeRO stage 3)")
	fs.BoolVar(&r.Strategy.SP, "sp", false, "sequence parallelism with tensor parallelism")
	fs.Var(size(&r.Bucket), "bucket", "gradient bucket size of the data-parallel sync (0 = one message)")
	fs.Float64Var(&r.TFLOPS, "tflops", 0, "compute rate per GPU in TFLOP/s (default: the profile's best GEMM probe)")
	fs.BoolVar(&f.rank, "rank-strategies", false, "list every dp×tp×pp split of the profile's ranks, least exposed communication first")
	fs.StringVar(&f.format, "format", "table", "table or json")
	fs.StringVar(&f.astra, "astra-trace", "", "write into this folder an ASTRA-sim workload of the plan's training step (Chakra traces, groups, network), each call sized so that ASTRA-sim times it as measured, and charge the plan's calls by it as --charges does")
	fs.StringVar(&f.charges, "charges", "", "a folder of this profile's exports (collbench export --to aiconfigurator,calculon,galvatron,simai): print each planner's charge for every call of the plan ÷ the measured time, beyond 2 % flagged")
	return f
}

// runPredict is collbench predict.
func runPredict(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f := newPredictFlags()
	return fileCommand(f.fs, args, stdout, stderr, func() error { return predict(ctx, f, stdout, stderr) })
}

func predict(ctx context.Context, f *predictFlags, stdout, stderr io.Writer) error {
	switch {
	case f.fs.NArg() > 0:
		return usagef("unexpected argument %q", f.fs.Arg(0))
	case f.profile == "":
		return usagef("--profile is required (make one with collbench profile -o profile.json)")
	case f.charges != "" && f.rank:
		return usagef("--charges compares one plan's calls; drop --rank-strategies")
	case f.astra != "" && f.rank:
		return usagef("--astra-trace writes one plan's step; drop --rank-strategies")
	case f.astra != "" && f.charges != "" && f.astra != f.charges:
		return usagef("--astra-trace charges the plan from its own folder; give --charges the same folder or drop it")
	}
	if err := f.Check(); err != nil {
		return usageError{Err: err}
	}
	if err := checkFormat(f.format, "table", "json"); err != nil {
		return err
	}
	doc, err := loadProfile(ctx, f.profile)
	if err != nil {
		return err
	}
	world, mc := doc.Meta.WorldSize, profiled.Machine(doc, f.TFLOPS)
	if f.rank {
		r, err := f.Rank(world, mc)
		switch {
		case err != nil:
			return err
		case f.format == "json":
			return encodeJSON(stdout, r)
		}
		m, _ := f.Model() // checked above
		fmt.Fprintf(stdout, "# %s on %d ranks of %s: every dp×tp×pp split (ZeRO-%d), least exposed communication first\n", m.Name, world, f.profile, f.Split().ZeRO)
		report.RankTable(stdout, r.Ranked, r.Skipped, doc.GPUMemory())
		return nil
	}
	var planners []charge.Planner
	if f.charges != "" {
		if planners, err = charge.Open(f.charges); err != nil {
			// The folder is the caller's input: one that is missing or
			// holds no export is a usage error, as any bad argument.
			return usageError{Err: fmt.Errorf("--charges: %w; write them with collbench export --to aiconfigurator,calculon,galvatron,simai", err)}
		}
		if err := fromThisProfile(f.charges, planners, doc, stderr); err != nil {
			return usageError{Err: fmt.Errorf("--charges: %w", err)}
		}
	}
	p, err := f.Predict(world, mc)
	if err != nil {
		return usageError{Err: err}
	}
	if f.astra != "" {
		if _, _, err := export.WriteAstraTrace(ctx, doc, export.TraceCalls(p), f.astra, []string{f.profile}); err != nil {
			return fmt.Errorf("--astra-trace: %w", err)
		}
		if planners, err = charge.Open(f.astra); err != nil {
			return fmt.Errorf("--astra-trace: %w", err)
		}
		if err := fromThisProfile(f.astra, planners, doc, stderr); err != nil {
			return usageError{Err: fmt.Errorf("--astra-trace: %w", err)}
		}
	}
	rows := planCharges(planners, p)
	if f.format == "json" {
		if planners != nil {
			return encodeJSON(stdout, struct {
				model.Prediction
				Charges []charge.Row  `json:"planner_charges"`
				Steps   []charge.Step `json:"planner_steps"`
			}{p, rows, charge.Steps(rows)})
		}
		return encodeJSON(stdout, p)
	}
	report.PredictTable(spelling{w: stdout}, p, mc)
	report.ChargeTable(stdout, rows)
	if call, ok := charge.GalvatronPoint(rows); ok {
		fmt.Fprintf(stdout, "# galvatron: its data-parallel and pipeline bandwidths hold no latency; export it with --galvatron-bw point:%d to charge this plan's %s %s at its measured time\n",
			int64(math.Round(call.Bytes)), call.Dim, call.Coll)
	}
	if call, ok := charge.SimAIPoint(rows); ok {
		fmt.Fprintf(stdout, "# simai: its bandwidths hold no latency; export it with --simai-bw point:%d to charge this plan's %s %s at its measured time\n",
			int64(math.Round(call.Bytes)), call.Dim, call.Coll)
	}
	return nil
}

// planCharges is each planner's charge for every call of the plan,
// beside the time the prediction gives it; none without planners.
func planCharges(planners []charge.Planner, p model.Prediction) []charge.Row {
	if len(planners) == 0 {
		return nil
	}
	var calls []charge.Call
	var us []float64
	for _, tr := range p.Traffic {
		if tr.Calls <= 0 {
			continue
		}
		calls = append(calls, charge.Call{Dim: tr.Dim, Coll: tr.Coll, Group: tr.Group, Layout: tr.Layout, Bytes: tr.Bytes, PerStep: tr.Calls,
			TP: p.Strategy.TP, EP: p.Strategy.EP, World: p.Strategy.DP * p.Strategy.TP * p.Strategy.PP})
		us = append(us, tr.Time/tr.Calls)
	}
	return charge.Compare(planners, calls, us)
}

func encodeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// fromThisProfile refuses exports in dir that the folder records as made
// from another profile than doc, and says in one line which planners'
// exports it cannot tell.
func fromThisProfile(dir string, planners []charge.Planner, doc *document.Profile, stderr io.Writer) error {
	digest, err := doc.Digest()
	if err != nil {
		return err
	}
	unknown, err := charge.FromProfile(dir, planners, digest)
	if err != nil {
		return err
	}
	if len(unknown) > 0 {
		fmt.Fprintf(stderr, "collbench predict: %s keeps no record of the profile its %s export(s) came from (%s); charged as they are\n",
			dir, strings.Join(unknown, ", "), export.ProvenanceFile)
	}
	return nil
}
