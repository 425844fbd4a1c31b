package export

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/internal/fixture"
	"github.com/collbench/collbench/internal/golden"
	"github.com/collbench/collbench/model"
	"github.com/collbench/collbench/model/profiled"
)

// Every export of a two-node, 4-GPU-per-node profile, golden-tested.
func TestExportGolden(t *testing.T) {
	p := fixture.Profile(t, 2, 4)
	for _, target := range Targets {
		t.Run(target, func(t *testing.T) {
			dir := t.TempDir()
			files, err := Write(context.Background(), p, target, dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range files {
				got, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				if filepath.Ext(f) == ".parquet" {
					got = parquetText(t, f) // a binary file is compared by what it holds
					f += ".txt"
				}
				golden.Check(t, "export-"+target+"-"+filepath.Base(f), got)
			}
		})
	}
}

// readJSON reads an exported JSON object.
func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// The keys Galvatron's loaders demand (config_utils.py
// read_allreduce_bandwidth_config, read_p2p_bandwidth_config and
// remap_config; search_engine.py for the names) are all there, in its
// units.
func TestGalvatronKeys(t *testing.T) {
	for _, shape := range [][2]int{{1, 8}, {2, 4}, {1, 2}} {
		nodes, per := shape[0], shape[1]
		world := nodes * per
		t.Run(fmt.Sprintf("%dx%d", nodes, per), func(t *testing.T) {
			p := fixture.Profile(t, nodes, per)
			dir := t.TempDir()
			if _, err := Write(context.Background(), p, "galvatron", dir, Options{}); err != nil {
				t.Fatal(err)
			}
			suffix := fmt.Sprintf("%dnodes_%dgpus_per_node.json", nodes, per)
			var ar, pp, sp, ov map[string]float64
			readJSON(t, filepath.Join(dir, "allreduce_bandwidth_"+suffix), &ar)
			readJSON(t, filepath.Join(dir, "p2p_bandwidth_"+suffix), &pp)
			readJSON(t, filepath.Join(dir, "sp_time_"+suffix), &sp)
			readJSON(t, filepath.Join(dir, "overlap_coefficient.json"), &ov)
			need := []string{fmt.Sprintf("allreduce_size_%d_consec_1", world)}
			for n := world / 2; n >= 2; n /= 2 {
				need = append(need, fmt.Sprintf("allreduce_size_%d_consec_1", n), fmt.Sprintf("allreduce_size_%d_consec_0", n))
			}
			for _, k := range need {
				if ar[k] <= 0 {
					t.Errorf("allreduce file lacks %s: %v", k, ar)
				}
			}
			for n := 2; n <= world; n *= 2 {
				if pp[fmt.Sprintf("pp_size_%d", n)] <= 0 {
					t.Errorf("p2p file lacks pp_size_%d", n)
				}
			}
			// remap_config: key.split('_')[-3] is n, [-2][:-2] the MiB; at
			// least 8 sizes per n.
			perN := map[string]int{}
			for k, v := range sp {
				parts := strings.Split(k, "_")
				if len(parts) < 5 || parts[len(parts)-1] != "time" || !strings.HasSuffix(parts[len(parts)-2], "MB") || v <= 0 {
					t.Fatalf("malformed sp_time key %s = %v", k, v)
				}
				if _, err := strconv.Atoi(strings.TrimSuffix(parts[len(parts)-2], "MB")); err != nil {
					t.Fatalf("%s: %v", k, err)
				}
				perN[parts[0]+"_"+parts[len(parts)-3]]++
			}
			for n := world; n >= 2; n /= 2 {
				for _, op := range []string{"allreduce", "all2all"} {
					if c := perN[fmt.Sprintf("%s_%d", op, n)]; c < 8 {
						t.Errorf("%s over %d: %d sizes, Galvatron asserts 8", op, n, c)
					}
				}
			}
			if len(ov) != 1 || ov["overlap_coe"] != 1.15 {
				t.Errorf("overlap file %v", ov)
			}
		})
	}
}

// Galvatron's units: bus bandwidth in MiB/ms at 32 MiB, times in ms.
func TestGalvatronUnits(t *testing.T) {
	p := fixture.Profile(t, 2, 4)
	dir := t.TempDir()
	if _, err := Write(context.Background(), p, "galvatron", dir, Options{}); err != nil {
		t.Fatal(err)
	}
	var ar, pp, sp map[string]float64
	readJSON(t, filepath.Join(dir, "allreduce_bandwidth_2nodes_4gpus_per_node.json"), &ar)
	readJSON(t, filepath.Join(dir, "p2p_bandwidth_2nodes_4gpus_per_node.json"), &pp)
	readJSON(t, filepath.Join(dir, "sp_time_2nodes_4gpus_per_node.json"), &sp)
	s := float64(32 << 20)
	busbw := func(alpha, bw, factor float64) float64 { // GB/s at s bytes
		return s * factor / (alpha + s*factor/bw*1e-3) * 1e-3
	}
	for key, want := range map[string]float64{
		"allreduce_size_4_consec_1": busbw(20, 150, 1.5) * 1e9 / (1 << 20) / 1e3, // inside a node
		"allreduce_size_4_consec_0": busbw(40, 15, 1.5) * 1e9 / (1 << 20) / 1e3,  // across both
		"allreduce_size_8_consec_1": busbw(40, 15, 1.75) * 1e9 / (1 << 20) / 1e3,
	} {
		if !within(ar[key], want, 1e-5) {
			t.Errorf("%s = %v, want %v MiB/ms", key, ar[key], want)
		}
	}
	if want := busbw(40, 15, 1) * 1e9 / (1 << 20) / 1e3; !within(pp["pp_size_2"], want, 1e-5) {
		t.Errorf("pp_size_2 = %v, want %v", pp["pp_size_2"], want)
	}
	// 1 GiB all-to-all over a node's 4 ranks: (20 µs + 1 GiB·0.75/150 GB/s) in ms.
	if want := (20 + float64(1<<30)*0.75/150e3) / 1e3; !within(sp["all2all_size_4_1024MB_time"], want, 1e-5) {
		t.Errorf("all2all 1024MB = %v ms, want %v", sp["all2all_size_4_1024MB_time"], want)
	}
	// The other bandwidth references.
	for how, want := range map[string]float64{"asymptotic": 150 * 1e9 / (1 << 20) / 1e3} {
		d := t.TempDir()
		if _, err := Write(context.Background(), p, "galvatron", d, Options{GalvatronBW: how}); err != nil {
			t.Fatal(err)
		}
		var got map[string]float64
		readJSON(t, filepath.Join(d, "allreduce_bandwidth_2nodes_4gpus_per_node.json"), &got)
		if !within(got["allreduce_size_4_consec_1"], want, 1e-5) {
			t.Errorf("%s: %v, want %v", how, got["allreduce_size_4_consec_1"], want)
		}
	}
}

// opAlpha gives each collective its own latency, as on a machine: one
// latency for all of them is what hides a format that has only one.
func opAlpha(op string) float64 {
	return map[string]float64{"allreduce": 1, "allgather": 0.25, "reducescatter": 0.5, "alltoall": 0.75, "sendrecv": 0.2, "pipeline": 0.15, "broadcast": 0.6}[op]
}

// calculonDoc is calculon_networks.json as the tests read it.
type calculonDoc struct {
	Networks []struct {
		Bandwidth, Efficiency, Latency float64
		Size                           int
		Ops                            map[string][2]*float64
		MustBeFilled                   bool    `json:"must_be_filled"`
		ProcessorUsage                 float64 `json:"processor_usage"`
	}
	Groups []struct {
		GroupSize        int `json:"group_size"`
		Layout           string
		Collectives, P2P int
	}
	Residuals []struct {
		Tier      string
		GroupSize int                `json:"group_size"`
		MaxRelErr map[string]float64 `json:"max_rel_err"`
	}
}

// calculonExport is the Calculon export of the two-node profile whose
// ops each have their own latency, read back.
func calculonExport(t *testing.T) (*document.Profile, calculonDoc) {
	t.Helper()
	p := fixture.ProfileWith(t, 2, 4, opAlpha)
	dir := t.TempDir()
	if _, err := Write(context.Background(), p, "calculon", dir, Options{}); err != nil {
		t.Fatal(err)
	}
	var doc calculonDoc
	readJSON(t, filepath.Join(dir, "calculon_networks.json"), &doc)
	return p, doc
}

// Calculon's own formula (calculon/network.py Network.time) on the
// exported entries gives every op's measured time within the residual the
// file states, and the residuals are small: one shared latency no longer
// charges the all-reduce's α to the others.
func TestCalculonMatchesTable(t *testing.T) {
	p, doc := calculonExport(t)
	if len(doc.Networks) < 2 || doc.Networks[0].Size != 4 || doc.Networks[1].Size != 8 || !doc.Networks[0].MustBeFilled ||
		doc.Residuals[0].Tier != "intra-node" || doc.Residuals[1].Tier != "inter-node" {
		t.Fatalf("networks: %+v", doc)
	}
	tiers := []struct {
		n      int
		layout string
	}{{4, "consecutive"}, {2, "strided"}}
	for i, net := range doc.Networks[:2] {
		if *net.Ops["all_reduce"][0] != 2 || net.Ops["p2p"][1] != nil || *net.Ops["all_gather"][1] != -1 {
			t.Errorf("tier %d ops %v", i, net.Ops)
		}
		for key, coll := range map[string]string{"all_reduce": "allreduce", "all_gather": "allgather", "reduce_scatter": "reducescatter", "p2p": "sendrecv"} {
			c, err := p.Curve(coll, tiers[i].n, tiers[i].layout)
			if err != nil {
				t.Fatal(err)
			}
			res := doc.Residuals[i].MaxRelErr[key]
			var worst float64
			var largest int64
			ratio := map[int64]float64{}
			for _, smp := range c.Samples {
				got := calculonTime(net.Bandwidth, net.Efficiency, net.Latency, net.Ops[key], float64(smp.Bytes), tiers[i].n)
				worst = max(worst, math.Abs(got-smp.TimeUs*1e-6)/(smp.TimeUs*1e-6))
				ratio[smp.Bytes] = got / (smp.TimeUs * 1e-6)
				largest = max(largest, smp.Bytes)
			}
			t.Logf("tier %d %s: Calculon ÷ the curve at 1, 8, 64 MiB: %.4f %.4f %.4f", i, key, ratio[1<<20], ratio[8<<20], ratio[64<<20])
			// Each op's bandwidth is its curve's line; the one latency
			// Calculon has cannot be each op's α, so the ops are off at the
			// smallest sizes and within 2 % where the bandwidth decides.
			if math.Abs(ratio[largest]-1) > 0.02 {
				t.Errorf("tier %d %s: residual %.4f, %.4f× at %d B", i, key, res, ratio[largest], largest)
			}
			if math.Abs(worst-res) > 1e-4 {
				t.Errorf("tier %d %s: Calculon is %.4f off the table at worst, the file says %.4f", i, key, worst, res)
			}
		}
		if !within(net.ProcessorUsage, 1-1/1.1, 1e-5) {
			t.Errorf("processor_usage %v", net.ProcessorUsage)
		}
	}
}

// ASTRA-sim's analytical backend on the exported network: a ring
// all-reduce over a Switch dimension of n NPUs sends 2(n−1) times, each
// charged two link latencies (two hops) and chunk/bandwidth with its GB/s
// read as 2^30 B/s (NetworkFunction.cpp, Switch.cpp, BasicTopology.cpp).
// That time must be the profile's all-reduce line.
func TestAstraSimUnits(t *testing.T) {
	p := fixture.ProfileWith(t, 2, 4, opAlpha)
	dir := t.TempDir()
	if _, err := Write(context.Background(), p, "astra-sim", dir, Options{}); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Dimensions []struct {
			NPUs    int     `json:"npus_count"`
			BW      float64 `json:"bandwidth_GiBps"`
			Latency float64 `json:"latency_ns"`
		}
	}
	readJSON(t, filepath.Join(dir, "astra_network.json"), &doc)
	yml, _ := os.ReadFile(filepath.Join(dir, "astra_network.yml"))
	awarePath := filepath.Join(dir, "astra_network_congestion_aware.yml")
	awareBW, awareLat := ymlList(t, awarePath, "bandwidth"), ymlList(t, awarePath, "latency")
	for i, tier := range []struct {
		n      int
		layout string
	}{{4, "consecutive"}, {2, "strided"}} {
		d := doc.Dimensions[i]
		if !strings.Contains(string(yml), num(d.BW)) || !strings.Contains(string(yml), num(d.Latency)) {
			t.Errorf("the yml and its twin differ:\n%s", yml)
		}
		c, _ := p.Curve("allreduce", tier.n, tier.layout)
		n := float64(d.NPUs)
		for _, s := range []float64{1 << 20, 64 << 20, 1 << 30} {
			bpns := d.BW * (1 << 30) / 1e9
			simNs := 2*(n-1)*2*d.Latency + 2*(n-1)/n*s/bpns
			if want := profiled.At(c.Fit, s) * 1e3; math.Abs(simNs-want) > 1e-5*want { // 6 significant digits in the file
				t.Errorf("tier %d, %g bytes: ASTRA-sim %v ns, profile %v ns", i, s, simNs, want)
			}
			// The congestion-aware backend stores and forwards: each of
			// a send's two links charges latency + chunk/bandwidth
			// (congestion_aware/network/Link.cpp), so its file carries
			// twice the bandwidth for the same line.
			bpns = awareBW[i] * (1 << 30) / 1e9
			simNs = 2 * (n - 1) * 2 * (awareLat[i] + s/n/bpns)
			if want := profiled.At(c.Fit, s) * 1e3; math.Abs(simNs-want) > 1e-5*want {
				t.Errorf("tier %d, %g bytes: ASTRA-sim congestion-aware %v ns, profile %v ns", i, s, simNs, want)
			}
		}
	}
	// The system and remote-memory configurations the numbers assume
	// come with them, so the simulator runs on the folder as written.
	var sys map[string]any
	readJSON(t, filepath.Join(dir, "astra_system.json"), &sys)
	for key, want := range map[string]any{"preferred-dataset-splits": 1.0, "active-chunks-per-dimension": 1.0,
		"collective-optimization": "baseline", "all-reduce-implementation": []any{"ring", "ring"}} {
		if !reflect.DeepEqual(sys[key], want) {
			t.Errorf("astra_system.json %s = %v, want %v", key, sys[key], want)
		}
	}
	// 0 trips the event queue's assertion (time must advance).
	if d, _ := sys["endpoint-delay"].(float64); d <= 0 {
		t.Errorf("astra_system.json endpoint-delay %v, want > 0", sys["endpoint-delay"])
	}
	var mem map[string]any
	readJSON(t, filepath.Join(dir, "astra_remote_memory.json"), &mem)
	if mem["memory-type"] != "NO_MEMORY_EXPANSION" {
		t.Errorf("astra_remote_memory.json: %v", mem)
	}
}

// ymlList reads a flow list ("key: [ a, b ]") of an ASTRA-sim network file.
func ymlList(t *testing.T, path, key string) []float64 {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		v, ok := strings.CutPrefix(line, key+": [")
		if !ok {
			continue
		}
		v, _, _ = strings.Cut(v, "]")
		var out []float64
		for _, f := range strings.Split(v, ",") {
			x, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			if err != nil {
				t.Fatalf("%s: %s: %v", path, key, err)
			}
			out = append(out, x)
		}
		return out
	}
	t.Fatalf("%s has no %s list", path, key)
	return nil
}

// SimAI 1.x reads busbw.yaml in GiB/s (Common.hh GBps = 1/2^30) and reads
// EP's allreduce/allgather/reducescatter for the expert-data-parallel
// group (DP_EP), its alltoall for the EP group.
func TestSimAIUnitsAndGroups(t *testing.T) {
	p := fixture.Profile(t, 1, 8)
	dir := t.TempDir()
	if _, err := Write(context.Background(), p, "simai", dir, Options{TP: 2, EP: 2}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "busbw.yaml"))
	got := map[string]string{}
	section := ""
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n")[1:] {
		if strings.HasSuffix(line, ":") {
			section = strings.TrimSuffix(line, ":")
			continue
		}
		k, v, _ := strings.Cut(line, ": ")
		got[section+"."+strings.TrimSuffix(k, ",")] = v
	}
	gib := num(150 * 1e9 / (1 << 30)) // every group of the one-node fixture runs at 150 GB/s
	for key, want := range map[string]string{
		"TP.allreduce": gib,    // 2 consecutive
		"DP.allgather": gib,    // 4 ranks of stride 2: the strided layout
		"EP.allreduce": gib,    // DP_EP: 2 ranks of stride TP·EP = 4, strided
		"EP.alltoall":  "null", // 2 ranks of stride 2: no layout of the profile
		"PP.busbw":     gib,
	} {
		if got[key] != want {
			t.Errorf("%s = %q, want %q\n%s", key, got[key], want, data)
		}
	}
}

func TestExportErrors(t *testing.T) {
	p := fixture.Profile(t, 1, 4)
	p.Overlap = nil
	if _, err := Write(context.Background(), p, "galvatron", t.TempDir(), Options{}); err == nil || !strings.Contains(err.Error(), "no overlap probe") {
		t.Errorf("no overlap: %v", err)
	}
	p = fixture.Profile(t, 1, 4)
	var kept []document.ProfileCurve
	for _, c := range p.Curves {
		if c.Op != "sendrecv" && c.Op != "pipeline" {
			kept = append(kept, c)
		}
	}
	p.Curves = kept
	dir := t.TempDir()
	if _, err := Write(context.Background(), p, "galvatron", dir, Options{}); err == nil || !strings.Contains(err.Error(), "no pipeline curve") {
		t.Errorf("no point-to-point curve: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a failed export left %d files", len(entries))
	}
	if _, err := Write(context.Background(), p, "megatron", dir, Options{}); err == nil {
		t.Error("unknown target accepted")
	}
	if err := CheckBandwidthRef("point:lots"); err == nil {
		t.Error("bad bandwidth reference accepted")
	}
}

func within(got, want, rel float64) bool { return got >= want*(1-rel) && got <= want*(1+rel) }

// Galvatron's p2p files come from the pipeline chain its own probe runs
// (profile_p2p.py: the last stage does not send), and from send/recv's
// ring only in a profile taken without it.
func TestGalvatronP2PIsTheChain(t *testing.T) {
	p := fixture.ProfileWith(t, 1, 4, opAlpha)
	read := func() float64 {
		dir := t.TempDir()
		if _, err := Write(context.Background(), p, "galvatron", dir, Options{GalvatronBW: "point:1M"}); err != nil {
			t.Fatal(err)
		}
		var pp map[string]float64
		readJSON(t, filepath.Join(dir, "p2p_bandwidth_1nodes_4gpus_per_node.json"), &pp)
		return pp["pp_size_2"]
	}
	s := float64(1 << 20)
	bw := func(alpha float64) float64 { return s / (alpha + s/150e3) * 1e-3 * 1e9 / (1 << 20) / 1e3 }
	if got, want := read(), bw(20*opAlpha("pipeline")); !within(got, want, 1e-5) {
		t.Errorf("pp_size_2 = %v MiB/ms, want the chain's %v", got, want)
	}
	var kept []document.ProfileCurve
	for _, c := range p.Curves {
		if c.Op != "pipeline" {
			kept = append(kept, c)
		}
	}
	p.Curves = kept
	if got, want := read(), bw(20*opAlpha("sendrecv")); !within(got, want, 1e-5) {
		t.Errorf("without the chain: pp_size_2 = %v MiB/ms, want the ring's %v", got, want)
	}
}

// sp_time holds the measured medians; a size the fit sets aside as an
// outlier gets the fit's time, not the previous size's (a running
// maximum turned one noisy dip into a time 2.7× the measured one).
func TestGalvatronTimesAreMeasured(t *testing.T) {
	p := fixture.Profile(t, 1, 2)
	c, err := p.Curve("alltoall", 2, "consecutive")
	if err != nil {
		t.Fatal(err)
	}
	at := map[int64]int{}
	for i, s := range c.Samples {
		at[s.Bytes] = i
	}
	exact := func(b int64) float64 { return profiled.At(c.Fit, float64(b)) }
	c.Samples[at[8<<20]].TimeUs = 0.97 * exact(8<<20)  // noise: kept
	c.Samples[at[64<<20]].TimeUs = 0.2 * exact(64<<20) // a wild dip: the fit's
	c.Samples[at[256<<20]].TimeUs = 5 * exact(256<<20) // a wild stall: the fit's
	p = reread(t, p)
	dir := t.TempDir()
	if _, err := Write(context.Background(), p, "galvatron", dir, Options{}); err != nil {
		t.Fatal(err)
	}
	var sp map[string]float64
	readJSON(t, filepath.Join(dir, "sp_time_1nodes_2gpus_per_node.json"), &sp)
	for mib, want := range map[int64]float64{8: 0.97 * exact(8<<20), 64: exact(64 << 20), 256: exact(256 << 20), 16: exact(16 << 20)} {
		if got := sp[fmt.Sprintf("all2all_size_2_%dMB_time", mib)]; !within(got, want/1e3, 1e-5) {
			t.Errorf("%d MiB: %v ms, want %v ms", mib, got, want/1e3)
		}
	}
}

// ratioTable is the SimAI ratio table named, "" for none.
func ratioTable(t *testing.T, dir, name string) string {
	t.Helper()
	if name == "" {
		return ""
	}
	b, err := os.ReadFile(filepath.Join(dir, SimAIRatioDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// simaiTime is current SimAI's analytical time in µs (Layer::compute_time
// for a group inside one node), reading a ratio table as its getValue
// does: interpolated between rows and divided by the last row's value.
func simaiTime(t *testing.T, table string, nvGiB float64, op string, n int, size float64) float64 {
	f := float64(n-1) / float64(n)
	if op == "allreduce" {
		return size / (1 << 30) / nvGiB * 1e6 * 2 * f
	}
	var sizes, vals []float64
	for _, line := range strings.Split(strings.TrimSpace(table), "\n")[1:] {
		cells := strings.Split(line, ",")
		s, err1 := strconv.ParseFloat(cells[0], 64)
		v, err2 := strconv.ParseFloat(cells[1], 64)
		if err1 != nil || err2 != nil || len(cells) != simaiRatioColumns+1 {
			t.Fatalf("bad ratio row %q", line)
		}
		sizes, vals = append(sizes, s), append(vals, v)
	}
	last := vals[len(vals)-1]
	ratio := vals[0] / last
	for i := 0; i+1 < len(sizes); i++ {
		if size >= sizes[i] && size <= sizes[i+1] {
			ratio = (vals[i] + (vals[i+1]-vals[i])*(size-sizes[i])/(sizes[i+1]-sizes[i])) / last
			break
		}
	}
	return size / (1 << 30) / (ratio * nvGiB) * 1e6 * f
}

// Current SimAI's inputs: -nv and -nic in 2^30 B/s from the intra- and
// inter-node all-reduce, and ratio tables that make its time of an
// all-gather, reduce-scatter or all-to-all inside a node the measured one.
func TestSimAIAnalytical(t *testing.T) {
	p := fixture.ProfileWith(t, 2, 4, func(op string) float64 { return map[string]float64{"alltoall": 3}[op] + 1 })
	dir := t.TempDir()
	if _, err := Write(context.Background(), p, "simai", dir, Options{}); err != nil {
		t.Fatal(err)
	}
	args, _ := os.ReadFile(filepath.Join(dir, "simai_analytical.args"))
	want := fmt.Sprintf("-g_p_s 4 -n_p_s 4 -nv %s -nic %s\n", num(150e9/(1<<30)), num(15e9/(1<<30)))
	if string(args) != want {
		t.Fatalf("args %q, want %q", args, want)
	}
	nv := 150e9 / (1 << 30)
	for _, c := range []struct{ op, table string }{{"allgather", "nic_ratio.csv"}, {"reducescatter", "nvlink_ratio.csv"}, {"alltoall", "ata_ratio.csv"}, {"allreduce", ""}} {
		table := ratioTable(t, dir, c.table)
		curve, err := p.Curve(c.op, 4, "consecutive")
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range curve.Samples {
			got := simaiTime(t, table, nv, c.op, 4, float64(s.Bytes))
			tol := 1e-5 // six digits in the files
			if c.op == "allreduce" {
				tol = 0.02 + 40/s.TimeUs // no ratio: SimAI charges no latency
			}
			if !within(got, s.TimeUs, tol) {
				t.Errorf("%s %d B: SimAI %.3f µs, measured %.3f µs", c.op, s.Bytes, got, s.TimeUs)
			}
		}
	}
}

// reread is the profile as a file gives it back: its curves' models built
// afresh from the samples, as after a change to them.
func reread(t *testing.T, p *document.Profile) *document.Profile {
	t.Helper()
	var b bytes.Buffer
	if err := p.Encode(&b); err != nil {
		t.Fatal(err)
	}
	q, err := document.DecodeProfile(&b)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// On one node SimAI reads -nic only for its DP all-reduce, which it times
// as if each of the DP group's ranks were a node of that many GPUs and
// NICs: -nic is the DP group's measured busbw divided by the group's size,
// so that SimAI's bus bandwidth comes out at that figure.
func TestSimAIOneNodeDP(t *testing.T) {
	p := fixture.ProfileWith(t, 1, 4, func(string) float64 { return 1 })
	c, err := p.Curve("allreduce", 2, "strided")
	if err != nil {
		t.Fatal(err)
	}
	for i := range c.Samples {
		c.Samples[i].TimeUs *= 3 // 50 GB/s over ranks 2 apart, 150 over the node
	}
	p = reread(t, p)
	for _, c := range []struct {
		tp  int
		nic float64 // GB/s
	}{
		{1, 150.0 / 4}, // the DP group is the node
		{2, 50.0 / 2},  // 2 ranks, 2 apart
		{0, 150.0},     // TP fills the node: no DP all-reduce inside it, -nic is -nv
	} {
		dir := t.TempDir()
		if _, err := Write(context.Background(), p, "simai", dir, Options{TP: c.tp}); err != nil {
			t.Fatal(err)
		}
		args, _ := os.ReadFile(filepath.Join(dir, "simai_analytical.args"))
		want := fmt.Sprintf("-g_p_s 4 -n_p_s 4 -nv %s -nic %s\n", num(150e9/(1<<30)), num(c.nic*1e9/(1<<30)))
		if string(args) != want {
			t.Errorf("TP %d: args %q, want %q", c.tp, args, want)
		}
	}
}

func TestCollides(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		targets []string
		path    string
		want    string
	}{
		{[]string{"simai"}, filepath.Join(dir, "busbw.yaml"), "simai"},
		{[]string{"simai"}, filepath.Join(dir, ".", "astra-sim-alibabacloud/inputs/ratio/nic_ratio.csv"), "simai"},
		{[]string{"calculon", "galvatron"}, filepath.Join(dir, "sp_time_1nodes_8gpus_per_node.json"), "galvatron"},
		{[]string{"calculon"}, filepath.Join(dir, "busbw.yaml"), ""},
		{[]string{"simai"}, filepath.Join(dir, "sub", "busbw.yaml"), ""},
		{[]string{"simai"}, filepath.Join(filepath.Dir(dir), "busbw.yaml"), ""},
		{[]string{"aiconfigurator"}, filepath.Join(dir, "comm/nccl/2.29.7/nccl_perf.parquet"), "aiconfigurator"},
		{[]string{"aiconfigurator"}, filepath.Join(dir, "comm/nccl/host/collection_meta.yaml"), "aiconfigurator"},
		{[]string{"aiconfigurator"}, filepath.Join(dir, "nccl_perf.txt"), "aiconfigurator"},
	} {
		if got := Collides(tc.targets, dir, tc.path); got != tc.want {
			t.Errorf("%v %s: %q, want %q", tc.targets, tc.path, got, tc.want)
		}
	}
}

// An export never replaces the profile it was made from, even when the
// profile sits in the folder under an export's name; a link found there
// under an export's name is replaced, not written through.
func TestWriteKeepsItsInput(t *testing.T) {
	dir := t.TempDir()
	p := fixture.Profile(t, 1, 4)
	data := []byte("{\"schema\": \"the profile\"}\n")
	input := filepath.Join(dir, "busbw.yaml")
	if err := os.WriteFile(input, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(context.Background(), p, "simai", dir, Options{Keep: []string{input}}); err == nil ||
		!strings.Contains(err.Error(), "is the input") {
		t.Errorf("writing over the input: %v", err)
	}
	if got, _ := os.ReadFile(input); !bytes.Equal(got, data) {
		t.Error("the profile was replaced")
	}
	other := t.TempDir()
	victim := filepath.Join(other, "victim.json")
	if err := os.WriteFile(victim, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(other, "calculon_networks.json")); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(context.Background(), p, "calculon", other, Options{}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(victim); !bytes.Equal(got, data) {
		t.Error("the file a link led to was replaced")
	}
}

// --galvatron-bw average is the mean bus bandwidth of the curve, the one
// every consumer charges, over its sizes: a size the fit sets aside as a
// stall counts at the fit's time, not at its raw sample's (which moved
// the average by up to 8.8 %).
func TestGalvatronAverageReadsTheCurve(t *testing.T) {
	p := fixture.Profile(t, 1, 2)
	c, err := p.Curve("allreduce", 2, "consecutive")
	if err != nil {
		t.Fatal(err)
	}
	for i := range c.Samples {
		if c.Samples[i].Bytes == 256<<20 {
			c.Samples[i].TimeUs *= 5 // a wild stall
			c.Samples[i].BusBW /= 5
		}
	}
	p = reread(t, p)
	c, _ = p.Curve("allreduce", 2, "consecutive")
	dir := t.TempDir()
	if _, err := Write(context.Background(), p, "galvatron", dir, Options{GalvatronBW: "average"}); err != nil {
		t.Fatal(err)
	}
	var ar map[string]float64
	readJSON(t, filepath.Join(dir, "allreduce_bandwidth_1nodes_2gpus_per_node.json"), &ar)
	curve, err := profiled.Curve(c)
	if err != nil {
		t.Fatal(err)
	}
	var onCurve, raw float64
	for i, b := range curve.Bytes {
		onCurve += curve.BusBW(b) / float64(len(curve.Bytes))
		raw += c.Samples[i].BusBW / float64(len(c.Samples))
	}
	got := ar["allreduce_size_2_consec_1"]
	if !within(got, mibPerMs(onCurve), 1e-5) {
		t.Errorf("average %v MiB/ms, want the curve's %v (raw samples give %v)", got, mibPerMs(onCurve), mibPerMs(raw))
	}
	if within(onCurve, raw, 0.01) {
		t.Fatalf("the stall should move the raw average: %v against %v", raw, onCurve)
	}
}

// On one node SimAI 1.1 times every all-reduce, the data-parallel one
// included, with TP's allreduce value (Layer.cc: all_gpus ==
// gpus_per_server), and reads null as −1, which wrapped every such time
// negative with TP 1. With TP 1 on one node the TP line carries the DP
// group's busbw, the one group those all-reduces run over.
func TestSimAIOneNodeTPOneCarriesDP(t *testing.T) {
	p := fixture.Profile(t, 1, 4)
	dir := t.TempDir()
	if _, err := Write(context.Background(), p, "simai", dir, Options{TP: 1}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "busbw.yaml"))
	lines := strings.Split(string(data), "\n")
	value := func(section, key string) string {
		in := false
		for _, l := range lines {
			if strings.HasSuffix(l, ":") && !strings.Contains(l, ",") {
				in = l == section+":"
				continue
			}
			if k, v, ok := strings.Cut(l, ": "); ok && in && k == key {
				return v
			}
		}
		return ""
	}
	tp, dp := value("TP", "allreduce,"), value("DP", "allreduce,")
	if tp == "null" || tp != dp || dp == "" {
		t.Errorf("TP allreduce %q, DP allreduce %q: want the DP group's busbw in both\n%s", tp, dp, data)
	}
}

// With TP and EP groups smaller than a node, current SimAI times a TP
// all-reduce with -nv, a TP all-gather or reduce-scatter with -nv and
// nic_ratio.csv, and an EP all-to-all with -nv and ata_ratio.csv, each
// over its own group's ranks: so -nv is the TP group's all-reduce and
// each table the ratio of its own group's curve, and SimAI charges each
// call what its group measured (it charged the node's figures: TP
// all-reduce ×1.114, EP all-to-all ×1.21–1.52 on the kept host profile).
func TestSimAIAnalyticalGroups(t *testing.T) {
	p := fixture.ProfileWith(t, 1, 4, func(op string) float64 { return map[string]float64{"alltoall": 3}[op] + 1 })
	// Groups of 2 run at a third of the node's speed, so a table built
	// from the node's curves charges them wrong.
	for i := range p.Curves {
		if p.Curves[i].Group.Size == 2 {
			for j := range p.Curves[i].Samples {
				p.Curves[i].Samples[j].TimeUs *= 3
			}
		}
	}
	p = reread(t, p)
	dir := t.TempDir()
	if _, err := Write(context.Background(), p, "simai", dir, Options{TP: 2, EP: 2}); err != nil {
		t.Fatal(err)
	}
	nv := simaiNV(t, dir)
	for _, c := range []struct{ op, table, layout string }{
		{"allreduce", "", "consecutive"}, {"allgather", "nic_ratio.csv", "consecutive"}, {"reducescatter", "nic_ratio.csv", "consecutive"},
		{"alltoall", "ata_ratio.csv", "strided"}, // the EP group: 2 data-parallel ranks, TP apart
	} {
		table := ratioTable(t, dir, c.table)
		curve, err := p.Curve(c.op, 2, c.layout)
		if err != nil {
			t.Fatal(err)
		}
		m, err := profiled.Curve(curve)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range curve.Samples {
			if s.Bytes < simaiSmallest {
				continue
			}
			got, want := simaiTime(t, table, nv, c.op, 2, float64(s.Bytes)), m.Time(float64(s.Bytes))
			tol := 1e-5 // six digits in the files
			if c.op == "allreduce" {
				want = float64(s.Bytes) * m.Line.Beta // SimAI charges the line's bandwidth, no latency
			}
			if !within(got, want, tol) {
				t.Errorf("%s over 2 (%s), %d B: SimAI %.3f µs, the group's curve %.3f µs", c.op, c.layout, s.Bytes, got, want)
			}
		}
	}
}

// calculonTime is Calculon's own Network.time (calculon/network.py): the
// network's latency plus S·scalar·(1 + offset/n) over its bandwidth.
func calculonTime(bw, eff, latency float64, op [2]*float64, size float64, n int) float64 {
	scaled := size * *op[0]
	if op[1] != nil {
		scaled += scaled / float64(n) * *op[1]
	}
	return latency + scaled/(bw*1e9*eff)
}

// Calculon gives each parallel dimension its own network (tensor_par_net,
// data_par_net, pipeline_par_net), so the file holds one per group the
// profile measured: charged through it, a TP group's collectives, a DP
// group's all-reduce and a pipeline's send are each their own group's
// curve where the bandwidth decides (the tiers charged a DP group of 2
// strided ranks the 4-rank bandwidth, ×1.15–1.64, and a pipeline's send
// the send/recv ring, ×1.54 on the kept host profile).
func TestCalculonGroupNetworks(t *testing.T) {
	p, doc := calculonExport(t)
	net := func(n int, layout, key string) int {
		for _, g := range doc.Groups {
			if g.GroupSize == n && g.Layout == layout {
				if key == "p2p" {
					return g.P2P
				}
				return g.Collectives
			}
		}
		t.Fatalf("no network for %d %s ranks: %+v", n, layout, doc.Groups)
		return 0
	}
	for _, c := range []struct {
		dim, key, coll, layout string
		n                      int
	}{
		{"TP", "all_reduce", "allreduce", "consecutive", 2}, {"TP", "all_gather", "allgather", "consecutive", 2},
		{"TP", "reduce_scatter", "reducescatter", "consecutive", 2},
		{"DP", "all_reduce", "allreduce", "strided", 4}, // 4 ranks TP = 2 apart, across the nodes
		{"PP", "p2p", "pipeline", "strided", 2},         // 2 stages, a node apart
	} {
		nw := doc.Networks[net(c.n, c.layout, c.key)]
		if nw.Size != 8 || nw.MustBeFilled {
			t.Errorf("%s network: size %d, must be filled %v", c.dim, nw.Size, nw.MustBeFilled)
		}
		curve, err := p.Curve(c.coll, c.n, c.layout)
		if err != nil {
			t.Fatal(err)
		}
		m, err := profiled.Curve(curve)
		if err != nil {
			t.Fatal(err)
		}
		n := c.n
		if c.key == "p2p" {
			n = 2 // Calculon asserts a p2p is between two
		}
		s := m.Bytes[len(m.Bytes)-1]
		got, want := calculonTime(nw.Bandwidth, nw.Efficiency, nw.Latency, nw.Ops[c.key], s, n), m.Time(s)*1e-6
		if !within(got, want, 0.02) {
			t.Errorf("%s %s over %d %s ranks at %g B: Calculon %v s, the curve %v s", c.dim, c.key, c.n, c.layout, s, got, want)
		}
	}
}

// SimAI times TP all-gathers and reduce-scatters from one table (cal_ratio
// sends both to nic_ratio.csv), and sequence parallelism makes as many of
// each; the table's ratio is the one that times the pair as measured, so
// a step is right however far apart the two ops are. Their geometric
// mean made each off by the same factor and the pair 0.56 of its time
// on the kept host profile, whose reduce-scatter is 10.7× its all-gather.
func TestSimAIGatherTableTimesThePair(t *testing.T) {
	p := fixture.Profile(t, 1, 4)
	for i := range p.Curves {
		if c := &p.Curves[i]; c.Op == "reducescatter" && c.Group.Size == 2 {
			for j := range c.Samples {
				c.Samples[j].TimeUs *= 10
			}
		}
	}
	p = reread(t, p)
	dir := t.TempDir()
	if _, err := Write(context.Background(), p, "simai", dir, Options{TP: 2}); err != nil {
		t.Fatal(err)
	}
	nv := simaiNV(t, dir)
	table := ratioTable(t, dir, "nic_ratio.csv")
	curve := func(op string) *model.Curve {
		c, err := p.Curve(op, 2, "consecutive")
		if err != nil {
			t.Fatal(err)
		}
		m, err := profiled.Curve(c)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	ag, rs := curve("allgather"), curve("reducescatter")
	for _, s := range ag.Bytes {
		if s < simaiSmallest {
			continue
		}
		got := simaiTime(t, table, nv, "allgather", 2, s) + simaiTime(t, table, nv, "reducescatter", 2, s)
		if want := ag.Time(s) + rs.Time(s); !within(got, want, 1e-5) {
			t.Errorf("%.0f B: SimAI times the pair %.3f µs, measured %.3f µs", s, got, want)
		}
	}
}

// simaiNV is the -nv of the SimAI flags exported into dir.
func simaiNV(t *testing.T, dir string) float64 {
	t.Helper()
	args, err := os.ReadFile(filepath.Join(dir, "simai_analytical.args"))
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(args))
	for i := range fields[:len(fields)-1] {
		if fields[i] == "-nv" {
			nv, err := strconv.ParseFloat(fields[i+1], 64)
			if err != nil {
				t.Fatal(err)
			}
			return nv
		}
	}
	t.Fatalf("no -nv in %q", args)
	return 0
}
