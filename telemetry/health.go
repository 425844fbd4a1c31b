package telemetry

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// healthInstruments are the gauges a health check sets, one point per
// figure, node and verdict, so that a fleet dashboard can plot every
// node's bandwidth and findings run after run.
type healthInstruments struct {
	busBW    metric.Float64Gauge
	findings metric.Int64Gauge
	healthy  metric.Int64Gauge
	setup    metric.Float64Gauge
	teardown metric.Float64Gauge
	last     metric.Int64Gauge
}

func (h *healthInstruments) create(m metric.Meter) error {
	var errs [6]error
	h.busBW, errs[0] = m.Float64Gauge("collbench.health.bus_bandwidth", metric.WithUnit("By/s"),
		metric.WithDescription("A health figure's bus bandwidth: a pair of GPUs or of nodes, a node's or the job's all-reduce, or a bisection's block"))
	h.findings, errs[1] = m.Int64Gauge("collbench.health.findings", metric.WithUnit("{finding}"),
		metric.WithDescription("Findings that name the node (0 for a node nothing named)"))
	h.healthy, errs[2] = m.Int64Gauge("collbench.health.healthy", metric.WithUnit("1"),
		metric.WithDescription("1 when the check ran complete and found nothing, else 0"))
	h.setup, errs[3] = m.Float64Gauge("collbench.health.communicator_setup", metric.WithUnit("s"),
		metric.WithDescription("Time to open one wave's communicators, the most of any wave of the phase"))
	h.last, errs[4] = m.Int64Gauge("collbench.health.last_arrivals", metric.WithUnit("{call}"),
		metric.WithDescription("Calls of the job-wide all-reduce the rank reached last"))
	h.teardown, errs[5] = m.Float64Gauge("collbench.health.communicator_teardown", metric.WithUnit("s"),
		metric.WithDescription("Time to close waves' communicators (one wave's, or several closed together), the longest closing of the phase"))
	return errors.Join(errs[:]...)
}

// HealthFigure is one figure of a health check.
type HealthFigure struct {
	Level string // intra, node, inter, job or bisection
	Node  string // the node (host) it belongs to; for a node pair, the first node
	Peer  string // the other GPU (rank) or node of a pair; "" otherwise
	What  string // the figure in words: ranks, hosts or block
	BusBW float64
}

// HealthFigure records one figure's bandwidth.
func (r *Recorder) HealthFigure(ctx context.Context, f HealthFigure) {
	if r == nil {
		return
	}
	r.health.busBW.Record(ctx, f.BusBW*1e9, metric.WithAttributeSet(attribute.NewSet(r.common,
		attribute.String("collbench.health.level", f.Level), attribute.String("collbench.health.node", f.Node),
		attribute.String("collbench.health.peer", f.Peer), attribute.String("collbench.health.figure", f.What))))
}

// HealthVerdict records the check's verdict and the findings that name
// each node.
func (r *Recorder) HealthVerdict(ctx context.Context, healthy bool, findings map[string]int) {
	if r == nil {
		return
	}
	v := int64(0)
	if healthy {
		v = 1
	}
	r.health.healthy.Record(ctx, v, metric.WithAttributeSet(attribute.NewSet(r.common)))
	for node, n := range findings {
		r.health.findings.Record(ctx, int64(n), metric.WithAttributeSet(attribute.NewSet(r.common, attribute.String("collbench.health.node", node))))
	}
}

// CommunicatorSetup records the longest a wave of a phase took to open its
// communicators, and the longest closing of them (one wave's, or several
// waves' closed together).
func (r *Recorder) CommunicatorSetup(ctx context.Context, phase string, open, close float64) {
	if r == nil {
		return
	}
	attrs := metric.WithAttributeSet(attribute.NewSet(r.common, attribute.String("collbench.health.phase", phase)))
	r.health.setup.Record(ctx, open, attrs)
	r.health.teardown.Record(ctx, close, attrs)
}

// LastArrivals records how many calls of the job's all-reduce a rank
// reached last.
func (r *Recorder) LastArrivals(ctx context.Context, rank int, node string, calls int) {
	if r == nil {
		return
	}
	r.health.last.Record(ctx, int64(calls), metric.WithAttributeSet(attribute.NewSet(r.common,
		attribute.Int("collbench.rank", rank), attribute.String("collbench.health.node", node))))
}
