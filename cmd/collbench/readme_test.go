package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/collbench/collbench/internal/tier"
)

// readmeExample is one "$ command" of a console block in README.md and
// the output shown under it; "…" stands for any number of lines.
type readmeExample struct {
	line    int
	command string
	output  []string
}

// readmeExamples reads every console block of README.md.
func readmeExamples(t *testing.T) []readmeExample {
	t.Helper()
	f, err := os.Open("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []readmeExample
	in := false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case line == "```console":
			in = true
		case in && line == "```":
			in = false
		case in && strings.HasPrefix(line, "$ "):
			out = append(out, readmeExample{line: n, command: strings.TrimPrefix(line, "$ ")})
		case in && len(out) > 0:
			out[len(out)-1].output = append(out[len(out)-1].output, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// figures are what changes from run to run: numbers (∞ among them: a
// fit's confidence interval is unbounded when a resample's slope is not
// positive, as a busy machine can make it), fit models and comparison
// verdicts.
var figures = regexp.MustCompile(`[-+]?\d+(\.\d+)?(e[-+]?\d+)?%?|∞|\b(alpha_beta|piecewise|faster|slower|REGRESSION)\b|(^|\s)~(\s|$)`)

// shape is a line with its figures masked and its spaces collapsed.
func shape(line string) string {
	return strings.Join(strings.Fields(figures.ReplaceAllString(line, " N ")), " ")
}

// matchShown reports the first shown line missing from got: shown lines
// must appear in order, one after another except where "…" allows a gap
// (any number of lines). Lines match by shape, so several lines may fit
// one shown line; every way is tried.
func matchShown(shown, got []string) string {
	want := make([]string, len(shown))
	for i, s := range shown {
		want[i] = s
		if s != "…" {
			want[i] = shape(s)
		}
	}
	have := make([]string, len(got))
	for i, g := range got {
		have[i] = shape(g)
	}
	worst := 0 // the furthest shown line any attempt reached
	var match func(i, pos int, gap bool) bool
	match = func(i, pos int, gap bool) bool {
		worst = max(worst, i)
		switch {
		case i == len(want):
			return true
		case want[i] == "…":
			return match(i+1, pos, true)
		}
		for p := pos; p < len(have); p++ {
			if have[p] == want[i] && match(i+1, p+1, false) {
				return true
			}
			if !gap {
				break
			}
		}
		return false
	}
	if match(0, 0, false) {
		return ""
	}
	return shown[worst]
}

var (
	builtOnce sync.Once
	builtPath string
	builtErr  error
	builtLog  []byte // the compiler's output when the build failed
)

// builtBinary is collbench built as a user builds it (no race detector),
// once per test process.
func builtBinary(t *testing.T) string {
	t.Helper()
	tier.System(t, "builds the binary")
	builtOnce.Do(func() {
		dir, err := os.MkdirTemp("", "collbench-bin-")
		if err != nil {
			builtErr = err
			return
		}
		builtPath = filepath.Join(dir, "collbench")
		builtLog, builtErr = exec.Command("go", "build", "-o", builtPath, ".").CombinedOutput()
	})
	if builtErr != nil {
		t.Fatalf("build: %v\n%s", builtErr, builtLog)
	}
	return builtPath
}

// Every command README.md shows runs, in order, in one folder, with the
// built binary, exits as a user would expect, and prints output of the
// shape shown.
func TestREADMECommands(t *testing.T) {
	bin := builtBinary(t)
	dir := t.TempDir()
	examples := readmeExamples(t)
	if len(examples) < 8 {
		t.Fatalf("found %d console examples in README.md; the tour is gone?", len(examples))
	}
	for _, ex := range examples {
		command := ex.command
		if _, build, ok := strings.Cut(command, "; "); ok && strings.HasPrefix(command, "export CGO_CFLAGS=") {
			command = build // the quick start's compiler flags: TestFirstBuildQuiet
		}
		if _, run, ok := strings.Cut(command, " && ./collbench "); ok && strings.HasPrefix(command, "go build ") {
			command = "collbench " + run // the quick start: build, then run the binary built
		}
		args := strings.Fields(command)
		switch {
		case len(args) > 2 && args[0] == "go" && args[1] == "run":
			args = args[3:] // go run ./cmd/collbench …: the same program
		case args[0] == "collbench":
			args = args[1:]
		default:
			t.Fatalf("README.md:%d: %q runs neither collbench nor go run", ex.line, ex.command)
		}
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("README.md:%d: %v", ex.line, err)
		}
		// compare exits 1 when it finds a regression, which a noisy
		// machine may show between two runs, and health when it flags a
		// figure; that is their job.
		flags := args[0] == "compare" || (len(args) > 3 && args[3] == "health")
		if code != 0 && !(flags && code == exitFailure) {
			t.Errorf("README.md:%d: %s: exit %d\n%s", ex.line, ex.command, code, out)
			continue
		}
		if missing := matchShown(ex.output, strings.Split(string(out), "\n")); missing != "" {
			t.Errorf("README.md:%d: %s: output lacks a line shaped like\n%q\ngot:\n%s", ex.line, ex.command, missing, out)
		}
	}
}

func TestMatchShown(t *testing.T) {
	got := []string{"# a 1", "row 2.5 x", "row 3 y", "# end 0.5", "ci 7.45–∞", "#"}
	tests := []struct {
		shown []string
		ok    bool
	}{
		{[]string{"# a 7", "row 9 x"}, true},
		{[]string{"# a 7", "…", "# end 1"}, true},
		{[]string{"# a 7", "# end 1"}, false}, // a gap without …
		{[]string{"…", "row 1 y", "# end 1"}, true},
		{[]string{"row 1 y", "row 1 x"}, false}, // out of order
		{[]string{"# missing"}, false},
		{[]string{"…", "ci 0.97–1.90"}, true}, // an unbounded interval is a figure
	}
	for _, tc := range tests {
		if got := matchShown(tc.shown, got) == ""; got != tc.ok {
			t.Errorf("matchShown(%q) ok = %v, want %v", tc.shown, got, tc.ok)
		}
	}
}

// A build without cgo stops with a message that says cgo is needed,
// before go-nvml's own errors.
func TestBuildWithoutCgoSaysWhy(t *testing.T) {
	tier.System(t, "runs the compiler")
	cmd := exec.Command("go", "build", "-o", os.DevNull, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatal("a build without cgo succeeded; the GPU bindings need cgo")
	}
	if !strings.Contains(string(out), "collbench_needs_cgo_build_with_CGO_ENABLED_1_and_a_C_compiler") {
		t.Errorf("the build's errors do not say cgo is needed:\n%s", out)
	}
}

// quickStartCFlags is the CGO_CFLAGS value README.md's two set-up commands
// export; both must set the same one.
func quickStartCFlags(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^    export CGO_CFLAGS="([^"]*)"; go (build|vet) `)
	var values []string
	for _, m := range re.FindAllStringSubmatch(string(b), -1) {
		values = append(values, m[1])
	}
	if len(values) != 2 || values[0] != values[1] {
		t.Fatalf("README.md's build and test commands export CGO_CFLAGS as %q; want one value in both", values)
	}
	return values[0]
}

// A newcomer's first build is quiet: go-nvml's package, the one whose C
// header warns, compiles with README.md's flags and the compiler says
// nothing. A define that changes every run makes the go command compile it
// afresh rather than take it from the build cache.
func TestFirstBuildQuiet(t *testing.T) {
	tier.System(t, "compiles go-nvml's cgo package")
	flags := quickStartCFlags(t)
	cmd := exec.Command("go", "build", "-o", os.DevNull, "github.com/NVIDIA/go-nvml/pkg/nvml")
	cmd.Env = append(os.Environ(), fmt.Sprintf("CGO_CFLAGS=%s -DCOLLBENCH_FRESH_BUILD=%d", flags, time.Now().UnixNano()))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if len(bytes.TrimSpace(out)) > 0 {
		lines := strings.Count(string(out), "\n")
		t.Errorf("the first build printed %d lines with CGO_CFLAGS=%q; the first ten:\n%s", lines, flags, firstLines(string(out), 10))
	}
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}
