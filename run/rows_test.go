package run

import (
	"testing"

	"github.com/collbench/collbench/document"
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
			k.add(document.Result{Size: int64(i)})
		}
		var got []int64
		for _, r := range k.results {
			got = append(got, r.Size)
		}
		if k.n != tt.add || len(got) != len(tt.wantSizes) {
			t.Fatalf("%+v: kept %v, seen %d", tt, got, k.n)
		}
		for i := range got {
			if got[i] != tt.wantSizes[i] {
				t.Errorf("%+v: kept %v, want %v", tt, got, tt.wantSizes)
				break
			}
		}
	}
}
