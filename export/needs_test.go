package export

import (
	"slices"
	"testing"
)

// The curves each target reads, on 2 nodes of 4 ranks: what a budget
// measures first.
func TestNeeds(t *testing.T) {
	has := func(ns []Need, op string, n int, layout string) bool {
		return slices.Contains(ns, Need{op, n, layout})
	}
	tests := []struct {
		target   string
		want     []Need
		wantNone []Need
	}{
		{"galvatron", []Need{{"allreduce", 8, "consecutive"}, {"allreduce", 4, "strided"}, {"allreduce", 2, "consecutive"},
			{"alltoall", 4, "consecutive"}, {"pipeline", 2, "strided"}, {"sendrecv", 8, "consecutive"}}, []Need{{"allgather", 4, "consecutive"}}},
		{"calculon", []Need{{"allreduce", 4, "consecutive"}, {"allgather", 4, "consecutive"}, {"reducescatter", 2, "strided"}, {"sendrecv", 2, "strided"}},
			[]Need{{"alltoall", 4, "consecutive"}, {"allreduce", 8, "consecutive"}}},
		{"astra-sim", []Need{{"allreduce", 4, "consecutive"}, {"allreduce", 2, "strided"}}, []Need{{"allgather", 4, "consecutive"}}},
		{"simai", []Need{{"allreduce", 4, "consecutive"}, {"allreduce", 2, "strided"}, {"alltoall", 4, "consecutive"}, {"allreduce", 8, "consecutive"}}, nil},
	}
	for _, tc := range tests {
		got := Needs([]string{tc.target}, 8, 4)
		for _, n := range tc.want {
			if !has(got, n.Op, n.Size, n.Layout) {
				t.Errorf("%s: %v lacks %+v", tc.target, got, n)
			}
		}
		for _, n := range tc.wantNone {
			if has(got, n.Op, n.Size, n.Layout) {
				t.Errorf("%s: %v has %+v, which it does not read", tc.target, got, n)
			}
		}
	}
	if got := Needs(nil, 8, 4); len(got) != 0 {
		t.Errorf("no target needs %v", got)
	}
}
