// Package telemetry sends what collbench measures to an OpenTelemetry
// collector over OTLP/HTTP: a latency histogram and bandwidth gauges per
// collective, size, data type, group size and backend, and spans for the
// phases of a sweep. It is off, and sends nothing, unless an endpoint is
// configured (--otlp-endpoint or the standard OTEL_EXPORTER_OTLP_*
// variables).
package telemetry
