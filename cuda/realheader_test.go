package cuda

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/collbench/collbench/internal/cprobe"
)

// The real CUDA headers (COLLBENCH_CUDA_INCLUDE: the folder with cuda.h
// and cublas_api.h, from Debian's nvidia-cuda-dev) against what the
// binding spells out by hand. scripts/real-libs.sh sets it when the
// headers' deb is in its cache (FULL=1 fetches it).

func realCUDAInclude(t *testing.T) string {
	return cprobe.Env(t, "COLLBENCH_CUDA_INCLUDE", true)
}

// cublasStubs stand in for cuda_fp16.h and cuda_bf16.h, which cuBLAS's
// headers pull in and which need libcu++ (not in the deb); their types
// are all that is used.
var cublasStubs = map[string]string{
	"cuda_fp16.h": "typedef struct { unsigned short x; } __half;\ntypedef struct { unsigned int x; } __half2;\n",
	"cuda_bf16.h": "typedef struct { unsigned short x; } __nv_bfloat16;\ntypedef struct { unsigned int x; } __nv_bfloat162;\n",
}

// probeHeaders compiles src against the headers, with extra gcc flags,
// and returns its output when it runs.
func probeHeaders(t *testing.T, dir, src string, extra ...string) string {
	t.Helper()
	return cprobe.Run(t, src, cublasStubs, []string{dir}, extra...)
}

// The values the binding spells out are the headers' own: every CUresult
// it can name, cuBLAS's statuses, the data and compute types and the
// device attributes it reads.
func TestRealCUDAValues(t *testing.T) {
	dir := realCUDAInclude(t)
	want := map[string]int{
		"CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT": int(AttrMultiprocessorCount), "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR": int(AttrComputeCapMajor),
		"CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR": int(AttrComputeCapMinor), "CU_DEVICE_ATTRIBUTE_PCI_BUS_ID": int(AttrPCIBusID),
		"CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID": int(AttrPCIDeviceID), "CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID": int(AttrPCIDomainID),
		"CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE": int(AttrMemoryClockRateKHz), "CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH": int(AttrGlobalMemoryBusBits),
		"CU_STREAM_DEFAULT": StreamDefault, "CU_STREAM_NON_BLOCKING": StreamNonBlocking,
		"CU_EVENT_DEFAULT": EventDefault, "CU_EVENT_BLOCKING_SYNC": EventBlockingSync, "CU_EVENT_DISABLE_TIMING": EventDisableTiming,
		"CUDA_R_32F": BLASFloat32, "CUDA_R_16F": BLASFloat16, "CUDA_R_16BF": BLASBfloat16,
		"CUBLAS_COMPUTE_32F": 68, "CUBLAS_GEMM_DEFAULT": -1, "CUBLAS_OP_N": 0, // cublas.c's enum
	}
	for code, name := range knownNames {
		want[name] = code
	}
	for code, name := range blasStatusNames {
		want[name] = code
	}
	names := make([]string, 0, len(want))
	for n := range want {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("#include <stdio.h>\n#include <cuda.h>\n#include <cublas_v2.h>\nint main(void) {\n")
	for _, n := range names {
		fmt.Fprintf(&b, "  printf(\"%s %%d\\n\", (int)%s);\n", n, n)
	}
	b.WriteString("  return 0;\n}\n")
	for _, line := range strings.Split(strings.TrimSpace(probeHeaders(t, dir, b.String())), "\n") {
		f := strings.Fields(line)
		if got, _ := strconv.Atoi(f[1]); got != want[f[0]] {
			t.Errorf("%s is %d in the headers, %d in the binding", f[0], got, want[f[0]])
		}
	}
	t.Logf("%d values compared", len(names))
}

// Every entry point the binding declares by hand (driver.h, cublas.h)
// has the real declaration's shape, under the symbol it resolves.
func TestRealCUDASignatures(t *testing.T) {
	dir := realCUDAInclude(t)
	aux := filepath.Join(t.TempDir(), "aux.txt")
	probeHeaders(t, dir, "#include <cuda.h>\n#include <cublas_v2.h>\nint main(void) { return 0; }\n", "-aux-info", aux)
	data, err := os.ReadFile(aux)
	if err != nil {
		t.Fatal(err)
	}
	theirs := map[string][]string{}
	for _, m := range regexp.MustCompile(`extern (?:CUresult|cublasStatus_t) (\w+) \((.*)\);`).FindAllStringSubmatch(string(data), -1) {
		theirs[m[1]] = cudaParamKinds(m[2])
	}
	n := 0
	for _, file := range []string{"driver.h", "cublas.h"} {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.ReplaceAll(string(src), "\\\n", " ")
		for _, m := range regexp.MustCompile(`X\(\w+, "(\w+)",\s*\(([^)]*)\),`).FindAllStringSubmatch(text, -1) {
			n++
			sym, ours := m[1], cudaParamKinds(cprobe.StripNames(m[2]))
			real, ok := theirs[sym]
			if old, has := olderSymbols[sym]; !ok && has {
				real, ok = theirs[old] // headers older than the symbol
			}
			switch {
			case !ok:
				t.Errorf("%s: the headers declare no %s", file, sym)
			case strings.Join(real, ",") != strings.Join(ours, ","):
				t.Errorf("%s takes (%s) in the headers, (%s) in %s", sym, strings.Join(real, ", "), strings.Join(ours, ", "), file)
			}
		}
	}
	if n < 35 {
		t.Fatalf("read only %d entry points", n)
	}
	t.Logf("%d entry points compared", n)
}

// olderSymbols are the names older headers declare for a symbol the
// binding resolves first, with the same parameters.
var olderSymbols = map[string]string{"cuEventElapsedTime_v2": "cuEventElapsedTime"}

// cudaPointers are the CUDA and cuBLAS types declared as pointers.
var cudaPointers = map[string]bool{"CUcontext": true, "CUstream": true, "CUevent": true, "CUgraph": true,
	"CUgraphExec": true, "cublasHandle_t": true, "cudaStream_t": true}

// cudaParamKinds classifies a parameter list by what the ABI passes.
func cudaParamKinds(list string) []string {
	return cprobe.Kinds(list, cudaPointers, map[string]bool{"CUdeviceptr": true, "cuuint64_t": true}, nil)
}
