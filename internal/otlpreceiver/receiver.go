// Package otlpreceiver is a small OTLP/HTTP collector for tests: a real
// HTTP server that accepts protobuf exports on /v1/metrics and /v1/traces
// and keeps what arrived, decoded, for assertions.
package otlpreceiver

import (
	"compress/gzip"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"

	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	common "go.opentelemetry.io/proto/otlp/common/v1"
	metrics "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Receiver is a running collector.
type Receiver struct {
	srv      *httptest.Server
	mu       sync.Mutex
	metrics  []*colmetrics.ExportMetricsServiceRequest
	traces   []*coltrace.ExportTraceServiceRequest
	requests int
	errs     []error
}

// Start listens on a free loopback port.
func Start() *Receiver {
	r := &Receiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	return r
}

// StartOn listens on addr (host:port), for watching a fixed port.
func StartOn(addr string) *Receiver {
	r := &Receiver{}
	r.srv = httptest.NewUnstartedServer(http.HandlerFunc(r.serve))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		panic(fmt.Sprintf("otlpreceiver: listening on %s: %v", addr, err))
	}
	r.srv.Listener.Close()
	r.srv.Listener = l
	r.srv.Start()
	return r
}

// URL is the base endpoint, as OTEL_EXPORTER_OTLP_ENDPOINT takes it.
func (r *Receiver) URL() string { return r.srv.URL }

// Close stops the server.
func (r *Receiver) Close() { r.srv.Close() }

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests++
	fail := func(code int, err error) {
		r.errs = append(r.errs, err)
		http.Error(w, err.Error(), code)
	}
	if req.Method != http.MethodPost || req.Header.Get("Content-Type") != "application/x-protobuf" {
		fail(http.StatusUnsupportedMediaType, fmt.Errorf("%s %s with Content-Type %q", req.Method, req.URL.Path, req.Header.Get("Content-Type")))
		return
	}
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(req.Body)
		if err != nil {
			fail(http.StatusBadRequest, err)
			return
		}
		body = gz
	}
	data, err := io.ReadAll(body)
	if err != nil {
		fail(http.StatusBadRequest, err)
		return
	}
	var reply proto.Message
	switch req.URL.Path {
	case "/v1/metrics":
		m := &colmetrics.ExportMetricsServiceRequest{}
		if err := proto.Unmarshal(data, m); err != nil {
			fail(http.StatusBadRequest, err)
			return
		}
		r.metrics = append(r.metrics, m)
		reply = &colmetrics.ExportMetricsServiceResponse{}
	case "/v1/traces":
		t := &coltrace.ExportTraceServiceRequest{}
		if err := proto.Unmarshal(data, t); err != nil {
			fail(http.StatusBadRequest, err)
			return
		}
		r.traces = append(r.traces, t)
		reply = &coltrace.ExportTraceServiceResponse{}
	default:
		fail(http.StatusNotFound, fmt.Errorf("no such path %s", req.URL.Path))
		return
	}
	out, _ := proto.Marshal(reply)
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

// Requests is how many requests arrived, good or bad.
func (r *Receiver) Requests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests
}

// Errors are the requests the receiver refused, and why.
func (r *Receiver) Errors() []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]error(nil), r.errs...)
}

// Point is one data point of a metric, flattened.
type Point struct {
	Metric   string
	Unit     string
	Attrs    map[string]string
	Resource map[string]string
	Value    float64 // gauges and sums
	Count    uint64  // histograms
	Sum      float64 // histograms
}

// Points lists every data point received, in arrival order.
func (r *Receiver) Points() []Point {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Point
	for _, req := range r.metrics {
		for _, rm := range req.ResourceMetrics {
			res := attrs(rm.GetResource().GetAttributes())
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					base := Point{Metric: m.Name, Unit: m.Unit, Resource: res}
					switch d := m.Data.(type) {
					case *metrics.Metric_Gauge:
						out = appendNumbers(out, base, d.Gauge.DataPoints)
					case *metrics.Metric_Sum:
						out = appendNumbers(out, base, d.Sum.DataPoints)
					case *metrics.Metric_Histogram:
						for _, dp := range d.Histogram.DataPoints {
							p := base
							p.Attrs, p.Count, p.Sum = attrs(dp.Attributes), dp.Count, dp.GetSum()
							out = append(out, p)
						}
					}
				}
			}
		}
	}
	return out
}

// Span is one span received, flattened.
type Span struct {
	Name     string
	ID       string
	Parent   string
	Attrs    map[string]string
	Resource map[string]string
	Start    uint64 // Unix ns
	End      uint64
	Error    bool
}

// Spans lists every span received.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Span
	for _, req := range r.traces {
		for _, rs := range req.ResourceSpans {
			res := attrs(rs.GetResource().GetAttributes())
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					out = append(out, Span{Name: s.Name, ID: fmt.Sprintf("%x", s.SpanId), Parent: fmt.Sprintf("%x", s.ParentSpanId),
						Attrs: attrs(s.Attributes), Resource: res, Start: s.StartTimeUnixNano, End: s.EndTimeUnixNano,
						Error: s.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR})
				}
			}
		}
	}
	return out
}

// appendNumbers adds gauge or sum data points, each as a copy of base.
func appendNumbers(out []Point, base Point, dps []*metrics.NumberDataPoint) []Point {
	for _, dp := range dps {
		p := base
		p.Attrs, p.Value = attrs(dp.Attributes), numberValue(dp)
		out = append(out, p)
	}
	return out
}

func numberValue(dp *metrics.NumberDataPoint) float64 {
	switch v := dp.Value.(type) {
	case *metrics.NumberDataPoint_AsDouble:
		return v.AsDouble
	case *metrics.NumberDataPoint_AsInt:
		return float64(v.AsInt)
	}
	return 0
}

// attrs renders attribute values as strings (ints in decimal).
func attrs(kvs []*common.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		switch v := kv.Value.Value.(type) {
		case *common.AnyValue_StringValue:
			m[kv.Key] = v.StringValue
		case *common.AnyValue_IntValue:
			m[kv.Key] = fmt.Sprint(v.IntValue)
		case *common.AnyValue_DoubleValue:
			m[kv.Key] = fmt.Sprint(v.DoubleValue)
		case *common.AnyValue_BoolValue:
			m[kv.Key] = fmt.Sprint(v.BoolValue)
		default:
			m[kv.Key] = kv.Value.String()
		}
	}
	return m
}
