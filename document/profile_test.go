package document_test

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/internal/fixture"
	"github.com/collbench/collbench/internal/schemacheck"
	"github.com/collbench/collbench/model/profiled"
)

func encode(t testing.TB, p *document.Profile) []byte {
	var b bytes.Buffer
	if err := p.Encode(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestProfileSchemaValid(t *testing.T) {
	data := encode(t, fixture.Profile(t, 2, 4))
	if err := schemacheck.Validate("../docs/profile.schema.json", data); err != nil {
		t.Fatalf("synthetic profile does not match the schema: %v", err)
	}
	p, err := document.DecodeProfile(bytes.NewReader(data))
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
	good := string(encode(t, fixture.Profile(t, 1, 4)))
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
			_, err := document.DecodeProfile(strings.NewReader(c.doc))
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("got %v, want one line containing %q", err, c.want)
			}
		})
	}
}

// Whatever bytes arrive, decoding returns a profile or an error of one
// line, and an accepted profile survives another round.
func FuzzDecodeProfile(f *testing.F) {
	good := encode(f, fixture.Profile(f, 1, 2))
	f.Add(good)
	f.Add(good[:len(good)/3])
	f.Add([]byte(`{"schema":"collbench.profile","version":1,"meta":{"world_size":1,"num_nodes":1,"ranks_per_node":1}}`))
	f.Add([]byte(`{"schema":"collbench.profile","version":1,"meta":{"world_size":2,"num_nodes":1,"ranks_per_node":2},"curves":[{"op":"allreduce","group":{"size":2,"layout":"strided"},"bus_factor":1,"samples":[{"bytes":1,"time_us":1},{"bytes":1,"time_us":2}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := document.DecodeProfile(bytes.NewReader(data))
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
		if _, err := document.DecodeProfile(&b); err != nil {
			t.Fatalf("re-encoded profile refused: %v", err)
		}
		for i := range p.Curves {
			if m, err := profiled.Curve(&p.Curves[i]); err == nil {
				m.Time(1 << 20)
			}
		}
	})
}

func TestProfileJSONKeys(t *testing.T) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(encode(t, fixture.Profile(t, 1, 2)), &top); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"schema", "units", "meta", "suite", "curves", "overlap"} {
		if _, ok := top[k]; !ok {
			t.Errorf("no %q", k)
		}
	}
}

// The profiles kept in docs/measured (one from an H100, one from the host
// backend) are read back whole and follow the schema, so their figures
// stay usable.
func TestMeasuredProfileReads(t *testing.T) {
	for _, c := range []struct {
		path  string
		ranks int
	}{{"../docs/measured/h100-2026-11-26/profile-g2-float.json", 2}, {"../docs/measured/host-2026-11-26/profile-4ranks.json", 4}} {
		data, err := os.ReadFile(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if err := schemacheck.Validate("../docs/profile.schema.json", data); err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
		p, err := document.DecodeProfile(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
		curve, err := p.Curve("allreduce", c.ranks, "consecutive")
		if err != nil || curve.Fit == nil || !(curve.Fit.BusBWInf > 0) {
			t.Errorf("%s: the all-reduce curve of %d ranks: %+v, %v", c.path, c.ranks, curve, err)
		}
	}
}

// A planner export that needs the overlap probe says why the profile has
// none: the budget left it out, or the profile was taken without probes.
func TestPlannerProbeSaysWhyNone(t *testing.T) {
	for _, c := range []struct {
		leftOut []string
		want    string
	}{
		{[]string{"galvatron: the time budget was spent"}, "its overlap probe was left out (galvatron: the time budget was spent); profile again with a larger time budget"},
		{nil, "the profile has no overlap probe (it was taken with NoOverlap)"},
	} {
		p := &document.Profile{Suite: document.SuiteConfig{ProbesLeftOut: c.leftOut}}
		if _, err := p.PlannerProbe(); err == nil || err.Error() != c.want {
			t.Errorf("left out %v: %v, want %q", c.leftOut, err, c.want)
		}
	}
}

// LeftOut counts what the time budget kept out (a curve with no sample
// that says so, a probe it left out), not a curve no budget would bring.
func TestProfileLeftOut(t *testing.T) {
	p := &document.Profile{Curves: []document.ProfileCurve{
		{Op: "allreduce", Group: document.CurveGroup{Size: 4, Layout: "consecutive"}, Note: "left out: the time budget was spent"},
		{Op: "hypercube", Group: document.CurveGroup{Size: 3, Layout: "consecutive"}, Note: "left out: hypercube needs a power-of-two group"},
		{Op: "allgather", Group: document.CurveGroup{Size: 4, Layout: "consecutive"}, Samples: []document.Sample{{Bytes: 1}}, Note: "sizes from 1M up left out to stay within the time budget"},
	}}
	p.Suite.ProbesLeftOut = []string{"gemm 256x256x256 float: the time budget was spent"}
	curves, probes := p.LeftOut()
	if len(curves) != 1 || curves[0] != "allreduce n=4 consecutive: left out: the time budget was spent" || len(probes) != 1 {
		t.Errorf("left out: %q, %q", curves, probes)
	}
}

// A row whose power was read becomes its sample's power, in the schema's
// shape, and round-trips; a row without keeps the sample as before.
func TestProfileSamplePower(t *testing.T) {
	ar, _ := bench.LookupCollective("allreduce")
	r := bench.CurveResult{Coll: ar, Grouping: bench.Grouping{Size: 2}, GroupSize: 2, Groups: 1, Rows: []bench.Row{
		{Size: 1 << 20, Count: 1 << 18, Iters: 5, OutOfPlace: bench.Placement{Time: 40, AlgBW: 26, BusBW: 26}},
		{Size: 2 << 20, Count: 1 << 19, Iters: 5, OutOfPlace: bench.Placement{Time: 70, AlgBW: 30, BusBW: 30},
			Power: bench.PowerDraw{W: 412.5, LimitW: 700, CounterW: 409.75, Samples: 22, Calls: 14286, Window: 1002 * time.Millisecond}}}}
	c := document.NewProfileCurve(r, "float", "sum", 2, nil)
	if c.Samples[0].Power != nil {
		t.Errorf("a row without power has %+v", c.Samples[0].Power)
	}
	want := document.SamplePower{W: 412.5, LimitW: 700, CounterW: 409.75, Samples: 22, Calls: 14286, WindowS: 1.002}
	if got := c.Samples[1].Power; got == nil || *got != want {
		t.Fatalf("power %+v, want %+v", got, want)
	}
	p := fixture.Profile(t, 1, 2)
	p.Suite.PowerWindowS = 1
	p.Curves = append(p.Curves, c)
	data := encode(t, p)
	if err := schemacheck.Validate("../docs/profile.schema.json", data); err != nil {
		t.Fatalf("a profile with power does not match the schema: %v", err)
	}
	if !strings.Contains(string(data), `"power": {`) || !strings.Contains(string(data), `"power_window_s": 1`) {
		t.Errorf("power not written:\n%s", data)
	}
	back, err := document.DecodeProfile(bytes.NewReader(data))
	if err != nil || !bytes.Equal(encode(t, back), data) {
		t.Errorf("decode and encode do not round-trip: %v", err)
	}
}
