package main

import (
	"testing"
	"time"
)

// BenchmarkLaunch16 is the start-up target: 16 local ranks on the host
// backend are started, meet at the rendezvous, connect their mesh (120
// connections) and complete one 8-byte all-reduce, then exit. The whole
// run bounds the time to the first collective from above; the target is
// under 2 s on a 2-core machine. Run with
//
//	go test ./cmd/collbench -run '^$' -bench Launch16 -benchtime 5x
func BenchmarkLaunch16(b *testing.B) {
	b.Setenv(asMain, "1")
	var worst time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		code, _, errOut := runCLI("launch", "-n", "16", "allreduce", "-b", "8", "-e", "8", "-n", "1", "-w", "0", "-c", "0")
		if code != 0 {
			b.Fatalf("exit %d: %s", code, errOut)
		}
		worst = max(worst, time.Since(start))
	}
	b.ReportMetric(worst.Seconds(), "worst-s")
}
