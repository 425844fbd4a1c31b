package export

import (
	"fmt"
	"math"

	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/model"
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
// Calculon has one latency per network and one scalar per op, so the
// tier's four ops are fitted together: one latency L ≥ 0 and one slope per
// op that minimise the relative error of L + slope·S against every op's
// measured times (calculonFit). bandwidth is the all-reduce's bus
// bandwidth under that fit, so its scalar is 2; the other scalars carry
// each op's own slope. The file's "residuals" say, per tier and op, how
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
		for _, op := range calculonOps {
			c, err := p.Curve(op.coll, l.n, l.layout)
			if err != nil {
				return nil, fmt.Errorf("%s tier: %w", l.name, err)
			}
			m, err := measured(c)
			if err != nil {
				return nil, err
			}
			curves, pts = append(curves, c), append(pts, m)
		}
		lat, slopes := calculonFit(pts)
		for k, s := range slopes {
			if !(s > 0) {
				return nil, noBandwidth(curves[k])
			}
		}
		n := float64(l.n)
		ar := len(calculonOps) - 1
		bw := 2 * (n - 1) / n / slopes[ar] * 1e-3 // GB/s
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

// calculonFit fits t = L + b_k·S to every curve k at once, by relative
// least squares (weights 1/t²), with one shared latency L ≥ 0 (µs) and a
// slope b_k (µs per byte) per curve. For a given L each slope has a closed
// form, and the best L then solves one linear equation.
func calculonFit(curves [][]model.Point) (latency float64, slopes []float64) {
	type sums struct{ a, b, c float64 } // Σ S²/t², Σ S/t², Σ S/t
	var d, e float64                    // Σ 1/t², Σ 1/t over every curve
	per := make([]sums, len(curves))
	for k, pts := range curves {
		for _, p := range pts {
			w := 1 / (p.Time * p.Time)
			per[k].a += w * p.Bytes * p.Bytes
			per[k].b += w * p.Bytes
			per[k].c += w * p.Bytes * p.Time
			d += w
			e += w * p.Time
		}
	}
	num, den := e, d
	for _, s := range per {
		num -= s.c * s.b / s.a
		den -= s.b * s.b / s.a
	}
	if den > 0 {
		latency = max(num/den, 0)
	}
	for _, s := range per {
		slopes = append(slopes, (s.c-latency*s.b)/s.a)
	}
	return latency, slopes
}
