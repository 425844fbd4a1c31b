package report

import (
	"bytes"
	"testing"

	"github.com/collbench/collbench/compare"
	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/internal/golden"
	"github.com/collbench/collbench/judge"
)

// Two 8×H100 all-reduce runs judged on one system: the new one falls
// below the published figure at 16 GiB where the base met it.
func TestStandingsGolden(t *testing.T) {
	j := h100Judger()
	run := func(bws ...float64) *document.Run {
		r := &document.Run{Collective: "allreduce"}
		var rows []judge.Row
		for i, bw := range bws {
			size := int64(1<<20) << (7 * i) // 1 MiB, 128 MiB, 16 GiB
			r.Results = append(r.Results, document.Result{Size: size, Type: "float", RedOp: "sum", Root: -1,
				OutOfPlace: document.Measure{Time: 1, BusBW: bw}})
			rows = append(rows, judge.Row{Size: size, BusBW: bw, Time: 1})
		}
		jd := j.Judge(rows)
		r.Judgement = &jd
		return r
	}
	base, next := run(73, 340, 372), run(70, 336, 250)
	var b bytes.Buffer
	if fell := Standings(&b, base, next, compare.Standings(base, next)); fell != 1 {
		t.Errorf("fell at %d sizes, want 1", fell)
	}
	golden.Check(t, "standings.golden", b.Bytes())
	b.Reset()
	plain := &document.Run{Collective: "allreduce", Results: base.Results}
	if Standings(&b, plain, plain, compare.Standings(plain, plain)); b.Len() != 0 {
		t.Errorf("runs without a judgement printed %q", b.String())
	}
}
