package healthcheck

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/health"
)

// healthPlan is what a check measures, as lists of groups of global
// ranks, each list measured at once.
type healthPlan struct {
	intra  [][]unit // waves of GPU pairs
	nodeAR [][]unit // waves of node all-reduces
	inter  [][]unit // waves of node pairs
	job    bool
}

// unit is one figure: its groups (one per pair of ranks, or one block)
// and what it stands for.
type unit struct {
	groups [][]int
	pair   health.Pair // GPU ranks or node indexes
	node   int         // the node of a GPU pair or a node all-reduce; the block of a bisection
	span   []int       // the nodes of a block all-reduce (the job's, a bisection's)
}

func (p healthPlan) points() int {
	n := len(p.intra) + len(p.nodeAR) + len(p.inter)
	if p.job {
		n++
	}
	return n
}

// plan lays out the rounds: every pair of GPUs inside each node, every
// pair of nodes (each local rank with its peer on the other node), in
// rounds of disjoint pairs split into waves a process can time apart.
func (c *healthCheck) plan() healthPlan {
	var p healthPlan
	nodes := c.doc.Nodes
	// Intra-node: round r of every node's own tournament at once.
	var rounds [][]unit
	for n, node := range nodes {
		for r, round := range health.Rounds(len(node.Ranks)) {
			for len(rounds) <= r {
				rounds = append(rounds, nil)
			}
			for _, pr := range round {
				a, b := node.Ranks[pr.A], node.Ranks[pr.B]
				rounds[r] = append(rounds[r], unit{groups: [][]int{{a, b}}, pair: health.Pair{A: a, B: b}, node: n})
			}
		}
	}
	for _, round := range rounds {
		p.intra = append(p.intra, c.wavesOf(round)...)
	}
	// Each node's all-reduce.
	var ars []unit
	for n, node := range nodes {
		if len(node.Ranks) >= 2 {
			ars = append(ars, unit{groups: [][]int{node.Ranks}, node: n})
		}
	}
	p.nodeAR = c.blockWaves(ars)
	// Inter-node: local rank i of one node with local rank i of the other,
	// every pair or a screening's.
	p.inter = c.nodePairWaves(c.nodeRounds(len(nodes)))
	p.job = len(nodes) > 1
	return p
}

// nodePairWaves lays out rounds of node pairs as waves: local rank i of
// one node with local rank i of the other, every such pair of a node
// pair at once.
func (c *healthCheck) nodePairWaves(rounds [][]health.Pair) [][]unit {
	nodes := c.doc.Nodes
	var waves [][]unit
	for _, round := range rounds {
		var units []unit
		for _, pr := range round {
			a, b := nodes[pr.A].Ranks, nodes[pr.B].Ranks
			u := unit{pair: pr, node: -1}
			for i := 0; i < min(len(a), len(b)); i++ {
				u.groups = append(u.groups, []int{min(a[i], b[i]), max(a[i], b[i])})
			}
			units = append(units, u)
		}
		waves = append(waves, c.wavesOf(units)...)
	}
	return waves
}

// wavesOf splits units into the waves health.Waves allows.
func (c *healthCheck) wavesOf(units []unit) [][]unit {
	per := c.j.Settings.RanksPerProc
	groups := make([][][]int, len(units))
	for i, u := range units {
		groups[i] = u.groups
	}
	var out [][]unit
	for _, w := range health.Waves(groups, func(r int) int { return r / per }) {
		wave := make([]unit, len(w))
		for i, u := range w {
			wave[i] = units[u]
		}
		out = append(out, wave)
	}
	return out
}

// blockWaves lays out all-reduces over blocks of ranks (one group each):
// blocks of one size at once, as one communicator split holds groups of
// one size, each size in the order it first appears.
func (c *healthCheck) blockWaves(units []unit) [][]unit {
	bySize := map[int][]unit{}
	var sizes []int
	for _, u := range units {
		k := len(u.groups[0])
		if bySize[k] == nil {
			sizes = append(sizes, k)
		}
		bySize[k] = append(bySize[k], u)
	}
	var out [][]unit
	for _, k := range sizes {
		out = append(out, c.wavesOf(bySize[k])...)
	}
	return out
}

// screenSeed is the seed that draws this check's screening and its
// confirmation's partners: the one asked for, else one rank 0 draws,
// agreed by every process, since every process lays out the plan itself.
// A drawn seed stays below 2⁵³, so that the agreement's float64 holds it
// exactly.
func (c *healthCheck) screenSeed(ctx context.Context) (uint64, error) {
	if c.spec.ScreenSeed != nil {
		return *c.spec.ScreenSeed, nil
	}
	v := 0.0
	if c.j.Rank == 0 {
		v = float64(rand.Uint64() >> 11)
	}
	got, err := c.j.Peers().AllReduce(ctx, []float64{v}, bench.ReduceMax)
	if err != nil {
		return 0, fmt.Errorf("agreeing on the screening's seed: %w", err)
	}
	return uint64(got[0]), nil
}

// nodeRounds is the rounds of node pairs the check measures: a
// screening (rack-aware where every node's rack is known), or every pair.
func (c *healthCheck) nodeRounds(nodes int) [][]health.Pair {
	r := c.spec.screenRounds(nodes)
	switch {
	case r > 0 && c.doc.Config.Racks >= 2:
		return health.RackScreening(nodeRacks(c.doc.Nodes), r, c.seed)
	case r > 0:
		return health.Screening(nodes, r, c.seed)
	}
	return health.Rounds(nodes)
}
