package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/internal/schemacheck"
)

// syntheticProfile is a profile of exact α-β curves: every collective
// collbench profile measures, every power-of-two group size and both
// layouts, on nodes nodes of perNode ranks. Strided groups that leave a
// node are ten times slower, as on a real cluster.
func syntheticProfile(t testing.TB, nodes, perNode int) *Profile {
	world := nodes * perNode
	p := &Profile{Schema: ProfileSchemaName, Version: ProfileSchemaVersion, Collbench: "test", Created: "2026-01-02T03:04:05Z",
		Finished: "2026-01-02T03:09:05Z", Args: []string{"collbench", "profile"}, Backend: "nccl", Units: SIUnits,
		Curves: []ProfileCurve{}, Overlap: []ProfileOverlap{}, Errors: []string{}}
	for r := 0; r < world; r++ {
		p.Meta.Devices = append(p.Meta.Devices, DeviceRecord{Rank: r, Hostname: fmt.Sprintf("node%d", r/perNode), Device: r % perNode, BusID: "0x1", Info: "GPU"})
	}
	p.Meta.Hosts = Hosts(p.Meta.Devices)
	p.Meta.WorldSize, p.Meta.NumNodes, p.Meta.RanksPerNode, p.Meta.NProcs, p.Meta.Env = world, nodes, perNode, world, map[string]string{}
	var sizes []int64
	for s := int64(1 << 20); s <= 1<<30; s *= 2 {
		sizes = append(sizes, s)
	}
	p.Suite = SuiteConfig{Collectives: strings.Split("allreduce,allgather,reducescatter,alltoall,broadcast,sendrecv", ","), Sizes: sizes,
		Type: "bfloat16", RedOp: "sum", Layouts: []string{"consecutive", "strided"}, Concurrent: true, Warmup: 5, Iters: 20, MinIters: 3}
	for n := world; n >= 2; n /= 2 {
		p.Suite.GroupSizes = append(p.Suite.GroupSizes, n)
		for _, strided := range []bool{false, true} {
			if strided && n == world {
				continue
			}
			g := bench.Grouping{Size: n, Strided: strided}
			for _, name := range p.Suite.Collectives {
				coll, err := bench.LookupCollective(name)
				if err != nil {
					t.Fatal(err)
				}
				r := bench.CurveResult{Coll: coll, Grouping: g, GroupSize: n, Groups: world / n}
				spans := g.Member(world, 0, 0)/perNode != g.Member(world, 0, n-1)/perNode
				busbw, alpha := 150.0, 20.0 // GB/s, µs
				if spans {
					busbw, alpha = 15, 40
				}
				factor := coll.BusFactor(n)
				for _, s := range sizes {
					tm := alpha + float64(s)*factor/busbw*1e-3
					r.Rows = append(r.Rows, bench.Row{Size: s, Count: s / 2, Iters: 20, OutOfPlace: bench.Placement{Time: tm,
						AlgBW: float64(s) / tm * 1e-3, BusBW: float64(s) / tm * 1e-3 * factor, Iter: bench.Summarize([]float64{tm, tm})}})
				}
				c := NewProfileCurve(r, "bfloat16", "sum", world, p.Meta.Devices)
				c.Samples[0].Stats.Times = nil // keep goldens short
				for i := range c.Samples {
					c.Samples[i].Stats.Times = nil
				}
				p.Curves = append(p.Curves, c)
			}
		}
	}
	p.Overlap = append(p.Overlap, ProfileOverlap{Name: "galvatron", Collective: "allreduce", Type: "float", GroupSize: world,
		OverlapResult: OverlapResult{Size: 64 << 20, Workload: "gemm 1024x4096x4096 float", Kind: "gemm", M: 1024, N: 4096, K: 4096,
			ComputeType: "float", FLOPs: 2 * 1024 * 4096 * 4096, CommAlone: 800, CommOverlapped: 920, ComputeAlone: 700,
			ComputeOverlapped: 770, CommSlowdown: 1.15, ComputeSlowdown: 1.1, OverlapCoe: 1.15, ProcessorUsage: 1 - 1/1.1, ExposedComm: 0.1}})
	return p
}

func encode(t testing.TB, p *Profile) []byte {
	var b bytes.Buffer
	if err := p.Encode(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestProfileSchemaValid(t *testing.T) {
	data := encode(t, syntheticProfile(t, 2, 4))
	if err := schemacheck.Validate("../docs/profile.schema.json", data); err != nil {
		t.Fatalf("synthetic profile does not match the schema: %v", err)
	}
	p, err := DecodeProfile(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(encode(t, p), data) {
		t.Error("decode and encode do not round-trip")
	}
	c, err := p.Curve("allreduce", 4, "strided")
	if err != nil || c.Fit == nil || !within(c.Fit.BusBWInf, 15, 1e-6) || !within(c.Fit.Alpha, 40, 1e-6) {
		t.Errorf("strided 4 across nodes: %+v %v", c, err)
	}
	if c.Group.Stride != 2 || c.Group.NodesSpanned != 2 || len(c.Group.Ranks) != 2 || c.Group.Ranks[1][3] != 7 {
		t.Errorf("group: %+v", c.Group)
	}
}

func within(got, want, rel float64) bool { return got >= want*(1-rel) && got <= want*(1+rel) }

// Broken profiles are refused with one line that says what is wrong.
func TestDecodeProfileErrors(t *testing.T) {
	good := string(encode(t, syntheticProfile(t, 1, 4)))
	cases := []struct{ name, doc, want string }{
		{"empty", "", "ends early"},
		{"truncated", good[:len(good)/2], "ends early"},
		{"not json", "hello", "not valid JSON"},
		{"other schema", `{"schema":"collbench.run","version":1}`, "not a collbench profile"},
		{"future version", `{"schema":"collbench.profile","version":2}`, "version 2 is not supported"},
		{"unknown key", strings.Replace(good, `"backend"`, `"backnd"`, 1), "unknown field"},
		{"wrong type", strings.Replace(good, `"world_size": 4`, `"world_size": "4"`, 1), `key "meta.world_size" holds a JSON string where an integer belongs`},
		{"array", `[1, 2]`, "the document is a JSON array, not an object"},
		{"bad world", strings.Replace(good, `"ranks_per_node": 4`, `"ranks_per_node": 3`, 1), "does not make the world size"},
		{"negative time", strings.Replace(good, `"time_us": 26.9905`, `"time_us": -1`, 1), "must be positive"},
		{"unknown op", strings.Replace(good, `"op": "broadcast"`, `"op": "shout"`, 1), "shout"},
		{"bad group", strings.Replace(good, `"size": 2,`, `"size": 3,`, 1), "does not divide"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeProfile(strings.NewReader(c.doc))
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("got %v, want one line containing %q", err, c.want)
			}
		})
	}
}

// Whatever bytes arrive, decoding returns a profile or an error of one
// line, and an accepted profile survives another round.
func FuzzDecodeProfile(f *testing.F) {
	good := encode(f, syntheticProfile(f, 1, 2))
	f.Add(good)
	f.Add(good[:len(good)/3])
	f.Add([]byte(`{"schema":"collbench.profile","version":1,"meta":{"world_size":1,"num_nodes":1,"ranks_per_node":1}}`))
	f.Add([]byte(`{"schema":"collbench.profile","version":1,"meta":{"world_size":2,"num_nodes":1,"ranks_per_node":2},"curves":[{"op":"allreduce","group":{"size":2,"layout":"strided"},"bus_factor":1,"samples":[{"bytes":1,"time_us":1},{"bytes":1,"time_us":2}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := DecodeProfile(bytes.NewReader(data))
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error of several lines: %q", err)
			}
			return
		}
		var b bytes.Buffer
		if err := p.Encode(&b); err != nil {
			t.Fatal(err)
		}
		if _, err := DecodeProfile(&b); err != nil {
			t.Fatalf("re-encoded profile refused: %v", err)
		}
		for i := range p.Curves {
			if m, err := p.Curves[i].Model(); err == nil {
				m.Time(1 << 20)
			}
		}
	})
}

func TestProfileJSONKeys(t *testing.T) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(encode(t, syntheticProfile(t, 1, 2)), &top); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"schema", "units", "meta", "suite", "curves", "overlap"} {
		if _, ok := top[k]; !ok {
			t.Errorf("no %q", k)
		}
	}
}
