package libpath

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// touch creates an empty file standing in for a library.
func touch(t *testing.T, path string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestCandidatesOrder(t *testing.T) {
	root := t.TempDir()
	spec := Spec{File: "libnccl.so.2", EnvVar: "COLLBENCH_NCCL_LIB", HomeVars: []string{"NCCL_HOME"}, WheelDirs: []string{"nccl"}}
	ld := touch(t, filepath.Join(root, "ld/libnccl.so.2"))
	home := touch(t, filepath.Join(root, "home/lib/libnccl.so.2"))
	venv := touch(t, filepath.Join(root, "venv/lib/python3.11/site-packages/nvidia/nccl/lib/libnccl.so.2"))
	pathPy := touch(t, filepath.Join(root, "py/lib/python3.12/dist-packages/nvidia/nccl/lib/libnccl.so.2"))
	touch(t, filepath.Join(root, "py/bin/python3"))
	vars := map[string]string{
		"COLLBENCH_NCCL_LIB": filepath.Join(root, "env/libnccl.so.2"),
		"LD_LIBRARY_PATH":    filepath.Join(root, "ld") + ":" + filepath.Join(root, "missing"),
		"NCCL_HOME":          filepath.Join(root, "home"),
		"VIRTUAL_ENV":        filepath.Join(root, "venv"),
		"PATH":               filepath.Join(root, "py/bin"),
	}
	env := OSEnv()
	env.Getenv = func(k string) string { return vars[k] }
	got := Candidates(spec, filepath.Join(root, "flag"), env)

	var from []string
	var paths []string
	for _, c := range got {
		if c.From == "system" && c.Path != spec.File {
			continue // the real system folders of this machine
		}
		from = append(from, c.From)
		paths = append(paths, c.Path)
	}
	wantFrom := []string{"flag", "COLLBENCH_NCCL_LIB", "LD_LIBRARY_PATH", "NCCL_HOME", "system", "python", "python"}
	wantPaths := []string{filepath.Join(root, "flag/libnccl.so.2"), vars["COLLBENCH_NCCL_LIB"], ld, home, "libnccl.so.2", venv, pathPy}
	if !reflect.DeepEqual(from, wantFrom) {
		t.Errorf("order of sources:\n got %v\nwant %v", from, wantFrom)
	}
	if !reflect.DeepEqual(paths, wantPaths) {
		t.Errorf("paths:\n got %v\nwant %v", paths, wantPaths)
	}
}

func TestCandidatesWithoutWheel(t *testing.T) {
	env := OSEnv()
	env.Getenv = func(string) string { return "" }
	for _, c := range Candidates(Spec{File: "libcuda.so.1"}, "", env) {
		if c.From == "python" {
			t.Errorf("the driver library is never looked for in Python environments: %v", c)
		}
	}
}

func TestDescribe(t *testing.T) {
	got := Describe([]Candidate{{"/a/libx.so", "flag"}, {"libx.so", "system"}})
	if want := "/a/libx.so (flag), libx.so (system)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	lib := touch(t, filepath.Join(dir, "libx.so.1"))
	env := OSEnv()
	env.Getenv = func(k string) string {
		if k == "LD_LIBRARY_PATH" {
			return dir
		}
		return ""
	}
	spec := Spec{File: "libx.so.1", EnvVar: "X_LIB", Hint: "set X_LIB"}
	var tried []string
	path, err := Open(spec, "", env, func(p string) error {
		tried = append(tried, p)
		if p == lib {
			return nil
		}
		return errors.New("cannot load " + p)
	})
	if err != nil || path != lib || len(tried) != 1 {
		t.Errorf("got %q %v after %v, want %s at the first try", path, err, tried, lib)
	}

	_, err = Open(spec, "", env, func(p string) error { return errors.New("refused " + p) })
	if err == nil {
		t.Fatal("nothing loads, yet no error")
	}
	for _, want := range []string{"could not open libx.so.1", lib + " (LD_LIBRARY_PATH)", "set X_LIB", "refused " + lib} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

// A library named explicitly, by the caller or by the spec's variable, is
// the only one tried: when it does not load, that is the error, even
// though another copy would load.
func TestOpenExplicitIsFinal(t *testing.T) {
	dir := t.TempDir()
	lib := touch(t, filepath.Join(dir, "libx.so.1"))
	spec := Spec{File: "libx.so.1", EnvVar: "X_LIB", Hint: "set X_LIB"}
	for _, tt := range []struct {
		name, flag, envVar, want string
	}{
		{"flag", "/nonexistent/libx.so.1", "", "given by the caller"},
		{"variable", "", "/nonexistent/lib", "given by X_LIB"},
		{"flag over variable", "/nonexistent/libx.so.1", lib, "given by the caller"},
	} {
		env := OSEnv()
		env.Getenv = func(k string) string {
			switch k {
			case "LD_LIBRARY_PATH":
				return dir
			case "X_LIB":
				return tt.envVar
			}
			return ""
		}
		var tried []string
		path, err := Open(spec, tt.flag, env, func(p string) error {
			tried = append(tried, p)
			if p == lib {
				return nil
			}
			return errors.New("no such file")
		})
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "/nonexistent/") || len(tried) != 1 {
			t.Errorf("%s: loaded %q (%v) after trying %v; want the explicit choice's error alone", tt.name, path, err, tried)
		}
	}
}

// A path that names something other than a regular file is refused
// before the loader opens it: a FIFO with no writer would block the
// loader for ever.
func TestOpenRefusesWhatIsNoFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "libx.so.1")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFO here:", err)
	}
	spec := Spec{File: "libx.so.1", EnvVar: "X_LIB"}
	env := OSEnv()
	env.Getenv = func(string) string { return "" }
	for path, want := range map[string]string{fifo: "a named pipe (FIFO), not a library", "/dev/zero": "a device, not a library"} {
		_, err := Open(spec, path, env, func(p string) error {
			t.Errorf("%s was handed to the loader", p)
			return nil
		})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", path, err, want)
		}
	}
}

// An explicit path is a file when it names an existing file, whatever its
// name; a folder when it ends in a slash, or names nothing and has no
// ".so" in it.
func TestExplicitFileOrFolder(t *testing.T) {
	root := t.TempDir()
	file := touch(t, filepath.Join(root, "passwd"))
	spec := Spec{File: "libcuda.so.1", EnvVar: "COLLBENCH_CUDA_LIB"}
	env := OSEnv()
	env.Getenv = func(string) string { return "" }
	tests := []struct{ explicit, want string }{
		{file, file},
		{root, filepath.Join(root, "libcuda.so.1")},
		{root + "/", filepath.Join(root, "libcuda.so.1")},
		{filepath.Join(root, "missing"), filepath.Join(root, "missing/libcuda.so.1")},
		{filepath.Join(root, "libcuda.so.550"), filepath.Join(root, "libcuda.so.550")},
	}
	for _, tt := range tests {
		got := Candidates(spec, tt.explicit, env)
		if len(got) == 0 || got[0].Path != tt.want || got[0].From != "flag" {
			t.Errorf("explicit %q: first candidate %v, want %q", tt.explicit, got, tt.want)
		}
	}
}

// Debian's driver packages put libcuda under …/nvidia/current, which is
// searched after the folder its alternatives link would be in.
func TestCandidatesDebianDriver(t *testing.T) {
	const debian = "/usr/lib/x86_64-linux-gnu/nvidia/current/libcuda.so.1"
	env := OSEnv()
	env.Getenv = func(string) string { return "" }
	env.Exists = func(p string) bool { return p == debian }
	for _, c := range Candidates(Spec{File: "libcuda.so.1"}, "", env) {
		if c.Path == debian && c.From == "system" {
			return
		}
	}
	t.Errorf("%s is not a candidate", debian)
}

// TestCUBLASThirteenAndTwelve: CUDA 13's toolkit and PyTorch's cu130
// wheels ship libcublas.so.13 (the wheel under nvidia/cu13/lib), CUDA 12's
// libcublas.so.12; both are found, the newer first in each folder.
func TestCUBLASThirteenAndTwelve(t *testing.T) {
	root := t.TempDir()
	wheel13 := touch(t, filepath.Join(root, "venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcublas.so.13"))
	wheel12 := touch(t, filepath.Join(root, "venv/lib/python3.12/site-packages/nvidia/cublas/lib/libcublas.so.12"))
	home13 := touch(t, filepath.Join(root, "cuda/targets/x86_64-linux/lib/libcublas.so.13"))
	home12 := touch(t, filepath.Join(root, "cuda/targets/x86_64-linux/lib/libcublas.so.12"))
	vars := map[string]string{"CUDA_HOME": filepath.Join(root, "cuda"), "VIRTUAL_ENV": filepath.Join(root, "venv")}
	env := OSEnv()
	env.Getenv = func(k string) string { return vars[k] }
	var paths []string
	for _, c := range Candidates(CUBLAS, "", env) {
		if c.From != "system" || !filepath.IsAbs(c.Path) {
			paths = append(paths, c.Path)
		}
	}
	want := []string{home13, home12, "libcublas.so.13", "libcublas.so.12", wheel12, wheel13}
	if !reflect.DeepEqual(paths, want) {
		t.Errorf("cuBLAS candidates:\n got %v\nwant %v", paths, want)
	}
}

// A library is loaded once per process: every later call, however many
// at once, gets the first outcome, failure included.
func TestOnce(t *testing.T) {
	var o Once
	calls := 0
	fail := errors.New("refused")
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			path, err := o.Do(func() (string, error) { calls++; return "/lib/x.so", fail })
			if path != "/lib/x.so" || err != fail {
				t.Errorf("got %q, %v; want the first outcome", path, err)
			}
		}()
	}
	wg.Wait()
	if calls != 1 {
		t.Errorf("loaded %d times, want once", calls)
	}
}
