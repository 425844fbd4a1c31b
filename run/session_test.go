package run

import (
	"os"
	"reflect"
	"strings"
	"testing"
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
		got, err := deviceList(tt.spec, tt.ngpus, tt.local, os.Getenv)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%q/%q: got %v %v, want error %q", tt.spec, tt.env, got, err, tt.err)
		case tt.err == "" && (err != nil || !reflect.DeepEqual(got, tt.want)):
			t.Errorf("%q/%q: got %v %v, want %v", tt.spec, tt.env, got, err, tt.want)
		}
	}
}
