package judge

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/collbench/collbench/internal/schemacheck"
)

func h100s(n int) []GPU {
	var g []GPU
	for i := 0; i < n; i++ {
		g = append(g, GPU{Name: "NVIDIA H100 80GB HBM3", SM: "9.0", NVLinks: 18, PCIeGen: 5, PCIeWidth: 16})
	}
	return g
}

func ndr(n int) []NIC {
	var out []NIC
	for i := 0; i < n; i++ {
		out = append(out, NIC{Name: "mlx5_" + string(rune('0'+i)) + " port 1", GBps: 50, Rate: "400 Gb/sec"})
	}
	return out
}

// Recorded topologies and the limit each gives.
func TestWireLimit(t *testing.T) {
	shared := GPU{Bus: "0000:00:06", Name: "NVIDIA H100 80GB HBM3", SM: "9.0", PCIeGen: 5, PCIeWidth: 16}
	pcie := []GPU{{Name: "NVIDIA A100-PCIE-40GB", SM: "8.0", PCIeGen: 4, PCIeWidth: 16}, {Name: "NVIDIA A100-PCIE-40GB", SM: "8.0", PCIeGen: 4, PCIeWidth: 8}}
	cases := []struct {
		name string
		t    Topology
		want string // Limit.String(), or "" for none
	}{
		{"8×H100 NV18", Topology{Backend: "nccl", Nodes: 1, RanksPerNode: 8, GPUs: h100s(8)}, "NVLink4 ×18: 450 GB/s per direction"},
		{"PCIe-only pair, one link trained x8", Topology{Backend: "nccl", Nodes: 1, RanksPerNode: 2, GPUs: pcie}, "PCIe Gen4 x8: 15.75 GB/s per direction"},
		{"2 nodes × 8 H100, 8 NDR ports each", Topology{Backend: "nccl", Nodes: 2, RanksPerNode: 8, GPUs: h100s(8), NICs: ndr(8)},
			"network 8× 400 Gb/sec: 400 GB/s per direction"},
		{"2 nodes, 1 GPU each, 1 NDR port", Topology{Backend: "nccl", Nodes: 2, RanksPerNode: 1, GPUs: h100s(1), NICs: ndr(1)},
			"network 1× 400 Gb/sec: 50 GB/s per direction"},
		{"host backend, one machine", Topology{Backend: "host", Nodes: 1, RanksPerNode: 4, MemcpyGBps: 12.345}, "memory copy: 12.35 GB/s per direction"},
		{"one rank", Topology{Backend: "nccl", Nodes: 1, RanksPerNode: 1, GPUs: h100s(1)}, ""},
		// Two ranks on one GPU (as on the H100 of docs/gpu.md): their
		// data never leaves the GPU's memory, so no link bounds it.
		{"ranks sharing a GPU", Topology{Backend: "nccl", Nodes: 1, RanksPerNode: 2, GPUs: []GPU{shared, shared}}, ""},
		{"no NVML figures", Topology{Backend: "nccl", Nodes: 1, RanksPerNode: 2, GPUs: []GPU{{Name: "x"}, {Name: "x"}}}, ""},
	}
	for _, c := range cases {
		l, why := WireLimit(c.t)
		got := ""
		if why == "" {
			got = l.String()
		} else if l != (Limit{}) {
			t.Errorf("%s: a limit %+v with a reason for none, %q", c.name, l, why)
		}
		if got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// A sysfs tree: two active NDR ports and one down, and, when there are
// none, the Ethernet interfaces with a device of their own.
func TestReadNICs(t *testing.T) {
	root := t.TempDir()
	write := func(path, data string) {
		p := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("sys/class/net/eth0/device/vendor", "0x15b3")
	write("sys/class/net/eth0/operstate", "up")
	write("sys/class/net/eth0/speed", "25000")
	write("sys/class/net/veth1/operstate", "up")
	write("sys/class/net/veth1/speed", "10000")
	write("sys/class/net/lo/operstate", "unknown")
	if got := ReadNICs(root); len(got) != 1 || got[0].Name != "eth0" || got[0].GBps != 3.125 || got[0].Rate != "25 Gb/s" {
		t.Errorf("Ethernet: %+v, want eth0 at 3.125 GB/s", got)
	}
	for i, state := range []string{"4: ACTIVE", "4: ACTIVE", "1: DOWN"} {
		dev := "sys/class/infiniband/mlx5_" + string(rune('0'+i)) + "/ports/1/"
		write(dev+"state", state)
		write(dev+"rate", "400 Gb/sec (4X NDR)")
	}
	got := ReadNICs(root)
	if len(got) != 2 || got[0].Name != "mlx5_0 port 1" || got[1].GBps != 50 || got[1].Rate != "400 Gb/sec" {
		t.Errorf("InfiniBand: %+v, want the two active NDR ports", got)
	}
}

// The built-in table reads and every entry has a source; a site's table
// is held to the same rules.
func TestReferenceTables(t *testing.T) {
	if err := schemacheck.Validate("../docs/references.schema.json", builtin); err != nil {
		t.Errorf("the built-in table does not follow docs/references.schema.json: %v", err)
	}
	b := Builtin()
	if len(b.Entries) < 10 {
		t.Fatalf("%d built-in entries", len(b.Entries))
	}
	for _, e := range b.Entries {
		if e.Source == "" || e.Conditions == "" || e.Date == "" {
			t.Errorf("%s: source %q, conditions %q, date %q", e.ID, e.Source, e.Conditions, e.Date)
		}
	}
	bad := []struct{ doc, want string }{
		{`{"version": 2, "entries": []}`, "version 2 is not supported"},
		{`{"version": 1, "entries": [], "extra": 1}`, "unknown field"},
		{`{"version": 1, "entries": [{"id": "a", "gpu": "H100", "link": "NVLink4", "gpus_per_node": 8, "nodes_min": 1, "collective": "allreduce", "busbw_gbps": 400}]}`, "no source"},
		{`{"version": 1, "entries": [{"id": "a", "gpu": "H100", "link": "NVLink4", "gpus_per_node": 8, "nodes_min": 1, "collective": "allreduce", "busbw_gbps": 0, "source": "x"}]}`, "busbw_gbps must be above 0"},
		{`{"version": 1, "entries": [` + strings.Repeat(`{"id": "a", "gpu": "H100", "link": "NVLink4", "gpus_per_node": 8, "nodes_min": 1, "collective": "allreduce", "busbw_gbps": 1, "source": "x"},`, 2) + `{}]}`, "used twice"},
		{`not json`, "not a reference table"},
		{`{"version": 1, "entries": [{"id": "a", "gpu": "H100", "link": "NVLink4", "gpus_per_node": 8, "nodes_min": 1, "collective": "all_reduce", "busbw_gbps": 1, "source": "x"}]}`, `collective "all_reduce": want one of collbench's names (allreduce, `},
	}
	entry := func(id, extra string) string {
		return `{"id": "` + id + `", "gpu": "H100", "link": "NVLink4", "gpus_per_node": 8, "nodes_min": 1, "collective": "allreduce", "source": "x", ` + extra + `}`
	}
	one := `{"version": 1, "entries": [` + entry("a", `"busbw_gbps": 1`) + `]}`
	bad = append(bad, []struct{ doc, want string }{
		{one + " garbage", "something follows the table"},
		{one + "\n" + one, "something follows the table"},
		{`{"version": 1, "entries": [` + entry("a", `"busbw_gbps": 1e308`) + `]}`, "busbw_gbps 1e+308 is beyond any wire"},
		{`{"version": 1, "entries": [` + entry(strings.Repeat("x", 5000), `"busbw_gbps": 1`) + `]}`, "is 5000 bytes long"},
		{`{"version": 1, "entries": [` + entry(strings.Repeat("x", 65), `"busbw_gbps": 1`) + `]}`, "id is 65 bytes long (at most 64"},
		{`{"version": 1, "entries": [` + entry(`a\u001b[31m`, `"busbw_gbps": 1`) + `]}`, "holds a control character"},
	}...)
	for _, c := range bad {
		if _, err := ReadTable(strings.NewReader(c.doc)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ReadTable(%.60s): %v, want %q", c.doc, err, c.want)
		}
	}
}

// An id in two tables (the built-in one and a site's, or two sites')
// is refused: a verdict names its reference by id.
func TestDistinctIDs(t *testing.T) {
	b := Builtin()
	site := Table{Version: 1, Entries: []Reference{{ID: b.Entries[0].ID, Site: true}}}
	if err := DistinctIDs([]Table{b, site}); err == nil || !strings.Contains(err.Error(), "the built-in table and site table 1") {
		t.Errorf("a built-in id again: %v", err)
	}
	other := Table{Version: 1, Entries: []Reference{{ID: "mine", Site: true}}}
	if err := DistinctIDs([]Table{b, other, other}); err == nil || !strings.Contains(err.Error(), `"mine" is in two reference tables (site table 1 and site table 2)`) {
		t.Errorf("two sites: %v", err)
	}
	if err := DistinctIDs([]Table{b, other}); err != nil {
		t.Error(err)
	}
}

// Verdicts against the 8×H100 all-reduce figures (480 with NVLS, 370
// without): between them normal, below 0.9×370 low, above 1.15×480 high;
// a GH200 is not an H200, a PCIe H100 not an NVLink one.
func TestJudge(t *testing.T) {
	tables := []Table{Builtin()}
	s := System{GPU: "NVIDIA H100 80GB HBM3", Link: "NVLink4 ×18", GPUsPerNode: 8, Nodes: 1}
	limit, why := WireLimit(Topology{Backend: "nccl", Nodes: 1, RanksPerNode: 8, GPUs: h100s(8)})
	cases := []struct {
		bw      float64
		verdict string
		ref     string
	}{
		{400, Normal, "h100x8-ar-ring"}, {470, Normal, "h100x8-ar-nvls"}, {300, Low, "h100x8-ar-ring"}, {600, High, "h100x8-ar-nvls"},
	}
	for _, c := range cases {
		j := Judge("allreduce", []Row{{Size: 1 << 20, BusBW: 100, Time: 20, Estimate: 10}, {Size: 8 << 30, BusBW: c.bw, Time: 1000, Estimate: 800}}, limit, why, tables, s)
		r := j.Rows[1]
		if r.Verdict != c.verdict || r.Reference == nil || r.Reference.ID != c.ref || j.Rows[0].Verdict != "" {
			t.Errorf("%g GB/s: %+v, want %s against %s", c.bw, r, c.verdict, c.ref)
		}
		if r.WireShare != c.bw/450 || j.Rows[0].EstimateRatio != 2 {
			t.Errorf("%g GB/s: wire share %v, estimate ratios %v", c.bw, r.WireShare, j.Rows[0].EstimateRatio)
		}
		if !strings.Contains(j.Summary, "of NVLink4 ×18: 450 GB/s per direction") || !strings.Contains(j.Summary, "NCCL's estimate (median)") {
			t.Errorf("summary %q", j.Summary)
		}
	}
	j := Judge("allreduce", []Row{{Size: 8 << 30, BusBW: 300}}, limit, why, tables, s)
	if !strings.Contains(j.Summary, "LOW (19 % below) at 8589934592 B: 0.81× the published 370 GB/s") {
		t.Errorf("summary %q", j.Summary)
	}
	shared := Judge("allreduce", []Row{{Size: 1 << 20, BusBW: 300}}, Limit{}, "ranks share a GPU: their data stays in its memory, no link bounds it", tables, s)
	if shared.Limit != nil || !strings.HasPrefix(shared.Summary, "no wire limit (ranks share a GPU") {
		t.Errorf("shared GPU: %+v", shared)
	}
	for _, other := range []System{{GPU: "NVIDIA GH200 480GB", Link: "NVLink4", GPUsPerNode: 8, Nodes: 1},
		{GPU: "NVIDIA H100 PCIe", Link: "PCIe Gen5 x16", GPUsPerNode: 8, Nodes: 1}, {GPU: "NVIDIA H100 80GB HBM3", Link: "NVLink4", GPUsPerNode: 4, Nodes: 1}} {
		if m := Matches(tables, other, "allreduce", 8<<30); len(m) != 0 {
			t.Errorf("%+v matched %v", other, m)
		}
	}
}

// The schema names the collectives a table may use: collbench's own, all
// of them.
func TestReferenceSchemaCollectives(t *testing.T) {
	raw, err := os.ReadFile("../docs/references.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Defs struct {
			Entry struct {
				Properties struct {
					Collective struct {
						Enum []string `json:"enum"`
					} `json:"collective"`
				} `json:"properties"`
			} `json:"entry"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	if got, want := schema.Defs.Entry.Properties.Collective.Enum, collectiveNames(); !slices.Equal(got, want) {
		t.Errorf("docs/references.schema.json names %v; collbench has %v", got, want)
	}
}

// A system is matched to references by its node's own link, not by the
// job's bottleneck: two nodes of 8 H100s over NDR are an NVLink4 system
// whose wire limit is the network, and the two-node figures apply.
func TestSystemOf(t *testing.T) {
	topo := Topology{Backend: "nccl", Nodes: 2, RanksPerNode: 8, GPUs: h100s(8), NICs: ndr(8)}
	s := SystemOf(topo)
	if s.GPU != "NVIDIA H100 80GB HBM3" || s.Link != "NVLink4 ×18" || s.GPUsPerNode != 8 || s.Nodes != 2 {
		t.Errorf("system %+v", s)
	}
	if refs := Matches([]Table{Builtin()}, s, "allreduce", 8<<30); len(refs) == 0 {
		t.Errorf("no published figure for 2 × 8 H100 all-reduce at 8 GiB")
	}
	if s := SystemOf(Topology{Backend: "host", Nodes: 1, RanksPerNode: 4, MemcpyGBps: 7}); s.Link != "memory copy" || s.GPU != "" {
		t.Errorf("host system %+v", s)
	}
}
