package nccl

import (
	"errors"
	"strings"
	"testing"
)

// TestLoadFailures runs the real loader against a path that does not
// exist: the error names what was looked for and how to point at NCCL
// (the command line adds its own flag to that; see cmd/collbench).
// (The loader keeps its first result, so this is the only Load here.)
func TestLoadFailures(t *testing.T) {
	_, err := Load("/nonexistent/nccl/libnccl.so.2")
	if err == nil {
		t.Skip("an NCCL library was found on this machine")
	}
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("error %v is not ErrNotFound", err)
	}
	for _, want := range []string{"/nonexistent/nccl/libnccl.so.2 (flag)", "COLLBENCH_NCCL_LIB"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("error spans lines: %q", err)
	}
	if err := Has("ncclAllReduce"); err == nil {
		t.Errorf("nothing is callable without a library")
	}
	if Proc("ncclAllReduce") != nil {
		t.Errorf("Proc must be nil without a library")
	}
}
