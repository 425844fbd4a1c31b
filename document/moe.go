package document

import (
	"io"

	"github.com/collbench/collbench/bench"
)

// MoESchemaName identifies the mixture-of-experts document; see
// docs/alltoallv.md.
const (
	MoESchemaName    = "collbench.moe"
	MoESchemaVersion = 1
)

// MoERun is the machine-readable record of collbench alltoallv --moe.
type MoERun struct {
	Stamp
	Config MoEConfig  `json:"config"`
	Phases []MoEPhase `json:"phases"`
	Errors []string   `json:"errors"`
}

// MoEConfig echoes the layer's shape and the run's settings.
type MoEConfig struct {
	Experts   int            `json:"experts"`
	TopK      int            `json:"top_k"`
	Tokens    int64          `json:"tokens_per_rank"`
	Hidden    int64          `json:"hidden"`
	Type      string         `json:"type"`
	Routing   string         `json:"routing"`
	Seed      uint64         `json:"seed"`
	Draws     int            `json:"draws"`
	NRanks    int            `json:"nranks"`
	NProcs    int            `json:"nprocs"`
	GroupSize int            `json:"group_size"`
	Iters     int            `json:"iterations"`
	Warmup    int            `json:"warmup_iters"`
	Check     int            `json:"validation"`
	Average   int            `json:"average"`
	Devices   []DeviceRecord `json:"devices"`
}

// MoEPhase is dispatch or combine: the traffic's figures and the
// measurement, laid out as a run's result out of place (size: the
// busiest rank's bytes in the heaviest draw; count 0).
type MoEPhase struct {
	Name      string  `json:"phase"`
	MeanBytes float64 `json:"mean_rank_bytes"`
	Busiest   float64 `json:"busiest_rank_bytes"`
	Imbalance float64 `json:"imbalance"`
	Result    Result  `json:"result"`
}

// MakeMoEPhase records a measured phase.
func MakeMoEPhase(p bench.MoEPhase) MoEPhase {
	return MoEPhase{Name: p.Name, MeanBytes: p.MeanBytes, Busiest: p.Busiest, Imbalance: p.Imbalance, Result: MakeResult(p.Row)}
}

// Encode writes the document as indented JSON.
func (d *MoERun) Encode(w io.Writer) error {
	if d.Phases == nil {
		d.Phases = []MoEPhase{}
	}
	if d.Errors == nil {
		d.Errors = []string{}
	}
	return writeIndented(w, d)
}
