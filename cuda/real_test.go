package cuda

import (
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/collbench/collbench/internal/cprobe"
)

// The tests in this file check the binding against a real driver library
// (COLLBENCH_CUDA_DRIVER: a libcuda.so.1, such as Debian's libcuda1);
// scripts/real-libs.sh fetches it and sets the variable. They expect a
// machine without a GPU, run as an unprivileged user.

func realDriver(t *testing.T) string {
	return cprobe.Env(t, "COLLBENCH_CUDA_DRIVER", false)
}

// Every entry point the binding resolves is exported by the real driver,
// under the symbol the binding asks for (the _v2 names included).
func TestRealDriverExports(t *testing.T) {
	lib := realDriver(t)
	out, err := exec.Command("nm", "-D", "--defined-only", lib).Output()
	if err != nil {
		t.Fatalf("nm %s: %v", lib, err)
	}
	exported := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) == 3 {
			exported[f[2]] = true
		}
	}
	src, err := os.ReadFile("driver.h")
	if err != nil {
		t.Fatal(err)
	}
	syms := regexp.MustCompile(`X\(\w+, "(\w+)"`).FindAllStringSubmatch(string(src), -1)
	if len(syms) < 30 {
		t.Fatalf("read only %d entry points from driver.h", len(syms))
	}
	for _, m := range syms {
		if !exported[m[1]] && !exported[olderSymbols[m[1]]] {
			t.Errorf("%s does not export %s", lib, m[1])
		}
	}
}

// Without a GPU the real driver loads, cuInit fails with a named CUDA
// error in one line (on a GPU machine it succeeds and sees the GPUs), and
// the library stays loaded: it still says which
// CUDA version it supports. Load keeps its first result, so this runs in a
// child process.
func TestRealDriverWithoutGPU(t *testing.T) {
	if lib := os.Getenv("COLLBENCH_TEST_REAL_CUDA"); lib != "" {
		path, loadErr := Load(lib)
		if loadErr == nil && path == lib {
			// A GPU machine: the driver initialised, which is the
			// other half of what this test is for.
			n, err := DeviceCount()
			if err != nil || n < 1 {
				t.Fatalf("cuInit succeeded but DeviceCount = %d, %v", n, err)
			}
			t.Logf("%s: cuInit succeeded; %d GPU(s)", lib, n)
			return
		}
		if path != lib || !errors.Is(loadErr, ErrNoDriver) || !strings.Contains(loadErr.Error(), "cuInit") ||
			!strings.Contains(loadErr.Error(), "CUDA_ERROR_") || strings.Contains(loadErr.Error(), "\n") {
			t.Fatalf("Load(%s) = %q, %v; want the driver loaded and cuInit's named error in one line", lib, path, loadErr)
		}
		if Proc("cuInit") == nil {
			t.Error("the driver was unloaded after cuInit failed")
		}
		v, err := DriverVersion()
		if err != nil || v < 12000 {
			t.Errorf("DriverVersion = %d, %v", v, err)
		}
		t.Logf("%s: %v; the driver supports CUDA %s", lib, loadErr, FormatVersion(v))
		return
	}
	lib := realDriver(t)
	cprobe.InChild(t, "COLLBENCH_TEST_REAL_CUDA="+lib)
}

// A real cuBLAS (COLLBENCH_CUBLAS: libcublas.so.12, with libcublasLt
// beside it) exports the four entry points the binding resolves and loads
// by path. The loader keeps the first library, so this runs in a child.
func TestRealCUBLAS(t *testing.T) {
	if lib := os.Getenv("COLLBENCH_TEST_REAL_CUBLAS"); lib != "" {
		if path, err := LoadBLAS(lib); err != nil || path != lib {
			t.Fatalf("LoadBLAS(%s) = %q, %v", lib, path, err)
		}
		return
	}
	lib := cprobe.Env(t, "COLLBENCH_CUBLAS", true)
	out, err := exec.Command("nm", "-D", "--defined-only", lib).Output()
	if err != nil {
		t.Fatalf("nm %s: %v", lib, err)
	}
	src, err := os.ReadFile("cublas.h")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`X\(\w+, "(\w+)"`).FindAllStringSubmatch(string(src), -1) {
		if !regexp.MustCompile(`(?m) ` + m[1] + `(@.*)?$`).Match(out) {
			t.Errorf("%s does not export %s", lib, m[1])
		}
	}
	cprobe.InChild(t, "COLLBENCH_TEST_REAL_CUBLAS="+lib)
}
