package export

import (
	"fmt"
	"math"

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

// calculonFiles renders Calculon's networks[] entries, one per tier.
// Calculon has one latency per network and one scalar per op: bandwidth
// is the all-reduce curve's line (the one every single-line export is
// given), so its scalar is 2; the other scalars carry each op's own
// line's slope, and the shared latency is the one that fits them all best
// (calculonFit). The file's "residuals" say, per tier and op, how
// far Calculon's time then is from the measured table.
func calculonFiles(p *document.Profile) ([]exportFile, error) {
	probe, err := p.PlannerProbe()
	if err != nil {
		return nil, err
	}
	var nets, residuals []any
	for i, l := range levels(p) {
		var curves []*document.ProfileCurve
		var pts [][]model.Point
		var lines []model.Line
		for _, op := range calculonOps {
			c, err := p.Curve(op.coll, l.n, l.layout)
			if err != nil {
				return nil, fmt.Errorf("%s tier: %w", l.name, err)
			}
			m, err := profiled.Curve(c)
			if err != nil {
				return nil, err
			}
			curves, pts, lines = append(curves, c), append(pts, m.Points()), append(lines, m.Line)
		}
		lat, slopes := calculonFit(pts, lines)
		for k, s := range slopes {
			if !(s > 0) {
				return nil, noBandwidth(curves[k])
			}
		}
		n := float64(l.n)
		bw := 2 * (n - 1) / n / slopes[len(slopes)-1] * 1e-3 // GB/s
		ops := []field{}
		var res []field
		for k, op := range calculonOps {
			factor := 1.0
			if op.offset != nil {
				factor = (n - 1) / n
			}
			scalar := slopes[k] * 1e3 * bw / factor
			ops = append(ops, field{op.key, []any{scalar, op.offset}})
			var worst float64
			for _, pt := range pts[k] {
				worst = max(worst, math.Abs(lat+slopes[k]*pt.Bytes-pt.Time)/pt.Time)
			}
			res = append(res, field{op.key, math.Round(worst*1e6) / 1e6})
		}
		size := l.npus
		if l.name == "inter-node" {
			size = p.Meta.WorldSize
		}
		nets = append(nets, []field{
			{"bandwidth", bw}, {"efficiency", 1.0}, {"size", size}, {"latency", lat * 1e-6},
			{"ops", ops}, {"must_be_filled", i == 0 && l.name == "intra-node"},
			{"processor_usage", min(probe.ProcessorUsage, 0.99)},
		})
		residuals = append(residuals, []field{{"tier", l.name}, {"group_size", l.n}, {"max_rel_err", res}})
	}
	if len(nets) == 0 {
		return nil, fmt.Errorf("the profile has no tier with two ranks or more")
	}
	return []exportFile{{name: "calculon_networks.json", data: orderedJSON([]field{{"networks", nets}, {"residuals", residuals}})}}, nil
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
