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

	"github.com/collbench/collbench/bench"
)

func TestRowKeeper(t *testing.T) {
	tests := []struct {
		cycles, perCycle, add int
		wantSizes             []int64
	}{
		{1, 3, 3, []int64{0, 1, 2}},
		{2, 3, 6, []int64{0, 1, 2, 3, 4, 5}},
		{0, 3, 2, []int64{0, 1}},
		{0, 3, 10, []int64{9, 7, 8}}, // each slot the latest row of its place in the cycle
	}
	for _, tt := range tests {
		k := newRowKeeper(tt.cycles, tt.perCycle)
		for i := 0; i < tt.add; i++ {
			k.add(bench.Row{Size: int64(i)})
		}
		var got []int64
		for i, r := range k.rows {
			if k.results[i].Size != r.Size {
				t.Errorf("row %d and result %d disagree", r.Size, k.results[i].Size)
			}
			got = append(got, r.Size)
		}
		if k.seen() != tt.add || len(got) != len(tt.wantSizes) {
			t.Fatalf("%+v: kept %v, seen %d", tt, got, k.seen())
		}
		for i := range got {
			if got[i] != tt.wantSizes[i] {
				t.Errorf("%+v: kept %v, want %v", tt, got, tt.wantSizes)
				break
			}
		}
	}
}

// A run until interrupted (-N 0) keeps one cycle of rows however many
// cycles ran, and still writes its results when interrupted.
func TestRunUntilInterruptedIsBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "soak.json")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(1500*time.Millisecond, cancel)
	var out, errOut bytes.Buffer
	code := run(ctx, []string{"collbench", "allreduce", "-b", "8", "-e", "16", "-f", "2", "-g", "2", "-n", "1", "-w", "0", "-N", "0", "-J", path}, &out, &errOut)
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
