package run

import (
	"testing"

	"github.com/collbench/collbench/bench"
)

func TestRowKeeper(t *testing.T) {
	tests := []struct {
		cycles, perCycle, add int
		wantSizes             []int64
	}{
		{1, 3, 3, []int64{0, 1, 2}},
		{2, 3, 6, []int64{0, 1, 2, 3, 4, 5}},
		{0, 3, 2, []int64{0, 1}},
		{0, 3, 10, []int64{9, 7, 8}}, // each slot the latest row of its place in the cycle
	}
	for _, tt := range tests {
		k := newRowKeeper(tt.cycles, tt.perCycle)
		for i := 0; i < tt.add; i++ {
			k.add(bench.Row{Size: int64(i)})
		}
		var got []int64
		for i, r := range k.rows {
			if k.results[i].Size != r.Size {
				t.Errorf("row %d and result %d disagree", r.Size, k.results[i].Size)
			}
			got = append(got, r.Size)
		}
		if k.seen() != tt.add || len(got) != len(tt.wantSizes) {
			t.Fatalf("%+v: kept %v, seen %d", tt, got, k.seen())
		}
		for i := range got {
			if got[i] != tt.wantSizes[i] {
				t.Errorf("%+v: kept %v, want %v", tt, got, tt.wantSizes)
				break
			}
		}
	}
}
