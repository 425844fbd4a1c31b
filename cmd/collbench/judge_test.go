package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/internal/schemacheck"
	"github.com/collbench/collbench/judge"
)

// --judge on the host backend: the line under the footer gives the best
// size's share of the machine's memory copy rate, and the JSON the
// judgement of every size; without --judge the table has no such line.
func TestJudgeOnHost(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.json")
	code, out, errOut := runCLI("allreduce", "-g", "4", "-b", "64K", "-e", "1M", "-f", "4", "-n", "5", "--judge", "-J", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "# Judgement            : peak ") || !strings.Contains(out, " of memory copy: ") ||
		!strings.Contains(out, "no published figure for this system and size") {
		t.Errorf("no judgement under the table:\n%s", out)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := document.DecodeRun(strings.NewReader(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	jd := doc.Judgement
	if jd == nil || jd.Limit == nil || jd.Limit.What != "memory copy" || !(jd.Limit.GBps > 0) || len(jd.Rows) != 3 || !(jd.Rows[2].WireShare > 0) {
		t.Errorf("judgement %s", data)
	}
	_, out, _ = runCLI("allreduce", "-g", "4", "-b", "64K", "-e", "64K", "-n", "2")
	if strings.Contains(out, "Judgement") {
		t.Errorf("a judgement without --judge:\n%s", out)
	}
}

// --columns judge adds the judgement's columns to every row, the wire's
// share filled in on the host backend; another set is refused. The saved
// run, re-read by report, shows the same columns, and --format csv
// carries them on every out-of-place line.
func TestJudgeColumns(t *testing.T) {
	record := filepath.Join(t.TempDir(), "run.json")
	code, out, errOut := runCLI("allreduce", "-g", "2", "-b", "64K", "-e", "256K", "-f", "4", "-n", "3", "--columns", "judge", "-J", record)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	rows := 0
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(line, "#") {
			continue
		}
		rows++
		if len(f) != 17 || f[13] == "-" || f[14] != "-" || f[15] != "-" || f[16] != "-" {
			t.Errorf("row %q: want nccl-tests' 13 cells, the wire's share, and - for the rest", line)
		}
	}
	if rows != 2 || !strings.Contains(out, "judged (out-of-place)") || !strings.Contains(out, "# Judgement ") {
		t.Errorf("%d rows, want 2 with the judgement's columns and line:\n%s", rows, out)
	}
	expectUsageError(t, []string{"allreduce", "-b", "8", "-e", "8", "--columns", "wide"}, `--columns "wide": want judge (the one set there is)`)

	code, saved, errOut := runCLI("report", record, "-o", "-")
	if code != 0 || !slices.Equal(dataRows(saved), dataRows(out)) || !strings.Contains(saved, "judged (out-of-place)") {
		t.Errorf("report of the saved run: exit %d, rows\n%s\nwant\n%s\n%s", code, saved, out, errOut)
	}
	code, csv, errOut := runCLI("allreduce", "-g", "2", "-b", "64K", "-e", "256K", "-f", "4", "-n", "3", "--columns", "judge", "--format", "csv")
	lines := strings.Split(strings.TrimSpace(csv), "\n")
	if code != 0 || len(lines) != 5 || !strings.HasSuffix(lines[0], ",wire_share,reference,reference_ratio,verdict,estimate_ratio") ||
		strings.Count(lines[1], ",") != strings.Count(lines[0], ",") || strings.HasSuffix(lines[1], ",,,,,") || !strings.HasSuffix(lines[2], ",,,,,") {
		t.Errorf("CSV of the judged run: exit %d\n%s\n%s", code, csv, errOut)
	}
}

// dataRows are a table's lines that are not comments, in order.
func dataRows(table string) []string {
	var rows []string
	for _, line := range strings.Split(table, "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			rows = append(rows, line)
		}
	}
	return rows
}

// collbench references lists the built-in table and a site's; --json
// prints the format --references reads; a file that is not a table is
// one line and exit 2, for references and for a collective alike.
func TestReferences(t *testing.T) {
	dir := t.TempDir()
	code, js, errOut := runCLI("references", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if err := schemacheck.Validate("../../docs/references.schema.json", []byte(js)); err != nil {
		t.Errorf("references --json does not follow docs/references.schema.json: %v", err)
	}
	tbl, err := judge.ReadTable(strings.NewReader(js))
	if err != nil || len(tbl.Entries) != len(judge.Builtin().Entries) {
		t.Fatalf("--json does not read back: %v", err)
	}
	tbl.Entries = []judge.Reference{{ID: "site-a100", GPU: "A100", Link: "NVLink3", GPUsPerNode: 8, NodesMin: 1, NodesMax: 1,
		Collective: "allreduce", MinBytes: 1 << 30, BusBW: 230, Conditions: "our DGX A100s, 2026-10", Source: "site acceptance run", Date: "2026-10"}}
	site := filepath.Join(dir, "site.json")
	b, _ := json.Marshal(tbl)
	if err := os.WriteFile(site, b, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI("references", "--references", site)
	if code != 0 || !strings.Contains(out, "h100x8-ar-nvls") || !strings.Contains(out, "site-a100 (site)") {
		t.Errorf("exit %d, stderr %q:\n%s", code, errOut, out)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"version": 1, "entries": [{"id": "x", "gpu": "H100", "link": "NVLink4", "gpus_per_node": 8, "nodes_min": 1, "collective": "allreduce", "busbw_gbps": 1}]}`), 0o644)
	expectUsageError(t, []string{"references", "--references", bad}, bad+": entry 1 (\"x\"): no source")
	expectUsageError(t, []string{"allreduce", "-b", "8", "-e", "8", "--references", bad}, bad+": entry 1")
	expectUsageError(t, []string{"references", "extra"}, `unexpected argument "extra"`)
	expectUsageError(t, []string{"allreduce", "-b", "8", "-e", "8", "--nccl-estimate"}, "NCCL's estimate (ncclGroupSimulateEnd) applies to the nccl backend only")
}

// compare shows how two runs saved with --judge stand against the wire,
// and says nothing of it for runs saved without.
func TestCompareJudged(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for i, extra := range [][]string{{"--judge"}, {"--judge"}, nil} {
		p := filepath.Join(dir, fmt.Sprintf("r%d.json", i))
		args := append([]string{"allreduce", "-g", "2", "-b", "64K", "-e", "256K", "-f", "4", "-n", "3", "-J", p}, extra...)
		if code, _, errOut := runCLI(args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		paths = append(paths, p)
	}
	code, out, errOut := runCLI("compare", paths[0], paths[1], "--threshold", "1000")
	if code != 0 || !strings.Contains(out, "# judged base: peak ") || !strings.Contains(out, "# judged new : peak ") ||
		!strings.Contains(out, "# 2 judged size(s); the new run fell below a published figure the base met at 0") {
		t.Errorf("exit %d, stderr %q:\n%s", code, errOut, out)
	}
	_, out, _ = runCLI("compare", paths[2], paths[2])
	if strings.Contains(out, "judged") {
		t.Errorf("runs without --judge judged:\n%s", out)
	}
}

// health --judge on the host backend: the record says what each measured
// level was judged against (the machine's copy rate inside it) and holds
// to the schema; the summary says so too.
func TestHealthJudged(t *testing.T) {
	rec := filepath.Join(t.TempDir(), "h.json")
	code, out, errOut := runCLI("health", "-g", "4", "-n", "5", "--judge", "-J", rec)
	if code != 0 && code != exitFailure { // a loaded machine may flag a pair; that is the check's job
		t.Fatalf("exit %d: %s", code, errOut)
	}
	d := readHealth(t, rec)
	if len(d.Judged) != 2 || d.Judged[0].Level != "intra" || d.Judged[1].Level != "node" {
		t.Fatalf("judged %+v, want the GPU-pair and node levels", d.Judged)
	}
	for _, l := range d.Judged {
		if l.Limit == nil || l.Limit.What != "memory copy" || !(l.Limit.GBps > 0) {
			t.Errorf("level %s judged against %+v, want the memory copy rate", l.Level, l.Limit)
		}
	}
	if !strings.Contains(out, "# Judged (intra): against memory copy: ") {
		t.Errorf("the summary does not say what it judged against:\n%s", out)
	}
}
