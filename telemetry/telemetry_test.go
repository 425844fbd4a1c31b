package telemetry

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/internal/otlpreceiver"
)

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func TestConfiguredAndCheck(t *testing.T) {
	tests := []struct {
		name     string
		flag     string
		getenv   func(string) string
		on       bool
		checkErr string
	}{
		{"nothing set", "", env(), false, ""},
		{"flag", "http://127.0.0.1:4318", env(), true, ""},
		{"base variable", "", env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"), true, ""},
		{"metrics variable", "", env("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "https://c/v1/metrics"), true, ""},
		{"traces variable", "", env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://c/v1/traces"), true, ""},
		{"disabled", "http://c:4318", env("OTEL_SDK_DISABLED", "true"), false, ""},
		{"not a URL", "collector:4318", env(), true, "is not an http:// or https:// URL"},
		{"bad variable", "", env("OTEL_EXPORTER_OTLP_ENDPOINT", "grpc://c"), true, "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{"gRPC asked", "", env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"), true, "http/protobuf"},
		{"protocol alone is not a configuration", "", env("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"), false, ""},
		{"bad export interval", "http://c:4318", env("OTEL_METRIC_EXPORT_INTERVAL", "abc"), true, `OTEL_METRIC_EXPORT_INTERVAL="abc" is not a whole number`},
		{"zero export interval", "http://c:4318", env("OTEL_METRIC_EXPORT_INTERVAL", "0"), true, "OTEL_METRIC_EXPORT_INTERVAL=0: the metric reader's period must be at least 1 millisecond"},
		{"zero exporter timeout", "http://c:4318", env("OTEL_EXPORTER_OTLP_TIMEOUT", "0"), true, ""},
		{"bad timeout", "http://c:4318", env("OTEL_EXPORTER_OTLP_TIMEOUT", "-5"), true, "OTEL_EXPORTER_OTLP_TIMEOUT"},
		{"good interval", "http://c:4318", env("OTEL_METRIC_EXPORT_INTERVAL", "5000"), true, ""},
		{"bad interval, telemetry off", "", env("OTEL_METRIC_EXPORT_INTERVAL", "abc"), false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Configured(tc.flag, tc.getenv); got != tc.on {
				t.Errorf("Configured = %v, want %v", got, tc.on)
			}
			err := Check(tc.flag, tc.getenv)
			if (tc.checkErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.checkErr)) {
				t.Errorf("Check = %v, want an error with %q", err, tc.checkErr)
			}
		})
	}
}

// Not configured, Start returns the nil recorder, whose every method is a
// no-op; and nothing reaches a collector on the default port.
func TestOffSendsNothing(t *testing.T) {
	var sink *otlpreceiver.Receiver
	if l, err := net.Listen("tcp", "127.0.0.1:4318"); err == nil {
		l.Close() // the default OTLP/HTTP port is free here; watch it
		sink = otlpreceiver.StartOn("127.0.0.1:4318")
		defer sink.Close()
	}
	for _, v := range append(endpointVars, "OTEL_SDK_DISABLED") {
		t.Setenv(v, "")
	}
	r, err := Start(context.Background(), Options{Command: "allreduce"})
	if err != nil || r != nil {
		t.Fatalf("Start without configuration = %v, %v; want nil, nil", r, err)
	}
	ctx, end := r.Span(context.Background(), "sweep", time.Now())
	r.Measured(ctx, "allreduce", 2, document.Result{Size: 1, OutOfPlace: document.Measure{Time: 1}})
	r.Overlap(ctx, "p", "allreduce", document.OverlapResult{Size: 1, Workload: "gemm", CommSlowdown: 1, ComputeSlowdown: 1})
	end(time.Now(), nil)
	if err := r.Close(nil); err != nil {
		t.Fatal(err)
	}
	if sink != nil && sink.Requests() != 0 {
		t.Errorf("the default endpoint got %d requests", sink.Requests())
	}
}

// The payload arrives at a real OTLP/HTTP receiver: metric names, units,
// attributes, resource and the span tree.
func TestExportReachesReceiver(t *testing.T) {
	rcv := otlpreceiver.Start()
	defer rcv.Close()
	started := time.Now().Add(-time.Second)
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "cluster=test-pod")
	var warned []error
	r, err := Start(context.Background(), Options{Endpoint: rcv.URL(), Command: "allreduce", Version: "test", Backend: "host",
		Devices: []string{"gpu A", "gpu A"}, Hosts: 1, Started: started, Warn: func(err error) { warned = append(warned, err) }})
	if err != nil || r == nil {
		t.Fatalf("Start = %v, %v", r, err)
	}
	_, endOpen := r.Span(context.Background(), "open", started)
	endOpen(started.Add(500*time.Millisecond), nil)
	sweepCtx, endSweep := r.Span(context.Background(), "sweep", started.Add(500*time.Millisecond))
	_, endSize := r.Span(sweepCtx, "size 1M", started.Add(600*time.Millisecond))
	bitDiff := int64(3)
	r.Measured(sweepCtx, "allreduce", 2, document.Result{Size: 1 << 20, Type: "float", RedOp: "sum",
		OutOfPlace: document.Measure{Time: 100, AlgBW: 10.5, BusBW: 10.5, Bitwise: &document.BitwiseMeasure{Bits: bitDiff}},
		OOPIter:    document.Stats{Times: []float64{90, 100, 110}}})
	endSize(started.Add(700*time.Millisecond), nil)
	endSweep(time.Now(), errors.New("boom"))
	r.Overlap(sweepCtx, "galvatron", "allreduce", document.OverlapResult{Size: 1 << 20, Workload: "gemm 256", CommSlowdown: 1.5, ComputeSlowdown: 1.25})
	if err := r.Close(nil); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if len(warned) > 0 || len(rcv.Errors()) > 0 {
		t.Fatalf("export problems: %v %v", warned, rcv.Errors())
	}

	want := map[string]bool{"collbench.collective.duration": false, "collbench.collective.bus_bandwidth": false,
		"collbench.collective.algorithm_bandwidth": false, "collbench.overlap.comm_slowdown": false, "collbench.overlap.compute_slowdown": false,
		"collbench.collective.bitwise_different_bits": false}
	for _, p := range rcv.Points() {
		want[p.Metric] = true
		if p.Resource["service.name"] != "collbench" || p.Resource["collbench.gpu.model"] != "gpu A" || p.Resource["collbench.gpu.count"] != "2" ||
			p.Resource["host.name"] == "" || p.Resource["cluster"] != "test-pod" {
			t.Errorf("%s: resource %v", p.Metric, p.Resource)
		}
		switch p.Metric {
		case "collbench.collective.duration":
			if p.Unit != "s" || p.Count != 3 || p.Sum < 299e-6 || p.Sum > 301e-6 {
				t.Errorf("duration: unit %q, count %d, sum %g; want s, 3 samples summing to 300 µs", p.Unit, p.Count, p.Sum)
			}
			for k, v := range map[string]string{"collbench.collective": "allreduce", "collbench.message.size": "1048576", "collbench.dtype": "float",
				"collbench.group.size": "2", "collbench.placement": "out_of_place", "collbench.command": "allreduce"} {
				if p.Attrs[k] != v {
					t.Errorf("duration attribute %s = %q, want %q", k, p.Attrs[k], v)
				}
			}
		case "collbench.collective.bus_bandwidth":
			if p.Unit != "By/s" || p.Value != 10.5e9 {
				t.Errorf("bus bandwidth %g %s, want 1.05e10 By/s", p.Value, p.Unit)
			}
		case "collbench.collective.bitwise_different_bits":
			if p.Unit != "{bit}" || p.Value != 3 || p.Attrs["collbench.placement"] != "out_of_place" {
				t.Errorf("bitwise different bits %g %s %v, want 3 {bit} out of place", p.Value, p.Unit, p.Attrs)
			}
		case "collbench.overlap.comm_slowdown":
			if p.Value != 1.5 || p.Attrs["collbench.probe"] != "galvatron" {
				t.Errorf("comm slowdown %g %v", p.Value, p.Attrs)
			}
		}
	}
	for name, seen := range want {
		if !seen {
			t.Errorf("metric %s did not arrive", name)
		}
	}

	spans := map[string]otlpreceiver.Span{}
	for _, s := range rcv.Spans() {
		spans[s.Name] = s
	}
	root, ok := spans["collbench allreduce"]
	if !ok || len(spans) != 4 {
		t.Fatalf("spans %v; want the root, open, sweep and one size", spans)
	}
	if root.Start != uint64(started.UnixNano()) {
		t.Errorf("root starts at %d, want %d", root.Start, started.UnixNano())
	}
	for child, parent := range map[string]string{"open": root.ID, "sweep": root.ID, "size 1M": spans["sweep"].ID} {
		if spans[child].Parent != parent {
			t.Errorf("span %s has parent %s, want %s", child, spans[child].Parent, parent)
		}
	}
	if !spans["sweep"].Error || spans["open"].Error {
		t.Errorf("error status: sweep %v (want true), open %v (want false)", spans["sweep"].Error, spans["open"].Error)
	}
}

// A collector that is down costs a bounded wait and an error from Close,
// never a hang.
func TestCollectorDown(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	r, err := Start(context.Background(), Options{Endpoint: "http://" + addr, Command: "allreduce", ShutdownT: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	r.Measured(context.Background(), "allreduce", 2, document.Result{Size: 8, OutOfPlace: document.Measure{Time: 5}})
	begin := time.Now()
	if err := r.Close(nil); err == nil {
		t.Error("Close reported no error with the collector down")
	}
	if d := time.Since(begin); d > 10*time.Second {
		t.Errorf("Close took %v with a 2 s limit", d)
	}
}

// The SDK's own log lines reach the warning handler as one line with
// their values; its informational lines are dropped.
func TestSDKLogLinesAreOneLine(t *testing.T) {
	var got []error
	l := logr.New(errorSink{func(err error) { got = append(got, err) }})
	l.Info("starting")
	l.Error(errors.New("invalid syntax"), "parse duration", "environment variable", "OTEL_METRIC_EXPORT_INTERVAL", "value", "abc")
	if len(got) != 1 || got[0].Error() != "parse duration, environment variable OTEL_METRIC_EXPORT_INTERVAL, value abc: invalid syntax" {
		t.Errorf("handled %v", got)
	}
}
