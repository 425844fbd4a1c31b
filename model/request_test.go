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

// Check refuses each bad setting alone; Split applies FSDP; Predict and
// Rank are the package's Predict and RankAll on what the request resolves.
func TestRequestPredicts(t *testing.T) {
	all := func(string) bool { return true }
	good := Request{Preset: "gpt2-1.5b", Given: func(string) bool { return false }, Seq: 128, Micro: 1, DType: "bfloat16",
		Strategy: Strategy{TP: 1, PP: 2, EP: 1, ZeRO: 1}}
	for _, c := range []struct {
		name string
		edit func(*Request)
		ok   bool
	}{
		{"good", func(*Request) {}, true},
		{"negative tflops", func(r *Request) { r.TFLOPS = -1 }, false},
		{"unknown preset", func(r *Request) { r.Preset = "nope" }, false},
		{"unknown dtype", func(r *Request) { r.DType = "int4" }, false},
		{"no shape", func(r *Request) { r.Preset = "" }, false},
		{"inconsistent shape", func(r *Request) { r.Given, r.Shape.Heads = all, 7 }, false},
	} {
		r := good
		c.edit(&r)
		if err := r.Check(); (err == nil) != c.ok {
			t.Errorf("%s: Check() = %v", c.name, err)
		}
	}
	fsdp := good
	fsdp.FSDP = true
	if z := fsdp.Split().ZeRO; z != 3 {
		t.Errorf("FSDP split has ZeRO-%d", z)
	}
	if z := good.Split().ZeRO; z != 1 {
		t.Errorf("the split lost its ZeRO-1: %d", z)
	}
	mc := Machine{Net: &flatNet{}, FLOPS: 1e12}
	m, _ := good.Model()
	tr, _ := good.Training(8)
	s, err := good.Strategy.ForWorld(8)
	if err != nil {
		t.Fatal(err)
	}
	want, werr := Predict(m, tr, s, mc)
	got, gerr := good.Predict(8, mc)
	if werr != nil || gerr != nil || got.CommTime != want.CommTime || got.Strategy != want.Strategy {
		t.Errorf("Predict: got %+v (%v), want %+v (%v)", got.Strategy, gerr, want.Strategy, werr)
	}
	wantR, werr := RankAll(8, m, tr, good.Strategy, mc)
	gotR, gerr := good.Rank(8, mc)
	if (werr == nil) != (gerr == nil) || len(gotR.Ranked) != len(wantR.Ranked) || len(gotR.Skipped) != len(wantR.Skipped) {
		t.Errorf("Rank: %d ranked, %d skipped (%v); want %d, %d (%v)", len(gotR.Ranked), len(gotR.Skipped), gerr, len(wantR.Ranked), len(wantR.Skipped), werr)
	}
	if _, err := good.Predict(7, mc); err == nil {
		t.Error("pp 2 on 7 ranks predicted")
	}
}
