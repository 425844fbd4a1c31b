package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/internal/golden"
)

// Rows that carry NCCL's estimate add a block under the footer's average,
// as testdata/estimate.golden holds it; the JSON carries each estimate
// out of place only. Without estimates the table is nccl-tests' (the
// other golden files).
func TestEstimateBlock(t *testing.T) {
	info, rows, sum := sampleRun()
	rows[0].OutOfPlace.Estimate = 9.87
	rows[1].OutOfPlace.Estimate = 1500
	var buf bytes.Buffer
	tb := &Table{W: &buf, Info: info}
	tb.Preamble()
	for _, r := range rows {
		tb.Row(r)
	}
	tb.Footer(sum)
	golden.Check(t, "estimate.golden", buf.Bytes())

	res := document.MakeResult(rows[1])
	js, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if res.OutOfPlace.NCCLEstimate == nil || *res.OutOfPlace.NCCLEstimate != 1500 || res.InPlace.NCCLEstimate != nil ||
		strings.Count(string(js), `"nccl_estimate_us"`) != 1 {
		t.Errorf("JSON row: %s", js)
	}
	if js, _ := json.Marshal(document.MakeResult(rows[2])); strings.Contains(string(js), "nccl_estimate_us") {
		t.Errorf("a row without an estimate carries the key: %s", js)
	}
}
