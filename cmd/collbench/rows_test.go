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
