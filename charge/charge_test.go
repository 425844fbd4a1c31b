package charge

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collbench/collbench/export"
	"github.com/collbench/collbench/internal/fixture"
	"github.com/collbench/collbench/model/profiled"
)

// exported writes the targets' files of the profile at path (the
// synthetic one when path is empty) and opens them.
func exported(t *testing.T, path string, targets ...string) map[string]Planner {
	t.Helper()
	return exportedWith(t, path, export.Options{}, targets...)
}

// exportedWith is exported with the export's options.
func exportedWith(t *testing.T, path string, o export.Options, targets ...string) map[string]Planner {
	t.Helper()
	p := fixture.Profile(t, 2, 4)
	if path != "" {
		p = fixture.Kept(t, path)
	}
	dir := t.TempDir()
	if _, err := export.WriteAll(context.Background(), p, targets, dir, o); err != nil {
		t.Fatal(err)
	}
	planners, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]Planner{}
	for _, pl := range planners {
		out[pl.Name()] = pl
	}
	return out
}

const (
	hostKept = "../docs/measured/host-2026-11-26/profile-4ranks.json"
	h100Kept = "../docs/measured/h100-2026-11-26/profile-g2-float.json"
)

// The transcriptions charge what the planners' own code charges on the
// same files: each figure below is that code's, run on collbench's
// exports of the profile named (AIConfigurator's load_nccl_data,
// nearest_1d_point_helper and interp_1d at the parent of 12dca98b8, the
// kept profiles' figures also its LeafAxisCurve::query at 095f58a51;
// Calculon's Network.time at caa4b11; Galvatron's loaders and
// TimeCostModelBase at cea12ffb, built for a one-layer strategy that
// makes the call).
func TestChargesPinnedByThePlannersCode(t *testing.T) {
	for _, c := range []struct {
		profile, planner string
		call             Call
		us               float64
	}{
		{"", "aiconfigurator", Call{Coll: "allgather", Group: 8, Layout: "consecutive", Bytes: 2 * 1048576}, 0.16233386666666666e3},
		{"", "aiconfigurator", Call{Coll: "alltoall", Group: 8, Layout: "consecutive", Bytes: 2 * 1572864}, 0.2235008e3},
		{"", "aiconfigurator", Call{Coll: "reducescatter", Group: 4, Layout: "consecutive", Bytes: 2 * 5242880}, 0.0724288e3},
		{"", "aiconfigurator", Call{Coll: "allreduce", Group: 8, Layout: "consecutive", Bytes: 2 * 3000}, 0.0407e3},
		{"", "aiconfigurator", Call{Coll: "allreduce", Group: 8, Layout: "consecutive", Bytes: 2 * 805306368}, 187.94481919999998e3},
		{"", "aiconfigurator", Call{Coll: "allgather", Group: 2, Layout: "consecutive", Bytes: 2 * 32}, 0.020000213333333332e3},
		{hostKept, "aiconfigurator", Call{Coll: "allgather", Group: 4, Layout: "consecutive", Bytes: 2 * 3145728}, 5.661573499999999e3},
		{hostKept, "aiconfigurator", Call{Coll: "allreduce", Group: 2, Layout: "consecutive", Bytes: 2 * 100}, 0.0011313957885888428e3},
		{h100Kept, "aiconfigurator", Call{Coll: "allreduce", Group: 2, Layout: "consecutive", Bytes: 2 * 3145728}, 0.068032e3},
		{h100Kept, "aiconfigurator", Call{Coll: "alltoall", Group: 2, Layout: "consecutive", Bytes: 2 * 100}, 0.020280474875788126e3},
		{h100Kept, "aiconfigurator", Call{Coll: "reducescatter", Group: 2, Layout: "consecutive", Bytes: 2 * 805306368}, 2.940938814828435e3},
		{hostKept, "calculon", Call{Dim: "TP", Coll: "allreduce", Group: 2, Layout: "consecutive", Bytes: 64 << 20}, 370161.0565754572},
		{hostKept, "calculon", Call{Dim: "PP", Coll: "sendrecv", Group: 2, Layout: "strided", Bytes: 8 << 20}, 5053.232453054766},
		{hostKept, "calculon", Call{Dim: "TP", Coll: "reducescatter", Group: 2, Layout: "consecutive", Bytes: 1 << 20}, 6069.232722391877},
		{h100Kept, "calculon", Call{Dim: "PP", Coll: "pipeline", Group: 2, Layout: "consecutive", Bytes: 1 << 20}, 21.48214924508326},
		// A pipeline over the whole world is the world's group, listed once.
		{h100Kept, "calculon", Call{Dim: "PP", Coll: "pipeline", Group: 2, Layout: "strided", Bytes: 1 << 20}, 21.48214924508326},
		{h100Kept, "calculon", Call{Dim: "TP", Coll: "allgather", Group: 2, Layout: "consecutive", Bytes: 8 << 20}, 56.075309324452235},
		{hostKept, "galvatron", Call{Dim: "TP", Coll: "allgather", Group: 2, Layout: "consecutive", Bytes: 8 << 20}, 25157.050000000003},
		{hostKept, "galvatron", Call{Dim: "TP", Coll: "reducescatter", Group: 4, Layout: "consecutive", Bytes: 3000000}, 26819.86098191508},
		{hostKept, "galvatron", Call{Dim: "TP", Coll: "allreduce", Group: 4, Layout: "consecutive", Bytes: 32 << 20}, 463752.0},
		{hostKept, "galvatron", Call{Dim: "DP", Coll: "allreduce", Group: 2, Layout: "strided", Bytes: 25e6}, 133052.76442542457},
		{hostKept, "galvatron", Call{Dim: "DP", Coll: "allgather", Group: 4, Layout: "consecutive", Bytes: 25e6}, 115834.64036158055},
		{hostKept, "galvatron", Call{Dim: "PP", Coll: "pipeline", Group: 2, Layout: "strided", Bytes: 8 << 20}, 5597.26293842311},
		{h100Kept, "galvatron", Call{Dim: "TP", Coll: "allgather", Group: 2, Layout: "consecutive", Bytes: 5e6}, 51.25920241769364},
		{h100Kept, "galvatron", Call{Dim: "DP", Coll: "allreduce", Group: 2, Layout: "consecutive", Bytes: 100 << 20}, 496.2976197566157},
		{h100Kept, "galvatron", Call{Dim: "PP", Coll: "pipeline", Group: 2, Layout: "strided", Bytes: 16 << 20}, 222.4796187811732},
	} {
		name := c.planner + " " + c.call.Coll
		if c.profile != "" {
			name += " " + filepath.Base(filepath.Dir(c.profile))
		}
		t.Run(name, func(t *testing.T) {
			pl := exported(t, c.profile, "aiconfigurator", "calculon", "galvatron")[c.planner]
			got, err := pl.Charge(c.call)
			if err != nil {
				t.Fatal(err)
			}
			// 10⁻⁸: Galvatron's line through its table is scipy's
			// curve_fit, an iterative solver, where the Go one is closed.
			if math.Abs(got-c.us) > 1e-8*c.us {
				t.Errorf("%+v: charged %v µs, the planner's own code %v", c.call, got, c.us)
			}
		})
	}
}

// A call a planner's files cannot time says why.
func TestChargeRefusals(t *testing.T) {
	pl := exported(t, "", "aiconfigurator", "calculon", "galvatron")
	for _, c := range []struct {
		planner string
		call    Call
		want    string
	}{
		{"aiconfigurator", Call{Coll: "pipeline", Group: 2, Layout: "strided", Bytes: 1 << 20}, "no pipeline"},
		{"aiconfigurator", Call{Coll: "allreduce", Group: 3, Layout: "consecutive", Bytes: 1 << 20}, "no all_reduce over 3 GPUs"},
		{"calculon", Call{Coll: "alltoall", Group: 2, Layout: "consecutive", Bytes: 1 << 20}, "no alltoall"},
		{"calculon", Call{Coll: "allreduce", Group: 3, Layout: "strided", Bytes: 1 << 20}, "no network of Calculon's describes 3 strided ranks"},
		{"galvatron", Call{Dim: "EP", Coll: "alltoall", Group: 2, Layout: "consecutive", Bytes: 1 << 20}, "times no EP alltoall"},
		{"galvatron", Call{Dim: "TP", Coll: "allreduce", Group: 16, Layout: "consecutive", Bytes: 1 << 20}, "no tensor-parallel table of 16 ranks"},
		{"galvatron", Call{Dim: "PP", Coll: "pipeline", Group: 16, Layout: "strided", Bytes: 1 << 20}, "no pp_size_16"},
	} {
		if _, err := pl[c.planner].Charge(c.call); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %+v: %v, want %q", c.planner, c.call, err, c.want)
		}
	}
	if _, err := Open(t.TempDir()); err == nil || !strings.Contains(err.Error(), "holds no planner export") {
		t.Errorf("an empty folder: %v", err)
	}
}

// Compare flags a charge beyond 2 % and keeps why a planner cannot time a
// call.
func TestCompare(t *testing.T) {
	pl := exported(t, "", "aiconfigurator", "calculon")
	planners := []Planner{pl["aiconfigurator"], pl["calculon"]}
	calls := []Call{
		{Dim: "TP", Coll: "allreduce", Group: 4, Layout: "consecutive", Bytes: 64 << 20},
		{Dim: "EP", Coll: "alltoall", Group: 4, Layout: "consecutive", Bytes: 64 << 20},
	}
	exact, _ := planners[0].Charge(calls[0])
	a2a, _ := planners[0].Charge(calls[1])
	rows := Compare(planners, calls, []float64{exact, a2a * 1.1})
	if c := rows[0].Charges[0]; c.Ratio != 1 || c.Off || c.Cannot != "" {
		t.Errorf("the exact charge: %+v", c)
	}
	if c := rows[1].Charges[0]; !c.Off || math.Abs(c.Ratio-1/1.1) > 1e-12 {
		t.Errorf("a charge 9 %% short: %+v", c)
	}
	if c := rows[1].Charges[1]; c.Cannot == "" || c.Off {
		t.Errorf("Calculon has no all-to-all: %+v", c)
	}
}

// In JSON a charge of 0 (a planner that times a call as free) is there,
// and a call the planner cannot time has no charge at all.
func TestChargedJSON(t *testing.T) {
	for _, c := range []struct {
		ch   Charged
		want string
	}{
		{Charged{Planner: "simai-1.1", Off: true}, `{"planner":"simai-1.1","charge_us":0,"ratio":0,"beyond_tolerance":true}`},
		{Charged{Planner: "p", Us: 2, Ratio: 1}, `{"planner":"p","charge_us":2,"ratio":1,"beyond_tolerance":false}`},
		{Charged{Planner: "p", Cannot: "no pipeline"}, `{"planner":"p","beyond_tolerance":false,"cannot":"no pipeline"}`},
	} {
		got, err := json.Marshal(c.ch)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != c.want {
			t.Errorf("%+v: %s, want %s", c.ch, got, c.want)
		}
	}
}

// A step's ratio weighs each kind of call by its calls per step and
// counts only the calls a planner times: Galvatron's one tensor-parallel
// table, the all-gather and reduce-scatter's mean, is exact over a step
// that makes as many of each, however far apart the two ops are.
func TestSteps(t *testing.T) {
	row := func(coll string, perStep, us float64, charges ...Charged) Row {
		return Row{Call: Call{Coll: coll, PerStep: perStep}, Us: us, Charges: charges}
	}
	rows := []Row{
		row("allgather", 128, 10, Charged{Planner: "galvatron", Us: 55}, Charged{Planner: "aiconfigurator", Us: 10}),
		row("reducescatter", 128, 100, Charged{Planner: "galvatron", Us: 55}, Charged{Planner: "aiconfigurator", Us: 100}),
		row("sendrecv", 16, 5, Charged{Planner: "galvatron", Us: 6}, Charged{Planner: "aiconfigurator", Cannot: "no sendrecv"}),
	}
	got := Steps(rows)
	want := []Step{
		{Planner: "galvatron", Ratio: (128*110 + 16*6) / (128*110 + 16*5.0), Timed: 3, Kinds: 3},
		{Planner: "aiconfigurator", Ratio: 1, Timed: 2, Kinds: 3},
	}
	for i := range want {
		if g := got[i]; g.Planner != want[i].Planner || math.Abs(g.Ratio-want[i].Ratio) > 1e-12 || g.Timed != want[i].Timed || g.Kinds != want[i].Kinds || g.Off {
			t.Errorf("step %d: %+v, want %+v", i, g, want[i])
		}
	}
	rows[0].Charges[0].Us = 80
	if s := Steps(rows)[0]; !s.Off {
		t.Errorf("a step 11 %% over is not flagged: %+v", s)
	}
	if Steps(nil) != nil {
		t.Error("no rows, no steps")
	}
}

// ASTRA-sim charges a call of the workload collbench wrote for a plan
// what the simulator gives its comm_size (export's tests pin that by the
// simulator's own runs), and knows no call of another plan.
func TestAstraChargesTheTrace(t *testing.T) {
	p := fixture.Profile(t, 1, 4)
	dir := t.TempDir()
	calls := []export.TraceCall{
		{Dim: "TP", Coll: "allgather", Bytes: 16 << 20, Calls: 4, Groups: [][]int{{0, 1}, {2, 3}}, Us: 150},
		{Dim: "PP", Coll: "pipeline", Bytes: 8 << 20, Calls: 2, Groups: [][]int{{0, 2}, {1, 3}}, Us: 90},
	}
	if _, _, err := export.WriteAstraTrace(context.Background(), p, calls, dir, nil); err != nil {
		t.Fatal(err)
	}
	planners, err := Open(dir)
	if err != nil || len(planners) != 1 || planners[0].Name() != "astra-sim" {
		t.Fatalf("%v %v", planners, err)
	}
	for _, c := range calls {
		us, err := planners[0].Charge(Call{Dim: c.Dim, Coll: c.Coll, Group: 2, Layout: "consecutive", Bytes: c.Bytes})
		if err != nil || math.Abs(us/c.Us-1) > 1e-6 {
			t.Errorf("%s %s: %v µs (%v), want %v", c.Dim, c.Coll, us, err, c.Us)
		}
	}
	if _, err := planners[0].Charge(Call{Dim: "TP", Coll: "allgather", Group: 2, Bytes: 1 << 20}); err == nil || !strings.Contains(err.Error(), "written for another plan") {
		t.Errorf("another plan's call: %v", err)
	}
}

// Current SimAI charges what its own binary charges: each figure is
// SimAI_analytical at aliyun/SimAI cef83f9d, built whole with its CMake,
// run on collbench's export of the profile with the --simai options named
// and a workload of 1000 layers each making the call (its report is in
// whole µs, so the sum reads each call to the ns). Its SimCCL mock
// sources are not published; SimAI's own in-tree MockNccl sources from
// before they moved (632e1469^) stood in for them, and the analytical
// path never calls them (Sys builds its NCCL groups only for ns-3 and the
// physical backend). They show what each call is left with: the pair of
// a TP all-gather and reduce-scatter timed as measured (9079 and 97050 µs
// measured, 53065 each), an all-reduce at its line's bandwidth with no
// latency, the fixed 10 µs below 1 MiB.
func TestSimAIChargesPinnedByItsBinary(t *testing.T) {
	for _, c := range []struct {
		profile string
		o       export.Options
		call    Call
		ns      float64
	}{
		{hostKept, export.Options{TP: 2}, Call{Dim: "TP", Coll: "allgather", Group: 2, Bytes: 16 << 20, TP: 2}, 53064844},
		{hostKept, export.Options{TP: 2}, Call{Dim: "TP", Coll: "reducescatter", Group: 2, Bytes: 16 << 20, TP: 2}, 53064844},
		{hostKept, export.Options{TP: 2}, Call{Dim: "TP", Coll: "allreduce", Group: 2, Bytes: 16 << 20, TP: 2}, 92480248},
		{hostKept, export.Options{TP: 2}, Call{Dim: "DP", Coll: "allreduce", Group: 2, Bytes: 26116858, TP: 2}, 137304976},
		{hostKept, export.Options{TP: 2}, Call{Dim: "DP", Coll: "reducescatter", Group: 2, Bytes: 26116858, TP: 2}, 68652488},
		{hostKept, export.Options{TP: 2}, Call{Dim: "TP", Coll: "allgather", Group: 2, Bytes: 3e6, TP: 2}, 9508293},
		{hostKept, export.Options{TP: 1, EP: 2}, Call{Dim: "EP", Coll: "alltoall", Group: 2, Bytes: 32 << 20, TP: 1, EP: 2}, 16151383},
		{hostKept, export.Options{TP: 1, EP: 2}, Call{Dim: "EDP", Coll: "allreduce", Group: 2, Bytes: 26204042, TP: 1, EP: 2}, 137763328},
		{hostKept, export.Options{TP: 1, EP: 2}, Call{Dim: "DP", Coll: "allreduce", Group: 4, Bytes: 26086525, TP: 1, EP: 2}, 240222912},
		{h100Kept, export.Options{}, Call{Dim: "DP", Coll: "allreduce", Group: 2, Bytes: 26167570, TP: 1}, 45867},
		{h100Kept, export.Options{}, Call{Dim: "TP", Coll: "allgather", Group: 2, Bytes: 16 << 20, TP: 2}, 79391},
		{h100Kept, export.Options{}, Call{Dim: "DP", Coll: "allreduce", Group: 2, Bytes: 512 << 10, TP: 1}, 10000},
	} {
		t.Run(fmt.Sprintf("%s %s %d", c.call.Dim, c.call.Coll, int64(c.call.Bytes)), func(t *testing.T) {
			got, err := exportedWith(t, c.profile, c.o, "simai")["simai"].Charge(c.call)
			if err != nil {
				t.Fatal(err)
			}
			// SimAI keeps its bandwidths and ratios in float: 5·10⁻⁸ of
			// the time, and a whole ns either way of its truncation.
			if d := math.Abs(got*1e3 - c.ns); d > 1+5e-8*c.ns {
				t.Errorf("%+v: %.3f ns, SimAI's binary %.0f ns", c.call, got*1e3, c.ns)
			}
		})
	}
	sim := exported(t, "", "simai")["simai"]
	for _, c := range []struct {
		call Call
		want string
	}{
		{Call{Dim: "PP", Coll: "pipeline", Group: 2, Bytes: 1 << 20}, "times no pipeline"},
		{Call{Dim: "CP", Coll: "allreduce", Group: 2, Bytes: 1 << 20}, "no CP group"},
	} {
		if _, err := sim.Charge(c.call); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.call, err, c.want)
		}
	}
}

// Galvatron's bandwidths are right at one size: the one to export is the
// data-parallel call Galvatron is off on that weighs most in the step,
// else the pipeline's send, else none.
func TestGalvatronPoint(t *testing.T) {
	row := func(dim string, bytes, perStep, us float64, off bool) Row {
		return Row{Call: Call{Dim: dim, Coll: "allreduce", Bytes: bytes, PerStep: perStep}, Us: us,
			Charges: []Charged{{Planner: "aiconfigurator", Off: true}, {Planner: "galvatron", Off: off}}}
	}
	for _, c := range []struct {
		rows []Row
		want float64 // bytes; 0 for none
	}{
		{[]Row{row("TP", 1, 1000, 1, true), row("DP", 2, 10, 10, true), row("EDP", 3, 10, 20, true), row("PP", 4, 1000, 10, true)}, 3},
		{[]Row{row("DP", 2, 10, 10, false), row("PP", 4, 10, 10, true)}, 4},
		{[]Row{row("DP", 2, 10, 10, false), row("PP", 4, 10, 10, false)}, 0},
		{nil, 0},
	} {
		call, ok := GalvatronPoint(c.rows)
		if ok != (c.want != 0) || call.Bytes != c.want {
			t.Errorf("%v: %+v %v, want %v bytes", c.rows, call, ok, c.want)
		}
	}
}

// On one node SimAI reads -nic for both all-reduces outside TP: the DP
// group's and, under expert parallelism, the expert-data-parallel
// group's (DP/EP ranks, TP·EP apart), whose NICs it counts as the DP
// group's over EP. With TP 1 nothing is timed with -nv but through
// tables relative to it, so the export can give each group its own
// line's bandwidth: mixtral's EDP all-reduce, most of its step, was
// charged 2.30 of its line.
func TestSimAIOneNodeEDPAndDP(t *testing.T) {
	p := fixture.Kept(t, hostKept)
	sim := exportedWith(t, hostKept, export.Options{TP: 1, EP: 2}, "simai")["simai"]
	for _, c := range []struct {
		call   Call
		layout string
	}{
		{Call{Dim: "EDP", Coll: "allreduce", Group: 2, Bytes: 26204042, TP: 1, EP: 2}, "strided"},
		{Call{Dim: "DP", Coll: "allreduce", Group: 4, Bytes: 26086525, TP: 1, EP: 2}, "consecutive"},
		{Call{Dim: "EP", Coll: "alltoall", Group: 2, Bytes: 32 << 20, TP: 1, EP: 2}, "consecutive"},
	} {
		curve, err := p.Curve(c.call.Coll, c.call.Group, c.layout)
		if err != nil {
			t.Fatal(err)
		}
		m, err := profiled.Curve(curve)
		if err != nil {
			t.Fatal(err)
		}
		want := c.call.Bytes * m.Line.Beta // all-reduces: the line's bandwidth, no latency
		if c.call.Coll == "alltoall" {
			want = m.Time(c.call.Bytes) // the table holds the curve
		}
		got, err := sim.Charge(c.call)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got/want-1) > 1e-5 {
			t.Errorf("%s %s over %d: SimAI %.3f µs, its group's line %.3f µs (%.4f)", c.call.Dim, c.call.Coll, c.call.Group, got, want, got/want)
		}
	}
}
