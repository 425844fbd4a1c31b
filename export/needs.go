package export

import (
	"fmt"
	"slices"
)

// Need is a curve an export reads: a collective at a group size and
// layout. A group of the whole job is found under either layout.
type Need struct {
	Target string // the export that reads it
	Op     string
	Size   int
	Layout string
	// Else is a collective read in Op's place when the profile lacks Op
	// (Galvatron's point-to-point: the pipeline, else send/recv's ring).
	Else string
	// Optional curves are written as null, or as the planner's default,
	// when missing: the export is still written without them.
	Optional bool
	// WholeMiB is how many sizes that are whole MiB the curve must hold
	// (Galvatron's latency tables); 0 for none.
	WholeMiB int
}

// galvatronTableSizes is how many whole-MiB sizes Galvatron's loader
// needs in each latency table.
const galvatronTableSizes = 8

// Needs lists the curves the targets read from a profile of world ranks
// with perNode ranks on each node, so that a profile under a time budget
// can measure them first and refuse at once what it cannot give. SimAI
// reads its curves when they are there and keeps its defaults otherwise:
// they are all optional.
func Needs(targets []string, world, perNode int) []Need {
	nodes := 1
	if perNode > 0 && world%perNode == 0 {
		nodes = world / perNode
	}
	var out []Need
	seen := map[string]int{}
	add := func(n Need) {
		if n.Size < 2 {
			return
		}
		if n.Size == world {
			n.Layout = "consecutive"
		}
		k := fmt.Sprintf("%s/%d/%s", n.Op, n.Size, n.Layout)
		if i, ok := seen[k]; ok {
			// Read by several targets: keep the strictest.
			o := &out[i]
			o.Optional = o.Optional && n.Optional
			o.WholeMiB = max(o.WholeMiB, n.WholeMiB)
			if o.Optional == n.Optional && o.Else == "" {
				o.Else = n.Else
			}
			return
		}
		seen[k] = len(out)
		out = append(out, n)
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
				add(Need{Target: t, Op: "allreduce", Size: n, Layout: "consecutive", WholeMiB: galvatronTableSizes})
				// sp_time's allreduce keys hold these two at its sizes.
				add(Need{Target: t, Op: "allgather", Size: n, Layout: "consecutive", WholeMiB: galvatronTableSizes})
				add(Need{Target: t, Op: "reducescatter", Size: n, Layout: "consecutive", WholeMiB: galvatronTableSizes})
				add(Need{Target: t, Op: "allreduce", Size: n, Layout: "strided"})
				add(Need{Target: t, Op: "alltoall", Size: n, Layout: "consecutive", WholeMiB: galvatronTableSizes})
				add(Need{Target: t, Op: "pipeline", Size: n, Layout: "strided", Else: "sendrecv"})
			}
		case "calculon":
			tiers(func(n int, layout string) {
				for _, op := range calculonOps {
					add(Need{Target: t, Op: op.coll, Size: n, Layout: layout})
				}
			})
		case "astra-sim":
			tiers(func(n int, layout string) { add(Need{Target: t, Op: "allreduce", Size: n, Layout: layout}) })
		case "simai":
			opt := func(op string, n int, layout string) {
				add(Need{Target: t, Op: op, Size: n, Layout: layout, Optional: true})
			}
			tiers(func(n int, layout string) { opt("allreduce", n, layout) })
			for _, op := range []string{"allgather", "reducescatter", "alltoall"} {
				opt(op, perNode, "consecutive")
			}
			opt("allreduce", world, "consecutive")
			opt("pipeline", 2, "strided")
			opt("sendrecv", 2, "strided")
		case "aiconfigurator":
			for _, op := range aiconfiguratorOps {
				for _, n := range halvings(world) {
					add(Need{Target: t, Op: op.coll, Size: n, Layout: "consecutive", Optional: n != world})
				}
			}
		}
	}
	return out
}

// ReadsProbe says whether a target reads the profile's overlap probe.
func ReadsProbe(target string) bool { return target == "galvatron" || target == "calculon" }

// Reads says whether the need is met by a curve of coll.
func (n Need) Reads(coll string) bool { return coll == n.Op || coll != "" && coll == n.Else }

// Keep is how many of sizes (ascending), from the smallest, the curve
// must hold for the export: the sizes up to its WholeMiB-th whole-MiB
// size, or 0 when sizes has too few of them. Without WholeMiB it is 1.
func (n Need) Keep(sizes []int64) int {
	if n.WholeMiB == 0 {
		return 1
	}
	count := 0
	for i, s := range sizes {
		if s > 0 && s%(1<<20) == 0 {
			if count++; count == n.WholeMiB {
				return i + 1
			}
		}
	}
	return 0
}

// String names the curve as an error reports it.
func (n Need) String() string {
	op := n.Op
	if n.Else != "" {
		op += " (or " + n.Else + ")"
	}
	return fmt.Sprintf("%s over groups of %d (%s)", op, n.Size, n.Layout)
}

// Wanted reports whether any need reads coll over groups of size n in
// layout, and how many leading sizes the strictest of them keeps.
func Wanted(needs []Need, coll string, n int, layout string, sizes []int64) (bool, int) {
	wanted, keep := false, 0
	for _, nd := range needs {
		if nd.Size == n && nd.Layout == layout && nd.Reads(coll) {
			wanted, keep = true, max(keep, nd.Keep(sizes))
		}
	}
	return wanted, keep
}

// Unmet is why the needs cannot be met by a profile of the collectives
// colls over the groupings has (a group size and layout), at sizes, with
// or without overlap probes; "" when they can. It names the first
// missing curve, and which export reads it.
func Unmet(targets []string, needs []Need, colls []string, has func(n int, layout string) bool, sizes []int64, probes bool) string {
	for _, t := range targets {
		if ReadsProbe(t) && !probes {
			return fmt.Sprintf("the %s export reads the overlap probe, which this profile leaves out", t)
		}
	}
	for _, nd := range needs {
		if nd.Optional {
			continue
		}
		if !slices.ContainsFunc(colls, nd.Reads) || !has(nd.Size, nd.Layout) {
			return fmt.Sprintf("the %s export reads %s, which this profile does not measure", nd.Target, nd)
		}
		if nd.Keep(sizes) == 0 {
			return fmt.Sprintf("the %s export reads %d whole-MiB sizes of %s, and the sizes asked for hold fewer (from 1 MiB to 128 MiB holds 8)",
				nd.Target, nd.WholeMiB, nd)
		}
	}
	return ""
}
