package document

import (
	"bytes"
	"strings"
	"testing"

	"github.com/collbench/collbench/internal/schemacheck"
)

// sampleHealth is a record of two nodes of two ranks with one finding.
func sampleHealth() *Health {
	z := 6.5
	return &Health{Stamp: Stamp{Collbench: "test", Backend: "nccl", StartTime: "2026-11-24T10:00:00Z", EndTime: "2026-11-24T10:00:05Z",
		Args: []string{"collbench", "health"}}, NCCLVersion: "2.30.7",
		Config: HealthConfig{NRanks: 4, NProcs: 4, PairBytes: 1 << 20, ARBytes: 1 << 20, Type: "float", Warmup: 2, Iters: 10, Passes: 2, MinDrop: 0.1, Z: 3.5},
		Nodes:  []HealthNode{{Name: "a", Addr: "10.0.0.1", Ranks: []int{0, 1}}, {Name: "b", Addr: "10.0.0.2", Ranks: []int{2, 3}}},
		Intra: []PairFigure{{Node: 0, A: 0, B: 1, BusBW: 2, Passes: []float64{1.9, 2}},
			{Node: 1, A: 2, B: 3, BusBW: 1, Passes: []float64{1, 0.9}}},
		NodeAR:   []NodeFigure{{Node: 0, BusBW: 1.5, Passes: []float64{1.5}}, {Node: 1, BusBW: 1.4, Passes: []float64{1.4}}},
		Inter:    []PairFigure{{Node: -1, A: 0, B: 1, BusBW: 0.5, Passes: []float64{0.5, 0.4}}},
		Job:      &BlockFigure{Nodes: []int{0, 1}, BusBW: 0.3, Passes: []float64{0.3}},
		Setup:    []PhaseSetup{{Phase: "GPU pairs", Waves: 2, TotalS: 0.08, MaxS: 0.041, Closes: 1, CloseTotalS: 0.9, CloseMaxS: 0.49}},
		Findings: []Finding{{Kind: "gpu-link", Where: "b rank 2 ↔ b rank 3", Nodes: []int{1}, Ranks: []int{2, 3}, BusBW: 1, Reference: 2, Against: "peers", Drop: 0.5, Z: &z}},
	}
}

// A record encodes to the documented schema and decodes back; bad ones
// are refused with a sentence.
func TestHealthRecord(t *testing.T) {
	var b bytes.Buffer
	if err := sampleHealth().Encode(&b); err != nil {
		t.Fatal(err)
	}
	if err := schemacheck.Validate("../docs/health.schema.json", b.Bytes()); err != nil {
		t.Fatalf("the record does not follow docs/health.schema.json: %v", err)
	}
	d, err := DecodeDocument(bytes.NewReader(b.Bytes()))
	if err != nil || d.Health == nil || d.Health.Findings[0].Kind != "gpu-link" || *d.Health.Findings[0].Z != 6.5 {
		t.Fatalf("decoded %+v, %v", d.Health, err)
	}
	good := b.String()
	for _, c := range []struct{ edit, want string }{
		{strings.Replace(good, `"a": 0,`, `"a": 0, "extra": 1,`, 1), "unknown field"},
		{strings.Replace(good, `"version": 2`, `"version": 9`, 1), "version 9 is not supported"},
		{strings.Replace(good, `"b": 1,`, `"b": 7,`, 1), "names a node or ranks beyond"},
		{strings.Replace(good, `"node": -1,
      "a": 0,
      "b": 1,`, `"node": -1,
      "a": 0,
      "b": 5,`, 1), "names a node beyond"},
		{good[:len(good)/2], "ends early"},
	} {
		if _, err := DecodeHealth(strings.NewReader(c.edit)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want an error with %q, got %v", c.want, err)
		}
	}
	// A version 1 record, before the teardown was recorded, still loads.
	v1 := strings.Replace(good, `"version": 2`, `"version": 1`, 1)
	v1 = strings.Replace(v1, `,
      "closes": 1,
      "close_total_s": 0.9,
      "close_max_s": 0.49`, "", 1)
	v1 = strings.Replace(v1, "\n  \"nccl_version\": \"2.30.7\",", "", 1)
	if h, err := DecodeHealth(strings.NewReader(v1)); err != nil || h.Setup[0].CloseMaxS != 0 || h.Setup[0].MaxS != 0.041 {
		t.Errorf("a version 1 record: %+v, %v", h, err)
	}
	if strings.Contains(v1, "close_") || strings.Contains(v1, "nccl_version") {
		t.Fatalf("the version 1 record kept its teardown:\n%s", v1)
	}
}
