package run

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/host"
	"github.com/collbench/collbench/bench/numeric"
	"github.com/collbench/collbench/machine"
	"github.com/collbench/collbench/setting"
)

func TestDeviceList(t *testing.T) {
	tests := []struct {
		spec, env    string
		ngpus, local int
		want         []int
		err          string
	}{
		{"", "", 3, 0, []int{0, 1, 2}, ""},
		{"", "4", 2, 0, []int{4, 5}, ""},
		{"", "", 2, 1, []int{2, 3}, ""},     // the second process on a host
		{"", "1", 1, 3, []int{4}, ""},       // NCCL_TESTS_DEVICE shifts every process
		{"0,0", "4", 2, 1, []int{0, 0}, ""}, // explicit lists are taken as given
		{" 1, 3 ", "", 2, 0, []int{1, 3}, ""},
		{"0,x", "", 2, 0, nil, `"x" is not a GPU number`},
		{"-1", "", 1, 0, nil, "is not a GPU number"},
		{"0,1,2", "", 2, 0, nil, "lists 3 GPU(s) but RanksPerProc is 2"},
		{"", "gpu0", 1, 0, nil, `NCCL_TESTS_DEVICE="gpu0" is not a GPU number`},
	}
	for _, tt := range tests {
		t.Setenv("NCCL_TESTS_DEVICE", tt.env)
		got, err := deviceList(tt.spec, tt.ngpus, tt.local, os.Getenv)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%q/%q: got %v %v, want error %q", tt.spec, tt.env, got, err, tt.err)
		case tt.err == "" && (err != nil || !reflect.DeepEqual(got, tt.want)):
			t.Errorf("%q/%q: got %v %v, want %v", tt.spec, tt.env, got, err, tt.want)
		}
	}
}

// A type and operator pair the backend refuses is left out when either
// list came from "all", and refused in one line when both were named.
func TestFilterSupportPairs(t *testing.T) {
	caps := bench.Capabilities{Pair: func(ty numeric.DataType, op numeric.RedOp) error {
		if ty == numeric.Float8e4m3 && op == numeric.Avg {
			return errors.New("no avg on f8e4m3")
		}
		return nil
	}}
	coll, err := bench.LookupCollective("allreduce")
	if err != nil {
		t.Fatal(err)
	}
	opts := bench.Options{Coll: coll, Types: []numeric.DataType{numeric.Float32, numeric.Float8e4m3},
		Ops: []numeric.RedOp{numeric.Sum, numeric.Avg}}
	for _, tt := range []struct {
		allTypes, allOps bool
		wantErr          bool
	}{{true, true, false}, {true, false, false}, {false, true, false}, {false, false, true}} {
		got, err := filterSupport(opts, caps, tt.allTypes, tt.allOps)
		if tt.wantErr {
			var u UsageError
			if !errors.As(err, &u) || !strings.Contains(err.Error(), "no avg on f8e4m3") {
				t.Errorf("both named: got %v, want the usage error", err)
			}
			continue
		}
		want := []bench.TypeOp{{Type: numeric.Float8e4m3, Op: numeric.Avg}}
		if err != nil || !reflect.DeepEqual(got.Skip, want) {
			t.Errorf("all types %v, all ops %v: skip %v, %v; want %v", tt.allTypes, tt.allOps, got.Skip, err, want)
		}
		if len(got.Types) != 2 || len(got.Ops) != 2 {
			t.Errorf("the lists themselves must stay whole: %v %v", got.Types, got.Ops)
		}
	}
}

// NCCL settings from the environment go into a record's knobs; the
// NCCL_VERSION that NVIDIA's images set is a label, not a setting.
func TestNCCLEnvKnobs(t *testing.T) {
	t.Setenv("NCCL_VERSION", "2.28.3-1")
	t.Setenv("NCCL_ALGO", "Ring")
	m := map[string]string{}
	addNCCLEnv(m)
	if m["NCCL_ALGO"] != "Ring" {
		t.Errorf("NCCL_ALGO missing from %v", m)
	}
	if _, ok := m["NCCL_VERSION"]; ok {
		t.Errorf("NCCL_VERSION taken for a setting: %v", m)
	}
}

// Under auto, an NCCL that the caller named and that cannot run is an
// error, not a quiet run on the CPU; with nothing named, auto falls back.
func TestAutoRefusesANamedNCCLThatCannotRun(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "libnccl.so.2")
	none := func(string) string { return "" }
	env := func(name string) string {
		if name == "COLLBENCH_NCCL_LIB" {
			return missing
		}
		return ""
	}
	for _, tc := range []struct {
		lib    string
		getenv func(string) string
		want   string
	}{
		{missing, none, "the nccl backend is not available, and {NCCLLib} " + missing + " asks for it: "},
		{"", env, "the nccl backend is not available, and COLLBENCH_NCCL_LIB=" + missing + " asks for it: "},
	} {
		_, _, err := pickBackend("auto", tc.lib, host.TransportAuto, tc.getenv)
		var se *setting.Error
		if !errors.As(err, new(UsageError)) {
			t.Errorf("lib %q: %T is not a usage error (exit 2)", tc.lib, err)
		}
		if !errors.As(err, &se) || !strings.Contains(se.Spell(func(n string) string { return "{" + n + "}" }), tc.want) ||
			!strings.Contains(err.Error(), "pass Backend host") {
			t.Errorf("lib %q: %v, want %q", tc.lib, err, tc.want)
		}
	}
	b, notes, err := pickBackend("auto", "", host.TransportAuto, none)
	if err == nil && b.Name() == "host" && (len(notes) != 1 || !strings.HasPrefix(notes[0], "Backend: host (auto: ")) {
		t.Errorf("nothing named: %v %v", notes, err)
	}
}

// On a machine with NVIDIA GPU device nodes, auto refuses to fall back to
// the CPU when the nccl backend cannot start (a broken driver or NCCL),
// naming the GPUs; with no GPU at all it falls back and says so on the
// job's log. (The nccl backend cannot start here: no CUDA driver.)
func TestAutoRefusesTheCPUOnAGPUMachine(t *testing.T) {
	dir := brokenGPUNodes(t)
	none := func(string) string { return "" }
	_, _, err := pickBackend("auto", "", host.TransportAuto, none)
	var se *setting.Error
	if !errors.As(err, new(UsageError)) {
		t.Errorf("%T is not a usage error (exit 2)", err)
	}
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "this machine has NVIDIA GPUs ("+filepath.Join(dir, "nvidia0")+"), but the nccl backend cannot start: ") ||
		!strings.Contains(err.Error(), "pass Backend host") {
		t.Errorf("GPU device nodes, no driver: %v; want a refusal naming them", err)
	}
	if b, _, err := pickBackend("host", "", host.TransportAuto, none); err != nil || b.Name() != "host" {
		t.Errorf("asked for the host backend: %v, %v", b, err)
	}
	nvidiaNodes = filepath.Join(dir, "none[0-9]*")
	if machine.NVMLDeviceCount() > 0 {
		return // NVML sees a GPU: the fallback cannot be checked here
	}
	var said []string
	j, err := NewJob(Settings{RanksPerProc: 1, Backend: "auto", Version: "test"}, noEnv, func(f string, a ...any) { said = append(said, fmt.Sprintf(f, a...)) })
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	b, _, err := j.Backend()
	j.sayOnTheCPU()
	j.sayOnTheCPU()
	if err != nil || b.Name() != "host" || len(said) != 1 || !strings.Contains(said[0], "no NVIDIA GPU here: running on the CPU") {
		t.Errorf("no GPU: backend %v, %v, log %q; want the host backend and one line saying so", b, err, said)
	}
}
