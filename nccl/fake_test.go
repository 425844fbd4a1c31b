package nccl

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collbench/collbench/internal/cprobe"
)

// fakeNCCL is the smallest library the loader accepts as NCCL 2.22.3: a
// version, an init that fails, the two error-text calls, and a group
// start that fails and a group end still in progress.
const fakeNCCL = `
int ncclGetVersion(int* v) { *v = 22203; return 0; }
int ncclCommInitRank(void* c, int n, char id[128], int r) { return 1; }
const char* ncclGetErrorString(int r) { return "fake error"; }
const char* ncclGetLastError(void* comm) { return "fake last error"; }
int ncclGroupStart(void) { return 4; }
int ncclGroupEnd(void) { return 7; }
`

// The loader's view of a real shared library, built here: the version is
// read, the error-text calls count as exported (they are resolved apart
// from the other entry points), and what the library lacks is refused.
// Load keeps its first result for the process, so the checks run in a
// child process of this test binary.
func TestFakeLibrary(t *testing.T) {
	if path := os.Getenv("COLLBENCH_TEST_FAKE_NCCL"); path != "" {
		fakeLibraryChecks(t, path)
		return
	}
	cprobe.InChild(t, "COLLBENCH_TEST_FAKE_NCCL="+buildFake(t, fakeNCCL))
}

// A library loaded through a symbolic link (a folder of links, as a
// wheel or an install prefix may hold) is named by the file it was mapped
// from, so that two names of one file read the same.
func TestLoadNamesTheRealFile(t *testing.T) {
	if link := os.Getenv("COLLBENCH_TEST_LINKED_NCCL"); link != "" {
		real, err := filepath.EvalSymlinks(link)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := Load(link); err != nil || got != real || got == link {
			t.Fatalf("Load(%s) = %q, %v; want the file it links to, %s", link, got, err, real)
		}
		return
	}
	lib := buildFake(t, fakeNCCL)
	link := filepath.Join(t.TempDir(), "libnccl.so.2")
	if err := os.Symlink(lib, link); err != nil {
		t.Fatal(err)
	}
	cprobe.InChild(t, "COLLBENCH_TEST_LINKED_NCCL="+link)
}

func fakeLibraryChecks(t *testing.T, path string) {
	got, err := Load(path)
	if err != nil || got != path {
		t.Fatalf("Load(%s) = %q, %v", path, got, err)
	}
	if v := RuntimeVersion(); v != V(2, 22, 3) {
		t.Errorf("version %s, want 2.22.3", v)
	}
	for _, name := range []string{"ncclGetErrorString", "ncclGetLastError"} {
		if err := Has(name); err != nil || Proc(name) == nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := Has("ncclAllReduce"); err == nil || !strings.Contains(err.Error(), "not exported by NCCL 2.22.3") {
		t.Errorf("an entry point the library lacks: %v", err)
	}
	if err := Has("ncclCommWindowRegister"); err == nil || !strings.Contains(err.Error(), "2.27") {
		t.Errorf("an entry point newer than the library: %v", err)
	}
	// NCCL's last-error text belongs to a failure read right after it; a
	// result that sets none (in progress) does not carry an older text.
	var e *Error
	if err := GroupStart(); !errors.As(err, &e) || e.Result != InvalidArgument || e.Last != "fake last error" {
		t.Errorf("a failed call: %#v", err)
	}
	if err := GroupEnd(); !errors.As(err, &e) || e.Result != InProgress || e.Last != "" {
		t.Errorf("a call in progress carries an older failure's text: %#v", err)
	}
}

// deferredNCCL behaves as NCCL 2.28 does inside a group: ncclCommSplit
// and ncclCommWindowRegister return with the new handle still NULL,
// ncclCommInitRank with it set, and ncclGroupEnd writes all three through
// the pointers it was given.
const deferredNCCL = `
#include <stddef.h>
static void** split;
static void** init;
static void** win;
static int depth;
int ncclGetVersion(int* v) { *v = 22809; return 0; }
int ncclCommInitRank(void** c, int n, char id[128], int r) { *c = (void*)0x1000; if (depth > 0) init = c; return 0; }
const char* ncclGetErrorString(int r) { return "fake error"; }
const char* ncclGetLastError(void* comm) { return ""; }
int ncclGroupStart(void) { depth++; return 0; }
int ncclGroupEnd(void) {
  if (--depth == 0) {
    if (split) { *split = (void*)0x2000; split = 0; }
    if (init) { *init = (void*)0x1000; init = 0; }
    if (win) { *win = (void*)0x3000; win = 0; }
  }
  return 0;
}
int ncclCommWindowRegister(void* c, void* p, size_t n, void** w, int flags) {
  *w = 0;
  if (depth > 0) { win = w; return 0; }
  *w = (void*)0x3000;
  return 0;
}
int ncclCommSplit(void* c, int color, int key, void** out, void* cfg) {
  *out = 0;
  if (depth > 0) { split = out; return 0; }
  *out = (void*)0x2000;
  return 0;
}
`

// An init, a split and a window registration inside a group are read
// after the group ends, when NCCL has written their handles: a split's or
// a window's would be NULL if read at once, and NCCL writes all three
// through pointers that must outlive the call.
func TestCommsInsideGroup(t *testing.T) {
	if path := os.Getenv("COLLBENCH_TEST_DEFERRED_SPLIT"); path != "" {
		if _, err := Load(path); err != nil {
			t.Fatal(err)
		}
		var ip *Pending
		err := Group(func() error {
			var err error
			ip, err = StartInitRank(1, UniqueID{}, 0, nil)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		comm := ip.Comm()
		if comm == nil || comm.Handle() != 0x1000 {
			t.Fatalf("the communicator after the group: %v, want handle 0x1000", comm)
		}
		var p *Pending
		err = Group(func() error {
			var err error
			p, err = comm.StartSplit(0, 0, nil)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if sub := p.Comm(); sub == nil || sub.Handle() != 0x2000 {
			t.Errorf("the split communicator after the group: %v, want handle 0x2000", sub)
		}
		var wp *Pending
		err = Group(func() error {
			var err error
			wp, err = comm.StartWindowRegister(0x4000, 1<<20, WinCollSymmetric)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if w := wp.Window(); w != 0x3000 {
			t.Errorf("the window after the group: %#x, want 0x3000", w)
		}
		if w, err := comm.WindowRegister(0x4000, 1<<20, WinCollSymmetric); err != nil || w != 0x3000 {
			t.Errorf("a window outside a group: %#x, %v", w, err)
		}
		if c, err := InitRank(1, UniqueID{}, 0, nil); err != nil || c.Handle() != 0x1000 {
			t.Errorf("an init outside a group: %v, %v", c, err)
		}
		if sub, err := comm.Split(0, 0, nil); err != nil || sub == nil || sub.Handle() != 0x2000 {
			t.Errorf("a split outside a group: %v, %v", sub, err)
		}
		return
	}
	cprobe.InChild(t, "COLLBENCH_TEST_DEFERRED_SPLIT="+buildFake(t, deferredNCCL))
}

// buildFake compiles a fake libnccl.so.2 from C source, or skips the test
// without gcc.
func buildFake(t *testing.T, source string) string {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("no gcc to build the fake library")
	}
	dir := t.TempDir()
	src, lib := filepath.Join(dir, "fake.c"), filepath.Join(dir, "libnccl.so.2")
	if err := os.WriteFile(src, []byte(source), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(gcc, "-shared", "-fPIC", "-o", lib, src).CombinedOutput(); err != nil {
		t.Fatalf("building the fake library: %v\n%s", err, out)
	}
	return lib
}
