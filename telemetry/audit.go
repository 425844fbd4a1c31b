package telemetry

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// AuditCheck is one comparison of an audit.
type AuditCheck struct {
	Kind, Setting, Against string
	Collective, DType      string
	RedOp, Placement       string
	Bytes                  int64
	Bits                   int64 // bits that differed over every rank
	MaxULPs                uint64
}

// AuditCheck records one comparison's differing bits and its farthest
// distance, so that a dashboard shows which settings and sizes repeat.
func (r *Recorder) AuditCheck(ctx context.Context, c AuditCheck) {
	if r == nil {
		return
	}
	set := metric.WithAttributeSet(attribute.NewSet(r.common,
		attribute.String("collbench.audit.kind", c.Kind),
		attribute.String("collbench.audit.setting", c.Setting),
		attribute.String("collbench.audit.against", c.Against),
		attribute.String("collbench.collective", c.Collective),
		attribute.Int64("collbench.message.size", c.Bytes),
		attribute.String("collbench.dtype", c.DType),
		attribute.String("collbench.redop", c.RedOp),
		attribute.String("collbench.placement", c.Placement),
	))
	r.audit.bits.Record(ctx, c.Bits, set)
	r.audit.ulps.Record(ctx, float64(c.MaxULPs), set)
}

// AuditSetting records whether a setting repeated in every check.
func (r *Recorder) AuditSetting(ctx context.Context, setting string, repeats bool) {
	if r == nil {
		return
	}
	v := int64(0)
	if repeats {
		v = 1
	}
	r.audit.repeats.Record(ctx, v, metric.WithAttributeSet(attribute.NewSet(r.common, attribute.String("collbench.audit.setting", setting))))
}

// auditInstruments are the gauges an audit sets.
type auditInstruments struct {
	bits    metric.Int64Gauge
	ulps    metric.Float64Gauge
	repeats metric.Int64Gauge
}

func (a *auditInstruments) create(m metric.Meter) error {
	var err1, err2, err3 error
	a.bits, err1 = m.Int64Gauge("collbench.audit.different_bits", metric.WithUnit("{bit}"),
		metric.WithDescription("Bits of a case's output that differed from what it was held against, over every rank"))
	a.ulps, err2 = m.Float64Gauge("collbench.audit.max_ulps", metric.WithUnit("1"),
		metric.WithDescription("How far apart the farthest differing element lay, in steps of its type"))
	a.repeats, err3 = m.Int64Gauge("collbench.audit.repeats", metric.WithUnit("1"),
		metric.WithDescription("1 when the setting gave the same bits in every check, else 0"))
	return errors.Join(err1, err2, err3)
}
