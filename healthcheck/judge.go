package healthcheck

import (
	"fmt"
	"math"
	"strings"

	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/health"
)

// judge turns the figures into findings: each level against its peers
// (robust statistics, health.Criteria) and against its expectation.
func (c *healthCheck) judge() {
	d, crit := c.doc, c.spec.Criteria
	d.Noise = map[string]float64{}
	nodePasses := make([][]float64, len(d.NodeAR))
	for i, f := range d.NodeAR {
		nodePasses[i] = f.Passes
	}
	for level, n := range map[string]float64{"intra": pairNoise(d.Intra), "node": health.Noise(nodePasses), "inter": pairNoise(d.Inter)} {
		if n > 0 {
			d.Noise[level] = n
		}
	}
	// GPUs and GPU pairs, over every node: a GPU slow with its partners,
	// or one slow pair.
	intra := make([]health.PairFigure, len(d.Intra))
	for i, p := range d.Intra {
		intra[i] = health.PairFigure{Pair: health.Pair{A: p.A, B: p.B}, Value: p.BusBW}
	}
	v := crit.Judge(intra, d.Noise["intra"])
	for _, m := range v.Members {
		c.flag(document.Finding{Kind: "gpu", Where: c.gpuName(m.Member) + fmt.Sprintf(" (slow with %d partner GPUs)", m.Partners),
			Nodes: []int{c.byRank[m.Member]}, Ranks: []int{m.Member}}, m.Outlier, "peers")
	}
	for _, l := range v.Links {
		c.flag(document.Finding{Kind: "gpu-link", Where: c.gpuName(l.A) + " ↔ " + c.gpuName(l.B),
			Nodes: []int{c.byRank[l.A]}, Ranks: []int{l.A, l.B}}, l.Outlier, "peers")
	}
	c.expect("intra", len(d.Intra), func(i int) (document.Finding, float64) {
		p := d.Intra[i]
		return document.Finding{Kind: "gpu-link", Where: c.gpuName(p.A) + " ↔ " + c.gpuName(p.B), Nodes: []int{p.Node}, Ranks: []int{p.A, p.B}}, p.BusBW
	})
	// Each node's own all-reduce.
	vals := make([]float64, len(d.NodeAR))
	for i, f := range d.NodeAR {
		vals[i] = f.BusBW
	}
	for _, o := range crit.Below(vals, d.Noise["node"]) {
		n := d.NodeAR[o.Index].Node
		c.flag(document.Finding{Kind: "node-allreduce", Where: d.Nodes[n].Name + " (all-reduce over its GPUs)", Nodes: []int{n}}, o, "peers")
	}
	c.expect("node", len(d.NodeAR), func(i int) (document.Finding, float64) {
		n := d.NodeAR[i].Node
		return document.Finding{Kind: "node-allreduce", Where: d.Nodes[n].Name + " (all-reduce over its GPUs)", Nodes: []int{n}}, d.NodeAR[i].BusBW
	})
	// Nodes and links between them.
	v = c.interVerdict()
	for _, m := range v.Members {
		c.flag(document.Finding{Kind: "node", Where: d.Nodes[m.Member].Name + fmt.Sprintf(" (slow with %d partner nodes)", m.Partners),
			Nodes: []int{m.Member}}, m.Outlier, "peers")
	}
	for _, l := range v.Links {
		c.flag(document.Finding{Kind: "link", Where: d.Nodes[l.A].Name + " ↔ " + d.Nodes[l.B].Name, Nodes: []int{l.A, l.B}}, l.Outlier, "peers")
	}
	c.flagRacks(v.Racks)
	c.expect("inter", len(d.Inter), func(i int) (document.Finding, float64) {
		p := d.Inter[i]
		return document.Finding{Kind: "link", Where: d.Nodes[p.A].Name + " ↔ " + d.Nodes[p.B].Name, Nodes: []int{p.A, p.B}}, p.BusBW
	})
	// The whole job, and where a bisection narrowed its slowness to.
	if d.Job != nil {
		c.expect("job", 1, func(int) (document.Finding, float64) {
			return document.Finding{Kind: "job", Where: fmt.Sprintf("all %d ranks (all-reduce)", c.j.World()), Nodes: d.Job.Nodes}, d.Job.BusBW
		})
	}
	for i := 0; i+1 < len(d.Bisection); i += 2 {
		slow, fast := d.Bisection[i], d.Bisection[i+1]
		if slow.BusBW > fast.BusBW {
			slow, fast = fast, slow
		}
		if drop, short := crit.Short(slow.BusBW, fast.BusBW); short {
			names := make([]string, len(slow.Nodes))
			for k, n := range slow.Nodes {
				names[k] = d.Nodes[n].Name
			}
			c.flag(document.Finding{Kind: "block", Where: fmt.Sprintf("bisection level %d: %s", slow.Level, strings.Join(names, ", ")),
				Nodes: slow.Nodes}, health.Outlier{Value: slow.BusBW, Median: fast.BusBW, Drop: drop}, "other half")
		}
	}
	c.judgeArrivals()
	d.Complete = len(d.Skipped) == 0
	d.Healthy = d.Complete && len(d.Findings) == 0
}

// pairNoise is the pass-to-pass noise of a level's pair figures.
func pairNoise(pairs []document.PairFigure) float64 {
	passes := make([][]float64, len(pairs))
	for i, p := range pairs {
		passes[i] = p.Passes
	}
	return health.Noise(passes)
}

// expect flags each of n figures that falls short of the level's
// expectation: by MinDrop, and by Z of the level's pass-to-pass noise
// (in logarithms), so that a drop the summary calls too small to tell
// from the noise is not flagged either. A level whose expectation came
// from the baseline is judged against "baseline", one given as such
// against "expect".
func (c *healthCheck) expect(level string, n int, at func(i int) (document.Finding, float64)) {
	want := c.spec.Expect[level]
	if want <= 0 {
		return
	}
	against := "expect"
	if c.spec.fromBaseline[level] {
		against = "baseline"
	}
	noise := c.doc.Noise[level]
	for i := 0; i < n; i++ {
		f, bw := at(i)
		drop, short := c.spec.Criteria.Short(bw, want)
		if short && (noise == 0 || -math.Log1p(-drop) >= c.spec.Criteria.Z*noise) {
			c.flag(f, health.Outlier{Value: bw, Median: want, Drop: drop, Z: math.NaN()}, against)
		}
	}
}

// flag records a finding with its figures.
func (c *healthCheck) flag(f document.Finding, o health.Outlier, against string) {
	f.BusBW, f.Reference, f.Drop, f.Against = o.Value, o.Median, o.Drop, against
	if !math.IsInf(o.Z, 0) && !math.IsNaN(o.Z) && against == "peers" {
		z := o.Z
		f.Z = &z
	}
	c.doc.Findings = append(c.doc.Findings, f)
}

// gpuName names a rank by its node and device: "node GPU 3 (0000:1a:00)"
// on GPUs, "node rank 5" on the host backend.
func (c *healthCheck) gpuName(rank int) string {
	node := c.doc.Nodes[c.byRank[rank]].Name
	for _, d := range c.doc.Devices {
		if d.Rank == rank && c.sess.OnGPU() {
			return fmt.Sprintf("%s GPU %d (%s)", node, d.Device, d.BusID)
		}
	}
	return fmt.Sprintf("%s rank %d", node, rank)
}
