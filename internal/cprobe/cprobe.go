// Package cprobe helps the tests that check the bindings against the real
// libraries: it compiles and runs small C programs against their headers,
// classifies C parameter lists, and reruns a test in a child process for
// loaders that load once per process.
package cprobe

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Env is the variable scripts/real-libs.sh sets to point a test at a real
// library or header; without it the test skips, saying so. full says the
// script sets it only with FULL=1 (the packages it does not fetch
// otherwise).
func Env(t testing.TB, name string, full bool) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		how := ""
		if full {
			how = " with FULL=1"
		}
		t.Skipf("%s is not set (scripts/real-libs.sh sets it%s)", name, how)
	}
	return v
}

// Run writes stubs (header name → contents, found before the real
// headers) and src into a temporary folder, compiles src with gcc against
// the folders in include (warnings are errors) and extra flags, runs it and
// returns its output.
func Run(t testing.TB, src string, stubs map[string]string, include []string, extra ...string) string {
	t.Helper()
	work := t.TempDir()
	for name, body := range stubs {
		if err := os.WriteFile(filepath.Join(work, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c, bin := filepath.Join(work, "probe.c"), filepath.Join(work, "probe")
	if err := os.WriteFile(c, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"-Wall", "-Werror", "-I", work}
	for _, dir := range include {
		args = append(args, "-I", dir)
	}
	args = append(append(args, "-o", bin, c), extra...)
	if out, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
		t.Fatalf("compiling against %v: %v\n%s", include, err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatalf("running the probe: %v", err)
	}
	return string(out)
}

// Kinds classifies a C parameter list (types only) by what the ABI
// passes: "pointer" (a pointer, or a type named in pointers), "size_t",
// "64-bit" (long long, or a type named in wide), "float", the name given
// in byValue for a struct passed by value, else "int" (int, char and the
// enums passed as int). const is ignored. An old-style list, f() in C,
// counts as f(void), which is what it means in C++.
func Kinds(list string, pointers, wide map[string]bool, byValue map[string]string) []string {
	if strings.Contains(list, "???") {
		return nil
	}
	var out []string
	for _, p := range strings.Split(list, ",") {
		p = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(p), "const "))
		switch {
		case p == "void" || p == "":
			continue
		case strings.Contains(p, "*") || pointers[p]:
			out = append(out, "pointer")
		case p == "size_t":
			out = append(out, "size_t")
		case strings.Contains(p, "long long") || wide[p]:
			out = append(out, "64-bit")
		case p == "float" || p == "double":
			out = append(out, "float")
		case byValue[p] != "":
			out = append(out, byValue[p])
		default:
			out = append(out, "int")
		}
	}
	return out
}

// StripNames drops the parameter names from a declaration's parameter
// list, leaving the types.
func StripNames(list string) string {
	var out []string
	for _, p := range strings.Split(list, ",") {
		p = strings.TrimSpace(p)
		if i := strings.LastIndexAny(p, " *"); i >= 0 && p != "void" {
			p = p[:i+1]
		}
		out = append(out, p)
	}
	return strings.Join(out, ",")
}

// InChild runs the calling top-level test again in a child process of the
// test binary, with env (NAME=value) added, and fails t unless it passes
// there. Loaders that keep their first result for the process (nccl.Load,
// cuda.Load, LoadBLAS) are checked this way, one library per child.
func InChild(t *testing.T, env string) {
	t.Helper()
	name := t.Name()
	cmd := exec.Command(os.Args[0], "-test.run", "^"+name+"$", "-test.v")
	cmd.Env = append(os.Environ(), env)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+name) {
		t.Errorf("%s with %s: %v\n%s", name, env, err, out)
	}
}
