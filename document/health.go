package document

import (
	"fmt"
	"io"
	"slices"

	"github.com/collbench/collbench/judge"
)

// HealthSchemaName identifies the record of collbench health; see
// docs/health.md for every field.
// Version 2 adds each phase's communicator teardown (closes,
// close_total_s, close_max_s), the NCCL loaded (nccl_version) and why
// arrivals went unjudged (arrivals.unjudged); version 1 records still
// load.
const (
	HealthSchemaName    = "collbench.health"
	HealthSchemaVersion = 2
)

// Health is the machine-readable record of collbench health: every
// measurement, what it was judged against and what was flagged.
// Bandwidths are bus bandwidths in GB/s (1e9 B/s), as nccl-tests prints.
type Health struct {
	Stamp
	// NCCLVersion is the NCCL the nccl backend loaded ("2.30.7"); absent
	// on the host backend and in version 1 records.
	NCCLVersion string       `json:"nccl_version,omitempty"`
	Config      HealthConfig `json:"config"`
	Nodes       []HealthNode `json:"nodes"`
	Intra       []PairFigure `json:"intra_pairs"`    // send/recv between two GPUs of a node
	NodeAR      []NodeFigure `json:"node_allreduce"` // each node's all-reduce over its own ranks
	Inter       []PairFigure `json:"inter_pairs"`    // send/recv between two nodes, every local rank with its peer
	// Confirmation is the node pairs a screening measured again, in the
	// order measured: each suspect node with fresh partners, each suspect
	// link as many times as health.Suspects.Repeats says (one entry per
	// figure).
	Confirmation []PairFigure  `json:"confirmation"`
	Job          *BlockFigure  `json:"job_allreduce"` // one all-reduce over every rank; null when not measured
	Bisection    []BlockFigure `json:"bisection"`     // all-reduces over halves, quarters …, when run
	// Arrivals is who reached the job's all-reduce last, call after call,
	// when the job spans nodes; null otherwise.
	Arrivals *Arrivals `json:"arrivals"`
	// Setup is what opening and closing each phase's communicators cost.
	Setup    []PhaseSetup `json:"communicator_setup"`
	Findings []Finding    `json:"findings"`
	// Noise is each level's pass-to-pass noise: the relative standard
	// deviation of one figure measured again (intra, node, inter).
	Noise   map[string]float64 `json:"noise"`
	Skipped []string           `json:"skipped"` // parts left out, each with why
	// Errors say why the check ended before its end (a lost rank, an
	// interruption); its figures are what was measured until then.
	Errors []string `json:"errors,omitempty"`
	// Notes are what the check could not do as asked without leaving
	// a measurement out (rack judgement off: a node with no rack).
	Notes []string `json:"notes,omitempty"`
	// CutShort are the measurements stopped after their first call,
	// being far below their peers already (and the all-reduces through
	// them): each says what and by how much. They are measured, and
	// judged, on that call.
	CutShort []string       `json:"cut_short,omitempty"`
	Complete bool           `json:"complete"` // nothing left out
	Healthy  bool           `json:"healthy"`  // complete, and no finding
	Devices  []DeviceRecord `json:"devices"`
	// Judged, with --judge, is what each level was judged against
	// beside its peers: the wire and the published figures.
	Judged []HealthLevel `json:"judged,omitempty"`
}

// HealthLevel is one level's wire limit (health --judge): the link a
// figure of that level crosses, or why none is known.
type HealthLevel struct {
	Level   string       `json:"level"` // intra, node, inter or job
	Limit   *judge.Limit `json:"limit,omitempty"`
	NoLimit string       `json:"no_limit,omitempty"`
}

// HealthConfig echoes the settings that change the answer.
type HealthConfig struct {
	NRanks    int                `json:"nranks"`
	NProcs    int                `json:"nprocs"`
	PairBytes int64              `json:"pair_bytes"`      // send/recv size between pairs
	ARBytes   int64              `json:"allreduce_bytes"` // all-reduce size
	Type      string             `json:"type"`
	Warmup    int                `json:"warmup_iters"`
	Iters     int                `json:"iters"` // timed iterations per pass (fewer when the budget is short)
	Passes    int                `json:"passes"`
	BudgetS   float64            `json:"budget_s"` // 0: none
	MinDrop   float64            `json:"min_drop"` // fraction below the reference that matters
	Z         float64            `json:"z"`        // robust standard deviations below the peers' median
	Expect    map[string]float64 `json:"expect"`   // GB/s per level, from --expect or the baseline
	Baseline  string             `json:"baseline,omitempty"`
	// ScreenRounds is how many rounds of random partners the node pairs
	// were screened in; 0 (absent) when every pair was measured.
	ScreenRounds int `json:"screen_rounds,omitempty"`
	// ScreenSeed drew the screening's partners and its confirmation's
	// (give it again to repeat this screening).
	ScreenSeed *uint64 `json:"screen_seed,omitempty"`
	// Racks is how many racks the nodes sit in, when every node's is
	// known: the screening meets partners inside and across racks, and
	// the racks' uplinks are judged.
	Racks int `json:"racks,omitempty"`
	// Transport is the host backend's (auto, tcp, shm); empty on GPUs
	// and in records made before it was kept.
	Transport string `json:"transport,omitempty"`
}

// HealthNode is one node of the job and its ranks.
type HealthNode struct {
	Name  string `json:"name"`
	Addr  string `json:"addr,omitempty"` // the address its processes reach the job from
	Rack  string `json:"rack,omitempty"` // the rack it sits in, when every node's is known
	Ranks []int  `json:"ranks"`
}

// PairFigure is the send/recv bandwidth between two GPUs (global ranks,
// Node set) or two nodes (node indexes, Node −1): the best of the passes,
// so that a slowdown must show in every pass to count.
type PairFigure struct {
	Node   int       `json:"node"`
	A      int       `json:"a"`
	B      int       `json:"b"`
	BusBW  float64   `json:"busbw"`
	Passes []float64 `json:"passes"`
}

// NodeFigure is one node's all-reduce bandwidth.
type NodeFigure struct {
	Node   int       `json:"node"`
	BusBW  float64   `json:"busbw"`
	Passes []float64 `json:"passes"`
}

// BlockFigure is an all-reduce over a block of nodes: the whole job, or a
// part of it in the bisection (Level 1 halves, 2 quarters …).
type BlockFigure struct {
	Level  int       `json:"level"`
	Nodes  []int     `json:"nodes"`
	BusBW  float64   `json:"busbw"`
	Passes []float64 `json:"passes"`
}

// Arrivals is a run of back-to-back calls of the job's all-reduce, each
// after the same compute on every rank, and who reached each call last.
type Arrivals struct {
	Calls    int    `json:"calls"`
	Bytes    int64  `json:"bytes"`
	Workload string `json:"workload"`
	// GapUs is the median, over every process and call, of the time from
	// a process's return from one call to its start of the next: the
	// compute, and whatever held the host up.
	GapUs float64       `json:"gap_us"`
	Procs []ProcArrival `json:"procs"`
	// Unjudged says why no straggler was named from these arrivals:
	// processes that share a GPU take turns on it, so who comes last is
	// the GPU's choice, not a slow host's. Empty when they were judged.
	Unjudged string `json:"unjudged,omitempty"`
}

// ProcArrival is one process's part of Arrivals.
type ProcArrival struct {
	Proc   int     `json:"proc"`
	Node   int     `json:"node"`
	Ranks  []int   `json:"ranks"`
	Last   int     `json:"last"`    // calls it reached last
	LateUs float64 `json:"late_us"` // median, when last, of how long after the first process it came
	WorkUs float64 `json:"work_us"` // median time of its compute before a call
}

// PhaseSetup is what the communicators of one phase's waves took: a new
// split of the job for every wave of pairs or blocks, opened before the
// wave and closed after it (on GPUs NCCL's teardown is the larger part).
type PhaseSetup struct {
	Phase  string  `json:"phase"`
	Waves  int     `json:"waves"`
	TotalS float64 `json:"total_s"`
	MaxS   float64 `json:"max_s"` // the longest wave
	// Closes is how many times they were closed: once a wave, or fewer
	// where several waves' close together (on GPUs); CloseTotalS and
	// CloseMaxS are the time it took, in all and at most.
	Closes      int     `json:"closes"`
	CloseTotalS float64 `json:"close_total_s"`
	CloseMaxS   float64 `json:"close_max_s"`
}

// Finding is one thing flagged.
type Finding struct {
	// Kind is gpu (slow with every partner in its node), gpu-link (one
	// pair of GPUs), node-allreduce, node (slow with every partner
	// node), link (one pair of nodes), job (the whole job's all-reduce)
	// block (the part of the job a bisection narrowed the slowness to),
	// rack (a rack whose pairs across racks are slow: its uplink) or
	// straggler (a process that reaches the job's all-reduce last, call
	// after call).
	Kind      string   `json:"kind"`
	Where     string   `json:"where"` // host, GPU (bus id) or pair, in words
	Nodes     []int    `json:"nodes"`
	Ranks     []int    `json:"ranks,omitempty"`
	BusBW     float64  `json:"busbw"`
	Reference float64  `json:"reference"` // what it was judged against, GB/s
	Against   string   `json:"against"`   // peers, expect, baseline, other half or published
	Drop      float64  `json:"drop"`      // fraction below the reference
	Z         *float64 `json:"z"`         // robust standard deviations below the peers; null when they agree exactly or against an expectation
	// With --judge: the figure's share of its level's wire limit, and its
	// ratio to the published figure for that system and size (id).
	WireShare      float64 `json:"wire_share,omitempty"`
	PublishedRatio float64 `json:"published_ratio,omitempty"`
	Published      string  `json:"published,omitempty"`
}

// Encode writes the record as indented JSON, with empty lists as [].
func (h *Health) Encode(w io.Writer) error {
	h.Schema, h.Version = HealthSchemaName, HealthSchemaVersion
	for _, l := range []*[]string{&h.Skipped, &h.Args} {
		if *l == nil {
			*l = []string{}
		}
	}
	if h.Findings == nil {
		h.Findings = []Finding{}
	}
	if h.Intra == nil {
		h.Intra = []PairFigure{}
	}
	if h.Confirmation == nil {
		h.Confirmation = []PairFigure{}
	}
	if h.Inter == nil {
		h.Inter = []PairFigure{}
	}
	if h.NodeAR == nil {
		h.NodeAR = []NodeFigure{}
	}
	if h.Setup == nil {
		h.Setup = []PhaseSetup{}
	}
	if h.Bisection == nil {
		h.Bisection = []BlockFigure{}
	}
	if h.Noise == nil {
		h.Noise = map[string]float64{}
	}
	if h.Devices == nil {
		h.Devices = []DeviceRecord{}
	}
	return writeIndented(w, h)
}

// DecodeHealth reads a health record, refusing another schema or
// version, unknown keys and truncation with one line.
func DecodeHealth(r io.Reader) (*Health, error) {
	d, err := readDocument(r)
	if err != nil {
		return nil, err
	}
	return d.health()
}

func (d *versioned) health() (*Health, error) {
	var h Health
	if err := d.decodeSince(HealthSchemaName, 1, HealthSchemaVersion, "collbench health record", &h); err != nil {
		return nil, err
	}
	if err := h.validate(); err != nil {
		return nil, err
	}
	return &h, nil
}

// validate checks that every index points at a node or rank there is.
func (h *Health) validate() error {
	n := len(h.Nodes)
	in := func(i int) bool { return i >= 0 && i < n }
	for _, p := range h.Inter {
		if !in(p.A) || !in(p.B) {
			return fmt.Errorf("inter-node pair %d-%d names a node beyond the %d listed", p.A, p.B, n)
		}
	}
	for _, p := range h.Intra {
		if !in(p.Node) || !slices.Contains(h.Nodes[p.Node].Ranks, p.A) || !slices.Contains(h.Nodes[p.Node].Ranks, p.B) {
			return fmt.Errorf("GPU pair %d-%d names a node or ranks beyond the %d nodes listed", p.A, p.B, n)
		}
	}
	for _, f := range h.NodeAR {
		if !in(f.Node) {
			return fmt.Errorf("node all-reduce names node %d of %d", f.Node, n)
		}
	}
	for _, f := range h.Findings {
		for _, i := range f.Nodes {
			if !in(i) {
				return fmt.Errorf("finding %q names node %d of %d", f.Where, i, n)
			}
		}
	}
	return nil
}
