package nccl

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/collbench/collbench/internal/cprobe"
)

// The tests in this file check the binding against real NCCL releases:
// their nccl.h (COLLBENCH_NCCL_INCLUDE, folders separated by ':') and
// their libnccl.so.2 (COLLBENCH_NCCL_LIBS, files separated by ':').
// scripts/real-libs.sh fetches Debian's packages and sets both; without
// them the tests skip.

func realList(t *testing.T, name string) []string {
	return strings.Split(cprobe.Env(t, name, false), ":")
}

// stubCUDA is the part of the CUDA headers nccl.h needs, so that the
// check does not need the CUDA toolkit: a runtime version and the stream
// type, and bfloat16 declared present so ncclBfloat16 is defined.
var stubCUDA = map[string]string{
	"cuda_runtime.h": "#include <stddef.h>\n#define CUDART_VERSION 12040\ntypedef struct CUstream_st* cudaStream_t;\n",
	"cuda_fp16.h":    "",
	"cuda_bf16.h":    "#define __CUDA_BF16_TYPES_EXIST__\n",
}

// compileProbe builds and runs a C program against the header in dir.
func compileProbe(t *testing.T, dir, src string, extra ...string) string {
	t.Helper()
	return cprobe.Run(t, src, stubCUDA, []string{dir}, extra...)
}

// headerVersion is NCCL_VERSION_CODE of the nccl.h in dir.
func headerVersion(t *testing.T, dir string) Version {
	out := compileProbe(t, dir, "#include <stdio.h>\n#include \"nccl.h\"\nint main(void) { printf(\"%d\\n\", NCCL_VERSION_CODE); return 0; }\n")
	code, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		t.Fatalf("version %q: %v", out, err)
	}
	return Version(code)
}

// The config's size and every member's offset, and the enum values the
// binding spells out, are those of each real nccl.h.
func TestRealHeaderLayout(t *testing.T) {
	for _, dir := range realList(t, "COLLBENCH_NCCL_INCLUDE") {
		t.Run(filepath.Base(filepath.Dir(filepath.Dir(dir))), func(t *testing.T) {
			v := headerVersion(t, dir)
			l, ok := LayoutFor(v)
			if !ok {
				t.Fatalf("no config layout for %s", v)
			}
			var b strings.Builder
			b.WriteString("#include <stdio.h>\n#include <stddef.h>\n#include \"nccl.h\"\nint main(void) {\n")
			b.WriteString("  printf(\"sizeof %zu\\n\", sizeof(ncclConfig_t));\n")
			for name := range l.Offsets {
				fmt.Fprintf(&b, "  printf(\"offset %s %%zu\\n\", offsetof(ncclConfig_t, %s));\n", name, name)
			}
			enums := map[string]int{"ncclSum": int(Sum), "ncclProd": int(Prod), "ncclMax": int(Max), "ncclMin": int(Min), "ncclAvg": int(Avg),
				"ncclInt8": int(Int8), "ncclUint8": int(Uint8), "ncclInt32": int(Int32), "ncclUint32": int(Uint32), "ncclInt64": int(Int64),
				"ncclUint64": int(Uint64), "ncclFloat16": int(Float16), "ncclFloat32": int(Float32), "ncclFloat64": int(Float64),
				"ncclBfloat16": int(Bfloat16), "NCCL_SPLIT_NOCOLOR": NoColor}
			if v >= TypeSince(Float8e4m3) {
				enums["ncclFloat8e4m3"], enums["ncclFloat8e5m2"] = int(Float8e4m3), int(Float8e5m2)
			}
			if v >= Since("ncclCommWindowRegister") {
				enums["NCCL_WIN_COLL_SYMMETRIC"] = WinCollSymmetric
			}
			for r := Success; r <= InProgress; r++ {
				enums[r.Name()] = int(r)
			}
			if v >= Since("ncclGroupSimulateEnd") {
				// ncclSimInfo_t as the GPU backend lays it out, and the
				// initializer's magic.
				b.WriteString("  { ncclSimInfo_t s = NCCL_SIM_INFO_INITIALIZER;\n")
				b.WriteString("    printf(\"sim size %zu\\n\", sizeof(ncclSimInfo_t));\n")
				b.WriteString("    printf(\"sim time %zu\\n\", offsetof(ncclSimInfo_t, estimatedTime));\n")
				b.WriteString("    printf(\"sim magic %u\\n\", s.magic); }\n")
			}
			for name := range enums {
				fmt.Fprintf(&b, "  printf(\"enum %s %%d\\n\", (int)%s);\n", name, name)
			}
			// The two error-text calls, resolved apart from the others:
			// the binding calls them as taking a result and a communicator.
			b.WriteString("  _Static_assert(__builtin_types_compatible_p(__typeof__(&ncclGetErrorString), const char* (*)(ncclResult_t)), \"ncclGetErrorString\");\n")
			b.WriteString("  _Static_assert(__builtin_types_compatible_p(__typeof__(&ncclGetLastError), const char* (*)(ncclComm_t)), \"ncclGetLastError\");\n")
			b.WriteString("  return 0;\n}\n")
			sim := 0
			for _, line := range strings.Split(strings.TrimSpace(compileProbe(t, dir, b.String())), "\n") {
				f := strings.Fields(line)
				switch {
				case f[0] == "sizeof" && f[1] != strconv.Itoa(l.Size):
					t.Errorf("NCCL %s: sizeof(ncclConfig_t) = %s, binding's layout %d", v, f[1], l.Size)
				case f[0] == "offset" && f[2] != strconv.Itoa(l.Offsets[f[1]]):
					t.Errorf("NCCL %s: offsetof %s = %s, binding's layout %d", v, f[1], f[2], l.Offsets[f[1]])
				case f[0] == "enum" && f[2] != strconv.Itoa(enums[f[1]]):
					t.Errorf("NCCL %s: %s = %s, binding says %d", v, f[1], f[2], enums[f[1]])
				case f[0] == "sim":
					want := map[string]int{"size": SimInfoSize, "time": SimInfoTimeOffset, "magic": SimInfoMagic}[f[1]]
					if f[2] != strconv.Itoa(want) {
						t.Errorf("NCCL %s: ncclSimInfo_t %s = %s, binding says %d", v, f[1], f[2], want)
					}
					sim++
				}
			}
			if v >= Since("ncclGroupSimulateEnd") && sim != 3 {
				t.Errorf("NCCL %s: %d of ncclSimInfo_t's 3 figures checked", v, sim)
			}
		})
	}
}

// Every entry point the binding declares by hand has the real
// declaration's shape: as many parameters, each of the same kind
// (pointer, 32-bit integer or enum, size_t, the 128-byte id by value).
// One the header lacks must be gated above its release.
func TestRealHeaderSignatures(t *testing.T) {
	ours := declaredEntryPoints(t)
	for _, dir := range realList(t, "COLLBENCH_NCCL_INCLUDE") {
		t.Run(filepath.Base(filepath.Dir(filepath.Dir(dir))), func(t *testing.T) {
			v := headerVersion(t, dir)
			work := t.TempDir()
			aux := filepath.Join(work, "aux.txt")
			compileProbe(t, dir, "#include \"nccl.h\"\nint main(void) { return 0; }\n", "-aux-info", aux)
			data, err := os.ReadFile(aux)
			if err != nil {
				t.Fatal(err)
			}
			theirs := map[string][]string{}
			re := regexp.MustCompile(`extern ncclResult_t (\w+) \((.*)\);`)
			for _, m := range re.FindAllStringSubmatch(string(data), -1) {
				theirs[m[1]] = paramKinds(m[2])
			}
			for name, params := range ours {
				real, ok := theirs[name]
				switch {
				case !ok && Since(name) <= v:
					t.Errorf("NCCL %s: nccl.h does not declare %s, which the binding calls from %s on", v, name, Since(name))
				case ok && strings.Join(real, ",") != strings.Join(params, ",") && !(len(real) == 0 && len(params) == 0):
					t.Errorf("NCCL %s: %s takes (%s) in nccl.h, (%s) in the binding", v, name, strings.Join(real, ", "), strings.Join(params, ", "))
				}
			}
			t.Logf("NCCL %s: %d entry points compared", v, len(ours))
		})
	}
}

// declaredEntryPoints reads library.h's list of entry points and the kinds
// of their parameters.
func declaredEntryPoints(t *testing.T) map[string][]string {
	data, err := os.ReadFile("library.h")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	re := regexp.MustCompile(`X\((\w+), \(([^)]*)\), \(`)
	for _, m := range re.FindAllStringSubmatch(string(data), -1) {
		out[m[1]] = paramKinds(cprobe.StripNames(m[2]))
	}
	if len(out) < 30 {
		t.Fatalf("read only %d entry points from library.h", len(out))
	}
	return out
}

// pointerTypedefs are the types NCCL declares as pointers to its structs.
var pointerTypedefs = map[string]bool{"ncclComm_t": true, "cudaStream_t": true, "ncclWindow_t": true}

// paramKinds classifies a parameter list by what the ABI passes.
func paramKinds(list string) []string {
	return cprobe.Kinds(list, pointerTypedefs, nil, map[string]string{"ncclUniqueId": "id"})
}

// libVersion is the release a libnccl.so.2 file is, from the name its
// link resolves to (libnccl.so.2.22.3).
func libVersion(t *testing.T, lib string) Version {
	real, err := filepath.EvalSymlinks(lib)
	if err != nil {
		t.Fatal(err)
	}
	var a, b, c int
	if _, err := fmt.Sscanf(filepath.Base(real), "libnccl.so.%d.%d.%d", &a, &b, &c); err == nil {
		return V(a, b, c)
	}
	// pip's nvidia-nccl wheels ship a bare libnccl.so.2; the release is
	// in the banner string NCCL prints ("2.28.9+cuda13.0").
	data, err := os.ReadFile(real)
	if err != nil {
		t.Fatal(err)
	}
	m := releaseBanner.FindSubmatch(data)
	if m == nil {
		t.Fatalf("%s: no release in the name %s or in its version banner", lib, real)
	}
	a, _ = strconv.Atoi(string(m[1]))
	b, _ = strconv.Atoi(string(m[2]))
	c, _ = strconv.Atoi(string(m[3]))
	return V(a, b, c)
}

// releaseBanner is the release in NCCL's version banner.
var releaseBanner = regexp.MustCompile(`\b(\d+)\.(\d+)\.(\d+)\+cuda\d+\.\d+`)

// Every entry point the binding declares is exported by each real
// library, except those gated above its release.
func TestRealLibraryExports(t *testing.T) {
	ours := declaredEntryPoints(t)
	for _, lib := range realList(t, "COLLBENCH_NCCL_LIBS") {
		v := libVersion(t, lib)
		out, err := exec.Command("nm", "-D", "--defined-only", lib).Output()
		if err != nil {
			t.Fatalf("nm %s: %v", lib, err)
		}
		exported := map[string]bool{}
		sc := bufio.NewScanner(strings.NewReader(string(out)))
		for sc.Scan() {
			if f := strings.Fields(sc.Text()); len(f) == 3 {
				exported[f[2]] = true
			}
		}
		for _, name := range append(keys(ours), "ncclGetErrorString", "ncclGetLastError") {
			if !exported[name] && Since(name) <= v {
				t.Errorf("NCCL %s does not export %s, which the binding calls from %s on", v, name, Since(name))
			}
		}
	}
}

func keys(m map[string][]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// Each real library loads and answers as the binding expects, without a
// GPU (or, on a GPU machine, with one): its version, the gating of newer entry points, a unique id, and
// one line when a communicator cannot be made. Load keeps its first result
// for the process, so each library is checked in a child process.
func TestRealLibraryRuntime(t *testing.T) {
	if lib := os.Getenv("COLLBENCH_TEST_REAL_NCCL"); lib != "" {
		realRuntimeChecks(t, lib)
		return
	}
	for _, lib := range realList(t, "COLLBENCH_NCCL_LIBS") {
		cprobe.InChild(t, "COLLBENCH_TEST_REAL_NCCL="+lib)
	}
}

func realRuntimeChecks(t *testing.T, lib string) {
	want := libVersion(t, lib)
	file, err := filepath.EvalSymlinks(lib) // Debian's libnccl.so.2 links to libnccl.so.2.x.y
	if err != nil {
		t.Fatal(err)
	}
	path, err := Load(lib)
	if err != nil || path != file {
		t.Fatalf("Load(%s) = %q, %v; want the file it names, %s", lib, path, err, file)
	}
	if v := RuntimeVersion(); v != want {
		t.Errorf("version %s, want %s", v, want)
	}
	for _, name := range []string{"ncclAlltoAll", "ncclGather", "ncclScatter", "ncclCommWindowRegister", "ncclGetLastError", "ncclCommSplit"} {
		err := Has(name)
		if (err == nil) != (Since(name) <= want) {
			t.Errorf("NCCL %s: Has(%s) = %v; the binding gates it from %s", want, name, err, Since(name))
		}
	}
	id, err := GetUniqueID()
	if err != nil {
		t.Fatalf("GetUniqueID: %v", err)
	}
	comm, err := InitRank(1, id, 0, nil)
	var e *Error
	switch {
	case err == nil:
		// A GPU machine: the one-rank communicator is the success path.
		if err := comm.Destroy(); err != nil {
			t.Errorf("NCCL %s: destroying a one-rank communicator: %v", want, err)
		}
		t.Logf("NCCL %s: a GPU is present; a one-rank communicator was made", want)
		return
	case !errors.As(err, &e) || e.Result != UnhandledCudaError || strings.Contains(err.Error(), "\n"):
		t.Errorf("InitRank without a GPU: %q, want one line with ncclUnhandledCudaError", err)
	}
	t.Logf("NCCL %s: InitRank without a GPU: %v", want, err)
}
