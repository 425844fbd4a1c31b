package bench

import (
	"fmt"
	"testing"
)

func TestGroupingPlace(t *testing.T) {
	cases := []struct {
		g     Grouping
		world int
		want  [][]int // members of each group in group-rank order
	}{
		{Grouping{}, 4, [][]int{{0, 1, 2, 3}}},
		{Grouping{Size: 2}, 8, [][]int{{0, 1}, {2, 3}, {4, 5}, {6, 7}}},
		{Grouping{Size: 2, Strided: true}, 8, [][]int{{0, 4}, {1, 5}, {2, 6}, {3, 7}}},
		{Grouping{Size: 4, Strided: true}, 8, [][]int{{0, 2, 4, 6}, {1, 3, 5, 7}}},
		{Grouping{Size: 1}, 3, [][]int{{0}, {1}, {2}}},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%+v/%d", c.g, c.world), func(t *testing.T) {
			if n := c.g.Groups(c.world); n != len(c.want) {
				t.Fatalf("Groups = %d, want %d", n, len(c.want))
			}
			for grp, members := range c.want {
				for gr, rank := range members {
					g, r, active := c.g.Place(c.world, rank)
					if g != grp || r != gr || !active {
						t.Errorf("Place(%d) = %d,%d,%v; want %d,%d,true", rank, g, r, active, grp, gr)
					}
					if m := c.g.Member(c.world, grp, gr); m != rank {
						t.Errorf("Member(%d,%d) = %d, want %d", grp, gr, m, rank)
					}
				}
			}
		})
	}
}

func TestGroupingIsolated(t *testing.T) {
	g := Grouping{Size: 2, Strided: true, Isolated: true}
	var active []int
	for r := 0; r < 8; r++ {
		if _, _, ok := g.Place(8, r); ok {
			active = append(active, r)
		}
	}
	if fmt.Sprint(active) != "[0 4]" || g.Groups(8) != 1 {
		t.Errorf("active ranks %v, groups %d; want [0 4], 1", active, g.Groups(8))
	}
}

func TestGroupingValidate(t *testing.T) {
	for _, c := range []struct {
		g     Grouping
		world int
		ok    bool
	}{
		{Grouping{}, 5, true}, {Grouping{Size: 2}, 4, true}, {Grouping{Size: 3}, 4, false},
		{Grouping{Size: 8}, 4, false}, {Grouping{Size: -1}, 4, false},
	} {
		if err := c.g.Validate(c.world); (err == nil) != c.ok {
			t.Errorf("%+v on %d: err %v", c.g, c.world, err)
		}
	}
}

// Listed groups (collbench health's pairs) place their members, leave the
// other ranks out, and refuse lists a communicator split cannot make.
func TestGroupingSets(t *testing.T) {
	g := Grouping{Sets: [][]int{{1, 4}, {2, 3}}}
	if err := g.Validate(6); err != nil {
		t.Fatal(err)
	}
	if g.Of(6) != 2 || g.Groups(6) != 2 || g.Layout() != "listed" {
		t.Errorf("Of %d, Groups %d, Layout %s; want 2, 2, listed", g.Of(6), g.Groups(6), g.Layout())
	}
	want := map[int][3]int{1: {0, 0, 1}, 4: {0, 1, 1}, 2: {1, 0, 1}, 3: {1, 1, 1}, 0: {0, 0, 0}, 5: {0, 0, 0}}
	for rank, w := range want {
		grp, gr, active := g.Place(6, rank)
		if grp != w[0] || gr != w[1] || active != (w[2] == 1) {
			t.Errorf("Place(%d) = %d,%d,%v; want %v", rank, grp, gr, active, w)
		}
		if active && g.Member(6, grp, gr) != rank {
			t.Errorf("Member(%d,%d) = %d, want %d", grp, gr, g.Member(6, grp, gr), rank)
		}
	}
	for _, bad := range [][][]int{{{0, 1}, {2}}, {{0, 6}}, {{1, 0}}, {{0, 1}, {1, 2}}, {{}}, {{-1, 2}}} {
		if err := (Grouping{Sets: bad}).Validate(6); err == nil {
			t.Errorf("Validate(%v) accepted it", bad)
		}
	}
}

func TestRankRanges(t *testing.T) {
	for _, c := range []struct {
		in   []int
		sep  string
		want string
	}{{[]int{0, 1, 2, 3, 8}, ",", "0-3,8"}, {[]int{5}, ", ", "5"}, {[]int{1, 3, 4}, ", ", "1, 3-4"}, {nil, ",", ""}} {
		if got := RankRanges(c.in, c.sep); got != c.want {
			t.Errorf("RankRanges(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}

// JobWide is true only for one communicator of every rank: what a backend
// need not split.
func TestGroupingJobWide(t *testing.T) {
	for _, c := range []struct {
		g    Grouping
		want bool
	}{
		{Grouping{}, true},
		{Grouping{Size: 8}, true},
		{Grouping{Size: 8, Strided: true}, true},
		{Grouping{Size: 4}, false},
		{Grouping{Isolated: true}, false},
		{Grouping{Size: 4, Isolated: true}, false},
		{Grouping{Sets: [][]int{{0, 1, 2, 3, 4, 5, 6, 7}}}, false},
		{Grouping{Sets: [][]int{{0, 1}, {2, 3}}}, false},
	} {
		if got := c.g.JobWide(8); got != c.want {
			t.Errorf("%+v.JobWide(8) = %v, want %v", c.g, got, c.want)
		}
	}
}
