package main

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/collbench/collbench/launch"
)

// runLimited runs this binary as collbench under a shell's ulimit line,
// bounded so that a hang fails the test instead of stalling the suite.
func runLimited(t *testing.T, ulimit string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	script := ulimit + ` && exec "$0" "$@"`
	cmd := exec.CommandContext(ctx, "sh", append([]string{"-c", script, os.Args[0]}, args...)...)
	cmd.Env = append(os.Environ(), asMain+"=1")
	var o, e syncBuffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s; collbench %v hung: %s", ulimit, args, e.String())
	}
	return launch.ExitStatus(cmd, err), o.String(), e.String()
}

// A mesh that needs more descriptors than the hard limit allows is one
// sentence before anything is built, never a silent hang; one that fits
// under the hard limit raises the soft limit and runs.
func TestDescriptorLimit(t *testing.T) {
	sweep := []string{"allreduce", "-b", "8", "-e", "8", "-n", "2"}
	tests := []struct {
		name, ulimit string
		g            string
		code         int
		want         string
	}{
		{"hard limit too low", "ulimit -n 40", "6", exitFailure, "needs about 100 open files but this process may open 40"},
		{"32 ranks under 1024", "ulimit -n 1024", "32", exitFailure, "needs about 1088 open files"},
		{"soft limit raised", "ulimit -Sn 40 && ulimit -Hn 4096", "6", exitOK, "# Out of bounds values : 0 OK"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runLimited(t, tt.ulimit, append(sweep, "-g", tt.g)...)
			if code != tt.code || !strings.Contains(out+errOut, tt.want) {
				t.Errorf("exit %d (want %d), stdout %q, stderr %q; want %q", code, tt.code, out, errOut, tt.want)
			}
			if code != exitOK && strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
				t.Errorf("want one line on stderr: %q", errOut)
			}
		})
	}
}

// Rank counts no host could hold are refused at once.
func TestRankCaps(t *testing.T) {
	for _, args := range [][]string{
		{"allreduce", "-g", "100000"},
		{"profile", "-g", "2000"},
		{"launch", "-n", "100000", "allreduce"},
	} {
		code, _, errOut := runCLI(args...)
		if code != exitUsage || !strings.Contains(errOut, "at most") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%v: exit %d, %q", args, code, errOut)
		}
	}
}
