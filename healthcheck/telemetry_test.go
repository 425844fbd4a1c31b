package healthcheck

import (
	"context"
	"testing"
	"time"

	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/internal/otlpreceiver"
	"github.com/collbench/collbench/telemetry"
)

// A health record becomes one gauge point per figure, per process's last
// arrivals, per phase's set-up and per node's findings, named by host.
func TestRecordHealth(t *testing.T) {
	rcv := otlpreceiver.Start()
	defer rcv.Close()
	rec, err := telemetry.Start(context.Background(), telemetry.Options{Endpoint: rcv.URL(), Command: "health", Devices: []string{"a", "b"}, Started: time.Now()})
	if err != nil || rec == nil {
		t.Fatalf("recorder %v: %v", rec, err)
	}
	d := &document.Health{
		Nodes:    []document.HealthNode{{Name: "hostA", Ranks: []int{0}}, {Name: "hostB", Ranks: []int{1}}},
		Inter:    []document.PairFigure{{Node: -1, A: 0, B: 1, BusBW: 10}},
		Job:      &document.BlockFigure{Nodes: []int{0, 1}, BusBW: 8},
		Arrivals: &document.Arrivals{Calls: 20, Procs: []document.ProcArrival{{Proc: 0, Node: 0, Ranks: []int{0}, Last: 2}, {Proc: 1, Node: 1, Ranks: []int{1}, Last: 18}}},
		Setup:    []document.PhaseSetup{{Phase: "node pairs", Waves: 1, TotalS: 0.02, MaxS: 0.02, CloseTotalS: 0.4, CloseMaxS: 0.4}},
		Findings: []document.Finding{{Kind: "straggler", Nodes: []int{1}}},
	}
	recordHealth(context.Background(), rec, d)
	if err := rec.Close(nil); err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, p := range rcv.Points() {
		key := p.Metric
		for _, a := range []string{"collbench.health.level", "collbench.health.node", "collbench.health.peer", "collbench.rank", "collbench.health.phase"} {
			if v := p.Attrs[a]; v != "" {
				key += " " + v
			}
		}
		got[key] = p.Value
	}
	for k, want := range map[string]float64{
		"collbench.health.bus_bandwidth inter hostA hostB":  10e9,
		"collbench.health.bus_bandwidth job":                8e9,
		"collbench.health.last_arrivals hostA 0":            2,
		"collbench.health.last_arrivals hostB 1":            18,
		"collbench.health.communicator_setup node pairs":    0.02,
		"collbench.health.communicator_teardown node pairs": 0.4,
		"collbench.health.findings hostA":                   0,
		"collbench.health.findings hostB":                   1,
		"collbench.health.healthy":                          0,
	} {
		if v, ok := got[k]; !ok || v != want {
			t.Errorf("%s = %v (seen %v), want %v", k, v, ok, want)
		}
	}
}
