package model

import (
	"reflect"
	"testing"
)

// Each dimension's groups partition the world, with the strides predict
// times them at.
func TestGroups(t *testing.T) {
	s := Strategy{DP: 4, TP: 2, PP: 2, EP: 2}
	for _, c := range []struct {
		dim  string
		want [][]int
	}{
		{"TP", [][]int{{0, 1}, {2, 3}, {4, 5}, {6, 7}, {8, 9}, {10, 11}, {12, 13}, {14, 15}}},
		{"DP", [][]int{{0, 2, 4, 6}, {1, 3, 5, 7}, {8, 10, 12, 14}, {9, 11, 13, 15}}},
		{"PP", [][]int{{0, 8}, {1, 9}, {2, 10}, {3, 11}, {4, 12}, {5, 13}, {6, 14}, {7, 15}}},
		{"EP", [][]int{{0, 2}, {1, 3}, {4, 6}, {5, 7}, {8, 10}, {9, 11}, {12, 14}, {13, 15}}},
		{"EDP", [][]int{{0, 4}, {1, 5}, {2, 6}, {3, 7}, {8, 12}, {9, 13}, {10, 14}, {11, 15}}},
	} {
		got, err := s.Groups(c.dim)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %v\nwant %v", c.dim, got, c.want)
		}
	}
	if _, err := s.Groups("CP"); err == nil {
		t.Error("an unknown dimension has groups")
	}
	if _, err := (Strategy{DP: 3, TP: 1, PP: 1, EP: 2}).Groups("EP"); err == nil {
		t.Error("ep that does not divide dp has groups")
	}
}
