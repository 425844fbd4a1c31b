package healthcheck

import (
	"fmt"
	"math"

	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/health"
	"github.com/collbench/collbench/judge"
)

// levelJudgers judge each level's figures (health --judge) against the
// link they cross and the published figures for the system: GPU pairs and
// each node's all-reduce within one node, node pairs over the node's
// network ports shared by the local ranks that cross them at once, the
// job's all-reduce over the whole job. The topology is rank 0's node;
// nodes are taken to be alike.
func levelJudgers(topo judge.Topology, tables []judge.Table) map[string]*judge.Judger {
	sys := judge.SystemOf(topo)
	node := topo
	node.Nodes = 1
	inNode, noneInNode := judge.WireLimit(node)
	cross := judge.Topology{Backend: topo.Backend, Nodes: 2, RanksPerNode: 1, NICs: topo.NICs}
	between, noneBetween := judge.WireLimit(cross)
	if noneBetween == "" && topo.RanksPerNode > 1 {
		between.GBps /= float64(topo.RanksPerNode)
		between.What += fmt.Sprintf(", shared by %d rank pairs at once", topo.RanksPerNode)
	}
	job, noneJob := judge.WireLimit(topo)
	one := sys
	one.Nodes = 1
	return map[string]*judge.Judger{
		"intra": judge.NewJudger("sendrecv", inNode, noneInNode, tables, one),
		"node":  judge.NewJudger("allreduce", inNode, noneInNode, tables, one),
		"inter": judge.NewJudger("sendrecv", between, noneBetween, tables, sys),
		"job":   judge.NewJudger("allreduce", job, noneJob, tables, sys),
	}
}

// findingLevel is the level whose figures a finding of this kind is.
var findingLevel = map[string]string{"gpu": "intra", "gpu-link": "intra", "node-allreduce": "node",
	"node": "inter", "link": "inter", "job": "job", "block": "job"}

// judgePublished flags each node's and the job's all-reduce that is LOW
// against the published figure for the system, then gives every finding
// its share of the wire and its ratio to the published figure.
func (c *healthCheck) judgePublished(judgers map[string]*judge.Judger) {
	d := c.doc
	measured := map[string]bool{"intra": len(d.Intra) > 0, "node": len(d.NodeAR) > 0, "inter": len(d.Inter) > 0, "job": d.Job != nil}
	for _, level := range Levels {
		if j := judgers[level]; measured[level] {
			d.Judged = append(d.Judged, document.HealthLevel{Level: level, Limit: j.Limit(), NoLimit: j.NoLimit()})
		}
	}
	low := func(level string, bw float64) (judge.RowJudgement, bool) {
		r := judgers[level].Row(judge.Row{Size: d.Config.ARBytes, BusBW: bw})
		return r, r.Verdict == judge.Low
	}
	for _, f := range d.NodeAR {
		if r, ok := low("node", f.BusBW); ok {
			c.flag(document.Finding{Kind: "node-allreduce", Where: d.Nodes[f.Node].Name + " (all-reduce over its GPUs)", Nodes: []int{f.Node}},
				health.Outlier{Value: f.BusBW, Median: r.Reference.BusBW, Drop: 1 - r.RefRatio, Z: math.NaN()}, "published")
		}
	}
	if d.Job != nil {
		if r, ok := low("job", d.Job.BusBW); ok {
			c.flag(document.Finding{Kind: "job", Where: fmt.Sprintf("all %d ranks (all-reduce)", d.Config.NRanks), Nodes: d.Job.Nodes},
				health.Outlier{Value: d.Job.BusBW, Median: r.Reference.BusBW, Drop: 1 - r.RefRatio, Z: math.NaN()}, "published")
		}
	}
	for i := range d.Findings {
		f := &d.Findings[i]
		level, ok := findingLevel[f.Kind]
		if !ok {
			continue
		}
		size := d.Config.PairBytes
		if level == "node" || level == "job" {
			size = d.Config.ARBytes
		}
		r := judgers[level].Row(judge.Row{Size: size, BusBW: f.BusBW})
		f.WireShare = r.WireShare
		if r.Reference != nil {
			f.PublishedRatio, f.Published = r.RefRatio, r.Reference.ID
		}
	}
	d.Healthy = d.Complete && len(d.Findings) == 0
}
