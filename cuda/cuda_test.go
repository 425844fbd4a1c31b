package cuda

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// libc is a real shared library that is not the CUDA driver.
const libc = "/lib/x86_64-linux-gnu/libc.so.6"

// TestLoadRejectsOtherLibraries points the real loader at libc: it opens
// but has no cuInit, and the error says so in one line. (Load keeps its
// first result, so this is the only Load here.)
func TestLoadRejectsOtherLibraries(t *testing.T) {
	if _, err := os.Stat(libc); err != nil {
		t.Skipf("no %s on this machine", libc)
	}
	_, err := Load(libc)
	if err == nil {
		if Proc("cuInit") == nil {
			t.Fatal("Load succeeded without resolving cuInit")
		}
		t.Skip("this machine has a CUDA driver, which loaded after libc was passed over")
	}
	if !errors.Is(err, ErrNoDriver) {
		t.Errorf("error %v is not ErrNoDriver", err)
	}
	if !strings.Contains(err.Error(), "it is not the CUDA driver library") && !strings.Contains(err.Error(), "cuInit") {
		t.Errorf("error %q does not say why libc was refused", err)
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("error spans lines: %q", err)
	}
	if Proc("cuEventRecord") != nil {
		t.Errorf("no entry point may resolve after a failed load")
	}
	if _, err := DeviceCount(); err == nil || !strings.Contains(err.Error(), "not supported by this driver") {
		t.Errorf("DeviceCount without a driver: %v", err)
	}
}

func TestErrorNames(t *testing.T) {
	tests := []struct {
		code int
		want string
	}{
		{2, "cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY"},
		{100, "cuMemAlloc: CUDA_ERROR_NO_DEVICE"},
		{12345, "cuMemAlloc: CUDA error 12345"},
		{35, "cuMemAlloc: CUDA error 35"}, // a runtime-API code (cudaErrorInsufficientDriver), not a CUresult
	}
	for _, tt := range tests {
		err := ResultError("cuMemAlloc", tt.code)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("code %d: got %v, want prefix %q", tt.code, err, tt.want)
		}
	}
	if ResultError("cuInit", 0) != nil {
		t.Errorf("success is not an error")
	}
}

func TestFormatVersion(t *testing.T) {
	for v, want := range map[int]string{12080: "12.8", 11040: "11.4", 13000: "13.0"} {
		if got := FormatVersion(v); got != want {
			t.Errorf("%d: got %s, want %s", v, got, want)
		}
	}
}

// The NULL stream is handle 0 and is never destroyed, driver or not.
func TestNullStream(t *testing.T) {
	s := NullStream()
	if s.Handle() != 0 {
		t.Errorf("handle %#x", s.Handle())
	}
	if err := s.Destroy(); err != nil {
		t.Errorf("Destroy: %v", err)
	}
}
