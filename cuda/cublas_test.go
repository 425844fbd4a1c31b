package cuda

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The cuBLAS loader refuses a library that is not cuBLAS, and a missing
// one with the places it tried.
func TestLoadBLASRefusals(t *testing.T) {
	if _, err := os.Stat(libc); err != nil {
		t.Skipf("no %s on this machine", libc)
	}
	if _, err := loadBLAS(libc); err == nil || !strings.Contains(err.Error(), "has no cublasGemmEx") {
		if err == nil {
			t.Skip("this machine has cuBLAS, which loaded after libc was passed over")
		}
		t.Errorf("libc as cuBLAS: %v", err)
	}
	missing := filepath.Join(t.TempDir(), "libcublas.so.12")
	_, err := loadBLAS(missing)
	if err == nil {
		t.Skip("this machine has cuBLAS")
	}
	if !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "COLLBENCH_CUBLAS_LIB") {
		t.Errorf("error does not list the candidates and the remedy: %v", err)
	}
}

func TestBLASErrorText(t *testing.T) {
	if got := (&BLASError{Call: "cublasGemmEx", Status: 13}).Error(); got != "cublasGemmEx failed with cuBLAS status 13" {
		t.Errorf("%q", got)
	}
	if got := (&BLASError{Call: "cublasCreate", Status: -1}).Error(); !strings.Contains(got, "not in the loaded cuBLAS") {
		t.Errorf("%q", got)
	}
}
