package run

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/collbench/collbench/telemetry"
)

// startTelemetry starts the OTLP recorder of a command in the process
// that reports (rank 0), when an endpoint is configured; elsewhere it
// returns nil, which records nothing. The "open" span covers the time
// from started (before the communicators opened) to now.
func (s *Session) startTelemetry(ctx context.Context, cmd string, started time.Time) *telemetry.Recorder {
	j := s.job
	if j.Rank != 0 {
		return nil
	}
	names := make([]string, len(s.Devices))
	hosts := map[string]bool{}
	for i, d := range s.Devices {
		names[i] = d.Name
		hosts[d.Hostname] = true
	}
	logf := j.logf
	rec, err := telemetry.Start(ctx, telemetry.Options{Endpoint: j.Settings.OTLPEndpoint, Command: cmd, Version: j.Settings.Version,
		Backend: s.Backend.Name(), Devices: names, Hosts: len(hosts), Started: started,
		Warn: func(err error) { logf("telemetry: %v", err) }})
	if err != nil {
		logf("telemetry off: %v", err)
		return nil
	}
	_, end := rec.Span(ctx, "open", started, attribute.Int("collbench.world_size", len(names)))
	end(time.Now(), nil)
	return rec
}

// writeAndFlush runs a command's last phase, writing its outputs, under a
// span, then flushes the recorder. It returns write's error. An export
// that fails is reported on stderr but does not change the exit code:
// the measurement stands.
func writeAndFlush(ctx context.Context, rec *telemetry.Recorder, runErr error, logf func(string, ...any), write func() error) error {
	writing := time.Now()
	err := write()
	_, end := rec.Span(ctx, "write", writing)
	end(time.Now(), err)
	closeTelemetry(rec, errors.Join(runErr, err), logf)
	return err
}

// phases turns callbacks that fire as each step ends into spans that
// tile the time: each step starts where the previous one ended.
type phases struct {
	rec  *telemetry.Recorder
	ctx  context.Context
	prev time.Time
}

func newPhases(ctx context.Context, rec *telemetry.Recorder) *phases {
	return &phases{rec: rec, ctx: ctx, prev: time.Now()}
}

// done records the step that just ended.
func (p *phases) done(name string, attrs ...attribute.KeyValue) {
	now := time.Now()
	_, end := p.rec.Span(p.ctx, name, p.prev, attrs...)
	end(now, nil)
	p.prev = now
}
