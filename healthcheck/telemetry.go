package healthcheck

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/telemetry"
)

// opened adds one wave's communicator set-up to its phase's.
func (c *healthCheck) opened(phase string, took time.Duration) {
	s := c.phaseSetup(phase)
	s.Waves++
	s.TotalS = addSeconds(s.TotalS, took)
	s.MaxS = max(s.MaxS, addSeconds(0, took))
}

// closed adds one closing of waves' communicators (of one wave, or of
// several together) to its phase's.
func (c *healthCheck) closed(phase string, took time.Duration) {
	s := c.phaseSetup(phase)
	s.Closes++
	s.CloseTotalS = addSeconds(s.CloseTotalS, took)
	s.CloseMaxS = max(s.CloseMaxS, addSeconds(0, took))
}

// phaseSetup is the record's communicator set-up of phase, added at its
// first wave.
func (c *healthCheck) phaseSetup(phase string) *document.PhaseSetup {
	i, ok := c.setup[phase]
	if !ok {
		if c.setup == nil {
			c.setup = map[string]int{}
		}
		i = len(c.doc.Setup)
		c.setup[phase] = i
		c.doc.Setup = append(c.doc.Setup, document.PhaseSetup{Phase: phase})
	}
	return &c.doc.Setup[i]
}

// addSeconds adds took to sum in seconds, to the microsecond: a wave of
// the host's shared-memory pairs opens in well under a millisecond.
func addSeconds(sum float64, took time.Duration) float64 {
	return math.Round((sum+took.Seconds())*1e6) / 1e6
}

// recordHealth sends a health record's figures, communicator set-up,
// arrivals and verdict as OpenTelemetry metrics, for a fleet dashboard to
// plot node by node.
func recordHealth(ctx context.Context, rec *telemetry.Recorder, d *document.Health) {
	if rec == nil {
		return
	}
	node := func(n int) string {
		if n >= 0 && n < len(d.Nodes) {
			return d.Nodes[n].Name
		}
		return ""
	}
	for _, p := range d.Intra {
		rec.HealthFigure(ctx, telemetry.HealthFigure{Level: "intra", Node: node(p.Node), Peer: fmt.Sprint(p.B),
			What: fmt.Sprintf("ranks %d-%d", p.A, p.B), BusBW: p.BusBW})
	}
	for _, f := range d.NodeAR {
		rec.HealthFigure(ctx, telemetry.HealthFigure{Level: "node", Node: node(f.Node), What: "all-reduce", BusBW: f.BusBW})
	}
	for _, p := range d.Inter {
		rec.HealthFigure(ctx, telemetry.HealthFigure{Level: "inter", Node: node(p.A), Peer: node(p.B),
			What: node(p.A) + "-" + node(p.B), BusBW: p.BusBW})
	}
	if d.Job != nil {
		rec.HealthFigure(ctx, telemetry.HealthFigure{Level: "job", What: "all-reduce", BusBW: d.Job.BusBW})
	}
	for i, b := range d.Bisection {
		rec.HealthFigure(ctx, telemetry.HealthFigure{Level: "bisection", What: fmt.Sprintf("level %d block %d %v", b.Level, i%2, b.Nodes), BusBW: b.BusBW})
	}
	for _, s := range d.Setup {
		rec.CommunicatorSetup(ctx, s.Phase, s.MaxS, s.CloseMaxS)
	}
	if a := d.Arrivals; a != nil {
		for _, p := range a.Procs {
			rec.LastArrivals(ctx, p.Ranks[0], node(p.Node), p.Last)
		}
	}
	findings := map[string]int{}
	for _, n := range d.Nodes {
		findings[n.Name] = 0
	}
	for _, f := range d.Findings {
		for _, n := range f.Nodes {
			findings[node(n)]++
		}
	}
	rec.HealthVerdict(ctx, d.Healthy, findings)
}
