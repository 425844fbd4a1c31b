package document

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"sort"
	"strings"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/machine"
	"github.com/collbench/collbench/setting"
)

// ProfileSchemaName and ProfileSchemaVersion identify the calibration
// profile; docs/profile.md describes it and docs/profile.schema.json is
// its JSON Schema.
const (
	ProfileSchemaName    = "collbench.profile"
	ProfileSchemaVersion = 1
)

// Profile is collbench profile's output: everything a planner needs,
// measured on one job, with SI units throughout.
type Profile struct {
	Schema    string           `json:"schema"`
	Version   int              `json:"version"`
	Collbench string           `json:"collbench_version"`
	Created   string           `json:"created"`
	Finished  string           `json:"finished"`
	Args      []string         `json:"args"`
	Backend   string           `json:"backend"`
	Units     ProfileUnits     `json:"units"`
	Meta      ProfileMeta      `json:"meta"`
	Suite     SuiteConfig      `json:"suite"`
	Curves    []ProfileCurve   `json:"curves"`
	Overlap   []ProfileOverlap `json:"overlap"`
	Errors    []string         `json:"errors"`
}

// ProfileUnits states the units, so nobody has to guess GB from GiB.
type ProfileUnits struct {
	Time      string `json:"time"`
	Size      string `json:"size"`
	Bandwidth string `json:"bandwidth"`
}

// SIUnits are the units of every profile.
var SIUnits = ProfileUnits{Time: "us", Size: "bytes", Bandwidth: "GB/s (1e9 bytes per second)"}

// ProfileMeta describes the machine and software the profile was taken on.
type ProfileMeta struct {
	WorldSize    int               `json:"world_size"`
	NumNodes     int               `json:"num_nodes"`
	RanksPerNode int               `json:"ranks_per_node"`
	NProcs       int               `json:"nprocs"`
	Hosts        []HostRecord      `json:"hosts"`
	Devices      []DeviceRecord    `json:"devices"`
	NCCLVersion  string            `json:"nccl_version,omitempty"`
	CUDADriver   string            `json:"cuda_driver,omitempty"`    // CUDA version the driver supports
	Driver       string            `json:"driver_release,omitempty"` // NVIDIA driver release (NVML)
	Env          map[string]string `json:"env"`                      // NCCL_* and CUDA_VISIBLE_DEVICES
}

// HostRecord is one host of the job and what its inventory found.
type HostRecord struct {
	Hostname  string          `json:"hostname"`
	Ranks     []int           `json:"ranks"`
	Inventory *machine.Report `json:"inventory,omitempty"`
}

// SuiteConfig records what was asked and what the run took.
type SuiteConfig struct {
	Collectives []string `json:"collectives"`
	Sizes       []int64  `json:"sizes"`
	Type        string   `json:"type"`
	RedOp       string   `json:"redop"`
	GroupSizes  []int    `json:"group_sizes"`
	Layouts     []string `json:"layouts"`
	Concurrent  bool     `json:"concurrent_groups"` // all groups of a size run at once
	Warmup      int      `json:"warmup_iters"`
	Iters       int      `json:"iterations"`     // per size, unless the budget trimmed them
	MinIters    int      `json:"min_iterations"` // the floor the budget trims to
	Check       int      `json:"validation"`
	BudgetS     float64  `json:"budget_s"` // 0 = no limit
	ElapsedS    float64  `json:"elapsed_s"`
	// PowerWindowS is how long each size ran on while the GPUs' power
	// draw was read, in s; 0 (absent) when it was not read.
	PowerWindowS float64 `json:"power_window_s,omitempty"`
	// ProbesLeftOut names each overlap probe the suite left out and why
	// ("galvatron: the time budget was spent").
	ProbesLeftOut []string `json:"probes_left_out,omitempty"`
}

// ProfileCurve is one collective at one group size and layout.
type ProfileCurve struct {
	Op        string     `json:"op"` // collbench collective name
	Type      string     `json:"type"`
	RedOp     string     `json:"redop"`
	Root      int        `json:"root"` // -1 for rootless collectives
	Group     CurveGroup `json:"group"`
	BusFactor float64    `json:"bus_factor"`
	Samples   []Sample   `json:"samples"`
	Fit       *Fit       `json:"fit,omitempty"`
	Note      string     `json:"note,omitempty"` // sizes left out, and why
	// Traffic describes an uneven all-to-all's pattern. Its curve is
	// modelled against each rank's mean bytes (count × ranks × element
	// size), not the size column (the busiest rank's bytes).
	Traffic string `json:"traffic,omitempty"`
}

// CurveGroup is where a curve's ranks sit.
type CurveGroup struct {
	Size         int     `json:"size"`
	Layout       string  `json:"layout"` // consecutive or strided
	Stride       int     `json:"stride"` // rank distance inside a group
	Groups       int     `json:"groups"` // groups that ran at once
	Concurrent   bool    `json:"concurrent"`
	NodesSpanned int     `json:"nodes_spanned"` // hosts one group reaches
	Ranks        [][]int `json:"ranks"`         // every group's ranks
}

// Sample is one size of a curve.
type Sample struct {
	Bytes int64 `json:"bytes"` // nccl-tests' size column
	Count int64 `json:"count"`
	Iters int   `json:"iters"`
	// TimeUs is what fits use: the median over iterations of the slowest
	// rank's time, or AvgUs where per-iteration times are not available.
	TimeUs float64 `json:"time_us"`
	AvgUs  float64 `json:"avg_us"` // nccl-tests' time: the mean over the timed loop
	AlgBW  float64 `json:"algbw"`  // GB/s, from avg_us as nccl-tests computes it
	BusBW  float64 `json:"busbw"`
	Stats  Stats   `json:"stats"`
	// ProcessUs is each process's own time when the job has several.
	ProcessUs []float64 `json:"process_us,omitempty"`
	// Power is what the GPUs drew while the size ran on after its timed
	// loop; absent unless the profile read it.
	Power *SamplePower `json:"power,omitempty"`
}

// SamplePower is the GPUs' power draw at one size, per GPU, as NVML
// reports it: W is the mean of readings every 100 ms (what
// AIConfigurator's collector records), CounterW the energy counters'
// mean over the same window (0 where a GPU has none).
type SamplePower struct {
	W        float64 `json:"w"`
	LimitW   float64 `json:"limit_w"`
	CounterW float64 `json:"counter_w,omitempty"`
	Samples  int     `json:"samples"`  // readings averaged, over every GPU
	Calls    int     `json:"calls"`    // calls in the window
	WindowS  float64 `json:"window_s"` // its wall time, the longest process's
}

// ProfileOverlap is one overlap probe.
type ProfileOverlap struct {
	Name       string `json:"name"`
	Collective string `json:"collective"`
	Type       string `json:"type"`
	GroupSize  int    `json:"group_size"`
	OverlapResult
}

// NewProfileCurve converts a suite's curve; devs (in rank
// order) tell which host each rank is on.
func NewProfileCurve(r bench.CurveResult, t, redop string, world int, devs []DeviceRecord) ProfileCurve {
	g := r.Grouping
	c := ProfileCurve{Op: r.Coll.Name, Type: t, RedOp: redop, Root: -1, BusFactor: r.Coll.BusFactor(r.GroupSize), Note: r.Note,
		Samples: []Sample{}, // a curve left out has none, written as [], not null
		Group:   CurveGroup{Size: r.GroupSize, Layout: g.Layout(), Stride: 1, Groups: r.Groups, Concurrent: !g.Isolated}}
	if r.Coll.Rooted {
		c.Root = 0
	}
	if r.Coll.Traffic != nil {
		c.Traffic = r.Coll.Traffic.String()
	}
	if !r.Coll.Reduces {
		c.RedOp = "none"
	}
	if g.Strided {
		c.Group.Stride = world / r.GroupSize
	}
	for grp := 0; grp < world/r.GroupSize; grp++ {
		var ranks []int
		hosts := map[string]bool{}
		for i := 0; i < r.GroupSize; i++ {
			rank := g.Member(world, grp, i)
			ranks = append(ranks, rank)
			if rank < len(devs) {
				hosts[devs[rank].Hostname] = true
			}
		}
		c.Group.Ranks = append(c.Group.Ranks, ranks)
		c.Group.NodesSpanned = max(c.Group.NodesSpanned, len(hosts))
	}
	for _, row := range r.Rows {
		p := row.OutOfPlace
		s := Sample{Bytes: row.Size, Count: row.Count, Iters: row.Iters, TimeUs: p.Time, AvgUs: p.Time,
			AlgBW: p.AlgBW, BusBW: p.BusBW, Stats: StatsOf(p.Iter), ProcessUs: p.Procs}
		if p.Iter.N > 0 {
			s.TimeUs = p.Iter.P50
		}
		if d := row.Power; d.Samples > 0 {
			s.Power = &SamplePower{W: d.W, LimitW: d.LimitW, CounterW: d.CounterW, Samples: d.Samples, Calls: d.Calls,
				WindowS: d.Window.Seconds()}
		}
		c.Samples = append(c.Samples, s)
	}
	return c
}

// Key names the curve for messages: "allreduce over 4 ranks (strided)".
func (c *ProfileCurve) Key() string {
	return fmt.Sprintf("%s over %d ranks (%s)", c.Op, c.Group.Size, c.Group.Layout)
}

// Curve finds the curve of op at group size n and layout; a group of the
// whole job has one layout, found under either name.
func (p *Profile) Curve(op string, n int, layout string) (*ProfileCurve, error) {
	for i := range p.Curves {
		c := &p.Curves[i]
		if c.Op != op || c.Group.Size != n || (c.Group.Layout != layout && n != p.Meta.WorldSize) {
			continue
		}
		if len(c.Samples) < 2 {
			why := "fewer than 2 sizes"
			if c.Note != "" {
				why = c.Note
			}
			return nil, fmt.Errorf("the profile's %s has no usable samples (%s)", c.Key(), why)
		}
		return c, nil
	}
	return nil, fmt.Errorf("the profile has no %s curve over %d ranks (%s); profile with that collective and group size", op, n, layout)
}

// Encode writes the profile as indented JSON.
func (p *Profile) Encode(w io.Writer) error {
	return writeIndented(w, p)
}

// Digest names the profile's contents: the start of the SHA-256 of its
// encoding, which a decoded profile encodes again byte for byte, so that a
// profile in memory, in its file, and reformatted by hand and read back
// has one digest.
func (p *Profile) Digest() (string, error) {
	h := sha256.New()
	if err := p.Encode(h); err != nil {
		return "", err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))[:16], nil
}

// DecodeProfile reads and checks a profile. Unknown keys, another schema
// or version, truncation and impossible values are errors of one line.
func DecodeProfile(r io.Reader) (*Profile, error) {
	d, err := readDocument(r)
	if err != nil {
		return nil, err
	}
	return d.profile()
}

// jsonError turns a decoding error into one line that says where.
func jsonError(data []byte, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF) || (errors.As(err, &se) && se.Offset >= int64(len(data))):
		return fmt.Errorf("the file ends early at byte %d: truncated?", len(data))
	case errors.As(err, &se):
		return fmt.Errorf("not valid JSON at byte %d: %v", se.Offset, se)
	case errors.As(err, &te) && te.Field == "":
		return fmt.Errorf("the document is a JSON %s, not an object", te.Value)
	case errors.As(err, &te):
		return fmt.Errorf("key %q holds a JSON %s where %s belongs", te.Field, te.Value, jsonKind(te.Type))
	}
	return fmt.Errorf("reading the profile: %v", err)
}

// jsonKind names what a Go type is written as in JSON, for messages that
// speak of the file and not of collbench's types.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "another value"
}

// Validate checks what the exports and predictions rely on.
func (p *Profile) Validate() error {
	m := p.Meta
	switch {
	case m.WorldSize < 1:
		return fmt.Errorf("meta.world_size must be at least 1 (got %d)", m.WorldSize)
	case m.NumNodes < 1 || m.RanksPerNode < 1 || m.NumNodes*m.RanksPerNode != m.WorldSize:
		return fmt.Errorf("meta: %d nodes × %d ranks per node does not make the world size %d", m.NumNodes, m.RanksPerNode, m.WorldSize)
	}
	for i := range p.Curves {
		if err := p.Curves[i].validate(m.WorldSize); err != nil {
			return fmt.Errorf("curve %d: %w", i, err)
		}
	}
	for i, o := range p.Overlap {
		if !positive(o.CommAlone, o.CommOverlapped, o.ComputeAlone, o.ComputeOverlapped, o.CommSlowdown, o.ComputeSlowdown, o.OverlapCoe) {
			return fmt.Errorf("overlap %d (%s): times and slowdowns must be positive and finite", i, o.Name)
		}
		if !(o.ProcessorUsage >= 0 && o.ProcessorUsage < 1) {
			return fmt.Errorf("overlap %d (%s): processor_usage %g is outside [0, 1)", i, o.Name, o.ProcessorUsage)
		}
	}
	return nil
}

func (c *ProfileCurve) validate(world int) error {
	if _, err := bench.LookupCollective(c.Op); err != nil {
		return err
	}
	g := c.Group
	switch {
	case g.Size < 1 || g.Size > world || world%g.Size != 0:
		return fmt.Errorf("%s: group size %d does not divide the world size %d", c.Op, g.Size, world)
	case g.Layout != "consecutive" && g.Layout != "strided":
		return fmt.Errorf("%s: unknown layout %q", c.Op, g.Layout)
	case !positive(c.BusFactor) && g.Size > 1:
		return fmt.Errorf("%s: bus_factor %g must be positive", c.Key(), c.BusFactor)
	}
	for i, s := range c.Samples {
		if s.Bytes <= 0 || !positive(s.TimeUs) {
			return fmt.Errorf("%s: sample %d has %d bytes in %g µs; both must be positive", c.Key(), i, s.Bytes, s.TimeUs)
		}
		if i > 0 && s.Bytes <= c.Samples[i-1].Bytes {
			return fmt.Errorf("%s: sample sizes must ascend (%d after %d)", c.Key(), s.Bytes, c.Samples[i-1].Bytes)
		}
	}
	if f := c.Fit; f != nil {
		if !finite(f.Alpha, f.Beta, f.BusBWInf, f.NHalf, f.R2, f.MaxRel) || f.Alpha < 0 || f.Beta < 0 {
			return fmt.Errorf("%s: the fit holds a negative or non-finite number", c.Key())
		}
		for _, ci := range []*[2]float64{f.AlphaCI, f.BetaCI} {
			if ci != nil && (!finite(ci[0], ci[1]) || ci[0] < 0 || ci[1] < ci[0]) {
				return fmt.Errorf("%s: a fit interval %v is not an ordered pair of non-negative numbers", c.Key(), *ci)
			}
		}
	}
	return nil
}

func positive(v ...float64) bool {
	for _, x := range v {
		if !(x > 0) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

func finite(v ...float64) bool {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

// Hosts groups rank devices by host, in order of first rank.
func Hosts(devs []DeviceRecord) []HostRecord {
	var out []HostRecord
	at := map[string]int{}
	sorted := append([]DeviceRecord(nil), devs...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Rank < sorted[j].Rank })
	for _, d := range sorted {
		i, ok := at[d.Hostname]
		if !ok {
			i = len(out)
			at[d.Hostname] = i
			out = append(out, HostRecord{Hostname: d.Hostname})
		}
		out[i].Ranks = append(out[i].Ranks, d.Rank)
	}
	return out
}

// PlannerProbe is the overlap probe planners get: the one named
// galvatron (Galvatron's own probe) if measured, else the one with the
// largest overlap_coe.
func (p *Profile) PlannerProbe() (*ProfileOverlap, error) {
	if len(p.Overlap) == 0 {
		if len(p.Suite.ProbesLeftOut) > 0 {
			return nil, fmt.Errorf("its overlap probe was left out (%s); profile again with a larger time budget", strings.Join(p.Suite.ProbesLeftOut, "; "))
		}
		return nil, setting.Errorf("the profile has no overlap probe (it was taken with {NoOverlap})")
	}
	best := &p.Overlap[0]
	for i := range p.Overlap {
		o := &p.Overlap[i]
		if o.Name == "galvatron" {
			return o, nil
		}
		if o.OverlapCoe > best.OverlapCoe {
			best = o
		}
	}
	return best, nil
}

// GPUMemory is the smallest GPU's memory in the profile's inventory, 0 if
// none was taken (the host backend).
func (p *Profile) GPUMemory() float64 {
	var least float64
	for _, h := range p.Meta.Hosts {
		if h.Inventory == nil {
			continue
		}
		for _, g := range h.Inventory.GPUs {
			if v := float64(g.MemoryBytes); v > 0 && (least == 0 || v < least) {
				least = v
			}
		}
	}
	return least
}

// LeftOut lists what the profile's time budget kept out of it: the
// curves with no sample whose note says the budget left them out (each as
// "allreduce n=8 strided: its note") and the overlap probes it left out.
// Curves a profile cannot measure at all (a hypercube over groups that
// are no power of two) are not counted: no budget would bring them.
func (p *Profile) LeftOut() (curves, probes []string) {
	for _, c := range p.Curves {
		if len(c.Samples) == 0 && strings.Contains(c.Note, "time budget") {
			curves = append(curves, fmt.Sprintf("%s n=%d %s: %s", c.Op, c.Group.Size, c.Group.Layout, c.Note))
		}
	}
	for _, pr := range p.Suite.ProbesLeftOut {
		if strings.Contains(pr, "time budget") {
			probes = append(probes, pr)
		}
	}
	return curves, probes
}
