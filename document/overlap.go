package document

import (
	"encoding/json"
	"errors"
	"io"

	"github.com/collbench/collbench/bench"
)

// OverlapSchemaName identifies the overlap document; see docs/overlap.md.
const (
	OverlapSchemaName    = "collbench.overlap"
	OverlapSchemaVersion = 1
)

// OverlapRun is the machine-readable record of collbench overlap.
type OverlapRun struct {
	Stamp
	Config    OverlapConfig   `json:"config"`
	Results   []OverlapResult `json:"results"`
	Galvatron float64         `json:"galvatron_overlap_coe"` // max overlap_coe over the GEMM results; 0 without one
	Errors    []string        `json:"errors"`
}

// OverlapConfig echoes the settings and the knobs that change the answer.
type OverlapConfig struct {
	Collective string            `json:"collective"`
	Type       string            `json:"type"`
	RedOp      string            `json:"redop"`
	NRanks     int               `json:"nranks"`
	NProcs     int               `json:"nprocs"`
	GroupSize  int               `json:"group_size"`
	Layout     string            `json:"group_layout"`
	Cover      float64           `json:"cover"`
	TargetUs   float64           `json:"target_us"`
	Knobs      map[string]string `json:"knobs"` // NCCL_* environment, config limits, stream priorities
	Devices    []DeviceRecord    `json:"devices"`
}

// OverlapResult is one (size, workload) measurement; times in µs.
type OverlapResult struct {
	Size              int64   `json:"size"`
	Workload          string  `json:"workload"`
	Kind              string  `json:"kind"` // gemm or copy
	M                 int     `json:"m,omitempty"`
	N                 int     `json:"n,omitempty"`
	K                 int     `json:"k,omitempty"`
	ComputeType       string  `json:"compute_type,omitempty"`
	CopyBytes         int64   `json:"copy_bytes,omitempty"`
	FLOPs             float64 `json:"flops,omitempty"`
	CommAlone         float64 `json:"comm_alone_us"`
	CommOverlapped    float64 `json:"comm_overlapped_us"`
	ComputeAlone      float64 `json:"compute_alone_us"`
	ComputeOverlapped float64 `json:"compute_overlapped_us"`
	CommSlowdown      float64 `json:"comm_slowdown"`
	ComputeSlowdown   float64 `json:"compute_slowdown"`
	OverlapCoe        float64 `json:"overlap_coe"`
	ProcessorUsage    float64 `json:"processor_usage"`
	ExposedComm       float64 `json:"exposed_comm_fraction"`
}

// MakeOverlapResult converts one measurement.
func MakeOverlapResult(size int64, w bench.Workload, f bench.OverlapFigures) OverlapResult {
	r := OverlapResult{Size: size, Workload: w.String(), Kind: "gemm",
		CommAlone: f.CommAlone, CommOverlapped: f.CommOverlapped, ComputeAlone: f.ComputeAlone,
		ComputeOverlapped: f.ComputeOverlapped, CommSlowdown: f.CommSlowdown, ComputeSlowdown: f.ComputeSlowdown,
		OverlapCoe: f.OverlapCoe, ProcessorUsage: f.ProcessorUsage, ExposedComm: f.ExposedComm}
	if w.Kind == bench.Copy {
		r.Kind, r.CopyBytes = "copy", w.Bytes
	} else {
		r.M, r.N, r.K, r.ComputeType, r.FLOPs = w.M, w.N, w.K, w.Type.String(), w.FLOPs()
	}
	return r
}

// Add appends a result and keeps the Galvatron value the largest
// overlap_coe of a GEMM: Galvatron's coefficient is what a GEMM and an
// all-reduce do to each other, and a memory copy's slowdown (far larger)
// would overstate it.
func (d *OverlapRun) Add(r OverlapResult) {
	d.Results = append(d.Results, r)
	if r.Kind == "gemm" {
		d.Galvatron = max(d.Galvatron, r.OverlapCoe)
	}
}

// Encode writes the document as indented JSON.
func (d *OverlapRun) Encode(w io.Writer) error {
	if d.Results == nil {
		d.Results = []OverlapResult{}
	}
	if d.Errors == nil {
		d.Errors = []string{}
	}
	return writeIndented(w, d)
}

// EncodeGalvatron writes Galvatron's overlap_coefficient.json.
func (d *OverlapRun) EncodeGalvatron(w io.Writer) error {
	if d.Galvatron == 0 {
		return errors.New("no GEMM workload was measured, and Galvatron's overlap coefficient comes from a GEMM next to the collective")
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "    ")
	return enc.Encode(map[string]float64{"overlap_coe": d.Galvatron})
}
