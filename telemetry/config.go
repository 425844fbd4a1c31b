package telemetry

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/collbench/collbench/setting"
)

// The standard variables that turn export on; see the OpenTelemetry
// specification's OTLP exporter configuration.
var endpointVars = []string{
	"OTEL_EXPORTER_OTLP_ENDPOINT",
	"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
	"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
}

// Configured reports whether telemetry is to be sent: an endpoint was
// given by flag or by environment, and OTEL_SDK_DISABLED is not true.
func Configured(endpoint string, getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	if endpoint != "" {
		return true
	}
	for _, v := range endpointVars {
		if getenv(v) != "" {
			return true
		}
	}
	return false
}

// Check finds configuration mistakes before anything is measured: an
// endpoint that is not an http(s) URL, or a protocol other than OTLP/HTTP
// with protobuf, the only one collbench speaks.
func Check(endpoint string, getenv func(string) string) error {
	if !Configured(endpoint, getenv) {
		return nil
	}
	for _, v := range []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"} {
		if p := getenv(v); p != "" && p != "http/protobuf" {
			return fmt.Errorf("%s=%s: collbench exports OTLP over HTTP with protobuf only (http/protobuf)", v, p)
		}
	}
	check := func(name, value string) error {
		if value == "" {
			return nil
		}
		u, err := url.Parse(value)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return setting.Errorf("%s %q is not an http:// or https:// URL", name, value)
		}
		return nil
	}
	if err := check("{OTLPEndpoint}", endpoint); err != nil {
		return err
	}
	for _, v := range endpointVars {
		if err := check(v, getenv(v)); err != nil {
			return err
		}
	}
	// The SDK reads these as whole numbers (milliseconds, or counts) and
	// answers a bad one with a raw log line of its own, then a default.
	for _, v := range numberVars {
		if s := strings.TrimSpace(getenv(v)); s != "" {
			if n, err := strconv.ParseInt(s, 10, 64); err != nil || n < 0 {
				return fmt.Errorf("%s=%q is not a whole number ≥ 0 (milliseconds, or a count)", v, getenv(v))
			} else if n == 0 && slices.Contains(positiveVars, v) {
				// The periodic reader takes no zero: it would say so in
				// a line of its own and fall back to its default.
				return fmt.Errorf("%s=0: the metric reader's period must be at least 1 millisecond", v)
			}
		}
	}
	return nil
}

// positiveVars are those of numberVars the SDK refuses at 0.
var positiveVars = []string{"OTEL_METRIC_EXPORT_INTERVAL", "OTEL_METRIC_EXPORT_TIMEOUT"}

// numberVars are the OTEL_* settings of the exporters and readers
// collbench uses that hold a number.
var numberVars = []string{
	"OTEL_METRIC_EXPORT_INTERVAL", "OTEL_METRIC_EXPORT_TIMEOUT",
	"OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_EXPORTER_OTLP_METRICS_TIMEOUT", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
	"OTEL_BSP_SCHEDULE_DELAY", "OTEL_BSP_EXPORT_TIMEOUT", "OTEL_BSP_MAX_QUEUE_SIZE", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE",
}

// signalURL is the URL of one signal (metrics or traces) under a base
// endpoint, as the specification builds it from OTEL_EXPORTER_OTLP_ENDPOINT.
func signalURL(base, signal string) string {
	return strings.TrimSuffix(base, "/") + "/v1/" + signal
}
