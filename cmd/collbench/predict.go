package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/collbench/collbench/model"
	"github.com/collbench/collbench/report"
)

// predictFlags are collbench predict's flags.
type predictFlags struct {
	fs                 *pflag.FlagSet
	profile, preset    string
	shape              model.Transformer
	seq, micro, global int
	dtype              string
	strategy           model.Strategy
	fsdp               bool
	bucket             sizeFlag
	tflops             float64
	rank               bool
	format             string
}

func newPredictFlags() *predictFlags {
	f := &predictFlags{fs: pflag.NewFlagSet("predict", pflag.ContinueOnError), bucket: 25 << 20}
	fs := f.fs
	fs.SortFlags = false
	fs.StringVar(&f.profile, "profile", "", "the profile from collbench profile (required)")
	fs.StringVar(&f.preset, "model", "", "a preset: "+strings.Join(model.PresetNames(), ", ")+" (the shape flags below override it)")
	fs.IntVar(&f.shape.Layers, "layers", 0, "transformer layers")
	fs.IntVar(&f.shape.Hidden, "hidden", 0, "hidden size")
	fs.IntVar(&f.shape.FFN, "ffn", 0, "feed-forward width (default 4×hidden)")
	fs.BoolVar(&f.shape.Gated, "gated", false, "gated feed-forward (SwiGLU, three matrices)")
	fs.IntVar(&f.shape.Heads, "heads", 0, "attention heads (tp must divide them)")
	fs.IntVar(&f.shape.KVHeads, "kv-heads", 0, "key/value heads for grouped-query attention")
	fs.IntVar(&f.shape.Vocab, "vocab", 0, "vocabulary size")
	fs.IntVar(&f.shape.Experts, "experts", 0, "experts per layer (mixture of experts)")
	fs.IntVar(&f.shape.TopK, "top-k", 0, "experts per token")
	fs.IntVar(&f.seq, "seq", 2048, "sequence length")
	fs.IntVar(&f.micro, "micro-batch", 1, "sequences per micro-batch")
	fs.IntVar(&f.global, "global-batch", 0, "sequences per step (default 16 per rank)")
	fs.StringVar(&f.dtype, "dtype", "bfloat16", "parameter, gradient and activation type: bfloat16, half or float")
	fs.IntVar(&f.strategy.DP, "dp", 0, "data-parallel size (default: the ranks left by tp and pp)")
	fs.IntVar(&f.strategy.TP, "tp", 1, "tensor-parallel size")
	fs.IntVar(&f.strategy.PP, "pp", 1, "pipeline-parallel size")
	fs.IntVar(&f.strategy.EP, "ep", 1, "expert-parallel size (inside the data-parallel group)")
	fs.IntVar(&f.strategy.ZeRO, "zero", 0, "ZeRO stage 0-3")
	fs.BoolVar(&f.fsdp, "fsdp", false, "fully sharded data parallel (ZeRO stage 3)")
	fs.BoolVar(&f.strategy.SP, "sp", false, "sequence parallelism with tensor parallelism")
	fs.Var(&f.bucket, "bucket", "gradient bucket size of the data-parallel sync (0 = one message)")
	fs.Float64Var(&f.tflops, "tflops", 0, "compute rate per GPU in TFLOP/s (default: the profile's best GEMM probe)")
	fs.BoolVar(&f.rank, "rank-strategies", false, "list every dp×tp×pp split of the profile's ranks, least exposed communication first")
	fs.StringVar(&f.format, "format", "table", "table or json")
	return f
}

// model resolves the preset and shape flags.
func (f *predictFlags) model() (model.Transformer, error) {
	m := model.Transformer{Name: "custom"}
	if f.preset != "" {
		p, ok := model.Presets[f.preset]
		if !ok {
			return m, usagef("unknown --model %q (want %s)", f.preset, strings.Join(model.PresetNames(), ", "))
		}
		m = p
	}
	set := func(name string, dst *int, v int) {
		if f.fs.Changed(name) {
			*dst = v
		}
	}
	set("layers", &m.Layers, f.shape.Layers)
	set("hidden", &m.Hidden, f.shape.Hidden)
	set("ffn", &m.FFN, f.shape.FFN)
	set("heads", &m.Heads, f.shape.Heads)
	set("kv-heads", &m.KVHeads, f.shape.KVHeads)
	set("vocab", &m.Vocab, f.shape.Vocab)
	set("experts", &m.Experts, f.shape.Experts)
	set("top-k", &m.TopK, f.shape.TopK)
	if f.fs.Changed("gated") {
		m.Gated = f.shape.Gated
	}
	if m.FFN == 0 {
		m.FFN = 4 * m.Hidden
	}
	if m.Experts > 1 && m.TopK == 0 {
		m.TopK = 1
	}
	if f.preset == "" && (m.Layers == 0 || m.Hidden == 0) {
		return m, usagef("give --model or at least --layers and --hidden")
	}
	if err := m.Validate(); err != nil {
		return m, usageError{Err: err}
	}
	return m, nil
}

// runPredict is collbench predict.
func runPredict(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f := newPredictFlags()
	f.fs.SetOutput(io.Discard)
	synopsis := "collbench predict --profile profile.json [--model NAME | --layers N --hidden N …] [--dp N --tp N --pp N --zero K --sp --ep N] [--rank-strategies]"
	if code, done := parseFlags(f.fs, args, synopsis, stdout, stderr); done {
		return code
	}
	if err := predict(ctx, f, stdout); err != nil {
		return failer("predict", stderr)(err)
	}
	return exitOK
}

func predict(ctx context.Context, f *predictFlags, stdout io.Writer) error {
	switch {
	case f.fs.NArg() > 0:
		return usagef("unexpected argument %q", f.fs.Arg(0))
	case f.profile == "":
		return usagef("--profile is required (make one with collbench profile -o profile.json)")
	case f.format != "table" && f.format != "json":
		return usagef("unknown --format %q (want table or json)", f.format)
	case f.tflops < 0:
		return usagef("--tflops cannot be negative")
	}
	m, err := f.model()
	if err != nil {
		return err
	}
	bytes := map[string]int{"bfloat16": 2, "half": 2, "float": 4}[f.dtype]
	if bytes == 0 {
		return usagef("unknown --dtype %q (want bfloat16, half or float)", f.dtype)
	}
	doc, err := loadProfile(ctx, f.profile)
	if err != nil {
		return err
	}
	world := doc.Meta.WorldSize
	t := model.Training{Seq: f.seq, MicroBatch: f.micro, GlobalBatch: f.global, Bytes: bytes, BucketBytes: float64(f.bucket)}.ForWorld(world)
	s := f.strategy
	if f.fsdp {
		s.ZeRO = 3
	}
	mc := doc.Machine(f.tflops)
	if f.rank {
		ranked, skipped := model.Rank(world, m, t, s, mc)
		if len(ranked) == 0 {
			return fmt.Errorf("no split of %d ranks works for %s with this profile (%d tried; e.g. %s)", world, m.Name, len(skipped), firstReason(skipped))
		}
		if f.format == "json" {
			return encodeJSON(stdout, struct {
				Ranked  []model.Prediction `json:"ranked"`
				Skipped map[string]string  `json:"skipped"`
			}{ranked, skipped})
		}
		fmt.Fprintf(stdout, "# %s on %d ranks of %s: every dp×tp×pp split (ZeRO-%d), least exposed communication first\n", m.Name, world, f.profile, s.ZeRO)
		report.RankTable(stdout, ranked, skipped, doc.GPUMemory())
		return nil
	}
	if s, err = s.ForWorld(world); err != nil {
		return usageError{Err: err}
	}
	p, err := model.Predict(m, t, s, mc)
	if err != nil {
		return usageError{Err: err}
	}
	if f.format == "json" {
		return encodeJSON(stdout, p)
	}
	report.PredictTable(stdout, p, mc)
	return nil
}

func firstReason(m map[string]string) string {
	for k, v := range m {
		return k + ": " + v
	}
	return "none"
}

func encodeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
