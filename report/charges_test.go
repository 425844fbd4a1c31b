package report

import (
	"bytes"
	"testing"

	"github.com/collbench/collbench/charge"
	"github.com/collbench/collbench/internal/golden"
)

// The charge table: each planner's ratio per call, * beyond 2 %, - where
// it cannot time a call (the reasons listed once), and the step's row.
func TestChargeTable(t *testing.T) {
	call := func(dim, coll string, n int, layout string, bytes, perStep float64) charge.Call {
		return charge.Call{Dim: dim, Coll: coll, Group: n, Layout: layout, Bytes: bytes, PerStep: perStep}
	}
	rows := []charge.Row{
		{Call: call("TP", "allgather", 2, "consecutive", 16<<20, 128), Us: 9079.316, Charges: []charge.Charged{
			{Planner: "aiconfigurator", Us: 9079.316, Ratio: 1}, {Planner: "galvatron", Us: 53064.95, Ratio: 5.8446, Off: true}}},
		{Call: call("TP", "reducescatter", 2, "consecutive", 16<<20, 128), Us: 97050.587, Charges: []charge.Charged{
			{Planner: "aiconfigurator", Us: 97050.587, Ratio: 1}, {Planner: "galvatron", Us: 53064.95, Ratio: 0.5468, Off: true}}},
		{Call: call("PP", "sendrecv", 2, "strided", 8<<20, 16), Us: 4957.812, Charges: []charge.Charged{
			{Planner: "aiconfigurator", Cannot: "AIConfigurator's NCCL table has no sendrecv"}, {Planner: "galvatron", Us: 5053.2, Ratio: 1.0192}}},
	}
	var b bytes.Buffer
	ChargeTable(&b, rows)
	golden.Check(t, "charges.txt", b.Bytes())
	b.Reset()
	ChargeTable(&b, nil)
	if b.Len() != 0 {
		t.Errorf("no rows printed %q", b.String())
	}
}
