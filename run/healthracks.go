package run

import (
	"fmt"
	"slices"
	"strings"

	"github.com/collbench/collbench/document"
)

// rackIndex numbers the nodes' racks in the order they first appear;
// empty when no node's rack is known.
func rackIndex(nodes []document.HealthNode) map[string]int {
	out := map[string]int{}
	for _, n := range nodes {
		if n.Rack == "" {
			return map[string]int{}
		}
		if _, ok := out[n.Rack]; !ok {
			out[n.Rack] = len(out)
		}
	}
	return out
}

// nodeRacks is each node's rack number.
func nodeRacks(nodes []document.HealthNode) []int {
	idx := rackIndex(nodes)
	out := make([]int, len(nodes))
	for i, n := range nodes {
		out[i] = idx[n.Rack]
	}
	return out
}

// judgeRacks flags the racks whose node pairs across racks are slow while
// their own are not (health.Criteria.JudgeRacks): their uplink. The
// node and link findings such a rack explains (its nodes, its pairs
// across racks) give way to the one rack finding.
func (c *healthCheck) judgeRacks() {
	d := c.doc
	if d.Config.Racks < 2 {
		return
	}
	racks := nodeRacks(d.Nodes)
	figs := pairFigures(slices.Concat(d.Inter, d.Confirmation))
	for _, o := range c.spec.Criteria.JudgeRacks(racks, figs, d.Noise["inter"]) {
		in := func(n int) bool { return o.Rack < 0 || racks[n] == o.Rack }
		var nodes []int
		for n := range d.Nodes {
			if in(n) {
				nodes = append(nodes, n)
			}
		}
		where := fmt.Sprintf("%s (%s): slow across racks, %.3f GB/s inside", d.Nodes[nodes[0]].Rack, nodeNames(d, nodes), o.Inside)
		if o.Rack < 0 {
			where = fmt.Sprintf("between racks %s: slow across, %.3f GB/s inside", strings.Join(rackNames(d.Nodes), " and "), o.Inside)
		}
		explained := func(f document.Finding) bool {
			switch f.Kind {
			case "node":
				return in(f.Nodes[0])
			case "link":
				return racks[f.Nodes[0]] != racks[f.Nodes[1]] && (in(f.Nodes[0]) || in(f.Nodes[1]))
			}
			return false
		}
		d.Findings = slices.DeleteFunc(d.Findings, explained)
		c.flag(document.Finding{Kind: "rack", Where: where, Nodes: nodes}, o.Outlier, "peers")
	}
}

// nodeNames lists nodes by name.
func nodeNames(d *document.Health, nodes []int) string {
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = d.Nodes[n].Name
	}
	return strings.Join(names, ", ")
}

// rackNames lists the racks in their order.
func rackNames(nodes []document.HealthNode) []string {
	idx := rackIndex(nodes)
	names := make([]string, len(idx))
	for name, i := range idx {
		names[i] = name
	}
	return names
}
