package bench

import (
	"fmt"
	"strings"
)

// Grouping splits the job's ranks into equal communicators, as planners
// place tensor-, pipeline- or data-parallel groups: consecutive groups hold
// adjacent ranks (Galvatron's consec=1), strided groups hold ranks that lie
// world/size apart (consec=0).
type Grouping struct {
	Size    int  // ranks per group; 0 means one group of the whole job
	Strided bool // ranks world/Size apart instead of adjacent
	// Isolated runs only group 0; the other ranks sit the measurement out,
	// so the group has the network to itself.
	Isolated bool
	// Sets, when given, are the groups themselves: equal-sized lists of
	// global ranks in ascending order, no rank in two. Ranks in no set sit
	// the measurement out. collbench health measures pairs this way, a
	// round of disjoint pairs at a time. Size and Strided are then unused.
	Sets [][]int
}

// Validate checks the grouping against a job of world ranks.
func (g Grouping) Validate(world int) error {
	if len(g.Sets) > 0 {
		return g.validateSets(world)
	}
	switch {
	case g.Size < 0:
		return fmt.Errorf("group size cannot be negative (got %d)", g.Size)
	case g.Size > world:
		return fmt.Errorf("group size %d is larger than the job's %d ranks", g.Size, world)
	case g.Size > 0 && world%g.Size != 0:
		return fmt.Errorf("group size %d does not divide the job's %d ranks", g.Size, world)
	}
	return nil
}

// Of returns the group size for a job of world ranks.
func (g Grouping) Of(world int) int {
	if len(g.Sets) > 0 {
		return len(g.Sets[0])
	}
	if g.Size == 0 {
		return world
	}
	return g.Size
}

// JobWide says whether the grouping is one communicator of every rank of
// a job of world ranks: nothing to split.
func (g Grouping) JobWide(world int) bool {
	return len(g.Sets) == 0 && !g.Isolated && g.Of(world) == world
}

// Groups is the number of groups that run.
func (g Grouping) Groups(world int) int {
	switch {
	case len(g.Sets) > 0:
		return len(g.Sets)
	case g.Isolated:
		return 1
	}
	return world / g.Of(world)
}

// Place returns the group of global rank rank and its rank inside it;
// active is false for ranks that sit out an isolated run.
func (g Grouping) Place(world, rank int) (group, groupRank int, active bool) {
	if len(g.Sets) > 0 {
		for i, set := range g.Sets {
			for j, r := range set {
				if r == rank {
					return i, j, true
				}
			}
		}
		return 0, 0, false
	}
	size := g.Of(world)
	if g.Strided {
		stride := world / size
		group, groupRank = rank%stride, rank/stride
	} else {
		group, groupRank = rank/size, rank%size
	}
	return group, groupRank, !g.Isolated || group == 0
}

// Member returns the global rank at groupRank in group.
func (g Grouping) Member(world, group, groupRank int) int {
	if len(g.Sets) > 0 {
		return g.Sets[group][groupRank]
	}
	size := g.Of(world)
	if g.Strided {
		return groupRank*(world/size) + group
	}
	return group*size + groupRank
}

// Layout names the layout for output: "consecutive" or "strided".
func (g Grouping) Layout() string {
	if len(g.Sets) > 0 {
		return "listed"
	}
	if g.Strided {
		return "strided"
	}
	return "consecutive"
}

// validateSets checks listed groups: equal sizes, ranks inside the job,
// ascending within a set (so group ranks follow global ranks, as NCCL's
// split orders them) and none in two sets.
func (g Grouping) validateSets(world int) error {
	seen := make(map[int]bool)
	for i, set := range g.Sets {
		if len(set) == 0 || len(set) != len(g.Sets[0]) {
			return fmt.Errorf("listed group %d has %d ranks; every group must have %d", i, len(set), len(g.Sets[0]))
		}
		for j, r := range set {
			switch {
			case r < 0 || r >= world:
				return fmt.Errorf("listed group %d names rank %d, outside the job's %d ranks", i, r, world)
			case j > 0 && r <= set[j-1]:
				return fmt.Errorf("listed group %d is not in ascending rank order (%v)", i, set)
			case seen[r]:
				return fmt.Errorf("rank %d is in two listed groups", r)
			}
			seen[r] = true
		}
	}
	return nil
}

// RankNames names ranks for a message, runs folded into ranges:
// "rank 3", "ranks 1, 4" or "ranks 1-15, 17".
func RankNames(ranks []int) string {
	if len(ranks) == 1 {
		return fmt.Sprintf("rank %d", ranks[0])
	}
	return "ranks " + RankRanges(ranks, ", ")
}

// RankRanges writes ranks with runs folded into ranges, joined by sep:
// "0-3,8" with ",". The ranks are taken in the order given.
func RankRanges(ranks []int, sep string) string {
	var parts []string
	for i := 0; i < len(ranks); {
		j := i
		for j+1 < len(ranks) && ranks[j+1] == ranks[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", ranks[i], ranks[j]))
		} else {
			parts = append(parts, fmt.Sprint(ranks[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, sep)
}
