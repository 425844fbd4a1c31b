package report

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/numeric"
	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/internal/golden"
)

func sampleOverlap() *document.OverlapRun {
	d := &document.OverlapRun{Stamp: document.Stamp{Schema: document.OverlapSchemaName, Version: document.OverlapSchemaVersion, Collbench: "1.2.3", Backend: "nccl"},
		Config: document.OverlapConfig{Collective: "allreduce", Type: "float", RedOp: "sum", NRanks: 8, NProcs: 8, GroupSize: 8,
			Layout: "consecutive", Cover: 4, TargetUs: 1e6, Knobs: map[string]string{"comm_priority": "normal", "NCCL_MAX_NCHANNELS": "8"}}}
	gemm := bench.Workload{Kind: bench.GEMM, M: 4096, N: 4096, K: 4096, Type: numeric.Bfloat16}
	d.Add(document.MakeOverlapResult(1<<20, gemm, bench.DeriveOverlap(20, 26, 1500, 1590, 3000, 2900)))
	d.Add(document.MakeOverlapResult(1<<30, bench.Workload{Kind: bench.Copy, Bytes: 1 << 30},
		bench.DeriveOverlap(4000, 5200, 2500, 3500, 9000, 7000)))
	return d
}

func TestOverlapTableGolden(t *testing.T) {
	d := sampleOverlap()
	var b bytes.Buffer
	OverlapHeader(&b, d, []string{"NCCL 2.30.5 (/x/libnccl.so.2)"})
	for _, r := range d.Results {
		OverlapRow(&b, r)
	}
	OverlapFooter(&b, d)
	golden.Check(t, "overlap.golden", b.Bytes())
}

// The JSON carries every figure, and Galvatron's file has its one key
// with the largest overlap_coe.
func TestOverlapJSON(t *testing.T) {
	d := sampleOverlap()
	var b bytes.Buffer
	if err := d.Encode(&b); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "overlap.json.golden", b.Bytes())
	b.Reset()
	if err := d.EncodeGalvatron(&b); err != nil {
		t.Fatal(err)
	}
	var g map[string]float64
	if err := json.Unmarshal(b.Bytes(), &g); err != nil || len(g) != 1 || g["overlap_coe"] != 1.3 { // the GEMM's; the copy's 1.4 is left out
		t.Errorf("galvatron file %s: %v", b.String(), err)
	}
}
