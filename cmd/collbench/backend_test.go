package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/collbench/collbench/libpath"
	"github.com/collbench/collbench/nccl"
)

// TestBadDeviceEnv: a malformed NCCL_TESTS_DEVICE is a one-line usage
// error on any backend.
func TestBadDeviceEnv(t *testing.T) {
	t.Setenv("NCCL_TESTS_DEVICE", "first")
	code, out, errOut := runCLI("allreduce", "-b", "8", "-e", "8", "--backend", "host")
	if code != exitUsage || out != "" || !strings.Contains(errOut, "NCCL_TESTS_DEVICE") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// An NCCL that is not found is named with the flag that points at it;
// other failures are left as they are.
func TestWithLibFlag(t *testing.T) {
	notFound := fmt.Errorf("%w: could not open libnccl.so.2", nccl.ErrNotFound)
	if got := withLibFlag(notFound).Error(); !strings.Contains(got, "--nccl-lib") || !errors.Is(withLibFlag(notFound), nccl.ErrNotFound) {
		t.Errorf("not found: %q", got)
	}
	named := fmt.Errorf("%w: %w", nccl.ErrNotFound, &libpath.ExplicitError{Path: "/x/libnccl.so.2", By: "the caller", Err: errors.New("no such file")})
	if got := withLibFlag(named).Error(); strings.Contains(got, "--nccl-lib") {
		t.Errorf("a library that was named gets the advice to name one: %q", got)
	}
	other := errors.New("the CUDA driver sees no GPU")
	if got := withLibFlag(other); got != other {
		t.Errorf("other error changed: %v", got)
	}
}

// On a machine without a GPU, the automatic choice runs on the CPU and
// says so once on stderr (rank 0 alone under launch), with the flag that
// asks for it; asked for, the host backend says nothing.
func TestAutoOnTheCPUSaysSo(t *testing.T) {
	if nodes, _ := filepath.Glob("/dev/nvidia[0-9]*"); len(nodes) > 0 {
		t.Skip("this machine has NVIDIA GPUs")
	}
	selfEnv(t)
	const line = "no NVIDIA GPU here: running on the CPU (the host backend); pass --backend host to ask for it"
	for _, c := range []struct {
		args []string
		want int
	}{
		{[]string{"allreduce", "-b", "8", "-e", "8", "-n", "1", "-w", "0"}, 1},
		{[]string{"launch", "-n", "3", "allreduce", "-b", "8", "-e", "8", "-n", "1", "-w", "0"}, 1},
		{[]string{"allreduce", "-b", "8", "-e", "8", "-n", "1", "-w", "0", "--backend", "host"}, 0},
	} {
		code, out, errOut := runCLI(c.args...)
		if c.args[0] == "launch" && !strings.Contains(out, "# Job: 3 processes × 1 rank(s) from collbench launch,") {
			t.Errorf("%v: the job is not said to come from collbench launch:\n%s", c.args, out)
		}
		if code != exitOK || !strings.Contains(out, "Backend: host") && c.want == 1 || strings.Count(errOut, line) != c.want {
			t.Errorf("%v: exit %d, stderr %q; want %d line(s) %q", c.args, code, errOut, c.want, line)
		}
	}
}

// An NCCL the caller named, by flag or by COLLBENCH_NCCL_LIB, that
// cannot load is a refusal of what was asked: exit 2 and one line, as
// README says, so that launch words it as every rank's usage error and
// not as failed ranks.
func TestNamedNCCLThatCannotLoadIsAUsageError(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "libnccl.so.2")
	for _, tc := range []struct {
		env  string
		args []string
	}{
		{"", []string{"allreduce", "-g", "2", "-b", "8", "-e", "8", "--nccl-lib", missing}},
		{missing, []string{"allreduce", "-g", "2", "-b", "8", "-e", "8"}},
	} {
		if tc.env != "" {
			t.Setenv("COLLBENCH_NCCL_LIB", tc.env)
		}
		code, out, errOut := runCLI(tc.args...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, "the nccl backend is not available") ||
			strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("env %q %v: exit %d, stderr %q; want exit 2 and one line", tc.env, tc.args, code, errOut)
		}
	}
}

// A host algorithm forced for every call that the collective cannot run
// over its group is refused before anything runs (exit 2, one line, no
// table), not at the first call.
func TestForcedHostAlgorithmCheckedUpFront(t *testing.T) {
	for _, c := range []struct {
		algo string
		args []string
		want string
	}{
		{"direct", []string{"allreduce", "-g", "2"}, "COLLBENCH_HOST_ALGO=direct: the host backend has no direct allreduce"},
		{"doubling", []string{"allreduce", "-g", "3"}, "recursive doubling needs a power-of-two group, and allreduce runs on 3 ranks"},
		{"doubling", []string{"allreduce", "-g", "6", "--group-size", "3"}, "runs on 3 ranks"},
		{"doubling", []string{"broadcast", "-g", "2"}, "the host backend has no doubling broadcast"},
	} {
		t.Setenv("COLLBENCH_HOST_ALGO", c.algo)
		code, out, errOut := runCLI(append(c.args, "-b", "1K", "-e", "4K", "--backend", "host")...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, c.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%s %v: exit %d, stdout %q, stderr %q; want exit 2 and one line with %q", c.algo, c.args, code, out, errOut, c.want)
		}
	}
}

// The host backend's log is refused when it is a FIFO (whose open would
// wait for a reader, deaf to an interrupt), and a line it cannot write (a
// full device) fails the run rather than being lost.
func TestHostTuningLogTargets(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	sweep := []string{"allreduce", "-g", "2", "-b", "1K", "-e", "4K", "--backend", "host"}
	t.Setenv("COLLBENCH_HOST_ALGO", "ring")
	t.Setenv("COLLBENCH_HOST_TUNING_LOG", fifo)
	code, out, errOut := runCLI(sweep...)
	if code != exitUsage || out != "" || !strings.Contains(errOut, "COLLBENCH_HOST_TUNING_LOG="+fifo+": a FIFO: name a regular file") {
		t.Errorf("a FIFO: exit %d, stderr %q", code, errOut)
	}
	t.Setenv("COLLBENCH_HOST_TUNING_LOG", "/dev/full")
	code, _, errOut = runCLI(sweep...)
	if code != exitFailure || !strings.Contains(errOut, "logging the host backend's choice (COLLBENCH_HOST_TUNING_LOG): write /dev/full: no space left on device") {
		t.Errorf("/dev/full: exit %d, stderr %q", code, errOut)
	}
}
