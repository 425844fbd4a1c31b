package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A run until interrupted (-N 0) keeps one cycle of rows however many
// cycles ran, and still writes its results when interrupted.
func TestRunUntilInterruptedIsBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "soak.json")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(1500*time.Millisecond, cancel)
	var out, errOut bytes.Buffer
	code := cli(ctx, []string{"collbench", "allreduce", "-b", "8", "-e", "16", "-f", "2", "-g", "2", "-n", "1", "-w", "0", "-N", "0", "-J", path}, &out, &errOut)
	if code != exitSignal {
		t.Fatalf("exit %d, want %d: %s", code, exitSignal, errOut.String())
	}
	rows := 0
	for _, line := range strings.Split(out.String(), "\n") {
		if rowRE.MatchString(line) {
			rows++
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Results []json.RawMessage `json:"results"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if rows <= 2 {
		t.Fatalf("only %d rows printed in 1.5 s; the test needs several cycles", rows)
	}
	if len(doc.Results) != 2 {
		t.Errorf("%d cycles of 2 sizes printed, the file holds %d results; want one cycle's 2", rows/2, len(doc.Results))
	}
}

// In a job of two processes of two threads each (-t 2), the spread under
// the table names each process's ranks; the saved run printed again by
// report names them alike (it said "rank 0" where the live table said
// "ranks 0-1", from -g alone).
func TestSavedSpreadNamesEachProcessRanks(t *testing.T) {
	selfEnv(t)
	rec := filepath.Join(t.TempDir(), "run.json")
	code, live, errOut := runCLI("launch", "-n", "2", "allreduce", "-t", "2", "-g", "1", "-b", "1K", "-e", "4K", "-f", "4", "-n", "3",
		"--backend", "host", "-J", rec)
	if code != exitOK || !strings.Contains(live, "ranks 0-1") {
		t.Fatalf("exit %d, the live spread does not name ranks 0-1:\n%s\n%s", code, live, errOut)
	}
	code, saved, errOut := runCLI("report", rec, "-o", "-")
	if code != exitOK || saved != live {
		t.Errorf("exit %d %s; the saved table:\n%s\nthe live one:\n%s", code, errOut, saved, live)
	}
}
