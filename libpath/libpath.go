// Package libpath decides where collbench looks for the NVIDIA libraries it
// loads at run time (libcuda, libnccl, libcublas), so the binary builds and
// starts on machines that have none of them and finds them wherever CUDA
// installers, distributions, containers and pip wheels put them; and it
// opens them (Load), each binding resolving its entry points from the
// handle.
package libpath

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// Spec names one library and the places that are specific to it.
type Spec struct {
	// File is the soname to load, e.g. "libnccl.so.2".
	File string
	// Older are sonames of earlier major versions with the same entry
	// points, tried after File in each folder ("libcublas.so.12" when
	// CUDA 13's libcublas.so.13 is preferred).
	Older []string
	// EnvVar names the variable that points at the file or its folder,
	// e.g. "COLLBENCH_NCCL_LIB".
	EnvVar string
	// HomeVars are install prefixes to look under, e.g. NCCL_HOME; each is
	// tried with lib64, lib and targets/<arch>-linux/lib.
	HomeVars []string
	// WheelDirs are the folders under site-packages/nvidia that pip
	// wheels install the library into ("nccl" for nvidia-nccl-cu12, "cu13"
	// for CUDA 13's wheels); none when no wheel carries it (the driver's
	// libcuda).
	WheelDirs []string
	// Hint says how to install the library or point at it, for the error
	// when it is not found.
	Hint string
	// Probes are entry points that prove a file is this library (Load
	// refuses one without them), and Is names it in that refusal ("an
	// NCCL library").
	Probes []string
	Is     string
	// Global makes the library's symbols available to libraries loaded
	// after it (RTLD_GLOBAL), as the CUDA libraries expect of each other.
	Global bool
}

// The libraries collbench loads, and where each is looked for.
var (
	// NCCL is libnccl: CUDA installs, NCCL's own packages, or the
	// nvidia-nccl pip wheel next to PyTorch.
	NCCL = Spec{File: "libnccl.so.2", EnvVar: "COLLBENCH_NCCL_LIB", HomeVars: []string{"NCCL_HOME", "CUDA_HOME"}, WheelDirs: []string{"nccl"},
		Hint: "set COLLBENCH_NCCL_LIB to its path", Probes: []string{"ncclGetVersion", "ncclCommInitRank"}, Is: "an NCCL library"}
	// CUDA is the driver library that comes with the NVIDIA driver.
	CUDA = Spec{File: "libcuda.so.1", EnvVar: "COLLBENCH_CUDA_LIB", HomeVars: []string{"CUDA_DRIVER_HOME"},
		Hint:   "install the NVIDIA driver or set COLLBENCH_CUDA_LIB to the library's path",
		Probes: []string{"cuInit"}, Is: "the CUDA driver library", Global: true}
	// CUBLAS is cuBLAS: the CUDA toolkit, or the nvidia-cublas pip wheel.
	// Its GEMM entry point is the same in cuBLAS 12 and 13.
	CUBLAS = Spec{File: "libcublas.so.13", Older: []string{"libcublas.so.12"}, EnvVar: "COLLBENCH_CUBLAS_LIB",
		HomeVars: []string{"CUDA_HOME"}, WheelDirs: []string{"cublas", "cu13"},
		Hint:   "install cuBLAS (the CUDA toolkit or pip's nvidia-cublas) or set COLLBENCH_CUBLAS_LIB",
		Probes: []string{"cublasGemmEx"}, Is: "cuBLAS", Global: true}
)

// Candidate is one place to try, with the reason it is on the list so a
// failure can say what was looked at.
type Candidate struct {
	Path string // a file path, or the bare soname for the loader's own search
	From string // e.g. "--nccl-lib", "LD_LIBRARY_PATH", "system", "python"
}

// Env reads the environment; tests replace it.
type Env struct {
	Getenv func(string) string
	Glob   func(string) ([]string, error)
	Exists func(string) bool
}

// OSEnv is the real process environment and file system.
func OSEnv() Env {
	return Env{Getenv: os.Getenv, Glob: filepath.Glob, Exists: func(p string) bool {
		st, err := os.Stat(p)
		return err == nil && !st.IsDir()
	}}
}

// systemDirs are the folders distributions, CUDA installers and NVIDIA's
// container toolkit use, tried after the loader's own cache.
var systemDirs = []string{
	"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib",
	// Debian's libcuda1 and libnvidia-ml1 ship here; the names one level
	// up are alternatives links that exist only once installed.
	"/usr/lib/x86_64-linux-gnu/nvidia/current", "/usr/lib/aarch64-linux-gnu/nvidia/current",
	"/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib", "/usr/local/cuda/targets/sbsa-linux/lib",
	"/usr/local/nccl/lib", "/usr/local/nvidia/lib64", "/usr/local/nvidia/lib", "/usr/lib/wsl/lib",
}

// Candidates lists, in order, where to look for the library: the explicit
// path (flag, then environment variable), LD_LIBRARY_PATH, the install
// prefixes, the dynamic loader's cache and standard system folders, and last
// the nvidia/*/lib folders of Python environments. Only existing files are
// listed, except the bare soname, which the loader resolves itself.
func Candidates(s Spec, explicit string, env Env) []Candidate {
	var out []Candidate
	seen := map[string]bool{}
	add := func(path, from string) {
		if path == "" || seen[path] {
			return
		}
		if filepath.IsAbs(path) && !env.Exists(path) {
			return
		}
		seen[path] = true
		out = append(out, Candidate{Path: path, From: from})
	}
	files := append([]string{s.File}, s.Older...)
	addDir := func(dir, from string) {
		for _, f := range files {
			add(filepath.Join(dir, f), from)
		}
	}
	addExplicit := func(v, from string) {
		if v == "" {
			return
		}
		// An explicit choice is listed even when it does not exist, so
		// the error names it instead of silently using another copy.
		// An existing file is taken as the library whatever its name;
		// otherwise a name without ".so" is a folder to look in.
		p := v
		if strings.HasSuffix(v, "/") || (!env.Exists(v) && !strings.Contains(filepath.Base(v), ".so")) {
			p = filepath.Join(v, s.File)
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, Candidate{Path: p, From: from})
		}
	}
	addExplicit(explicit, "flag")
	if s.EnvVar != "" {
		addExplicit(env.Getenv(s.EnvVar), s.EnvVar)
	}
	for _, d := range filepath.SplitList(env.Getenv("LD_LIBRARY_PATH")) {
		if d != "" {
			addDir(d, "LD_LIBRARY_PATH")
		}
	}
	for _, h := range s.HomeVars {
		if home := env.Getenv(h); home != "" {
			for _, sub := range []string{"lib64", "lib", "targets/x86_64-linux/lib", "targets/sbsa-linux/lib"} {
				addDir(filepath.Join(home, sub), h)
			}
		}
	}
	for _, f := range files {
		add(f, "system")
	}
	for _, d := range systemDirs {
		addDir(d, "system")
	}
	if len(s.WheelDirs) > 0 {
		for _, sp := range sitePackages(env) {
			for _, w := range s.WheelDirs {
				addDir(filepath.Join(sp, "nvidia", w, "lib"), "python")
			}
		}
	}
	return out
}

// sitePackages lists the site-packages and dist-packages folders of the
// Python environments a PyTorch user is likely to have: the active virtual
// or conda environment, the python3 on PATH, user installs, pyenv and the
// system interpreters.
func sitePackages(env Env) []string {
	var prefixes []string
	for _, v := range []string{"VIRTUAL_ENV", "CONDA_PREFIX"} {
		if p := env.Getenv(v); p != "" {
			prefixes = append(prefixes, p)
		}
	}
	for _, d := range filepath.SplitList(env.Getenv("PATH")) {
		if d != "" && env.Exists(filepath.Join(d, "python3")) && filepath.Base(d) == "bin" {
			prefixes = append(prefixes, filepath.Dir(d))
		}
	}
	if home := env.Getenv("HOME"); home != "" {
		prefixes = append(prefixes, filepath.Join(home, ".local"), filepath.Join(home, ".pyenv/versions/*"),
			filepath.Join(home, "miniconda3"), filepath.Join(home, "anaconda3"))
	}
	prefixes = append(prefixes, "/opt/conda", "/usr/local", "/usr")
	var out []string
	seen := map[string]bool{}
	for _, p := range prefixes {
		for _, kind := range []string{"site-packages", "dist-packages"} {
			matches, _ := env.Glob(filepath.Join(p, "lib", "python3*", kind))
			sort.Strings(matches)
			for _, m := range matches {
				if !seen[m] {
					seen[m] = true
					out = append(out, m)
				}
			}
		}
	}
	return out
}

// explicit says whether the candidate was named by the user rather than
// found by the search.
func (c Candidate) explicit(s Spec) bool {
	return c.From == "flag" || (s.EnvVar != "" && c.From == s.EnvVar)
}

// name says who named an explicit candidate.
func (c Candidate) name() string {
	if c.From == "flag" {
		return "the caller"
	}
	return c.From
}

// ExplicitError is a library that was asked for by name and could not be
// loaded; no other copy was tried.
type ExplicitError struct {
	Path string // what was asked for
	By   string // who asked: "the caller", or the spec's variable
	Err  error
}

func (e *ExplicitError) Error() string {
	return fmt.Sprintf("could not open %s (given by %s): %v", e.Path, e.By, e.Err)
}
func (e *ExplicitError) Unwrap() error { return e.Err }

// Describe renders the candidates for an error message: where collbench
// looked, in order.
func Describe(cands []Candidate) string {
	parts := make([]string, len(cands))
	for i, c := range cands {
		parts[i] = c.Path + " (" + c.From + ")"
	}
	return strings.Join(parts, ", ")
}

// Open tries the candidates in order with open, which loads one path or
// says why it could not, and returns the path that loaded. When none does,
// the error lists every place tried, the first reason a found file was
// refused, and the spec's hint (how to point at the library).
//
// A library named explicitly (by the caller, else by the spec's
// variable) is the only one tried: when it cannot be loaded that is the
// error, never another copy found elsewhere, since measuring a different
// library than the one asked for would be wrong without saying so.
func Open(s Spec, explicit string, env Env, open func(path string) error) (string, error) {
	cands := Candidates(s, explicit, env)
	if len(cands) > 0 && cands[0].explicit(s) {
		c := cands[0]
		err := plainFile(c.Path)
		if err == nil {
			err = open(c.Path)
		}
		if err != nil {
			return "", &ExplicitError{Path: c.Path, By: c.name(), Err: err}
		}
		return c.Path, nil
	}
	var refused error
	for _, c := range cands {
		err := plainFile(c.Path)
		if err == nil {
			err = open(c.Path)
		}
		if err == nil {
			return c.Path, nil
		}
		// The bare soname failing only means the loader's cache lacks it.
		if refused == nil && (c.From != "system" || filepath.IsAbs(c.Path)) {
			refused = err
		}
	}
	msg := fmt.Sprintf("could not open %s (looked for %s); %s", s.File, Describe(cands), s.Hint)
	if refused != nil {
		msg += "; " + refused.Error()
	}
	return "", errors.New(msg)
}

// plainFile refuses a path that names something other than a regular
// file (links followed): the loader would block for ever reading a FIFO
// with no writer, and a device or a socket is no library either. A path
// that names nothing, or a bare soname, is the loader's to look up.
func plainFile(path string) error {
	st, err := os.Stat(path)
	if err != nil || st.Mode().IsRegular() {
		return nil
	}
	what := "not a regular file"
	switch m := st.Mode(); {
	case m.IsDir():
		what = "a folder"
	case m&os.ModeNamedPipe != 0:
		what = "a named pipe (FIFO)"
	case m&os.ModeDevice != 0:
		what = "a device"
	case m&os.ModeSocket != 0:
		what = "a socket"
	}
	return fmt.Errorf("%s is %s, not a library", path, what)
}

// Find is Open in this process's environment (OSEnv): the one place the
// bindings' libraries are looked for.
func Find(s Spec, explicit string, open func(path string) error) (string, error) {
	return Open(s, explicit, OSEnv(), open)
}

// Once remembers the outcome of loading a library, which a process tries
// once: a library cannot be unloaded and loaded again in its place.
type Once struct {
	mu   sync.Mutex
	done bool
	path string
	err  error
}

// Do runs load the first time and returns its outcome ever after.
func (o *Once) Do(load func() (string, error)) (string, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.done {
		o.done = true
		o.path, o.err = load()
	}
	return o.path, o.err
}
