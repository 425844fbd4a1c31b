package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A run measured here is plotted as SVG and PNG, and reported as HTML and
// Markdown, with every file complete and nothing else left in the folder.
func TestPlotAndReport(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "ar.json")
	if code, _, errOut := runCLI("allreduce", "-b", "1K", "-e", "64K", "-f", "4", "-g", "2", "-n", "3", "-J", run); code != 0 {
		t.Fatalf("allreduce: exit %d: %s", code, errOut)
	}
	prof := filepath.Join("..", "..", "chart", "testdata", "profile.json")
	steps := []struct {
		args  []string
		files []string
		check func(path, data string) bool
	}{
		{[]string{"plot", run, "-o", filepath.Join(dir, "ar.svg")}, []string{"ar.svg"},
			func(_, d string) bool { return strings.Contains(d, "</svg>") && strings.Contains(d, ">allreduce<") }},
		{[]string{"plot", run, prof, "--metric", "busbw", "--only", "allreduce", "-o", filepath.Join(dir, "both.png")}, []string{"both.png"},
			func(_, d string) bool { return strings.HasPrefix(d, "\x89PNG") }},
		{[]string{"report", run, prof, "-o", filepath.Join(dir, "r.html")}, []string{"r.html"},
			func(_, d string) bool { return strings.Count(d, "<svg") == 3 && strings.HasSuffix(d, "</html>\n") }},
		{[]string{"report", run, "-o", filepath.Join(dir, "r.md")}, []string{"r.md", "r-1-allreduce.svg"},
			func(p, d string) bool {
				return !strings.HasSuffix(p, ".md") || strings.Contains(d, "![Bus bandwidth and time against message size (out of place)](r-1-allreduce.svg)")
			}},
	}
	for _, s := range steps {
		code, out, errOut := runCLI(s.args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", s.args, code, errOut)
		}
		for _, f := range s.files {
			path := filepath.Join(dir, f)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v: %v", s.args, err)
			}
			if !s.check(path, string(data)) {
				t.Errorf("%v: %s is not what it should be (%d bytes)", s.args, f, len(data))
			}
			if !strings.Contains(out, f) {
				t.Errorf("%v: output does not name %s: %q", s.args, f, out)
			}
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 6 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("folder holds %v, want the run and the five outputs", names)
	}
}

func TestPlotAndReportErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"schema":"collbench.run","version":1,"results":[`), 0o644)
	other := filepath.Join(dir, "other.json")
	os.WriteFile(other, []byte(`{"schema":"something.else"}`), 0o644)
	prof := filepath.Join("..", "..", "chart", "testdata", "profile.json")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"plot"}, "want at least one run or profile file"},
		{[]string{"plot", prof, "-o", filepath.Join(dir, "x.gif")}, "cannot tell the image format"},
		{[]string{"plot", prof, "--metric", "latency"}, `--metric "latency"`},
		{[]string{"plot", prof, "--only", "("}, "--only: error parsing regexp"},
		{[]string{"plot", prof, "--only", "nomatch", "-o", filepath.Join(dir, "x.svg")}, "nothing to plot"},
		{[]string{"plot", bad, "-o", filepath.Join(dir, "x.svg")}, "bad.json: the file ends early"},
		{[]string{"plot", other, "-o", filepath.Join(dir, "x.svg")}, "not a collbench run, profile or health record"},
		{[]string{"plot", filepath.Join(dir, "missing.json")}, "missing.json: no such file or directory"},
		{[]string{"report"}, "want at least one run or profile file"},
		{[]string{"report", prof, "-o", filepath.Join(dir, "r.doc")}, "want a .html or .md file"},
		{[]string{"report", prof, "-o", filepath.Join(dir, "r.txt")}, "a table is printed from a run or audit file: " + prof + ": not a collbench run"},
		{[]string{"report", prof, "-o", filepath.Join(dir, "nodir", "r.html")}, "cannot write"},
		// The same mistakes as -J makes, with the same exit code and words.
		{[]string{"plot", prof, "-o", filepath.Join(dir, "nodir", "x.svg")}, "the folder " + filepath.Join(dir, "nodir") + " does not exist"},
		{[]string{"plot", prof, "-o", dir + "/"}, "cannot tell the image format"},
		{[]string{"allreduce", "-b", "8", "-e", "8", "-J", filepath.Join(dir, "nodir", "r.json")}, "the folder " + filepath.Join(dir, "nodir") + " does not exist"},
		{[]string{"allreduce", "-b", "8", "-e", "8", "-J", dir}, "it is a directory"},
	}
	for _, tc := range tests {
		code, _, errOut := runCLI(tc.args...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line with %q", tc.args, code, errOut, tc.want)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("failed commands left files behind: %d entries", len(entries))
	}
}

// A saved run prints as the table its run printed, byte for byte: to
// stdout with -o -, to a text file with -o table.txt; with and without
// verification (N/A), rooted and unreduced collectives, one process and
// a launched job (the spread across processes), a judged run and the
// bitwise check (-B).
func TestReportPrintsTheSavedTable(t *testing.T) {
	selfEnv(t)
	dir := t.TempDir()
	for i, args := range [][]string{
		{"allreduce", "-g", "2", "-b", "1K", "-e", "64K", "-f", "4", "-n", "3"},
		{"broadcast", "-g", "3", "-b", "4K", "-e", "16K", "-n", "2", "-c", "0", "-r", "1"},
		{"alltoall", "-g", "2", "-b", "8K", "-e", "8K", "-n", "2", "-d", "half"},
		{"launch", "-n", "2", "reducescatter", "-b", "8K", "-e", "32K", "-n", "2"},
		{"allgather", "-g", "2", "-b", "8K", "-e", "32K", "-n", "2", "--judge"},
		{"allreduce", "-g", "2", "-b", "1K", "-e", "4K", "-n", "2", "-u", "1"},
		{"allreduce", "-g", "3", "-b", "1K", "-e", "16K", "-f", "4", "-n", "2", "-B", "2"},
		{"launch", "-n", "2", "allgather", "-b", "8K", "-e", "8K", "-n", "2", "-B", "1", "-c", "0"},
	} {
		saved := filepath.Join(dir, fmt.Sprintf("run%d.json", i))
		code, live, errOut := runCLI(append(args, "-J", saved)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		code, printed, errOut := runCLI("report", saved, "-o", "-")
		if code != 0 || printed != live {
			t.Errorf("%v: exit %d %s\nlive:\n%s\nfrom the file:\n%s", args, code, errOut, live, printed)
		}
		txt := filepath.Join(dir, fmt.Sprintf("table%d.txt", i))
		if code, _, errOut := runCLI("report", saved, "-o", txt); code != 0 {
			t.Fatalf("-o %s: exit %d: %s", txt, code, errOut)
		}
		if b, err := os.ReadFile(txt); err != nil || string(b) != live {
			t.Errorf("%s differs from the live table (%v)", txt, err)
		}
	}
	if code, _, errOut := runCLI("report", filepath.Join(dir, "run0.json"), filepath.Join(dir, "run1.json"), "-o", "-"); code != exitUsage ||
		!strings.Contains(errOut, "a table is printed from one run file (got 2 files)") {
		t.Errorf("two files: exit %d: %s", code, errOut)
	}
}
