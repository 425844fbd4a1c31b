package cuda

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The cuBLAS loader refuses a library that is not cuBLAS, and a missing
// one, naming each: an explicit choice is never replaced by another copy.
func TestLoadBLASRefusals(t *testing.T) {
	if _, err := os.Stat(libc); err != nil {
		t.Skipf("no %s on this machine", libc)
	}
	if _, err := loadBLAS(libc); err == nil || !strings.Contains(err.Error(), "has no cublasGemmEx") {
		t.Errorf("libc as cuBLAS: %v", err)
	}
	missing := filepath.Join(t.TempDir(), "libcublas.so.12")
	if _, err := loadBLAS(missing); err == nil || !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "given by the caller") {
		t.Errorf("a missing cuBLAS: %v", err)
	}
}

func TestBLASErrorText(t *testing.T) {
	if got := (&BLASError{Call: "cublasGemmEx", Status: 13}).Error(); got != "cublasGemmEx failed with CUBLAS_STATUS_EXECUTION_FAILED (cuBLAS status 13)" {
		t.Errorf("%q", got)
	}
	if got := (&BLASError{Call: "cublasGemmEx", Status: 99}).Error(); got != "cublasGemmEx failed with cuBLAS status 99" {
		t.Errorf("an unknown status: %q", got)
	}
	if got := (&BLASError{Call: "cublasCreate", Status: -1}).Error(); !strings.Contains(got, "not in the loaded cuBLAS") {
		t.Errorf("%q", got)
	}
}
