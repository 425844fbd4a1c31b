// Package profiled reads a profile in the cost model's terms: each
// measured curve fitted (model.Curve), the network its curves make and
// the machine a prediction runs on. The records are document's and the
// fitting is model's; this package joins the two, so that neither reaches
// into the other.
package profiled

import (
	"fmt"
	"strings"
	"sync"

	"github.com/collbench/collbench/bench/numeric"
	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/model"
)

// Curve is a profile's curve as the cost model uses it: the table made
// monotone, and its fit. An uneven all-to-all's curve is modelled against
// each rank's mean bytes (count × ranks × element size), not its size
// column (the busiest rank's bytes).
func Curve(c *document.ProfileCurve) (*model.Curve, error) {
	pts := make([]model.Point, len(c.Samples))
	elt := 0
	if t, err := numeric.ParseDataType(c.Type); err == nil {
		elt = t.Size()
	}
	for i, s := range c.Samples {
		pts[i] = model.Point{Bytes: float64(s.Bytes), Time: s.TimeUs}
		if c.Traffic != "" && elt > 0 {
			pts[i].Bytes = float64(s.Count * int64(c.Group.Size) * int64(elt))
		}
	}
	return model.NewCurve(c.Op, c.Group.Size, c.Group.Layout, c.BusFactor, pts)
}

// Fit is the fit a profile records with a curve, nil where the curve
// cannot be fitted (fewer than two sizes).
func Fit(c *document.ProfileCurve) *document.Fit {
	m, err := Curve(c)
	if err != nil {
		return nil
	}
	f := recorded(m.Fit)
	return &f
}

// recorded is a fitted model as the profile records it.
func recorded(f model.Fit) document.Fit {
	out := document.Fit{Model: f.Model, Method: f.Method, Line: document.Line(f.Line), BusBWInf: f.BusBWInf, NHalf: f.NHalf,
		R2: f.R2, MaxRel: f.MaxRel, Range: f.Range, Points: f.Points, AlphaCI: &f.AlphaCI, BetaCI: &f.BetaCI}
	for _, s := range f.Segments {
		out.Segments = append(out.Segments, document.Segment{From: s.From, To: s.To, Line: document.Line(s.Line)})
	}
	return out
}

// At is a recorded fit's time in µs for s bytes, the cost model's
// evaluation of the lines the profile holds.
func At(f *document.Fit, s float64) float64 {
	m := model.Fit{Line: model.Line(f.Line)}
	for _, seg := range f.Segments {
		m.Segments = append(m.Segments, model.Segment{From: seg.From, To: seg.To, Line: model.Line(seg.Line)})
	}
	return m.At(s)
}

// P2PCurve is the profile's point-to-point curve of n ranks: the first of
// model.P2POps it measured. The error is the first's.
func P2PCurve(p *document.Profile, n int, layout string) (*document.ProfileCurve, error) {
	var first error
	for _, op := range model.P2POps {
		c, err := p.Curve(op, n, layout)
		if err == nil {
			return c, nil
		}
		if first == nil {
			first = err
		}
	}
	return nil, first
}

// Network is the profile's curves as a prediction reads them, each fitted
// once.
func Network(p *document.Profile) model.Network {
	return &network{p: p, fitted: map[*document.ProfileCurve]fitted{}}
}

type fitted struct {
	curve *model.Curve
	err   error
}

type network struct {
	p      *document.Profile
	mu     sync.Mutex
	fitted map[*document.ProfileCurve]fitted
}

// of is c fitted, from the cache after the first time.
func (n *network) of(c *document.ProfileCurve) (*model.Curve, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	f, ok := n.fitted[c]
	if !ok {
		f.curve, f.err = Curve(c)
		n.fitted[c] = f
	}
	return f.curve, f.err
}

// routed is the alltoallv curve measured with routed traffic (--moe).
func (n *network) routed(size int, layout string) (*model.Curve, error) {
	for i := range n.p.Curves {
		c := &n.p.Curves[i]
		if c.Op == "alltoallv" && strings.HasPrefix(c.Traffic, "moe ") && c.Group.Size == size &&
			(c.Group.Layout == layout || size == n.p.Meta.WorldSize) && len(c.Samples) >= 2 {
			return n.of(c)
		}
	}
	return nil, fmt.Errorf("the profile has no routed alltoallv curve over %d ranks (%s)", size, layout)
}

// Curve implements model.Network.
func (n *network) Curve(op string, size int, layout string) (*model.Curve, error) {
	if op == model.RoutedAllToAll {
		return n.routed(size, layout)
	}
	c, err := n.p.Curve(op, size, layout)
	if err != nil {
		return nil, err
	}
	return n.of(c)
}

// Machine is the profile as predictions read it: its curves, the
// slowdowns of the overlap probe planners get (document's PlannerProbe)
// and the best compute rate a GEMM probe reached. tflops, if positive,
// replaces the measured rate.
func Machine(p *document.Profile, tflops float64) model.Machine {
	m := model.Machine{Net: Network(p), CommSlowdown: 1, ComputeSlowdown: 1}
	if probe, err := p.PlannerProbe(); err == nil {
		m.CommSlowdown, m.ComputeSlowdown = probe.CommSlowdown, probe.ComputeSlowdown
	}
	for _, o := range p.Overlap {
		if o.Kind == "gemm" && o.ComputeAlone > 0 {
			m.FLOPS = max(m.FLOPS, o.FLOPs/(o.ComputeAlone*1e-6))
		}
	}
	if tflops > 0 {
		m.FLOPS = tflops * 1e12
	}
	return m
}
