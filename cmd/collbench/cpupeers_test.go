package main

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/collbench/collbench/internal/tier"
)

// scripts/cpu-peers.sh runs every CPU collective library it finds beside
// collbench and prints each side's busbw and collbench's ratio to it. Its
// figures are a benchmark (docs/performance.md); what CI holds it to is
// that every side ran and gave a figure, at one size of each collective.
// .ci/run installs every peer, so in CI all five must be there.
func TestCPUPeersScript(t *testing.T) {
	tier.System(t, "builds collbench and starts every peer")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "../../scripts/cpu-peers.sh", "4", "64K", "64K")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("cpu-peers.sh: %v\n%s", err, out)
	}
	lines := strings.Split(string(out), "\n")
	_, list, ok := strings.Cut(lines[0], "; peers: ")
	if !ok {
		t.Fatalf("no peers line:\n%s", out)
	}
	peers := strings.Fields(list)
	if os.Getenv("CI") != "" && strings.Join(peers, " ") != "cb-tcp ompi-tcp ompi-shm mpich gloo" {
		t.Errorf("peers %q; .ci/run installs OpenMPI, MPICH and python3-torch", peers)
	}
	gloo := slices.Index(peers, "gloo")
	seen := map[string]bool{}
	for i, line := range lines {
		f := strings.Fields(line)
		if len(f) < 2 || f[1] != "collbench" || i+1 == len(lines) {
			continue
		}
		coll, row := f[0], strings.Fields(lines[i+1])
		seen[coll] = true
		// size, collbench, one busbw per peer, one ratio per peer
		if len(row) != 2+2*len(peers) || row[0] != "65536" {
			t.Errorf("%s: row %q; want 64 KiB with collbench, the %d peers %q and their ratios", coll, lines[i+1], len(peers), peers)
			continue
		}
		for k, v := range row[1:] {
			// gloo has no reduce-scatter (scripts/gloo_colls.py says n/a).
			if coll == "reducescatter" && gloo >= 0 && (k == 1+gloo || k == 1+len(peers)+gloo) && v == "n/a" {
				continue
			}
			if x, err := strconv.ParseFloat(v, 64); err != nil || !(x > 0) {
				t.Errorf("%s: column %d is %q; want a positive figure:\n%s", coll, k+2, v, out)
			}
		}
	}
	for _, coll := range []string{"allreduce", "allgather", "reducescatter", "alltoall"} {
		if !seen[coll] {
			t.Errorf("no table for %s:\n%s", coll, out)
		}
	}
	t.Logf("\n%s", out)
}
