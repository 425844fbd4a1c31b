package export

// Need is a curve an export reads: a collective at a group size and
// layout. A group of the whole job is found under either layout.
type Need struct {
	Op     string
	Size   int
	Layout string
}

// Needs lists the curves the targets read from a profile of world ranks
// with perNode ranks on each node, so that a profile under a time budget
// can measure them first. SimAI's busbw.yaml, which writes null for a
// group it lacks, asks for its default groups only.
func Needs(targets []string, world, perNode int) []Need {
	nodes := 1
	if perNode > 0 && world%perNode == 0 {
		nodes = world / perNode
	}
	var out []Need
	seen := map[Need]bool{}
	add := func(op string, n int, layout string) {
		if n < 2 {
			return
		}
		if n == world {
			layout = "consecutive"
		}
		k := Need{op, n, layout}
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	tiers := func(each func(n int, layout string)) {
		if perNode > 1 {
			each(perNode, "consecutive")
		}
		if nodes > 1 {
			each(nodes, "strided")
		}
	}
	for _, t := range targets {
		switch t {
		case "galvatron":
			for _, n := range halvings(world) {
				add("allreduce", n, "consecutive")
				add("allreduce", n, "strided")
				add("alltoall", n, "consecutive")
				add("pipeline", n, "strided")
				add("sendrecv", n, "strided") // read when the profile has no pipeline
			}
		case "calculon":
			tiers(func(n int, layout string) {
				for _, op := range calculonOps {
					add(op.coll, n, layout)
				}
			})
		case "astra-sim":
			tiers(func(n int, layout string) { add("allreduce", n, layout) })
		case "simai":
			tiers(func(n int, layout string) { add("allreduce", n, layout) })
			for _, op := range []string{"allgather", "reducescatter", "alltoall"} {
				add(op, perNode, "consecutive")
			}
			add("allreduce", world, "consecutive")
			add("pipeline", 2, "strided")
			add("sendrecv", 2, "strided")
		}
	}
	return out
}
