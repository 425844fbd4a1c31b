package main

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/collbench/collbench/nccl"
)

func TestDeviceList(t *testing.T) {
	tests := []struct {
		spec, env    string
		ngpus, local int
		want         []int
		err          string
	}{
		{"", "", 3, 0, []int{0, 1, 2}, ""},
		{"", "4", 2, 0, []int{4, 5}, ""},
		{"", "", 2, 1, []int{2, 3}, ""},     // the second process on a host
		{"", "1", 1, 3, []int{4}, ""},       // NCCL_TESTS_DEVICE shifts every process
		{"0,0", "4", 2, 1, []int{0, 0}, ""}, // explicit lists are taken as given
		{" 1, 3 ", "", 2, 0, []int{1, 3}, ""},
		{"0,x", "", 2, 0, nil, `"x" is not a GPU number`},
		{"-1", "", 1, 0, nil, "is not a GPU number"},
		{"0,1,2", "", 2, 0, nil, "lists 3 GPU(s) but -g is 2"},
		{"", "gpu0", 1, 0, nil, `NCCL_TESTS_DEVICE="gpu0" is not a GPU number`},
	}
	for _, tt := range tests {
		t.Setenv("NCCL_TESTS_DEVICE", tt.env)
		got, err := deviceList(tt.spec, tt.ngpus, tt.local)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%q/%q: got %v %v, want error %q", tt.spec, tt.env, got, err, tt.err)
		case tt.err == "" && (err != nil || !reflect.DeepEqual(got, tt.want)):
			t.Errorf("%q/%q: got %v %v, want %v", tt.spec, tt.env, got, err, tt.want)
		}
	}
}

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
	other := errors.New("the CUDA driver sees no GPU")
	if got := withLibFlag(other); got != other {
		t.Errorf("other error changed: %v", got)
	}
}
