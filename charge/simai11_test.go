package charge

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collbench/collbench/export"
	"github.com/collbench/collbench/internal/fixture"
	"github.com/collbench/collbench/model/profiled"
)

// SimAI 1.1 charges what its own binary gives on the exported busbw.yaml:
// each figure is SimAI_analytical (aliyun/SimAI 03613a7a, built whole
// with its build.sh) run with -busbw on collbench's export with the
// --simai options named, on a one-layer workload holding the call (TP
// and EP calls in the forward slot, DP ones in the weight-gradient slot),
// -g the plan's GPUs and -g_p_s the profile's per node. SimAI 1.1 prints
// whole µs and its time is proportional to the size, so each call was
// written 1024 times as large (a power of two, which the float SimAI
// scales sizes by keeps exact) and its time read back ÷ 1024: the
// figures hold to about a ns (SimAI truncates its times to whole ns).
// They show what each call is left with: no latency term, the TP gather
// pair at its mean, a one-server job's DP gathers timed as 0, its DP_EP
// all-reduce with the DP group's value, groups across servers with
// theirs.
func TestSimAI11ChargesPinnedByItsBinary(t *testing.T) {
	for _, c := range []struct {
		profile string
		o       export.Options
		call    Call
		us      float64
	}{
		{hostKept, export.Options{TP: 2, DP: 2, EP: 1, PP: 1}, Call{Dim: "TP", Coll: "allreduce", Group: 2, Bytes: 16777216, TP: 2, World: 4}, 92480.247},
		{hostKept, export.Options{TP: 2, DP: 2, EP: 1, PP: 1}, Call{Dim: "DP", Coll: "allreduce", Group: 2, Bytes: 26116858, TP: 2, World: 4}, 143962.710},
		{hostKept, export.Options{TP: 2, DP: 1, EP: 1, PP: 2}, Call{Dim: "TP", Coll: "allgather", Group: 2, Bytes: 16777216, TP: 2, World: 4}, 50925.292},
		{hostKept, export.Options{TP: 2, DP: 1, EP: 1, PP: 2}, Call{Dim: "TP", Coll: "reducescatter", Group: 2, Bytes: 16777216, TP: 2, World: 4}, 50925.292},
		{hostKept, export.Options{TP: 1, DP: 4, EP: 2, PP: 1}, Call{Dim: "EDP", Coll: "allreduce", Group: 2, Bytes: 26204042, TP: 1, EP: 2, World: 4}, 160869.698},
		{hostKept, export.Options{TP: 1, DP: 4, EP: 2, PP: 1}, Call{Dim: "EP", Coll: "alltoall", Group: 2, Bytes: 33554432, TP: 1, EP: 2, World: 4}, 15696.688},
		{hostKept, export.Options{TP: 1, DP: 4, EP: 2, PP: 1}, Call{Dim: "DP", Coll: "allreduce", Group: 4, Bytes: 26086525, TP: 1, EP: 2, World: 4}, 240222.362},
		{hostKept, export.Options{TP: 1, DP: 4, EP: 1, PP: 1}, Call{Dim: "DP", Coll: "allgather", Group: 4, Bytes: 421134336, TP: 1, World: 4}, 0},
		{h100Kept, export.Options{TP: 1, DP: 2, EP: 1, PP: 1}, Call{Dim: "DP", Coll: "allreduce", Group: 2, Bytes: 26167570, TP: 1, World: 2}, 91.735},
		{h100Kept, export.Options{TP: 1, DP: 2, EP: 1, PP: 1}, Call{Dim: "DP", Coll: "allreduce", Group: 2, Bytes: 1048531, TP: 1, World: 2}, 3.676},
		{"", export.Options{TP: 4, DP: 2, EP: 1, PP: 1}, Call{Dim: "DP", Coll: "allreduce", Group: 2, Bytes: 26116858, TP: 4, World: 8}, 1741.129},
		{"", export.Options{TP: 4, DP: 2, EP: 1, PP: 1}, Call{Dim: "DP", Coll: "reducescatter", Group: 2, Bytes: 26116858, TP: 4, World: 8}, 870.564},
		{"", export.Options{TP: 4, DP: 2, EP: 1, PP: 1}, Call{Dim: "TP", Coll: "allreduce", Group: 4, Bytes: 16777216, TP: 4, World: 8}, 167.772},
		{"", export.Options{TP: 1, DP: 8, EP: 2, PP: 1}, Call{Dim: "EDP", Coll: "allreduce", Group: 4, Bytes: 26204042, TP: 1, EP: 2, World: 8}, 2620.411},
		{"", export.Options{TP: 1, DP: 8, EP: 2, PP: 1}, Call{Dim: "EP", Coll: "alltoall", Group: 2, Bytes: 33554432, TP: 1, EP: 2, World: 8}, 111.849},
		{"", export.Options{TP: 8, DP: 1, EP: 1, PP: 1}, Call{Dim: "TP", Coll: "allreduce", Group: 8, Bytes: 16777216, TP: 8, World: 8}, 1957.348},
	} {
		t.Run(fmt.Sprintf("%s %s %d over %d", c.call.Dim, c.call.Coll, int64(c.call.Bytes), c.call.World), func(t *testing.T) {
			got, err := exportedWith(t, c.profile, c.o, "simai")["simai-1.1"].Charge(c.call)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(got-c.us) > 1.5e-3 { // SimAI's whole ns, and the run's 1000/1024 ns
				t.Errorf("%+v: charged %v µs, SimAI 1.1 %v", c.call, got, c.us)
			}
		})
	}
}

// busbw.yaml's all-gather value times SimAI 1.1's TP all-gather and
// reduce-scatter, so it is the pair's: the two charges add up to the two
// curves' lines' bandwidth terms, on the kept host profile whose TP
// reduce-scatter is 10.7× its all-gather at 16 MiB.
func TestSimAI11TimesTheGatherPair(t *testing.T) {
	p := fixture.Kept(t, hostKept)
	pl := exportedWith(t, hostKept, export.Options{TP: 2, DP: 1, EP: 1, PP: 2}, "simai")["simai-1.1"]
	const bytes = 16 << 20
	var charged, lines float64
	for _, coll := range []string{"allgather", "reducescatter"} {
		us, err := pl.Charge(Call{Dim: "TP", Coll: coll, Group: 2, Bytes: bytes, TP: 2, World: 4})
		if err != nil {
			t.Fatal(err)
		}
		charged += us
		c, err := p.Curve(coll, 2, "consecutive")
		if err != nil {
			t.Fatal(err)
		}
		m, err := profiled.Curve(c)
		if err != nil {
			t.Fatal(err)
		}
		lines += bytes * 0.5 / (m.LineBusBW() * 1e9) * 1e6 // S·(n−1)/n at the line's busbw, in µs
	}
	if math.Abs(charged/lines-1) > 1e-5 {
		t.Errorf("SimAI 1.1 charges the pair %v µs, the lines' bandwidth terms %v", charged, lines)
	}
}

// What SimAI 1.1 cannot time says why.
func TestSimAI11Refusals(t *testing.T) {
	pl := exportedWith(t, hostKept, export.Options{}, "simai")["simai-1.1"]
	for _, c := range []struct {
		call Call
		want string
	}{
		{Call{Dim: "PP", Coll: "pipeline", Group: 2, Bytes: 1 << 20, TP: 2, World: 4}, "-pp_o"},
		{Call{Dim: "TP", Coll: "allreduce", Group: 2, Bytes: 1 << 20, TP: 2}, "number of GPUs"},
		// TP fills the node, so the profile measured no DP group; a job of
		// two such nodes would time its DP all-reduce with that null.
		{Call{Dim: "DP", Coll: "allreduce", Group: 2, Bytes: 1 << 20, TP: 4, World: 8}, "holds no DP allreduce"},
	} {
		if _, err := pl.Charge(c.call); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.call, err, c.want)
		}
	}
}

// SimAI's point is the heaviest call a SimAI export charges off from a
// bandwidth: any of SimAI 1.1's but those it times as 0, current SimAI's
// all-reduces from 1 MiB (below, it charges fixed latencies).
func TestSimAIPoint(t *testing.T) {
	row := func(coll string, bytes, perStep, us float64, ch ...Charged) Row {
		return Row{Call: Call{Dim: "DP", Coll: coll, Bytes: bytes, PerStep: perStep}, Us: us, Charges: ch}
	}
	off11 := Charged{Planner: "simai-1.1", Us: 1, Off: true}
	zero11 := Charged{Planner: "simai-1.1", Off: true}
	offNow := Charged{Planner: "simai", Us: 1, Off: true}
	for _, c := range []struct {
		rows []Row
		want float64 // bytes; 0 for none
	}{
		{[]Row{row("allreduce", 1, 10, 10, off11), row("allgather", 2, 10, 20, off11)}, 2},
		{[]Row{row("allreduce", 1, 10, 10, off11), row("allgather", 2, 10, 20, zero11)}, 1},
		{[]Row{row("allreduce", 1<<20, 10, 10, offNow), row("allgather", 2<<20, 10, 20, offNow)}, 1 << 20},
		{[]Row{row("allreduce", 1<<19, 10, 10, offNow)}, 0},
		{[]Row{row("allreduce", 1<<20, 10, 10, Charged{Planner: "simai", Us: 1}), row("allgather", 1, 1, 1, Charged{Planner: "simai-1.1", Cannot: "x", Off: true})}, 0},
		{nil, 0},
	} {
		call, ok := SimAIPoint(c.rows)
		if ok != (c.want != 0) || call.Bytes != c.want {
			t.Errorf("%v: %+v %v, want %v bytes", c.rows, call, ok, c.want)
		}
	}
}

// Whatever busbw.yaml holds, reading it and charging from it ends in a
// charge or an error, never a panic.
func FuzzReadSimAI11(f *testing.F) {
	seed, err := os.ReadFile("../export/testdata/export-simai-busbw.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(seed))
	f.Add("x\nTP:\nallreduce,: 1e40\nallgather,:\n: 3\nPP:\nbusbw: -2 junk\n")
	f.Add("")
	f.Add("x\nTP:\nallreduce,: nan\nallgather,: inf\n")
	f.Fuzz(func(t *testing.T, yaml string) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "busbw.yaml"), []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "simai_analytical.args"), []byte("-g_p_s 4 -n_p_s 4\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, export.SimAIRatioDir), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"nic_ratio.csv", "nvlink_ratio.csv", "ata_ratio.csv"} {
			if err := os.WriteFile(filepath.Join(dir, export.SimAIRatioDir, name), []byte("Size,1\n1099511627776,1\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		pl, err := readSimAI11(filepath.Join(dir, "busbw.yaml"))
		if err != nil {
			return
		}
		for _, dim := range []string{"TP", "DP", "EDP", "EP", "PP"} {
			for _, coll := range []string{"allreduce", "allgather", "reducescatter", "alltoall", "pipeline"} {
				us, err := pl.Charge(Call{Dim: dim, Coll: coll, Group: 2, Bytes: 1 << 20, TP: 2, EP: 2, World: 8})
				if err == nil && (us < 0 || math.IsNaN(us)) {
					t.Errorf("%s %s: charged %v", dim, coll, us)
				}
			}
		}
	})
}
