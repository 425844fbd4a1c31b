package model

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/collbench/collbench/setting"
)

// Request is a prediction as a person states it: a preset and the shape
// settings that override it, the batch and type by name. Model and
// Training check it.
type Request struct {
	Preset string
	// Shape holds the shape settings; Given says which were chosen (by
	// the names layers, hidden, ffn, heads, kv-heads, vocab, experts,
	// top-k and gated), and only those override the preset.
	Shape              Transformer
	Given              func(name string) bool
	Seq, Micro, Global int
	DType              string // bfloat16, half or float
	Bucket             int64  // gradient bucket bytes; 0 is one message
	// Strategy is the split to predict; a DP of 0 takes the ranks TP and
	// PP leave. FSDP makes it ZeRO stage 3 whatever Strategy.ZeRO says.
	Strategy Strategy
	FSDP     bool
	// TFLOPS is the compute rate per GPU; 0 leaves it to the machine
	// (the profile's best GEMM probe).
	TFLOPS float64
}

// Check refuses what no profile can mend: a negative compute rate, an
// unknown preset or type, a shape that does not hold together.
func (r Request) Check() error {
	if r.TFLOPS < 0 {
		return setting.Errorf("{TFLOPS} cannot be negative")
	}
	if _, err := r.Model(); err != nil {
		return err
	}
	_, err := r.Bytes()
	return err
}

// Split is the strategy as asked, FSDP applied.
func (r Request) Split() Strategy {
	s := r.Strategy
	if r.FSDP {
		s.ZeRO = 3
	}
	return s
}

// Predict is the step's prediction for the split on world ranks of mc.
func (r Request) Predict(world int, mc Machine) (Prediction, error) {
	m, t, err := r.resolve(world)
	if err != nil {
		return Prediction{}, err
	}
	s, err := r.Split().ForWorld(world)
	if err != nil {
		return Prediction{}, err
	}
	return Predict(m, t, s, mc)
}

// Rank is RankAll over every dp×tp×pp split of world ranks of mc, the
// other settings of the split (ZeRO, SP, EP) kept.
func (r Request) Rank(world int, mc Machine) (Ranking, error) {
	m, t, err := r.resolve(world)
	if err != nil {
		return Ranking{}, err
	}
	return RankAll(world, m, t, r.Split(), mc)
}

// resolve is the model and the training for world ranks.
func (r Request) resolve(world int) (Transformer, Training, error) {
	m, err := r.Model()
	if err != nil {
		return m, Training{}, err
	}
	t, err := r.Training(world)
	return m, t, err
}

// Model resolves the preset and the shape settings.
func (r Request) Model() (Transformer, error) {
	m := Transformer{Name: "custom"}
	if r.Preset != "" {
		p, ok := Presets[r.Preset]
		if !ok {
			return m, setting.Errorf("unknown {Model} %q (want %s)", r.Preset, strings.Join(PresetNames(), ", "))
		}
		m = p
	}
	for _, f := range []struct {
		name     string
		dst, src *int
	}{{"layers", &m.Layers, &r.Shape.Layers}, {"hidden", &m.Hidden, &r.Shape.Hidden}, {"ffn", &m.FFN, &r.Shape.FFN},
		{"heads", &m.Heads, &r.Shape.Heads}, {"kv-heads", &m.KVHeads, &r.Shape.KVHeads}, {"vocab", &m.Vocab, &r.Shape.Vocab},
		{"experts", &m.Experts, &r.Shape.Experts}, {"top-k", &m.TopK, &r.Shape.TopK}} {
		if r.Given(f.name) {
			*f.dst = *f.src
		}
	}
	if r.Given("gated") {
		m.Gated = r.Shape.Gated
	}
	if m.FFN == 0 {
		m.FFN = 4 * m.Hidden
	}
	if m.Experts > 1 && m.TopK == 0 {
		m.TopK = 1
	}
	if r.Preset == "" && (m.Layers == 0 || m.Hidden == 0) {
		return m, setting.Errorf("give {Model} or at least {Layers} and {Hidden}")
	}
	return m, m.Validate()
}

// Bytes is the size of one element of DType.
func (r Request) Bytes() (int, error) {
	bytes := map[string]int{"bfloat16": 2, "half": 2, "float": 4}[r.DType]
	if bytes == 0 {
		return 0, setting.Errorf("unknown {DType} %q (want bfloat16, half or float)", r.DType)
	}
	return bytes, nil
}

// Training is the batch for world ranks.
func (r Request) Training(world int) (Training, error) {
	bytes, err := r.Bytes()
	if err != nil {
		return Training{}, err
	}
	return Training{Seq: r.Seq, MicroBatch: r.Micro, GlobalBatch: r.Global, Bytes: bytes, BucketBytes: float64(r.Bucket)}.ForWorld(world), nil
}

// Ranking is every split of a job's ranks that works, least exposed
// communication first, and the ones that do not, with the reason.
type Ranking struct {
	Ranked  []Prediction      `json:"ranked"`
	Skipped map[string]string `json:"skipped"`
}

// RankAll is Rank, failing when no split works, naming one reason.
func RankAll(world int, m Transformer, t Training, base Strategy, mc Machine) (Ranking, error) {
	ranked, skipped := Rank(world, m, t, base, mc)
	if len(ranked) > 0 {
		return Ranking{ranked, skipped}, nil
	}
	example := "none"
	if keys := slices.Sorted(maps.Keys(skipped)); len(keys) > 0 {
		example = keys[0] + ": " + skipped[keys[0]]
	}
	return Ranking{ranked, skipped}, fmt.Errorf("no split of %d ranks works for %s with this profile (%d tried; e.g. %s)", world, m.Name, len(skipped), example)
}
