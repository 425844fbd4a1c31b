package document

import (
	"bytes"
	"strings"
	"testing"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/numeric"
)

// Galvatron's coefficient is what a GEMM and an all-reduce do to each
// other (its profile_overlap.py overlaps the two); a memory copy's
// slowdown stays in the results but not in the coefficient. On the H100 a
// 1 GiB copy slowed the all-reduce 5.03× against the GEMM's 2.2×.
func TestGalvatronFromGEMMsOnly(t *testing.T) {
	gemm := bench.Workload{Kind: bench.GEMM, M: 4096, N: 4096, K: 4096, Type: numeric.Bfloat16}
	cp := bench.Workload{Kind: bench.Copy, Bytes: 1 << 30}
	var d OverlapRun
	d.Add(MakeOverlapResult(64<<20, gemm, bench.OverlapFigures{OverlapCoe: 2.2}))
	d.Add(MakeOverlapResult(64<<20, cp, bench.OverlapFigures{OverlapCoe: 5.03}))
	d.Add(MakeOverlapResult(1<<30, gemm, bench.OverlapFigures{OverlapCoe: 1.9}))
	if d.Galvatron != 2.2 || len(d.Results) != 3 {
		t.Errorf("coefficient %v over %d results, want 2.2 from the GEMMs with the copy kept", d.Galvatron, len(d.Results))
	}
	var b bytes.Buffer
	if err := d.EncodeGalvatron(&b); err != nil || !strings.Contains(b.String(), `"overlap_coe": 2.2`) {
		t.Errorf("galvatron file %q (%v)", b.String(), err)
	}

	var copies OverlapRun
	copies.Add(MakeOverlapResult(64<<20, cp, bench.OverlapFigures{OverlapCoe: 5.03}))
	if err := copies.EncodeGalvatron(&b); err == nil || !strings.Contains(err.Error(), "GEMM") {
		t.Errorf("copies only: %v, want a refusal naming the GEMM", err)
	}
}
