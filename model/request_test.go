package model

import (
	"strings"
	"testing"
)

// Shape settings override a preset only where they were given, and the
// dtype names an element size.
func TestRequestModel(t *testing.T) {
	given := map[string]bool{"layers": true}
	r := Request{Preset: "gpt2-1.5b", Shape: Transformer{Layers: 3, Hidden: 7}, Given: func(n string) bool { return given[n] }, DType: "half"}
	m, err := r.Model()
	if err != nil {
		t.Fatal(err)
	}
	if m.Layers != 3 || m.Hidden != Presets[r.Preset].Hidden {
		t.Errorf("got %d layers, hidden %d: want the given layers and the preset's hidden size", m.Layers, m.Hidden)
	}
	if b, err := r.Bytes(); b != 2 || err != nil {
		t.Errorf("half is %d bytes (%v)", b, err)
	}
	for _, bad := range []Request{{Preset: "nope", Given: r.Given}, {Given: r.Given}, {Preset: r.Preset, Given: r.Given, DType: "int4"}} {
		_, merr := bad.Model()
		_, berr := bad.Bytes()
		if merr == nil && berr == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// With no split that works, RankAll fails and names the same reason
// every time (the first split in order), not one a map happens to yield.
func TestRankAllNamesTheFirstReason(t *testing.T) {
	huge := Transformer{Name: "huge", Layers: 3, Hidden: 64, FFN: 256, Heads: 3}
	tr := Training{Seq: 8, MicroBatch: 1, GlobalBatch: 8, Bytes: 2}
	var first string
	for i := 0; i < 20; i++ {
		_, err := RankAll(8, huge, tr, Strategy{}, Machine{Net: &flatNet{}, FLOPS: 1e12})
		if err == nil {
			t.Skip("a split works for this model")
		}
		if first == "" {
			first = err.Error()
		}
		if err.Error() != first || !strings.Contains(err.Error(), "no split of 8 ranks works") {
			t.Fatalf("run %d: %v; first: %s", i, err, first)
		}
	}
}
