package model

import (
	"fmt"
	"sort"
	"strings"
)

// Transformer is the shape of a decoder-only language model, enough to
// count its parameters and the bytes its parallel strategies move.
type Transformer struct {
	Name    string `json:"name"`
	Layers  int    `json:"layers"`
	Hidden  int    `json:"hidden"`
	FFN     int    `json:"ffn"`      // feed-forward width
	Gated   bool   `json:"gated"`    // SwiGLU: three feed-forward matrices instead of two
	Heads   int    `json:"heads"`    // attention heads (0 = unknown)
	KVHeads int    `json:"kv_heads"` // key/value heads (grouped-query attention); 0 = Heads
	Vocab   int    `json:"vocab"`
	Tied    bool   `json:"tied_embeddings"`
	Experts int    `json:"experts"` // feed-forward experts per layer; 0 or 1 = dense
	TopK    int    `json:"top_k"`   // experts each token is routed to
}

// Presets are well-known models; parameter counts follow from the shapes
// (norms and biases left out), within 1 % of the published sizes.
var Presets = map[string]Transformer{
	"gpt2-1.5b":    {Name: "gpt2-1.5b", Layers: 48, Hidden: 1600, FFN: 6400, Heads: 25, Vocab: 50257, Tied: true},
	"gpt3-175b":    {Name: "gpt3-175b", Layers: 96, Hidden: 12288, FFN: 49152, Heads: 96, Vocab: 50257, Tied: true},
	"llama2-7b":    {Name: "llama2-7b", Layers: 32, Hidden: 4096, FFN: 11008, Gated: true, Heads: 32, Vocab: 32000},
	"llama2-13b":   {Name: "llama2-13b", Layers: 40, Hidden: 5120, FFN: 13824, Gated: true, Heads: 40, Vocab: 32000},
	"llama2-70b":   {Name: "llama2-70b", Layers: 80, Hidden: 8192, FFN: 28672, Gated: true, Heads: 64, KVHeads: 8, Vocab: 32000},
	"mixtral-8x7b": {Name: "mixtral-8x7b", Layers: 32, Hidden: 4096, FFN: 14336, Gated: true, Heads: 32, KVHeads: 8, Vocab: 32000, Experts: 8, TopK: 2},
}

// PresetNames lists the presets in order.
func PresetNames() []string {
	var out []string
	for k := range Presets {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Validate checks the shape.
func (m Transformer) Validate() error {
	var bad []string
	if m.Layers < 1 {
		bad = append(bad, "layers")
	}
	if m.Hidden < 1 {
		bad = append(bad, "hidden")
	}
	if m.FFN < 1 {
		bad = append(bad, "ffn")
	}
	if m.Vocab < 0 || m.Heads < 0 || m.KVHeads < 0 || m.Experts < 0 || m.TopK < 0 {
		bad = append(bad, "vocab, heads, experts and top-k cannot be negative")
	}
	if len(bad) > 0 {
		return fmt.Errorf("model %s: %s must be positive", m.Name, strings.Join(bad, ", "))
	}
	if m.Heads > 0 && m.Hidden%m.Heads != 0 {
		return fmt.Errorf("model %s: hidden %d is not a multiple of the %d heads", m.Name, m.Hidden, m.Heads)
	}
	if m.Experts > 1 && (m.TopK < 1 || m.TopK > m.Experts) {
		return fmt.Errorf("model %s: top-k %d must be between 1 and the %d experts", m.Name, m.TopK, m.Experts)
	}
	return nil
}

// experts is the number of feed-forward copies per layer.
func (m Transformer) experts() int { return max(m.Experts, 1) }

// AttentionParams per layer: query and output projections h², key and
// value h²·kv/heads each.
func (m Transformer) AttentionParams() float64 {
	h := float64(m.Hidden)
	kv := 1.0
	if m.Heads > 0 && m.KVHeads > 0 {
		kv = float64(m.KVHeads) / float64(m.Heads)
	}
	return 2*h*h + 2*h*h*kv
}

// ExpertParams per layer and per expert: two or three h×ffn matrices.
func (m Transformer) ExpertParams() float64 {
	mats := 2.0
	if m.Gated {
		mats = 3
	}
	return mats * float64(m.Hidden) * float64(m.FFN)
}

// EmbeddingParams: the token embedding, and the output head unless tied.
func (m Transformer) EmbeddingParams() float64 {
	e := float64(m.Vocab) * float64(m.Hidden)
	if !m.Tied {
		e *= 2
	}
	return e
}

// Params is the total parameter count.
func (m Transformer) Params() float64 {
	return float64(m.Layers)*(m.AttentionParams()+float64(m.experts())*m.ExpertParams()) + m.EmbeddingParams()
}

// ActiveParams are the parameters one token goes through: with experts,
// only TopK of them.
func (m Transformer) ActiveParams() float64 {
	k := 1
	if m.Experts > 1 {
		k = m.TopK
	}
	return float64(m.Layers)*(m.AttentionParams()+float64(k)*m.ExpertParams()) + m.EmbeddingParams()
}

// StepFLOPs is the training work of one step on tokens tokens of length
// seq: 6 per active parameter per token (forward and backward) plus the
// attention score and value products, 12·layers·hidden·seq per token.
func (m Transformer) StepFLOPs(tokens, seq float64) float64 {
	return 6*m.ActiveParams()*tokens + 12*float64(m.Layers)*float64(m.Hidden)*seq*tokens
}
