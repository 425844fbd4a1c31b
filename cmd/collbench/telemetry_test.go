package main

import (
	"sort"
	"strings"
	"testing"

	"github.com/collbench/collbench/internal/otlpreceiver"
	"github.com/collbench/collbench/internal/tier"
)

// A sweep with --otlp-endpoint sends its figures and phases to a real
// OTLP/HTTP receiver: every size of both placements, with the attributes
// and resource a fleet dashboard groups by, and the span tree.
func TestTelemetryFromSweep(t *testing.T) {
	rcv := otlpreceiver.Start()
	defer rcv.Close()
	code, _, errOut := runCLI("allreduce", "-b", "1K", "-e", "16K", "-f", "4", "-g", "2", "-n", "3", "--backend", "host", "--otlp-endpoint", rcv.URL())
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if errs := rcv.Errors(); len(errs) > 0 {
		t.Fatalf("receiver refused requests: %v", errs)
	}
	got := map[string]bool{}
	for _, p := range rcv.Points() {
		if p.Metric != "collbench.collective.duration" {
			continue
		}
		if p.Resource["collbench.backend"] != "host" || p.Resource["collbench.world_size"] != "2" || p.Resource["service.name"] != "collbench" {
			t.Errorf("resource %v", p.Resource)
		}
		if p.Attrs["collbench.collective"] != "allreduce" || p.Attrs["collbench.dtype"] != "float" || p.Attrs["collbench.group.size"] != "2" {
			t.Errorf("attributes %v", p.Attrs)
		}
		if p.Count != 3 {
			t.Errorf("%v: %d samples in the histogram, want 3 (-n 3)", p.Attrs, p.Count)
		}
		got[p.Attrs["collbench.message.size"]+" "+p.Attrs["collbench.placement"]] = true
	}
	for _, size := range []string{"1024", "4096", "16384"} {
		for _, pl := range []string{"out_of_place", "in_place"} {
			if !got[size+" "+pl] {
				t.Errorf("no duration for %s bytes %s; got %v", size, pl, got)
			}
		}
	}
	names := spanNames(rcv)
	if want := "collbench allreduce, open, size 16K, size 1K, size 4K, sweep, write"; names != want {
		t.Errorf("spans %s, want %s", names, want)
	}
}

// A profile launched as two processes takes the endpoint from
// OTEL_EXPORTER_OTLP_ENDPOINT; one process (rank 0) reports for the job.
func TestTelemetryFromLaunchedProfile(t *testing.T) {
	tier.System(t, "a profile over launched processes")
	selfEnv(t)
	rcv := otlpreceiver.Start()
	defer rcv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL())
	code, _, errOut := runCLI("launch", "-n", "2", "profile", "-b", "64K", "-e", "8M", "--colls", "allreduce", "-n", "3", "-w", "1",
		"--overlap-gemm", "64,64,64", "--overlap-bytes", "64K", "--overlap-target", "0.02", "-q", "-o", t.TempDir()+"/p.json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	names := spanNames(rcv)
	if want := "collbench profile, curve allreduce n=2 consecutive, open, overlap gemm 64x64x64 float, suite, write"; names != want {
		t.Errorf("spans %s, want %s", names, want)
	}
	overlap, curves := false, map[string]bool{}
	for _, p := range rcv.Points() {
		overlap = overlap || p.Metric == "collbench.overlap.comm_slowdown" && p.Value > 0
		if p.Metric == "collbench.collective.bus_bandwidth" {
			curves[p.Attrs["collbench.group.size"]] = true
			if p.Resource["collbench.world_size"] != "2" {
				t.Errorf("resource %v, want world size 2", p.Resource)
			}
		}
	}
	if !overlap || !curves["2"] {
		t.Errorf("overlap gauge seen: %v; bandwidth of group sizes %v (want 2)", overlap, curves)
	}
}

func spanNames(r *otlpreceiver.Receiver) string {
	var names []string
	for _, s := range r.Spans() {
		names = append(names, s.Name)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// A health check sends its figures, communicator set-up and verdict to the
// same receiver as the measuring commands, with a span per phase: one
// point per GPU pair and node, and every node's count of findings.
func TestTelemetryFromHealth(t *testing.T) {
	rcv := otlpreceiver.Start()
	defer rcv.Close()
	// On a loaded machine a pair of host ranks can come out slow; the
	// verdict gauge must say whatever the exit code says.
	code, _, errOut := runCLI("health", "-g", "4", "--pair-size", "64K", "--allreduce-size", "64K", "-n", "3", "-w", "1", "-q",
		"--min-drop", "0.9", "--otlp-endpoint", rcv.URL())
	if code != 0 && code != 1 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if errs := rcv.Errors(); len(errs) > 0 {
		t.Fatalf("receiver refused requests: %v", errs)
	}
	figures, seen := map[string]int{}, map[string]float64{}
	for _, p := range rcv.Points() {
		if p.Resource["collbench.world_size"] != "4" || p.Attrs["collbench.command"] != "health" {
			t.Errorf("%s: resource %v, attributes %v", p.Metric, p.Resource, p.Attrs)
		}
		seen[p.Metric] = p.Value
		if p.Metric == "collbench.health.bus_bandwidth" {
			figures[p.Attrs["collbench.health.level"]]++
			if p.Value <= 0 || p.Attrs["collbench.health.node"] == "" {
				t.Errorf("figure %v: %v By/s", p.Attrs, p.Value)
			}
		}
	}
	if figures["intra"] != 6 || figures["node"] != 1 {
		t.Errorf("figures by level %v, want 6 GPU pairs and 1 node", figures)
	}
	if v, ok := seen["collbench.health.healthy"]; !ok || v != map[int]float64{0: 1, 1: 0}[code] {
		t.Errorf("healthy gauge %v (seen %v) after exit %d", v, ok, code)
	}
	if _, ok := seen["collbench.health.findings"]; !ok {
		t.Error("no findings gauge")
	}
	if v := seen["collbench.health.communicator_setup"]; !(v > 0) {
		t.Errorf("communicator set-up %v s", v)
	}
	if v, ok := seen["collbench.health.communicator_teardown"]; !ok || v < 0 {
		t.Errorf("communicator teardown %v s (seen %v)", v, ok)
	}
	if want := "GPU pairs, check, collbench health, node all-reduce, open, write"; spanNames(rcv) != want {
		t.Errorf("spans %s, want %s", spanNames(rcv), want)
	}
}

// An audit sends, from rank 0, the bits each check found different and
// whether each setting repeated, to the collector OTEL_EXPORTER_OTLP_*
// names; its turns' sweeps send their own figures beside them.
func TestTelemetryFromAudit(t *testing.T) {
	tier.System(t, "audit rounds")
	selfEnv(t)
	rcv := otlpreceiver.Start()
	defer rcv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL())
	code, out, errOut := runCLI("audit", "-q", "--algorithms", "ring", "--", "allreduce", "-g", "4", "-b", "4K", "-e", "16K", "-f", "4",
		"-n", "2", "-w", "1", "--backend", "host")
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if errs := rcv.Errors(); len(errs) > 0 {
		t.Fatalf("receiver refused requests: %v", errs)
	}
	kinds, repeats, sweeps := map[string]int{}, map[string]float64{}, 0
	for _, p := range rcv.Points() {
		switch p.Metric {
		case "collbench.audit.different_bits":
			kinds[p.Attrs["collbench.audit.kind"]]++
			if p.Attrs["collbench.audit.kind"] == "sizes" && p.Attrs["collbench.audit.setting"] == "ring/256K" && p.Value == 0 {
				t.Errorf("the ring across sizes sent 0 different bits: %v", p.Attrs)
			}
		case "collbench.audit.repeats":
			repeats[p.Attrs["collbench.audit.setting"]] = p.Value
		case "collbench.collective.bitwise_different_bits":
			sweeps++
		}
	}
	// 2 sizes × 2 placements × 2 settings run to run and across settings
	// (own choice against the ring: 4), fresh processes 4, sizes 2 × 2.
	if kinds["run-to-run"] != 8 || kinds["fresh-processes"] != 4 || kinds["sizes"] != 4 || kinds["settings"] != 4 {
		t.Errorf("checks sent by kind %v", kinds)
	}
	if len(repeats) != 2 || repeats["own choice"] != 1 || repeats["ring/256K"] != 0 {
		t.Errorf("settings sent %v, want the own choice repeating and the ring not", repeats)
	}
	if sweeps == 0 {
		t.Error("the turns' sweeps sent no bitwise figures")
	}
}
