package main

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// sweep runs a small host sweep that writes its -J file to path.
func sweep(t *testing.T, path string, extra ...string) (int, string, string) {
	t.Helper()
	return runCLI(append([]string{"allreduce", "-b", "1K", "-e", "4K", "-f", "2", "-g", "2", "-n", "2", "-J", path}, extra...)...)
}

// -J never replaces what is not a regular file: a device stays a device, a
// FIFO reaches its reader, a link keeps pointing at a file that gets the
// results, and "-" is standard output.
func TestResultsFileTargets(t *testing.T) {
	dir := t.TempDir()

	t.Run("device", func(t *testing.T) {
		null := filepath.Join(dir, "null")
		if err := syscall.Mknod(null, syscall.S_IFCHR|0o666, int(1<<8|3)); err != nil {
			t.Skipf("cannot make a device node here: %v", err)
		}
		if code, _, errOut := sweep(t, null); code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if fi, err := os.Lstat(null); err != nil || fi.Mode()&fs.ModeCharDevice == 0 {
			t.Errorf("the device was replaced: %v %v", fi.Mode(), err)
		}
	})

	t.Run("full device", func(t *testing.T) {
		if _, err := os.Stat("/dev/full"); err != nil {
			t.Skip("no /dev/full")
		}
		code, _, errOut := sweep(t, "/dev/full")
		if code != exitFailure || !strings.Contains(errOut, "writing /dev/full: no space left on device") {
			t.Errorf("-J /dev/full: exit %d, %q", code, errOut)
		}
		if fi, err := os.Stat("/dev/full"); err != nil || fi.Mode()&fs.ModeCharDevice == 0 {
			t.Fatalf("/dev/full is no longer a device: %v %v", fi.Mode(), err)
		}
	})

	t.Run("symlink", func(t *testing.T) {
		real := filepath.Join(dir, "real.json")
		os.WriteFile(real, []byte("old"), 0o600)
		link := filepath.Join(dir, "link.json")
		os.Symlink("real.json", link)
		if code, _, errOut := sweep(t, link); code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if target, err := os.Readlink(link); err != nil || target != "real.json" {
			t.Errorf("the link was replaced: %q %v", target, err)
		}
		b, _ := os.ReadFile(real)
		fi, _ := os.Stat(real)
		if !bytes.Contains(b, []byte(`"schema": "collbench.run"`)) || fi.Mode().Perm() != 0o600 {
			t.Errorf("the link's file holds %.40q with mode %v", b, fi.Mode())
		}
	})

	t.Run("fifo", func(t *testing.T) {
		fifo := filepath.Join(dir, "pipe")
		if err := syscall.Mkfifo(fifo, 0o644); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		got := make(chan []byte, 1)
		go func() {
			f, err := os.Open(fifo)
			if err != nil {
				got <- nil
				return
			}
			b, _ := io.ReadAll(f)
			f.Close()
			got <- b
		}()
		if code, _, errOut := sweep(t, fifo); code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if b := <-got; !bytes.Contains(b, []byte(`"schema": "collbench.run"`)) {
			t.Errorf("the reader got %.60q", b)
		}
		if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&fs.ModeNamedPipe == 0 {
			t.Errorf("the FIFO was replaced: %v %v", fi.Mode(), err)
		}
	})

	t.Run("stdout", func(t *testing.T) {
		code, out, errOut := sweep(t, "-")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		table := strings.Index(out, "# Avg bus bandwidth")
		doc := strings.Index(out, `"schema": "collbench.run"`)
		if table < 0 || doc < table {
			t.Errorf("-J - should print the JSON after the table:\n%s", out)
		}
		if _, err := os.Stat("-"); err == nil {
			os.Remove("-")
			t.Error(`-J - wrote a file named "-"`)
		}
	})
}

// plot and report refuse to write over one of their inputs.
func TestOutputIsAnInput(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "r.json")
	if code, _, errOut := sweep(t, run); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	data, _ := os.ReadFile(run)
	asHTML := filepath.Join(dir, "r.html")
	os.WriteFile(asHTML, data, 0o644)
	asSVG := filepath.Join(dir, "r.svg")
	os.WriteFile(asSVG, data, 0o644)
	link := filepath.Join(dir, "same.html")
	os.Symlink("r.html", link)
	for _, args := range [][]string{
		{"plot", asSVG, "-o", asSVG},
		{"report", asHTML, "-o", asHTML},
		{"report", asHTML, "-o", link},
		{"report", run, asHTML, "-o", filepath.Join(dir, ".", "r.html")},
	} {
		code, _, errOut := runCLI(args...)
		if code != exitUsage || !strings.Contains(errOut, "is the input") || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: exit %d, %q; want exit 2 and one line saying the output is an input", args, code, errOut)
		}
	}
	for _, p := range []string{asHTML, asSVG} {
		if b, _ := os.ReadFile(p); !bytes.Equal(b, data) {
			t.Errorf("%s was changed", p)
		}
	}
}

// failingWriter stands for a standard output on a full disk.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, syscall.ENOSPC }

// A command whose results could not reach standard output fails.
func TestStdoutWriteErrors(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
	for _, p := range []string{a, b} {
		if code, _, errOut := sweep(t, p); code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
	}
	prof := filepath.Join("..", "..", "chart", "testdata", "profile.json")
	for _, args := range [][]string{
		{"allreduce", "-b", "8", "-e", "8"},
		{"compare", a, b, "--threshold", "1000"},
		{"predict", "--profile", prof, "--model", "gpt2-1.5b"},
		{"version"},
	} {
		var e bytes.Buffer
		code := cli(context.Background(), append([]string{"collbench"}, args...), failingWriter{}, &e)
		if code == exitOK || !strings.Contains(e.String(), "writing to standard output: no space left on device") {
			t.Errorf("%v with stdout on a full disk: exit %d, stderr %q", args, code, e.String())
		}
	}
}

// The file commands read their inputs with a cap and give up when
// interrupted: /dev/zero is refused, a FIFO that never speaks ends with
// the interruption.
func TestInputsBoundedAndInterruptible(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err == nil {
		defer func(was int64) { inputLimit = was }(inputLimit)
		inputLimit = 8 << 20 // the logic of the 256 MiB cap, at a cost a test can pay
		code, _, errOut := runCLI("compare", "/dev/zero", "/dev/zero")
		if code != exitUsage || !strings.Contains(errOut, "/dev/zero: larger than 8 MiB") {
			t.Errorf("compare /dev/zero: exit %d, %q", code, errOut)
		}
	}
	fifo := filepath.Join(t.TempDir(), "pipe")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	w, err := os.OpenFile(fifo, os.O_RDWR, 0) // a writer that never writes
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, args := range [][]string{
		{"compare", fifo, fifo},
		{"plot", fifo, "-o", filepath.Join(t.TempDir(), "x.svg")},
		{"report", fifo, "-o", filepath.Join(t.TempDir(), "x.html")},
		{"export", "--to", "galvatron", fifo, "-o", t.TempDir()},
		{"predict", "--profile", fifo, "--model", "gpt2-1.5b"},
	} {
		expectInterrupted(t, args, 100*time.Millisecond)
	}
}

// expectInterrupted runs a command line that waits on an input, cancels
// it after wait, and expects it to end with the interruption's exit code.
func expectInterrupted(t *testing.T, args []string, wait time.Duration) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(wait, cancel)
	done := make(chan int, 1)
	var e bytes.Buffer
	go func() { done <- cli(ctx, append([]string{"collbench"}, args...), io.Discard, &e) }()
	select {
	case code := <-done:
		if code != exitSignal {
			t.Errorf("%v interrupted: exit %d, %q; want %d", args, code, e.String(), exitSignal)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("%v ignored the interruption", args)
	}
}

// The traffic matrix and a routing histogram are read as every input is:
// with a cap, a FIFO with no writer given up on when interrupted (and one
// whose writer comes late read whole), and from nccl-tests' variable too.
func TestTrafficInputsBoundedAndInterruptible(t *testing.T) {
	dir := t.TempDir()
	defer func(was int64) { inputLimit = was }(inputLimit)
	inputLimit = 8 << 20
	for _, args := range [][]string{
		{"alltoallv", "--matrix", "/dev/zero"},
		{"alltoallv", "--moe", "4,2", "--routing", "/dev/zero"},
		{"profile", "--colls", "alltoallv", "--moe", "4,2", "--routing", "/dev/zero", "-b", "1M", "-e", "1M"},
	} {
		code, _, errOut := runCLI(args...)
		if code != exitUsage || !strings.Contains(errOut, "/dev/zero: larger than 8 MiB") {
			t.Errorf("%v: exit %d, %q", args, code, errOut)
		}
	}
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	interrupted := func(args []string, env string) {
		t.Helper()
		if env != "" {
			t.Setenv("NCCL_TESTS_ALLTOALLV_MATRIX_FILE", env)
		}
		expectInterrupted(t, args, 200*time.Millisecond)
	}
	// No writer ever opens the FIFO.
	interrupted([]string{"alltoallv", "--matrix", fifo, "-b", "1M", "-e", "1M"}, "")
	interrupted([]string{"alltoallv", "--moe", "4,2", "--routing", fifo}, "")
	interrupted([]string{"alltoallv", "-b", "1M", "-e", "1M"}, fifo)
	t.Setenv("NCCL_TESTS_ALLTOALLV_MATRIX_FILE", "")
	// A writer that opens the FIFO late.
	go func() {
		time.Sleep(200 * time.Millisecond)
		if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			w.Write([]byte("0 4096\n4096 0\n"))
			w.Close()
		}
	}()
	code, out, errOut := runCLI("alltoallv", "-g", "2", "--matrix", fifo, "-b", "4096", "-e", "4096", "-n", "2")
	if code != 0 || !strings.Contains(out, "alltoallv_perf") {
		t.Errorf("late writer: exit %d, %q", code, errOut)
	}
}

// No output may be one of the command's inputs, or another of its
// outputs: writing it would destroy what was read, or what was just
// written. Each is refused before anything runs, and the input is kept.
func TestOutputsAreNotInputs(t *testing.T) {
	dir := t.TempDir()
	matrix := filepath.Join(dir, "m.txt")
	routing := filepath.Join(dir, "rt.txt")
	baseline := filepath.Join(dir, "h.svg") // a health record, named as an image may be
	link := filepath.Join(dir, "link.txt")
	os.Symlink(matrix, link)
	code, _, errOut := runCLI("health", "-g", "2", "--budget", "5s", "-J", baseline)
	if code > 1 {
		t.Fatalf("a baseline: exit %d, %s", code, errOut)
	}
	record, _ := os.ReadFile(baseline)
	refs := filepath.Join(dir, "refs.json")
	// A site's own table (its ids are its own: the built-in ones again
	// would be refused as used twice).
	table := `{"version": 1, "entries": [{"id": "site-h100-ar", "gpu": "H100", "link": "NVLink4", "gpus_per_node": 8, "nodes_min": 1,
		"collective": "allreduce", "busbw_gbps": 360, "source": "site acceptance run"}]}`
	for _, c := range []struct {
		args  []string
		input string
	}{
		{[]string{"alltoallv", "-g", "2", "--matrix", matrix, "-b", "4096", "-e", "4096", "-J", matrix}, matrix},
		{[]string{"alltoallv", "-g", "2", "--matrix", matrix, "-b", "4096", "-e", "4096", "-J", link}, matrix},
		{[]string{"alltoallv", "-g", "2", "--moe", "4,2", "--routing", routing, "-J", routing}, routing},
		{[]string{"profile", "-g", "2", "--colls", "alltoallv", "--moe", "4,2", "--routing", routing, "-b", "1M", "-e", "1M", "-o", routing}, routing},
		{[]string{"health", "-g", "2", "--baseline", baseline, "-J", baseline}, baseline},
		{[]string{"health", "-g", "2", "--baseline", baseline, "--heatmap", baseline}, baseline},
		{[]string{"allreduce", "-g", "2", "-b", "8", "-e", "8", "--references", refs, "-J", refs}, refs},
		{[]string{"health", "-g", "2", "--references", refs, "-J", refs}, refs},
	} {
		os.WriteFile(refs, []byte(table), 0o644)
		os.WriteFile(matrix, []byte("0 4096\n4096 0\n"), 0o644)
		os.WriteFile(routing, []byte("3 1 1 1\n"), 0o644)
		os.WriteFile(baseline, record, 0o644)
		before, _ := os.ReadFile(c.input)
		code, _, errOut := runCLI(c.args...)
		after, _ := os.ReadFile(c.input)
		if code != exitUsage || !strings.Contains(errOut, "is the input") || !bytes.Equal(before, after) {
			t.Errorf("%v: exit %d, %q; input kept: %v", c.args, code, errOut, bytes.Equal(before, after))
		}
	}
	out := filepath.Join(dir, "same.svg")
	for _, args := range [][]string{
		{"overlap", "-g", "2", "-b", "1M", "-e", "1M", "-J", out, "--galvatron", out},
		{"health", "-g", "2", "-J", out, "--heatmap", filepath.Join(dir, ".", "same.svg")},
	} {
		code, _, errOut := runCLI(args...)
		if code != exitUsage || !strings.Contains(errOut, "twice") {
			t.Errorf("%v: exit %d, %q", args, code, errOut)
		}
	}
}

// The files the environment names count as a command's files: a tuner
// file the library or the host backend reads is an input no output may
// replace, the host backend's log is appended to and may be no input nor
// another output, and the commands that run turns refuse a -J or -o that
// is the --logs folder before anything runs, keeping what was there.
func TestEnvironmentFilesAndLogsAreChecked(t *testing.T) {
	selfEnv(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "t.conf")
	refs := filepath.Join(dir, "refs.json")
	table := `{"version": 1, "entries": [{"id": "site-h100-ar", "gpu": "H100", "link": "NVLink4", "gpus_per_node": 8, "nodes_min": 1,
		"collective": "allreduce", "busbw_gbps": 360, "source": "site acceptance run"}]}`
	sweep := []string{"--", "allreduce", "-g", "2", "-b", "1K", "-e", "4K", "-n", "2"}
	for _, c := range []struct {
		name  string
		env   [][2]string
		args  []string
		want  string
		input string
	}{
		{"a host tuner file as tune's output", [][2]string{{"COLLBENCH_HOST_TUNER_FILE", conf}},
			append([]string{"tune", "-q", "--algorithms", "ring", "-o", conf}, sweep...), "is the input " + conf + ", which COLLBENCH_HOST_TUNER_FILE names", conf},
		{"NCCL's tuner file as -J", [][2]string{{"NCCL_TUNER_CONFIG_FILE", conf}},
			[]string{"allreduce", "-g", "2", "-b", "8", "-e", "8", "-J", conf}, "which NCCL_TUNER_CONFIG_FILE names", conf},
		{"the host log as an input", [][2]string{{"COLLBENCH_HOST_TUNING_LOG", refs}},
			[]string{"allreduce", "-g", "2", "-b", "8", "-e", "8", "--references", refs}, "COLLBENCH_HOST_TUNING_LOG=" + refs + ": the output " + refs + " is the input", refs},
		{"the host log as -J", [][2]string{{"COLLBENCH_HOST_TUNING_LOG", filepath.Join(dir, "log")}},
			[]string{"allreduce", "-g", "2", "-b", "8", "-e", "8", "-J", filepath.Join(dir, "log")}, "are one file, written twice", ""},
		{"tune's -J as its --logs", nil,
			append([]string{"tune", "-q", "--algorithms", "ring", "-o", filepath.Join(dir, "o.conf"), "-J", filepath.Join(dir, "t.json"), "--logs", filepath.Join(dir, "t.json")}, sweep...),
			"-J " + filepath.Join(dir, "t.json") + " and --logs " + filepath.Join(dir, "t.json") + " are one path", ""},
		{"tune's -o as its --logs", nil,
			append([]string{"tune", "-q", "--algorithms", "ring", "-o", filepath.Join(dir, "o.conf"), "--logs", filepath.Join(dir, "o.conf")}, sweep...),
			"-o " + filepath.Join(dir, "o.conf") + " and --logs", ""},
		{"audit's -J as its --logs", nil,
			append([]string{"audit", "-q", "-J", filepath.Join(dir, "a.json"), "--logs", filepath.Join(dir, "a.json")}, sweep...),
			"-J " + filepath.Join(dir, "a.json") + " and --logs " + filepath.Join(dir, "a.json") + " are one path", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			os.WriteFile(conf, []byte("allreduce,0,65536,ring,64K,-1,-1,-1\n"), 0o644)
			os.WriteFile(refs, []byte(table), 0o644)
			for _, kv := range c.env {
				t.Setenv(kv[0], kv[1])
			}
			var before []byte
			if c.input != "" {
				before, _ = os.ReadFile(c.input)
			}
			code, out, errOut := runCLI(c.args...)
			if code != exitUsage || out != "" || !strings.Contains(errOut, c.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 and one line with %q", code, out, errOut, c.want)
			}
			if c.input != "" {
				if after, _ := os.ReadFile(c.input); !bytes.Equal(before, after) {
					t.Errorf("%s changed", c.input)
				}
			}
			for _, f := range []string{"t.json", "a.json", "o.conf"} {
				if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
					t.Errorf("%s made", f)
				}
			}
		})
	}
}

// --keep-outputs is checked before anything is timed: a file, a FIFO, a
// link loop or a folder a run has kept outputs in is refused in one line,
// exit 2, with nothing measured. A run of several cycles keeps each
// cycle's outputs in a folder of its own, where a second cycle used to
// find the first's files and fail.
func TestKeepOutputsCheckedUpFrontAndPerCycle(t *testing.T) {
	dir := t.TempDir()
	sweep := []string{"allreduce", "-g", "2", "-b", "1K", "-e", "2K", "-f", "2", "-n", "2", "-B", "2"}
	file := filepath.Join(dir, "file")
	os.WriteFile(file, []byte("x"), 0o644)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	loop := filepath.Join(dir, "loop")
	os.Symlink(loop, loop)
	used := filepath.Join(dir, "used")
	os.MkdirAll(used, 0o755)
	os.WriteFile(filepath.Join(used, "allreduce.float.sum.root-1.out-of-place.1024B.256.rank0.out"), nil, 0o644)
	for _, c := range []struct{ path, want string }{
		{file, "is not a folder"},
		{fifo, "is not a folder"},
		{loop, "too many levels of symbolic links"},
		{used, "holds 1 entries already: give an empty or new folder"},
	} {
		code, out, errOut := runCLI(append(sweep, "--keep-outputs", c.path)...)
		if code != exitUsage || strings.Contains(out, "1024") || !strings.Contains(errOut, "--keep-outputs") ||
			!strings.Contains(errOut, c.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("--keep-outputs %s: exit %d, stderr %q, want exit 2 and one line with %q before any row\n%s", c.path, code, errOut, c.want, out)
		}
	}
	keep := filepath.Join(dir, "k")
	code, out, errOut := runCLI(append(sweep, "--keep-outputs", keep, "-N", "2", "--order-inputs")...)
	if code != exitOK {
		t.Fatalf("-N 2: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, cycle := range []string{"cycle1", "cycle2"} {
		entries, err := os.ReadDir(filepath.Join(keep, cycle))
		if err != nil || len(entries) != 2*2*2 { // sizes × placements × ranks
			t.Errorf("%s: %d files, %v", cycle, len(entries), err)
		}
	}
}
