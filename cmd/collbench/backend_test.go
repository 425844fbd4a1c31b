package main

import (
	"errors"
	"fmt"
	"strings"
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
