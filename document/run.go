package document

import (
	"fmt"
	"io"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/judge"
)

// SchemaName and SchemaVersion identify the run document; see docs/json.md.
// Version 2 added nccl_estimate_us and judgement, version 3 config.unalign,
// version 4 gpu_memory; every earlier version is still read.
const (
	SchemaName    = "collbench.run"
	SchemaVersion = 4
)

// Run is the machine-readable record of a run: the -J file and the
// --format json output. Its keys follow nccl-tests' JSON (version 3) where
// that has one, with real booleans and numbers and no environment dump.
type Run struct {
	Schema      string   `json:"schema"`
	Version     int      `json:"version"`
	Collbench   string   `json:"collbench_version"`
	Collective  string   `json:"collective"`
	Test        string   `json:"test"`
	Backend     string   `json:"backend"`
	StartTime   string   `json:"start_time"`
	EndTime     string   `json:"end_time"`
	Args        []string `json:"args"`
	NCCLVersion *int     `json:"nccl_version"`
	Config      Config   `json:"config"`
	// Notes are the comment lines the table's preamble printed beside the
	// settings: how the backend was chosen, a memory cap, the job.
	Notes       []string    `json:"notes,omitempty"`
	Results     []Result    `json:"results"`
	OutOfBounds OutOfBounds `json:"out_of_bounds"`
	// BitwiseMismatches counts the (size, placement) cases whose repeats
	// differed from their reference (-B); absent without -B.
	BitwiseMismatches *OutOfBounds `json:"bitwise_mismatches,omitempty"`
	AvgBusBW          AvgBandwidth `json:"average_bus_bandwidth"`
	// Judgement, with --judge, is each size against the wire, published
	// figures and NCCL's estimate (docs/judge.md).
	Judgement *judge.Judgement `json:"judgement,omitempty"`
	// Memory is this process's device memory use (-M), absent without it.
	Memory *MemoryUse `json:"gpu_memory,omitempty"`
	Errors []string   `json:"errors"`
}

// MemoryUse is the device memory a run took, in bytes, as nccl-tests' -M
// line sums it: the communicators' initialisation, the buffers and the
// collectives since; Free is the least free memory of any local device
// at the end.
type MemoryUse struct {
	Init       int64 `json:"initialization_bytes"`
	Buffers    int64 `json:"user_allocated_bytes"`
	Collective int64 `json:"collective_bytes"`
	Free       int64 `json:"free_bytes"`
}

// MemoryUseOf converts the backend's reading, by field.
func MemoryUseOf(u bench.MemoryUse) *MemoryUse {
	m := MemoryUse(u)
	return &m
}

// Config echoes the settings of the run.
type Config struct {
	NThreads    int    `json:"nthreads"`
	NGPUs       int    `json:"ngpus"`
	NRanks      int    `json:"nranks"`
	MinBytes    int64  `json:"minimum_bytes"`
	MaxBytes    int64  `json:"maximum_bytes"`
	StepFactor  *int64 `json:"step_factor,omitempty"`
	StepBytes   *int64 `json:"step_bytes,omitempty"`
	Warmup      int    `json:"warmup_iters"`
	Iters       int    `json:"iterations"`
	Agg         int    `json:"aggregated_iterations"`
	Validation  int    `json:"validation"`
	Graph       int    `json:"graph"`
	Blocking    bool   `json:"blocking_collectives"`
	BlockMode   int    `json:"blocking_mode"`
	Average     int    `json:"average"`
	CPUTime     bool   `json:"report_cputime"`
	PerIterTime bool   `json:"per_iter_timing"`
	Unalign     int    `json:"unalign"` // elements every call's data is moved into its buffers (-u)
	// BitwiseRepeats is nccl-tests' bitwise_repeats (-B): calls compared
	// bit for bit with a reference call at each size; absent when none.
	BitwiseRepeats int `json:"bitwise_repeats,omitempty"`
	// The job: processes, and how its ranks were split into groups.
	NProcs    int            `json:"nprocs"`
	GroupSize int            `json:"group_size"`
	Layout    string         `json:"group_layout"`
	Groups    int            `json:"groups"`
	Isolated  bool           `json:"isolated"`
	Devices   []DeviceRecord `json:"devices"`
}

// DeviceRecord is one line of the "Using devices" block.
type DeviceRecord struct {
	Rank      int    `json:"rank"`
	Group     int    `json:"group"`
	GroupRank int    `json:"group_rank"`
	PID       int    `json:"pid"`
	Hostname  string `json:"hostname"`
	Device    int    `json:"device"`
	BusID     string `json:"device_hex"`
	Info      string `json:"device_info"`
}

// Result is one row of the table.
type Result struct {
	Size       int64   `json:"size"`
	Count      int64   `json:"count"`
	Type       string  `json:"type"`
	RedOp      string  `json:"redop"`
	Root       int     `json:"root"`
	OutOfPlace Measure `json:"out_of_place"`
	OOPIter    Stats   `json:"out_of_place_per_iter"`
	InPlace    Measure `json:"in_place"`
	IPIter     Stats   `json:"in_place_per_iter"`
	Iterations int     `json:"actual_iterations"`
}

// Measure is one placement: time in µs, bandwidths in GB/s (1e9 B/s).
// NWrong is null when the placement was not checked.
type Measure struct {
	Time   float64 `json:"time"`
	AlgBW  float64 `json:"alg_bw"`
	BusBW  float64 `json:"bus_bw"`
	NWrong *int64  `json:"nwrong"`
	// Bitwise is the bitwise check (-B), absent when none ran.
	Bitwise *BitwiseMeasure `json:"bitwise,omitempty"`
	// NCCLEstimate is NCCL's own estimate of one call in µs
	// (ncclGroupSimulateEnd, with --nccl-estimate), out of place only.
	NCCLEstimate *float64 `json:"nccl_estimate_us,omitempty"`
	// ProcTimes is each process's own time in µs (null for a process
	// with no measured rank) when the job has several processes.
	ProcTimes []*float64 `json:"process_times,omitempty"`
	// Groups are each group's figures when several groups ran at once.
	Groups []GroupMeasure `json:"groups,omitempty"`
}

// BitwiseMeasure is a placement's bitwise check in nccl-tests' keys:
// the differing elements and bits over every rank and repeat, and the
// first difference (null when every repeat gave the reference's bits).
type BitwiseMeasure struct {
	Repeats      int    `json:"repeats"`
	Elements     int64  `json:"different_elements"`
	Bits         int64  `json:"different_bits"`
	FirstRepeat  *int64 `json:"first_repeat"`
	FirstRank    *int64 `json:"first_rank"`
	FirstElement *int64 `json:"first_element"`
	FirstBit     *int64 `json:"first_bit"`
	// FirstULPs is how far apart, in steps of the type, the first
	// differing element lies from its reference; MaxULPs the farthest
	// of any (0 when every repeat gave the reference's bits).
	FirstULPs uint64 `json:"first_ulps"`
	MaxULPs   uint64 `json:"max_ulps"`
}

// MakeBitwise converts a placement's bitwise check; nil for none.
func MakeBitwise(b *bench.Bitwise) *BitwiseMeasure {
	if b == nil {
		return nil
	}
	at := func(v int64) *int64 {
		if v < 0 {
			return nil
		}
		return &v
	}
	return &BitwiseMeasure{Repeats: b.Repeats, Elements: b.Elements, Bits: b.Bits, FirstRepeat: at(b.FirstRepeat),
		FirstRank: at(b.FirstRank), FirstElement: at(b.FirstElement), FirstBit: at(b.FirstBit), FirstULPs: b.FirstULPs, MaxULPs: b.MaxULPs}
}

// Check is the engine's form of the bitwise check, nil for none.
func (m *BitwiseMeasure) Check() *bench.Bitwise {
	if m == nil {
		return nil
	}
	or := func(v *int64) int64 {
		if v == nil {
			return -1
		}
		return *v
	}
	return &bench.Bitwise{Repeats: m.Repeats, Elements: m.Elements, Bits: m.Bits, FirstRepeat: or(m.FirstRepeat),
		FirstRank: or(m.FirstRank), FirstElement: or(m.FirstElement), FirstBit: or(m.FirstBit), FirstULPs: m.FirstULPs, MaxULPs: m.MaxULPs}
}

// GroupMeasure is one group's time (µs, mean over its processes) and
// bandwidths (GB/s).
type GroupMeasure struct {
	Time  float64 `json:"time"`
	AlgBW float64 `json:"alg_bw"`
	BusBW float64 `json:"bus_bw"`
}

// OutOfBounds is the count of (process, size, placement) cases that failed.
type OutOfBounds struct {
	Count int  `json:"count"`
	Okay  bool `json:"okay"`
}

// AvgBandwidth is the footer's average bus bandwidth (GB/s).
type AvgBandwidth struct {
	Bandwidth float64 `json:"bandwidth"`
	// Minimum and Okay are the NCCL_TESTS_MIN_BW floor and whether the
	// average passed it (at least 90% of it); absent when none was set.
	Minimum *float64 `json:"minimum,omitempty"`
	Okay    *bool    `json:"okay,omitempty"`
}

// DeviceRecords converts the backend's devices for the document.
func DeviceRecords(devs []bench.Device) []DeviceRecord {
	out := make([]DeviceRecord, len(devs))
	for i, d := range devs {
		out[i] = DeviceRecord{Rank: d.Rank, Group: d.Group, GroupRank: d.GroupRank, PID: d.PID, Hostname: d.Hostname, Device: d.Ordinal,
			BusID: fmtBusID(d.BusID), Info: d.Name}
	}
	return out
}

func fmtBusID(b [3]int) string {
	return fmt.Sprintf("%04x:%02x:%02x", b[0], b[1], b[2])
}

// MakeResult converts an engine row.
func MakeResult(r bench.Row) Result {
	m := func(p bench.Placement) Measure {
		out := Measure{Time: p.Time, AlgBW: p.AlgBW, BusBW: p.BusBW, Bitwise: MakeBitwise(p.Bitwise)}
		if p.Estimate > 0 {
			e := p.Estimate
			out.NCCLEstimate = &e
		}
		if p.Checked {
			w := p.Wrong
			out.NWrong = &w
		}
		for _, t := range p.Procs {
			if t < 0 {
				out.ProcTimes = append(out.ProcTimes, nil)
			} else {
				out.ProcTimes = append(out.ProcTimes, &t)
			}
		}
		for _, g := range p.Groups {
			out.Groups = append(out.Groups, GroupMeasure(g))
		}
		return out
	}
	return Result{Size: r.Size, Count: r.Count, Type: r.Type.String(), RedOp: r.Op.String(), Root: r.Root,
		OutOfPlace: m(r.OutOfPlace), OOPIter: StatsOf(r.OutOfPlace.Iter),
		InPlace: m(r.InPlace), IPIter: StatsOf(r.InPlace.Iter), Iterations: r.Iters}
}

// Finish fills the footer fields from the engine's summary.
func (d *Run) Finish(s bench.Summary) {
	d.OutOfBounds = OutOfBounds{Count: s.ErrorCases, Okay: s.ErrorCases == 0}
	if d.Config.BitwiseRepeats > 0 {
		d.BitwiseMismatches = &OutOfBounds{Count: s.BitwiseCases, Okay: s.BitwiseCases == 0}
	}
	d.AvgBusBW = AvgBandwidth{Bandwidth: s.AvgBusBW}
	if s.MinBusBW > 0 {
		floor, ok := s.MinBusBW, s.BandwidthOK()
		d.AvgBusBW.Minimum, d.AvgBusBW.Okay = &floor, &ok
	}
	if d.Errors == nil {
		d.Errors = []string{}
	}
	if d.Results == nil {
		d.Results = []Result{}
	}
}

// Encode writes the document as indented JSON.
func (d *Run) Encode(w io.Writer) error {
	return writeIndented(w, d)
}

// DecodeRun reads a run document (-J, --format json), refusing another
// schema or version, unknown keys and truncation with one line.
func DecodeRun(r io.Reader) (*Run, error) {
	d, err := readDocument(r)
	if err != nil {
		return nil, err
	}
	return d.run()
}
