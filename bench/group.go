package bench

import "fmt"

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
}

// Validate checks the grouping against a job of world ranks.
func (g Grouping) Validate(world int) error {
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
	if g.Size == 0 {
		return world
	}
	return g.Size
}

// Groups is the number of groups that run.
func (g Grouping) Groups(world int) int {
	if g.Isolated {
		return 1
	}
	return world / g.Of(world)
}

// Place returns the group of global rank rank and its rank inside it;
// active is false for ranks that sit out an isolated run.
func (g Grouping) Place(world, rank int) (group, groupRank int, active bool) {
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
	size := g.Of(world)
	if g.Strided {
		return groupRank*(world/size) + group
	}
	return group*size + groupRank
}

// Layout names the layout for output: "consecutive" or "strided".
func (g Grouping) Layout() string {
	if g.Strided {
		return "strided"
	}
	return "consecutive"
}
