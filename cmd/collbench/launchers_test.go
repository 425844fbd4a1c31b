package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// realLauncher finds a launcher from Debian's archive; .ci/run installs
// each, so in CI a missing one fails the test, elsewhere it is skipped.
func realLauncher(t *testing.T, name, pkg string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is missing; .ci/run installs %s", name, pkg)
		}
		t.Skipf("%s not installed (apt-get install %s)", name, pkg)
	}
	return path
}

// runLauncher runs a launcher's command line with this test binary as
// collbench, within a minute, and returns its standard output.
func runLauncher(t *testing.T, what string, env []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(append(os.Environ(), asMain+"=1"), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s\n%s", what, err, out.String(), errOut.String())
	}
	return out.String()
}

// MPICH's hydra mpiexec (PMI_RANK, PMI_SIZE, MPI_LOCALRANKID,
// MPI_LOCALNRANKS) starts the ranks: one table, nothing wrong.
func TestMpichMpiexec(t *testing.T) {
	mpiexec := realLauncher(t, "mpiexec.mpich", "mpich")
	for _, coll := range []string{"allreduce", "allgather", "alltoall", "sendrecv", "broadcast"} {
		out := runLauncher(t, "mpiexec.mpich "+coll, nil, mpiexec, "-n", "4", os.Args[0], coll, "-b", "8", "-e", "64K", "-f", "8", "-n", "2")
		checkTable(t, "mpiexec.mpich "+coll, out)
		if !strings.Contains(out, "# Job: 4 processes × 1 rank(s) from pmi") {
			t.Errorf("%s: job not read from MPICH's environment:\n%s", coll, out)
		}
	}
}

// torchrun's elastic agent (RANK, LOCAL_RANK, WORLD_SIZE,
// LOCAL_WORLD_SIZE, MASTER_ADDR/PORT, TORCHELASTIC_*) starts the ranks,
// with its static rendezvous, whose agent holds MASTER_PORT itself, and
// with --standalone, whose does not. --redirects 2 --tee 2 keep Debian's
// torchrun 1.13 working on Python 3.11 (its default "0" parses to None
// there) and leave standard output alone.
func TestTorchrun(t *testing.T) {
	torchrun := realLauncher(t, "torchrun", "python3-torch")
	port := freePort(t)
	for _, c := range []struct {
		name string
		args []string
		job  string
	}{
		{"static", []string{"--master_port", strconv.Itoa(port)}, "rendezvous 127.0.0.1:" + strconv.Itoa(port+1) + " (MASTER_PORT+1: torchrun's agent holds MASTER_PORT)"},
		{"standalone", []string{"--standalone"}, "token from torchrun run id"},
	} {
		args := append(append([]string{"--nproc_per_node", "4"}, c.args...), "--no_python", "--redirects", "2", "--tee", "2",
			"--log_dir", t.TempDir(), os.Args[0], "allreduce", "-b", "8", "-e", "64K", "-f", "8", "-n", "2")
		out := runLauncher(t, "torchrun "+c.name, nil, torchrun, args...)
		checkTable(t, "torchrun "+c.name, out)
		if !strings.Contains(out, "# Job: 4 processes × 1 rank(s) from torchrun") || !strings.Contains(out, c.job) {
			t.Errorf("%s: want the job from torchrun's environment with %q:\n%s", c.name, c.job, out)
		}
	}
}
