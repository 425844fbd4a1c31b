package main

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/internal/schemacheck"
	"github.com/collbench/collbench/internal/tier"
)

// readAudit reads and validates an audit record.
func readAudit(t *testing.T, path string) document.AuditRun {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := schemacheck.Validate("../../docs/audit.schema.json", raw); err != nil {
		t.Errorf("the record does not follow docs/audit.schema.json: %v", err)
	}
	var rec document.AuditRun
	if err := json.Unmarshal(raw, &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Price != nil {
		price, _ := json.Marshal(rec.Price)
		if err := schemacheck.Validate("../../docs/ab.schema.json", price); err != nil {
			t.Errorf("the price does not follow docs/ab.schema.json: %v", err)
		}
	}
	return rec
}

// differing is the checks of a kind and setting that found a difference.
func differing(rec document.AuditRun, kind, setting string) []document.AuditCheck {
	var out []document.AuditCheck
	for _, c := range rec.Checks {
		if c.Kind == kind && c.Setting == setting && c.Differs() {
			out = append(out, c)
		}
	}
	return out
}

// The audit on the host backend, four ranks in one process: from 128 KiB
// to 512 KiB the backend's own choice runs recursive doubling up to
// 256 KiB and the ring above, so its 512 KiB call differs from its
// 256 KiB one element by element; the ring's order follows the size at
// every step; recursive doubling and the pipelined chain fix the order,
// repeat in every check (fresh processes included) and one of them is
// chosen, its price measured against the own choice in rounds. Nothing
// differs run to run. Exit 1: the own choice does not repeat.
func TestAuditOnHost(t *testing.T) {
	tier.System(t, "audit rounds")
	selfEnv(t)
	rec := filepath.Join(t.TempDir(), "audit.json")
	code, out, errOut := runCLI("audit", "-q", "--rounds", "3", "-J", rec, "--", "allreduce", "-g", "4", "-b", "128K", "-e", "512K", "-f", "2",
		"-n", "3", "-w", "1", "--backend", "host")
	if code != exitFailure || !strings.Contains(errOut, "the library's own choice does not repeat bit for bit") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	doc := readAudit(t, rec)
	repeats := map[string]bool{}
	for _, s := range doc.Settings {
		repeats[s.Label] = s.Repeats
	}
	want := map[string]bool{"own choice": false, "ring/256K": false, "doubling/256K": true, "pipeline/256K": true}
	if !maps.Equal(repeats, want) {
		t.Errorf("settings repeat %v, want %v\n%s", repeats, want, out)
	}
	own := differing(doc, document.AuditSizes, "own choice")
	if len(own) != 2 || own[0].Size != 512<<10 || own[0].AgainstSize != 256<<10 || own[0].First == nil || own[0].First.ULPs == 0 {
		t.Errorf("the own choice across sizes: %+v, want its 512 KiB calls against its 256 KiB ones, both placements\n%s", own, out)
	}
	if ring := differing(doc, document.AuditSizes, "ring/256K"); len(ring) != 4 {
		t.Errorf("the ring across sizes: %d cases differ, want all 4\n%s", len(ring), out)
	}
	for _, c := range doc.Checks {
		if (c.Kind == document.AuditRunToRun || c.Kind == document.AuditFresh) && c.Differs() {
			t.Errorf("%s of %s at %d differs: %+v", c.Kind, c.Setting, c.Size, c)
		}
	}
	if doc.Chosen == nil || !slices.Contains([]string{"doubling/256K", "pipeline/256K"}, doc.Settings[*doc.Chosen].Label) {
		t.Fatalf("chosen %v\n%s", doc.Chosen, out)
	}
	chosen := doc.Settings[*doc.Chosen].Label
	fresh := 0
	for _, c := range doc.Checks {
		if c.Kind == document.AuditFresh && c.Setting == chosen {
			fresh++
		}
	}
	if fresh == 0 {
		t.Errorf("%s was chosen without a run in fresh processes", chosen)
	}
	p := doc.Price
	if p == nil || p.Rounds != 3 || len(p.Arms) != 2 || p.Arms[1].Label != chosen || len(p.Rows) != 3 {
		t.Fatalf("price %+v\n%s", p, out)
	}
	for _, w := range []string{"# chosen: " + chosen, "# price: 3 rounds", "sizes      ring/256K  the next smaller size"} {
		if !strings.Contains(out, w) {
			t.Errorf("the table lacks %q:\n%s", w, out)
		}
	}
	// The saved record prints the live table.
	code, saved, errOut := runCLI("report", rec, "-o", "-")
	if code != exitOK || saved != out {
		t.Errorf("report %s -o -: exit %d %s\n%s\nwant the live table:\n%s", rec, code, errOut, saved, out)
	}
}

// Where the backend's own choice fixes the order at every size asked
// (recursive doubling up to 256 KiB on four ranks), it repeats, is
// chosen, and repeating costs nothing: no rounds, exit 0. Two processes
// under launch compare their own ranks' outputs and agree.
func TestAuditRepeatsWhereTheOrderIsFixed(t *testing.T) {
	tier.System(t, "audit rounds")
	selfEnv(t)
	rec := filepath.Join(t.TempDir(), "audit.json")
	code, out, errOut := runCLI("launch", "-n", "2", "audit", "-q", "--algorithms", "ring", "-J", rec, "--", "allreduce", "-g", "2",
		"-b", "4K", "-e", "64K", "-f", "4", "-n", "3", "-w", "1", "--backend", "host")
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	doc := readAudit(t, rec)
	if doc.Chosen == nil || *doc.Chosen != 0 || doc.Price != nil || len(doc.Settings) != 2 || !doc.Settings[0].Repeats || doc.Settings[1].Repeats {
		t.Fatalf("chosen %v, price %v, settings %+v\n%s", doc.Chosen, doc.Price, doc.Settings, out)
	}
	ranks := map[int64]bool{}
	for _, c := range differing(doc, document.AuditSettings, "ring/256K") {
		ranks[c.First.Rank] = true
	}
	if len(ranks) == 0 {
		t.Errorf("the ring did not differ from recursive doubling\n%s", out)
	}
	if !strings.Contains(out, "repeating costs nothing") {
		t.Errorf("no word of the price:\n%s", out)
	}
}

// Bad input is refused in one line, exit 2: before any turn runs, or,
// for a space the backend cannot take, once the first turn has said which
// backend the sweep runs on.
func TestAuditBadInput(t *testing.T) {
	selfEnv(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{}, "no sweep given"},
		{[]string{"--repeats", "0", "--", "allreduce"}, "--repeats must be between 1 and 1048576 (got 0)"},
		{[]string{"--repeats", "9223372036854775807", "--", "allreduce"}, "--repeats must be between 1 and 1048576 (got 9223372036854775807)"},
		{[]string{"--arm-timeout", "-1", "--", "allreduce"}, "--arm-timeout must be 0 (automatic) or between 0.001"},
		{[]string{"--arm-timeout", "1e-9", "--", "allreduce"}, "--arm-timeout must be 0 (automatic) or between 0.001"},
		{[]string{"--", "nosuch"}, `"nosuch" is not a collective`},
		{[]string{"--", "allreduce", "-B", "2"}, "-B, --order-inputs and --keep-outputs are audit's to set"},
		{[]string{"--", "allreduce", "--keep-outputs", "x"}, "--order-inputs and --keep-outputs are about the bitwise check's calls"},
		{[]string{"--channels", "0", "--", "allreduce"}, `--channels: "0" is not a channel count from 1 to 64`},
		{[]string{"--algorithms", "spiral", "--", "allreduce"}, `--algorithms: "spiral" is not one`},
		{[]string{"--alpha", "1", "--", "allreduce"}, "--alpha must be from 1e-06 up to 1"},
		{[]string{"--alpha", "1e-320", "--", "allreduce"}, "--alpha must be from 1e-06 up to 1"},
		{[]string{"--", "allreduce", "-J", "x.json"}, "--output_file is audit's to set"},
		{[]string{"-q", "--channels", "2", "--", "allreduce", "-g", "2", "-b", "1K", "-e", "1K", "--backend", "host"}, "the host backend runs one channel"},
	} {
		code, out, errOut := runCLI(append([]string{"audit"}, c.args...)...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, c.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("audit %v: exit %d, stderr %q, want one line with %q", c.args, code, errOut, c.want)
		}
	}
	// A telemetry setting collbench cannot honour is refused by every
	// process of a launched audit before the job meets (the sweep's own
	// check), not by rank 0's telemetry once the others wait for it.
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	code, out, errOut := runCLI("launch", "-n", "2", "audit", "--", "allreduce", "-g", "1", "-b", "1K", "-e", "1K", "--backend", "host")
	if code != exitUsage || out != "" || strings.Count(errOut, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc") != 1 ||
		!strings.Contains(errOut, "ranks 0-1 refused their arguments (exit 2)") {
		t.Errorf("launched audit with OTLP over gRPC: exit %d, stderr:\n%s", code, errOut)
	}
}
