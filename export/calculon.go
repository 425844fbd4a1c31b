package export

import (
	"fmt"
	"math"
	"slices"

	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/model"
	"github.com/collbench/collbench/model/profiled"
)

// calculonOps are Calculon's network ops, the collective that measures
// each and the offset that gives its bus factor: time = latency +
// S·scalar·(1 + offset/n)/bandwidth, so offset −1 is (n−1)/n; p2p takes
// none.
var calculonOps = []struct {
	key, coll string
	offset    any
}{{"p2p", "sendrecv", nil}, {"reduce_scatter", "reducescatter", -1}, {"all_gather", "allgather", -1}, {"all_reduce", "allreduce", -1}}

// CalculonOp is Calculon's network op for collbench's collective coll:
// its collectives by their keys, and a pipeline stage's send, from either
// curve a point-to-point cost is read from (model.P2POps), as p2p; ""
// where Calculon has none.
func CalculonOp(coll string) string {
	if slices.Contains(model.P2POps, coll) {
		return "p2p"
	}
	for _, op := range calculonOps {
		if op.coll == coll {
			return op.key
		}
	}
	return ""
}

// calculonFiles renders Calculon's networks[] entries: one per tier,
// then one per group the profile measured (calculonGroups). Calculon has
// one latency per network and one scalar per op: bandwidth is the
// all-reduce curve's line (the one every single-line export is given),
// so its scalar is 2; the other scalars carry each op's own line's slope,
// and the shared latency is the one that fits them all best
// (calculonFit). The file's "residuals" say, per network and op, how far
// Calculon's time then is from the measured table.
func calculonFiles(p *document.Profile) ([]exportFile, error) {
	probe, err := p.PlannerProbe()
	if err != nil {
		return nil, err
	}
	usage := min(probe.ProcessorUsage, 0.99)
	var nets, residuals []any
	for i, l := range levels(p) {
		var curves []*document.ProfileCurve
		for _, op := range calculonOps {
			c, err := p.Curve(op.coll, l.n, l.layout)
			if err != nil {
				return nil, fmt.Errorf("%s tier: %w", l.name, err)
			}
			curves = append(curves, c)
		}
		size := l.npus
		if l.name == "inter-node" {
			size = p.Meta.WorldSize
		}
		net, res, err := calculonNetwork(curves, l.n, size, i == 0 && l.name == "intra-node", usage, calculonEvery)
		if err != nil {
			return nil, err
		}
		nets = append(nets, net)
		residuals = append(residuals, append([]field{{"tier", l.name}, {"group_size", l.n}}, field{"max_rel_err", res}))
	}
	if len(nets) == 0 {
		return nil, fmt.Errorf("the profile has no tier with two ranks or more")
	}
	var groups []any
	for _, g := range calculonGroups(p) {
		// Two networks per group: the collectives' (their latency fitted
		// to them alone) for tensor_par_net and data_par_net, and the
		// pipeline's (its send's own latency) for pipeline_par_net.
		coll, collRes, err := calculonNetwork(g.curves, g.n, p.Meta.WorldSize, false, usage, calculonCollectives)
		if err != nil {
			return nil, err
		}
		send, sendRes, err := calculonNetwork(g.curves, g.n, p.Meta.WorldSize, false, usage, calculonSend)
		if err != nil {
			return nil, err
		}
		groups = append(groups, []field{{"group_size", g.n}, {"layout", g.layout}, {"collectives", len(nets)}, {"p2p", len(nets) + 1},
			{"p2p_curve", g.curves[0].Op}})
		nets = append(nets, coll, send)
		name := fmt.Sprintf("%d %s", g.n, g.layout)
		residuals = append(residuals, []field{{"group", name}, {"network", "collectives"}, {"group_size", g.n}, {"max_rel_err", collRes}},
			[]field{{"group", name}, {"network", "p2p"}, {"group_size", g.n}, {"max_rel_err", sendRes}})
	}
	return []exportFile{{name: "calculon_networks.json", data: orderedJSON([]field{{"networks", nets}, {"groups", groups}, {"residuals", residuals}})}}, nil
}

// calculonGroup is a group of the job a network of its own describes:
// its size, layout and the curves of calculonOps' collectives over it,
// p2p's the pipeline chain over the group's ranks (else send/recv's
// ring), as a pipeline's stages send.
type calculonGroup struct {
	n      int
	layout string
	curves []*document.ProfileCurve
}

// calculonGroups are the groups of the halvings of the job, in either
// layout, over which the profile measured every op: Calculon gives each
// parallel dimension a network of its own (tensor_par_net, data_par_net,
// pipeline_par_net), so the TP group's, the DP group's and the PP group's
// can each be charged their own curves.
func calculonGroups(p *document.Profile) []calculonGroup {
	var out []calculonGroup
	world := p.Meta.WorldSize
	for _, n := range halvings(world) {
		for _, layout := range []string{"consecutive", "strided"} {
			if n == world && layout == "strided" {
				continue // the job's group: one layout
			}
			var curves []*document.ProfileCurve
			for _, op := range calculonOps {
				var c *document.ProfileCurve
				var err error
				if op.key == "p2p" {
					c, err = profiled.P2PCurve(p, n, layout)
				} else {
					c, err = p.Curve(op.coll, n, layout)
				}
				if err != nil {
					curves = nil
					break
				}
				curves = append(curves, c)
			}
			if curves != nil {
				out = append(out, calculonGroup{n, layout, curves})
			}
		}
	}
	return out
}

// The ops a network's one latency is fitted to (indexes of calculonOps):
// every op for a tier, which serves every dimension; a group's
// collectives, or its send, for the dimension that uses them.
var (
	calculonEvery       = []int{0, 1, 2, 3}
	calculonCollectives = []int{1, 2, 3}
	calculonSend        = []int{0}
)

// calculonNetwork is one networks[] entry over n ranks from the curves of
// calculonOps (in their order), its latency fitted to the ops fitted, and
// each op's largest relative error against its curve.
func calculonNetwork(curves []*document.ProfileCurve, n, size int, filled bool, usage float64, fitted []int) ([]field, []field, error) {
	var pts [][]model.Point
	var lines []model.Line
	for _, c := range curves {
		m, err := profiled.Curve(c)
		if err != nil {
			return nil, nil, err
		}
		pts, lines = append(pts, m.Points()), append(lines, m.Line)
	}
	var fitPts [][]model.Point
	var fitLines []model.Line
	for _, k := range fitted {
		fitPts, fitLines = append(fitPts, pts[k]), append(fitLines, lines[k])
	}
	lat, _ := calculonFit(fitPts, fitLines)
	slopes := make([]float64, len(lines))
	for k, l := range lines {
		slopes[k] = l.Beta
	}
	for k, s := range slopes {
		if !(s > 0) {
			return nil, nil, noBandwidth(curves[k])
		}
	}
	nf := float64(n)
	bw := 2 * (nf - 1) / nf / slopes[len(slopes)-1] * 1e-3 // GB/s
	ops := []field{}
	var res []field
	for k, op := range calculonOps {
		factor := 1.0
		if op.offset != nil {
			factor = (nf - 1) / nf
		}
		scalar := slopes[k] * 1e3 * bw / factor
		ops = append(ops, field{op.key, []any{scalar, op.offset}})
		var worst float64
		for _, pt := range pts[k] {
			worst = max(worst, math.Abs(lat+slopes[k]*pt.Bytes-pt.Time)/pt.Time)
		}
		res = append(res, field{op.key, math.Round(worst*1e6) / 1e6})
	}
	return []field{
		{"bandwidth", bw}, {"efficiency", 1.0}, {"size", size}, {"latency", lat * 1e-6},
		{"ops", ops}, {"must_be_filled", filled}, {"processor_usage", usage},
	}, res, nil
}

// calculonFit gives Calculon's one latency per network and each op's
// slope. Every op's slope is its own curve's line β (model.Curve.Line), so
// that where the bandwidth decides (the large messages of a training
// step) Calculon charges each op its curve, the all-reduce exactly the
// line ASTRA-sim and SimAI are given. The one latency L ≥ 0 is then the
// one that minimises the relative error of L + β_k·S against every op's
// curve at every measured size (weights 1/t²: L = Σ (t − β_k·S)/t² ÷
// Σ 1/t²): the ops' own α differ, and Calculon cannot give each its own,
// so the error falls on the smallest sizes (the file's residuals).
func calculonFit(curves [][]model.Point, lines []model.Line) (latency float64, slopes []float64) {
	var num, den float64
	for k, pts := range curves {
		slopes = append(slopes, lines[k].Beta)
		for _, p := range pts {
			w := 1 / (p.Time * p.Time)
			num += w * (p.Time - lines[k].Beta*p.Bytes)
			den += w
		}
	}
	if den > 0 {
		latency = max(num/den, 0)
	}
	return latency, slopes
}
