package nccl

import (
	"errors"
	"strings"
	"testing"
)

// TestLoadFailures runs the real loader against a path that does not
// exist: that explicit choice is the only one tried, whatever NCCL this
// machine has, and the error names it in one line. (The loader keeps its
// first result, so this is the only Load here.)
func TestLoadFailures(t *testing.T) {
	_, err := Load("/nonexistent/nccl/libnccl.so.2")
	if err == nil {
		t.Fatal("a library that does not exist loaded: another copy replaced the explicit choice")
	}
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("error %v is not ErrNotFound", err)
	}
	for _, want := range []string{"/nonexistent/nccl/libnccl.so.2", "given by the caller"} {
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
