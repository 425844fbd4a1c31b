package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/report"
)

// options builds the engine options for coll from the parsed flags, as
// a sweep's Spec does.
func (f *flags) options(coll *bench.Collective) (bench.Options, error) {
	return f.Options(coll, f.JobRequest, f.fs.Changed("op"))
}

func runCLI(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = cli(context.Background(), append([]string{"collbench"}, args...), &o, &e)
	return code, o.String(), e.String()
}

// rowRE matches a result line of the nccl-tests table.
var rowRE = regexp.MustCompile(`^ {0,11}\d+  {1,12}\d+  [ a-z0-9]{8}  [ a-z]{6}  [ \-0-9]{6}(  [ 0-9.e+]{7}  [ 0-9.e+]{6}  [ 0-9.e+]{6}(  [ 0-9]{6}|    N/A)){2}$`)

// Every collective, by every accepted name, runs on 4 host ranks with all
// results correct.
func TestEveryCollectiveRuns(t *testing.T) {
	for _, c := range bench.Collectives {
		names := append([]string{c.Name}, c.Aliases...)
		if c.TestName != "" {
			names = []string{c.Name, c.TestName, strings.TrimSuffix(c.TestName, "_perf")}
		}
		for _, name := range names {
			code, out, errOut := runCLI(name, "-b", "8", "-e", "64K", "-f", "8", "-g", "4", "-n", "2", "-r", "-1")
			if code != 0 {
				t.Fatalf("%s: exit %d: %s", name, code, errOut)
			}
			rows := 0
			for _, line := range strings.Split(out, "\n") {
				if line == "" || strings.HasPrefix(line, "#") {
					continue
				}
				if !rowRE.MatchString(line) {
					t.Errorf("%s: row not in nccl-tests layout: %q", name, line)
				}
				rows++
			}
			if rows == 0 || !strings.Contains(out, "# Out of bounds values : 0 OK") {
				t.Errorf("%s: no rows or failed checks:\n%s", name, out)
			}
			if !strings.Contains(out, "# Collective test starting: "+c.Label()) {
				t.Errorf("%s: preamble names the wrong test:\n%s", name, out)
			}
		}
	}
}

func TestBadInput(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"min above max", []string{"allreduce", "-b", "1M", "-e", "1K"}, "larger than maximum"},
		{"zero size", []string{"allreduce", "-b", "0"}, "must be positive"},
		{"negative size", []string{"allreduce", "-b", "-8"}, "cannot be negative"},
		{"negative bitwise repeats", []string{"allreduce", "-B", "-1"}, "bitwise repeats (-B) cannot be negative (got -1)"},
		{"bitwise repeats past the bound", []string{"allreduce", "-B", "2000000"}, "bitwise repeats (-B) must be at most 1048576 (got 2000000)"},
		{"bad suffix", []string{"allreduce", "-e", "8T"}, "invalid size"},
		{"unknown collective", []string{"allshuffle"}, "unknown command"},
		{"launch of an unknown command", []string{"launch", "-n", "2", "allshuffle"}, `"allshuffle" is not a collective, overlap, profile, health, ab, tune or audit`},
		{"unknown type", []string{"allreduce", "-d", "float128"}, "unknown data type"},
		{"unknown op", []string{"allreduce", "-o", "xor"}, "unknown reduction op"},
		{"zero gpus", []string{"allreduce", "-g", "0"}, "-g must be at least 1"},
		{"a timeout that rounds to none", []string{"allreduce", "-T", "1e-300"}, "-T 1e-300 is too short (at least 1e-06 seconds, or 0 for none)"},
		{"root out of range", []string{"broadcast", "-g", "2", "-r", "2"}, "out of range"},
		{"root too negative", []string{"reduce", "-r", "-2"}, "out of range"},
		{"huge buffers", []string{"allreduce", "-b", "8", "-e", "1000G", "-g", "4"}, "lower -e or -g"},
		{"unwritable json", []string{"allreduce", "-b", "8", "-e", "8", "-J", "/nonexistent/dir/out.json"}, "cannot write"},
		{"graph on host", []string{"allreduce", "-b", "8", "-e", "8", "-G", "1", "--backend", "host"}, "cannot capture CUDA graphs"},
		{"unsupported flag", []string{"allreduce", "-D", "1"}, "not supported"},
		{"parallel init on host", []string{"allreduce", "-p", "1", "-b", "8", "-e", "8", "--backend", "host"}, "-p applies to the nccl backend only"},
		{"memory on host", []string{"allreduce", "-M", "1", "-b", "8", "-e", "8", "--backend", "host"}, "-M reports GPU memory; the host backend has none"},
		{"null stream on host", []string{"allreduce", "-y", "1", "-b", "8", "-e", "8", "--backend", "host"}, "-y applies to the nccl backend only"},
		{"null stream in a graph", []string{"allreduce", "-y", "1", "-G", "1"}, "-y and -G cannot be combined"},
		{"negative unalign", []string{"allreduce", "-u", "-1"}, "unalign (-u) cannot be negative"},
		{"bad -S", []string{"allreduce", "-S", "2"}, "-S must be 0 or 1"},
		{"bad -x", []string{"allreduce", "-x", "3"}, "-x must be 0, 1 or 2"},
		{"cta policy on host", []string{"allreduce", "-x", "1", "-b", "8", "-e", "8", "--backend", "host"}, "-x applies to the nccl backend only"},
		{"collector not a URL", []string{"allreduce", "--otlp-endpoint", "collector:4318"}, "is not an http:// or https:// URL"},
		{"profile collector not a URL", []string{"profile", "--otlp-endpoint", "ftp://c"}, "is not an http:// or https:// URL"},
		{"register on host", []string{"allreduce", "-R", "1", "--backend", "host"}, "nccl backend only"},
		{"register on auto host", []string{"allreduce", "-R", "1", "-b", "8", "-e", "8"}, "nccl backend only"},
		{"devices on host", []string{"allreduce", "--devices", "0", "--backend", "host"}, "nccl backend only"},
		{"bad -R", []string{"allreduce", "-R", "3"}, "-R must be"},
		{"bad -K", []string{"allreduce", "-K", "20"}, "-K must be"},
		{"no iterations", []string{"allreduce", "-n", "0"}, "-n must be at least 1 (got 0)"},
		{"zero threads", []string{"allreduce", "-t", "0"}, "-t must be at least 1"},
		{"too many ranks", []string{"allreduce", "-t", "64", "-g", "32"}, "-t × -g = 2048"},
		{"group does not divide", []string{"allreduce", "-g", "3", "--group-size", "2"}, "does not divide"},
		{"group too large", []string{"allreduce", "-g", "2", "--group-size", "4"}, "larger than"},
		{"bad layout", []string{"allreduce", "--layout", "diagonal"}, "unknown --layout"},
		{"bad rendezvous port", []string{"allreduce", "--rendezvous", "node1:99999"}, "not a TCP port"},
		{"rendezvous host that does not resolve", []string{"allreduce", "--rendezvous", "garbage.invalid", "-b", "8", "-e", "8"}, "--rendezvous \"garbage.invalid\": lookup garbage.invalid"},
		{"root outside group", []string{"broadcast", "-g", "4", "--group-size", "2", "-r", "2"}, "out of range"},
		{"launch without ranks", []string{"launch", "allreduce"}, "-n must be at least 1"},
		{"launch without command", []string{"launch", "-n", "2"}, "no subcommand"},
		{"launch unknown command", []string{"launch", "-n", "2", "shuffle"}, "not a collective"},
		{"launch bad rendezvous", []string{"launch", "-n", "2", "--rendezvous", "nohostport", "allreduce"}, "want host:port"},
		{"bad format", []string{"allreduce", "--format", "xml"}, "unknown --format"},
		{"unknown flag", []string{"allreduce", "--frobnicate"}, "unknown flag"},
		{"zero step", []string{"allreduce", "-b", "8", "-e", "16", "-i", "0"}, "step must be positive"},
		{"blocking mode", []string{"allreduce", "-z", "4"}, "blocking mode"},
		{"stray argument", []string{"allreduce", "extra"}, "unexpected argument"},
		{"a root without one", []string{"hypercube", "-g", "2", "-r", "1"}, "-r 1: hypercube has no root"},
		{"a root of all-reduce", []string{"allreduce", "-g", "2", "-r", "3"}, "-r 3: allreduce has no root"},
		{"matrix scale alone", []string{"alltoallv", "--matrix-scale", "2"}, "--matrix-scale scales a --matrix"},
		{"spread with a matrix", []string{"alltoallv", "--spread", "0.5", "--matrix", "/dev/null"}, "--spread shapes the traffic a --matrix (or NCCL_TESTS_ALLTOALLV_MATRIX_FILE) replaces; give one"},
		{"tokens without moe", []string{"alltoallv", "--tokens", "100"}, "--tokens describes a --moe layer"},
		{"routing without moe", []string{"alltoallv", "--routing", "zipf:1"}, "--routing describes a --moe layer"},
		{"profile tokens without moe", []string{"profile", "--tokens", "100"}, "--tokens describes a --moe layer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { expectUsageError(t, tt.args, tt.want) })
	}
}

// expectUsageError runs a command line that must fail as a usage error:
// exit 2, one line on stderr containing want, nothing on stdout.
func expectUsageError(t *testing.T, args []string, want string) {
	t.Helper()
	code, out, errOut := runCLI(args...)
	if code != exitUsage {
		t.Errorf("exit %d, want %d (stderr %q)", code, exitUsage, errOut)
	}
	if !strings.Contains(errOut, want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Errorf("stderr %q: want one line containing %q", errOut, want)
	}
	if out != "" {
		t.Errorf("stdout not empty on a usage error: %q", out)
	}
}

func TestFlagParsing(t *testing.T) {
	c, _ := bench.LookupCollective("allreduce")
	f := newFlags(c)
	err := parseMeasuring(f, []string{"-b", "1K", "-e", "0x100000", "--stepfactor=0x4", "-n", "010", "-r", "-1", "-d", "all", "-o", "all", "-w", "0"})
	if err == nil {
		t.Fatal("-e 0x100000 accepted as a size (nccl-tests parses sizes as decimal)")
	}
	f = newFlags(c)
	if err := parseMeasuring(f, []string{"-b", "1K", "-e", "1M", "--stepfactor=0x4", "-n", "0x10", "-r", "-1", "-d", "all", "-o", "all", "-w", "0"}); err != nil {
		t.Fatal(err)
	}
	o, err := f.options(c)
	if err != nil {
		t.Fatal(err)
	}
	if o.Sweep != (bench.Sweep{Min: 1024, Max: 1 << 20, Factor: 4, Step: 1 << 20}) || o.Iters != 16 || o.Root != -1 || o.Warmup != 0 {
		t.Errorf("options = %+v", o)
	}
	if len(o.Types) != 12 || len(o.Ops) != 6 {
		t.Errorf("-d all / -o all gave %d types, %d ops", len(o.Types), len(o.Ops))
	}
	d := newFlags(c)
	if err := parseMeasuring(d, nil); err != nil {
		t.Fatal(err)
	}
	if d.MinBytes != 32<<20 || d.MaxBytes != 32<<20 || d.StepBytes != 1<<20 || d.Factor != 1 || d.Iters != 20 ||
		d.Warmup != 1 || d.Agg != 1 || d.Cycles != 1 || d.Check != 1 || d.Op != "sum" || d.DType != "float" || d.Average != 1 {
		t.Errorf("defaults differ from nccl-tests: %+v", d)
	}
}

func TestJSONAndCSVOutputs(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "run.json")
	code, out, errOut := runCLI("reducescatter", "-b", "1K", "-e", "4K", "-f", "2", "-g", "3", "-n", "3", "--format", "csv", "-J", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 1+3*2 || lines[0] != strings.Join(report.CSVHeader, ",") {
		t.Errorf("csv has %d lines, header %q", len(lines), lines[0])
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc document.Run
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Schema != document.SchemaName || len(doc.Results) != 3 || doc.Results[0].OutOfPlace.NWrong == nil ||
		*doc.Results[0].OutOfPlace.NWrong != 0 || !doc.OutOfBounds.Okay || doc.Results[2].OOPIter.N != 3 || len(doc.Config.Devices) != 3 {
		t.Errorf("unexpected document: %s", raw)
	}
	code, out, _ = runCLI("alltoall", "-b", "1K", "-e", "1K", "-g", "2", "--format", "json", "-c", "1")
	var doc2 document.Run
	if err := json.Unmarshal([]byte(out), &doc2); code != 0 || err != nil {
		t.Fatalf("--format json: exit %d, %v", code, err)
	}
	if doc2.Results[0].InPlace.NWrong != nil {
		t.Error("in-place all-to-all is reported checked; nccl-tests leaves it unchecked (N/A)")
	}
}

func TestHelpAndVersion(t *testing.T) {
	if code, out, errOut := runCLI(); code != exitUsage || out != "" || !strings.Contains(errOut, "Usage:") {
		t.Errorf("no arguments: exit %d, stdout %q; want the usage on stderr and exit 2", code, out)
	}
	if code, out, _ := runCLI("help"); code != 0 || !strings.Contains(out, "Usage:") {
		t.Errorf("help: exit %d, %q", code, out)
	}
	if code, out, _ := runCLI("version"); code != 0 || !strings.HasPrefix(out, "collbench ") {
		t.Errorf("version: exit %d, %q", code, out)
	}
	if code, out, _ := runCLI("help", "allgather"); code != 0 || !strings.Contains(out, "--minbytes") {
		t.Errorf("help allgather: exit %d, %q", code, out)
	}
}

// The built binary, as a user runs it: exit codes come from the process.
func TestBinaryExitCodes(t *testing.T) {
	bin := builtBinary(t)
	cmd := exec.Command(bin, "allreduce", "-b", "8", "-e", "1K", "-f", "4", "-g", "2")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	err := exec.Command(bin, "allreduce", "-b", "2K", "-e", "1K").Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitUsage {
		t.Errorf("usage error: %v, want exit %d", err, exitUsage)
	}
	link := filepath.Join(t.TempDir(), "all_gather_perf")
	if err := os.Symlink(bin, link); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(link, "-b", "1K", "-e", "1K", "-g", "2").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "all_gather_perf") {
		t.Errorf("nccl-tests-named link: %v\n%s", err, out)
	}
}

// TestNCCLBackendWithoutGPU checks that asking for the nccl backend where
// there is no driver, GPU or NCCL ends with one sentence and exit 1.
func TestNCCLBackendWithoutGPU(t *testing.T) {
	if _, err := os.Stat("/dev/nvidiactl"); err == nil {
		t.Skip("an NVIDIA driver is present; this test covers machines without one")
	}
	code, out, errOut := runCLI("allreduce", "-b", "8", "-e", "8", "--backend", "nccl")
	if code != exitFailure {
		t.Errorf("exit %d, want %d", code, exitFailure)
	}
	if !strings.Contains(errOut, "nccl backend is not available") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Errorf("stderr %q: want one line saying the nccl backend is not available", errOut)
	}
	if out != "" {
		t.Errorf("stdout %q, want nothing", out)
	}
}

// TestDoctorWithoutGPU: on a machine without a driver doctor says why in
// one line on stderr and exits 1, without a panic from any library, and
// still prints what it found and the host backend that will run, as text
// or as a JSON document.
func TestDoctorWithoutGPU(t *testing.T) {
	if _, err := os.Stat("/dev/nvidiactl"); err == nil {
		t.Skip("an NVIDIA driver is present; this test covers machines without one")
	}
	for _, args := range [][]string{{"doctor"}, {"doctor", "--json"}} {
		code, out, errOut := runCLI(args...)
		if code != exitFailure {
			t.Errorf("%v: exit %d, want %d", args, code, exitFailure)
		}
		if !strings.HasPrefix(errOut, "collbench doctor: no NVIDIA GPU found") || !strings.Contains(errOut, "will run on the host backend") ||
			strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%v: stderr %q, want one line saying no GPU was found", args, errOut)
		}
		if len(args) == 1 {
			if !regexp.MustCompile(`(?m)^backend: +host: CPU memory, shared memory between the ranks of one host and TCP between hosts, \d+ CPU\(s\)`).MatchString(out) || !strings.Contains(out, "GPUs:          0") {
				t.Errorf("text report does not name the host backend:\n%s", out)
			}
			continue
		}
		var d struct {
			Backend string   `json:"backend"`
			Missing []string `json:"missing"`
			GPUs    []any    `json:"gpus"`
			Host    struct {
				CPUs int `json:"cpus"`
			} `json:"host"`
		}
		if err := json.Unmarshal([]byte(out), &d); err != nil {
			t.Fatalf("doctor --json printed no JSON document: %v\n%s", err, out)
		}
		if d.Backend != "host" || len(d.Missing) == 0 || d.GPUs == nil || len(d.GPUs) != 0 || d.Host.CPUs < 1 {
			t.Errorf("doctor --json: %+v", d)
		}
	}
	if code, _, errOut := runCLI("doctor", "extra"); code != exitUsage || !strings.Contains(errOut, "unexpected argument") {
		t.Errorf("doctor with an argument: exit %d, %q", code, errOut)
	}
}

// The usage text is the command table: every command it lists runs, its
// help (--help) is its own, and no command shadows a collective.
func TestCommandTable(t *testing.T) {
	_, help, _ := runCLI("help")
	for _, c := range commands() {
		if !strings.Contains(help, "  collbench "+c.synopsis+"\n") {
			t.Errorf("the usage text leaves out %q", c.synopsis)
		}
		if c.run == nil {
			continue
		}
		if _, err := bench.LookupCollective(c.name); err == nil {
			t.Errorf("command %s shadows the collective of that name", c.name)
		}
		if c.name == "help" || c.name == "version" {
			continue
		}
		code, out, errOut := runCLI(c.name, "--help")
		if code != exitOK || !strings.Contains(out+errOut, "collbench "+c.name) {
			t.Errorf("collbench %s --help: exit %d, %q", c.name, code, out+errOut)
		}
	}
}

// A mistyped command or collective gets the closest name, help answers
// for every command as well as every collective, and version has a help.
func TestHelpAndNearMisses(t *testing.T) {
	for _, c := range []struct {
		args       []string
		code       int
		out, errIs string
	}{
		{[]string{"allreducee"}, exitUsage, "", `collbench: unknown command "allreducee" (did you mean allreduce?); run 'collbench help' for the list` + "\n"},
		{[]string{"all-reduce"}, exitUsage, "", `collbench: unknown command "all-reduce" (did you mean allreduce?); run 'collbench help' for the list` + "\n"},
		{[]string{"helth"}, exitUsage, "", `collbench: unknown command "helth" (did you mean health?); run 'collbench help' for the list` + "\n"},
		{[]string{"frobnicate"}, exitUsage, "", `collbench: unknown command "frobnicate"; run 'collbench help' for the list` + "\n"},
		{[]string{"help", "allreducee"}, exitUsage, "", `collbench help: no command or collective "allreducee" (did you mean allreduce?); run 'collbench help' for the list` + "\n"},
		{[]string{"help", "profile"}, exitOK, "Usage: collbench profile [-o profile.json] [--export galvatron,…] [flags]", ""},
		{[]string{"help", "health"}, exitOK, "Usage: collbench health [-J health.json] [--heatmap pairs.svg]", ""},
		{[]string{"help", "allreduce"}, exitOK, "Usage: collbench allreduce", ""},
		{[]string{"version", "-h"}, exitOK, "Usage: collbench version\n", ""},
	} {
		code, out, errOut := runCLI(c.args...)
		if code != c.code || !strings.HasPrefix(out, c.out) || errOut != c.errIs {
			t.Errorf("%v: exit %d, stdout %.60q, stderr %q; want %d, %q, %q", c.args, code, out, errOut, c.code, c.out, c.errIs)
		}
	}
}
