package run

import (
	"slices"
	"testing"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/document"
)

// However a budget ordered the measuring, the profile lists its curves in
// the suite's order: grouping by grouping, collective by collective.
func TestSuiteOrder(t *testing.T) {
	ar, _ := bench.LookupCollective("allreduce")
	ag, _ := bench.LookupCollective("allgather")
	s := bench.Suite{World: 4, Colls: []*bench.Collective{ag, ar}, Groupings: []bench.Grouping{{}, {Size: 2}, {Size: 2, Strided: true}}}
	curve := func(op string, n int, layout string) document.ProfileCurve {
		return document.ProfileCurve{Op: op, Group: document.CurveGroup{Size: n, Layout: layout}}
	}
	curves := []document.ProfileCurve{curve("allreduce", 2, "strided"), curve("allreduce", 4, "consecutive"), curve("allgather", 2, "strided"),
		curve("allgather", 2, "consecutive"), curve("allgather", 4, "consecutive"), curve("allreduce", 2, "consecutive")}
	suiteOrder(curves, s)
	var got []string
	for _, c := range curves {
		got = append(got, c.Key())
	}
	want := []string{"allgather over 4 ranks (consecutive)", "allreduce over 4 ranks (consecutive)", "allgather over 2 ranks (consecutive)",
		"allreduce over 2 ranks (consecutive)", "allgather over 2 ranks (strided)", "allreduce over 2 ranks (strided)"}
	if !slices.Equal(got, want) {
		t.Errorf("order %v\nwant %v", got, want)
	}
}
