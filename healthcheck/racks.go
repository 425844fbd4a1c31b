package healthcheck

import (
	"fmt"
	"strings"

	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/health"
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

// flagRacks flags the racks whose node pairs across racks are slow while
// their own are not (health.Criteria.JudgeRacks): their uplink. The racks
// were judged before the nodes and links, on whose pairs across racks the
// uplink explains no finding is made, while a node slow with its pairs
// inside its rack still is.
func (c *healthCheck) flagRacks(found []health.RackOutlier) {
	d := c.doc
	racks := nodeRacks(d.Nodes)
	for _, o := range found {
		var nodes []int
		for n := range d.Nodes {
			if o.Rack < 0 || racks[n] == o.Rack {
				nodes = append(nodes, n)
			}
		}
		where := fmt.Sprintf("%s (%s): slow across racks, %.3f GB/s inside", d.Nodes[nodes[0]].Rack, nodeNames(d, nodes), o.Inside)
		if o.Rack < 0 {
			where = fmt.Sprintf("between racks %s: slow across, %.3f GB/s inside", strings.Join(rackNames(d.Nodes), " and "), o.Inside)
		}
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
