package nccl

import (
	"errors"
	"strings"
	"testing"
)

func TestVersionEncoding(t *testing.T) {
	tests := []struct {
		major, minor, patch int
		code                Version
		text                string
	}{
		{2, 8, 4, 2804, "2.8.4"},
		{2, 9, 6, 20906, "2.9.6"},
		{2, 18, 3, 21803, "2.18.3"},
		{2, 30, 7, 23007, "2.30.7"},
		{2, 4, 0, 2400, "2.4.0"},
	}
	for _, tt := range tests {
		if got := V(tt.major, tt.minor, tt.patch); got != tt.code {
			t.Errorf("V(%d,%d,%d) = %d, want %d", tt.major, tt.minor, tt.patch, got, tt.code)
		}
		if got := tt.code.String(); got != tt.text {
			t.Errorf("%d renders %q, want %q", tt.code, got, tt.text)
		}
	}
}

func TestGate(t *testing.T) {
	tests := []struct {
		name     string
		have     Version
		exported bool
		want     string // "" = allowed
	}{
		{"ncclAlltoAll", V(2, 28, 3), true, ""},
		{"ncclAlltoAll", V(2, 27, 3), true, "ncclAlltoAll is not supported by NCCL 2.27.3 (needs 2.28 or later)"},
		{"ncclCommSplit", V(2, 17, 1), true, "needs 2.18"},
		{"ncclMemAlloc", V(2, 19, 3), true, ""},
		{"ncclMemAlloc", V(2, 18, 5), false, "needs 2.19"},
		{"ncclAllReduce", V(2, 4, 8), true, ""},
		{"ncclGetLastError", V(2, 21, 5), false, "ncclGetLastError is not exported by NCCL 2.21.5"},
	}
	for _, tt := range tests {
		err := gate(tt.name, tt.have, tt.exported)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s on %s: unexpected %v", tt.name, tt.have, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s on %s: got %v, want %q", tt.name, tt.have, err, tt.want)
		}
		var ue *UnsupportedError
		if err != nil && !errors.As(err, &ue) {
			t.Errorf("%s: error is not an *UnsupportedError", tt.name)
		}
	}
}

func TestErrorText(t *testing.T) {
	tests := []struct {
		e    Error
		want string
	}{
		{Error{Call: "ncclAllReduce", Result: InvalidArgument, Text: "invalid argument (run with NCCL_DEBUG=WARN for details)", Last: "AllReduce : invalid root 9"},
			"ncclAllReduce: ncclInvalidArgument (invalid argument (run with NCCL_DEBUG=WARN for details)): AllReduce : invalid root 9"},
		{Error{Call: "ncclCommInitRank", Result: Timeout}, "ncclCommInitRank: ncclTimeout"},
		{Error{Call: "ncclGroupEnd", Result: 42}, "ncclGroupEnd: ncclResult(42)"},
	}
	for _, tt := range tests {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("got %q\nwant %q", got, tt.want)
		}
	}
}

func TestResultNamesMatchHeader(t *testing.T) {
	// ncclResult_t values from nccl.h (2.30).
	want := map[Result]string{0: "ncclSuccess", 1: "ncclUnhandledCudaError", 2: "ncclSystemError", 3: "ncclInternalError",
		4: "ncclInvalidArgument", 5: "ncclInvalidUsage", 6: "ncclRemoteError", 7: "ncclInProgress", 8: "ncclTimeout"}
	for r, name := range want {
		if r.Name() != name {
			t.Errorf("%d: got %s, want %s", int(r), r.Name(), name)
		}
	}
}

func TestTypeAndOpValuesMatchHeader(t *testing.T) {
	types := []DataType{Int8, Uint8, Int32, Uint32, Int64, Uint64, Float16, Float32, Float64, Bfloat16, Float8e4m3, Float8e5m2}
	sizes := []int{1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1}
	for i, ty := range types {
		if int(ty) != i || ty.Size() != sizes[i] {
			t.Errorf("type %d: value %d size %d, want %d and %d", i, int(ty), ty.Size(), i, sizes[i])
		}
	}
	if Sum != 0 || Prod != 1 || Max != 2 || Min != 3 || Avg != 4 || NumOps != 5 {
		t.Errorf("ncclRedOp_t values differ from nccl.h")
	}
	if TypeSince(Bfloat16) != V(2, 10, 0) || TypeSince(Float8e5m2) != V(2, 24, 0) || TypeSince(Float32) != 0 {
		t.Errorf("type gating differs from the releases that added bf16 and fp8")
	}
}
