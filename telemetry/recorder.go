package telemetry

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/collbench/collbench/document"
)

// Options describe the job whose figures are sent.
type Options struct {
	Endpoint  string   // --otlp-endpoint; "" takes the OTEL_EXPORTER_OTLP_* variables
	Command   string   // the collbench subcommand: allreduce, profile, overlap, …
	Version   string   // collbench's version
	Backend   string   // nccl or host
	Devices   []string // every rank's device name, in rank order
	Hosts     int      // hosts the job spans
	Started   time.Time
	Warn      func(error)   // export problems while running; nil drops them
	ShutdownT time.Duration // how long Close waits for the last export; 0 = 10 s
}

// Recorder holds the providers of one command. A nil *Recorder is valid
// and records nothing, which is what every call gets when telemetry is
// not configured.
type Recorder struct {
	mp       *sdkmetric.MeterProvider
	tp       *sdktrace.TracerProvider
	root     trace.Span
	rootCtx  context.Context
	duration metric.Float64Histogram
	busBW    metric.Float64Gauge
	algBW    metric.Float64Gauge
	bitDiff  metric.Float64Gauge
	commX    metric.Float64Gauge
	compX    metric.Float64Gauge
	health   healthInstruments
	audit    auditInstruments
	shutdown time.Duration
	common   attribute.KeyValue
}

// durationBuckets cover 1 µs to 100 s at 1-2-5 steps, in seconds.
var durationBuckets = func() []float64 {
	var b []float64
	for e := -6; e <= 1; e++ {
		p := math.Pow10(e)
		b = append(b, p, 2*p, 5*p)
	}
	return append(b, 100)
}()

// Start returns a recorder that exports to the configured endpoint, or
// nil when telemetry is not configured. The root span starts at
// o.Started, so phases before Start (opening communicators) fit inside.
// Beyond the endpoint, the exporters take the process environment's
// OTEL_* settings (headers, timeouts, compression, resource attributes).
func Start(ctx context.Context, o Options) (*Recorder, error) {
	if !Configured(o.Endpoint, os.Getenv) {
		return nil, nil
	}
	if err := Check(o.Endpoint, os.Getenv); err != nil {
		return nil, err
	}
	if o.Warn != nil {
		h := dedup(o.Warn)
		otel.SetErrorHandler(h)
		// The SDK's own log lines (a setting it could not read) go the
		// same way, one line each, instead of its raw logr format.
		otel.SetLogger(logr.New(errorSink{h}))
	}
	res, err := newResource(ctx, o)
	if err != nil {
		return nil, err
	}
	var mopts []otlpmetrichttp.Option
	var topts []otlptracehttp.Option
	if o.Endpoint != "" {
		mopts = append(mopts, otlpmetrichttp.WithEndpointURL(signalURL(o.Endpoint, "metrics")))
		topts = append(topts, otlptracehttp.WithEndpointURL(signalURL(o.Endpoint, "traces")))
	}
	mexp, err := otlpmetrichttp.New(ctx, mopts...)
	if err != nil {
		return nil, fmt.Errorf("telemetry: metrics exporter: %w", err)
	}
	texp, err := otlptracehttp.New(ctx, topts...)
	if err != nil {
		return nil, fmt.Errorf("telemetry: trace exporter: %w", err)
	}
	r := &Recorder{
		mp:       sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(mexp)), sdkmetric.WithResource(res)),
		tp:       sdktrace.NewTracerProvider(sdktrace.WithBatcher(texp), sdktrace.WithResource(res)),
		shutdown: o.ShutdownT,
		common:   attribute.String("collbench.command", o.Command),
	}
	if r.shutdown == 0 {
		r.shutdown = 10 * time.Second
	}
	if err := r.instruments(); err != nil {
		return nil, err
	}
	started := o.Started
	if started.IsZero() {
		started = time.Now()
	}
	r.rootCtx, r.root = r.tp.Tracer("collbench").Start(ctx, "collbench "+o.Command, trace.WithTimestamp(started),
		trace.WithAttributes(r.common, attribute.String("collbench.backend", o.Backend), attribute.Int("collbench.world_size", len(o.Devices))))
	return r, nil
}

func (r *Recorder) instruments() error {
	m := r.mp.Meter("collbench")
	var err error
	var errs []error
	r.duration, err = m.Float64Histogram("collbench.collective.duration", metric.WithUnit("s"),
		metric.WithDescription("Time of one collective call; the slowest rank's time per iteration where it is measured"),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	errs = append(errs, err)
	for _, g := range []struct {
		dst              *metric.Float64Gauge
		name, unit, what string
	}{
		{&r.busBW, "collbench.collective.bus_bandwidth", "By/s", "Bus bandwidth as nccl-tests computes it, in bytes per second"},
		{&r.algBW, "collbench.collective.algorithm_bandwidth", "By/s", "Algorithm bandwidth (size over time), in bytes per second"},
		{&r.bitDiff, "collbench.collective.bitwise_different_bits", "{bit}",
			"Bits of the output that differed from a reference call's over every rank and repeat of the bitwise check"},
		{&r.commX, "collbench.overlap.comm_slowdown", "1", "Collective time next to compute over its time alone"},
		{&r.compX, "collbench.overlap.compute_slowdown", "1", "Compute time next to the collective over its time alone"},
	} {
		*g.dst, err = m.Float64Gauge(g.name, metric.WithUnit(g.unit), metric.WithDescription(g.what))
		errs = append(errs, err)
	}
	errs = append(errs, r.health.create(m), r.audit.create(m))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("telemetry: instruments: %w", err)
	}
	return nil
}

// newResource describes where the figures come from: the service, this
// host and the job's GPUs. OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME
// override and add to it.
func newResource(ctx context.Context, o Options) (*resource.Resource, error) {
	names := map[string]bool{}
	for _, d := range o.Devices {
		names[d] = true
	}
	models := make([]string, 0, len(names))
	for n := range names {
		models = append(models, n)
	}
	sort.Strings(models)
	res, err := resource.New(ctx,
		resource.WithAttributes(
			attribute.String("service.name", "collbench"),
			attribute.String("service.version", o.Version),
			attribute.String("host.arch", runtime.GOARCH),
			attribute.String("collbench.backend", o.Backend),
			attribute.Int("collbench.world_size", len(o.Devices)),
			attribute.Int("collbench.hosts", o.Hosts),
			attribute.String("collbench.gpu.model", strings.Join(models, ", ")),
			attribute.Int("collbench.gpu.count", len(o.Devices)),
		),
		resource.WithHost(),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(),
	)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	return res, nil
}

// dedup passes each distinct error on once, so a collector that is down
// costs one line, not one per retry.
func dedup(warn func(error)) otel.ErrorHandlerFunc {
	var mu sync.Mutex
	seen := map[string]bool{}
	return func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if !seen[err.Error()] {
			seen[err.Error()] = true
			warn(err)
		}
	}
}

// errorSink is a logr sink that passes the SDK's errors to the error
// handler, with their message and values in one line, and drops its
// informational lines.
type errorSink struct{ h otel.ErrorHandlerFunc }

func (errorSink) Init(logr.RuntimeInfo)            {}
func (errorSink) Enabled(int) bool                 { return false }
func (errorSink) Info(int, string, ...any)         {}
func (s errorSink) WithValues(...any) logr.LogSink { return s }
func (s errorSink) WithName(string) logr.LogSink   { return s }
func (s errorSink) Error(err error, msg string, kv ...any) {
	var b strings.Builder
	b.WriteString(msg)
	for i := 0; i+1 < len(kv); i += 2 {
		fmt.Fprintf(&b, ", %v %v", kv[i], kv[i+1])
	}
	s.h(fmt.Errorf("%s: %w", b.String(), err))
}

// Span records a phase that started at start and returns the function
// that ends it; ctx carries the parent (the root span when it carries
// none of this recorder's).
func (r *Recorder) Span(ctx context.Context, name string, start time.Time, attrs ...attribute.KeyValue) (context.Context, func(end time.Time, err error)) {
	if r == nil {
		return ctx, func(time.Time, error) {}
	}
	if !trace.SpanFromContext(ctx).SpanContext().IsValid() {
		ctx = r.rootCtx
	}
	ctx, span := r.tp.Tracer("collbench").Start(ctx, name, trace.WithTimestamp(start), trace.WithAttributes(attrs...))
	return ctx, func(end time.Time, err error) {
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		span.End(trace.WithTimestamp(end))
	}
}

// Measured records one result row of a collective run over groupSize
// ranks, each placement measured: every per-iteration sample (or the
// reported time) into the duration histogram, the bandwidths into the
// gauges, and the bitwise check's differing bits where it ran. The row is
// the record the run document holds, so the file and the telemetry say
// the same.
func (r *Recorder) Measured(ctx context.Context, collective string, groupSize int, row document.Result) {
	if r == nil {
		return
	}
	for _, pl := range []struct {
		name string
		m    document.Measure
		iter document.Stats
	}{{"out_of_place", row.OutOfPlace, row.OOPIter}, {"in_place", row.InPlace, row.IPIter}} {
		if pl.m.Time <= 0 {
			continue
		}
		set := metric.WithAttributeSet(attribute.NewSet(r.common,
			attribute.String("collbench.collective", collective),
			attribute.Int64("collbench.message.size", row.Size),
			attribute.String("collbench.dtype", row.Type),
			attribute.String("collbench.redop", row.RedOp),
			attribute.Int("collbench.group.size", groupSize),
			attribute.String("collbench.placement", pl.name),
		))
		if len(pl.iter.Times) > 0 {
			for _, us := range pl.iter.Times {
				r.duration.Record(ctx, us*1e-6, set)
			}
		} else {
			r.duration.Record(ctx, pl.m.Time*1e-6, set)
		}
		r.busBW.Record(ctx, pl.m.BusBW*1e9, set)
		r.algBW.Record(ctx, pl.m.AlgBW*1e9, set)
		if b := pl.m.Bitwise; b != nil {
			r.bitDiff.Record(ctx, float64(b.Bits), set)
		}
	}
}

// Overlap records one overlap measurement's slowdowns: r, the record the
// overlap run or the profile's probe holds, named probe.
func (r *Recorder) Overlap(ctx context.Context, probe, collective string, res document.OverlapResult) {
	if r == nil {
		return
	}
	set := metric.WithAttributeSet(attribute.NewSet(r.common,
		attribute.String("collbench.probe", probe),
		attribute.String("collbench.collective", collective),
		attribute.Int64("collbench.message.size", res.Size),
		attribute.String("collbench.workload", res.Workload),
	))
	r.commX.Record(ctx, res.CommSlowdown, set)
	r.compX.Record(ctx, res.ComputeSlowdown, set)
}

// Close ends the root span (failed when err is not nil) and flushes
// everything, waiting at most Options.ShutdownT for the collector.
func (r *Recorder) Close(err error) error {
	if r == nil {
		return nil
	}
	if err != nil {
		r.root.RecordError(err)
		r.root.SetStatus(codes.Error, err.Error())
	}
	r.root.End()
	ctx, cancel := context.WithTimeout(context.Background(), r.shutdown)
	defer cancel()
	return errors.Join(r.tp.Shutdown(ctx), r.mp.Shutdown(ctx))
}
