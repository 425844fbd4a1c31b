package document

import (
	"fmt"
	"io"
)

// AuditSchemaName identifies the record of collbench audit; see
// docs/audit.md and docs/audit.schema.json.
const (
	AuditSchemaName    = "collbench.audit"
	AuditSchemaVersion = 1
)

// The kinds of repetition an audit checks.
const (
	AuditRunToRun = "run-to-run"      // calls of one communicator against its first
	AuditFresh    = "fresh-processes" // a second run, in processes and communicators of its own
	AuditSizes    = "sizes"           // element i of a call against element i of a call of the next size
	AuditSettings = "settings"        // a forced setting against the library's own choice
)

// AuditRun is the record of an audit: every setting run, every
// comparison made with what it found, the fastest setting that repeats,
// and what repeating costs against the library's own choice.
type AuditRun struct {
	Stamp
	Command    []string `json:"command"` // the sweep: a collective and its flags
	Collective string   `json:"collective"`
	Ranks      int      `json:"ranks"` // of each communicator
	// NCCLVersion is the NCCL the sweep loaded (nccl backend).
	NCCLVersion string `json:"nccl_version,omitempty"`
	// Repeats is how many calls of each case were compared run to run
	// with its reference call.
	Repeats  int            `json:"repeats"`
	Settings []AuditSetting `json:"settings"` // settings[0] is the library's own choice
	Checks   []AuditCheck   `json:"checks"`   // every comparison, differing or not
	// Chosen is the index in Settings of the fastest setting that
	// repeated in every check; null when none did.
	Chosen *int `json:"chosen"`
	// Price is the chosen setting measured against the library's own
	// choice in interleaved rounds (an ab record, arm A the library's
	// own); null when the library's own choice repeats or none does.
	Price  *ABRun   `json:"price"`
	Notes  []string `json:"notes"`
	Errors []string `json:"errors"`
}

// AuditSetting is one setting the sweep ran under.
type AuditSetting struct {
	Label   string   `json:"label"`
	Default bool     `json:"default"` // the library's own choice: the sweep as it is
	Env     []string `json:"env"`
	// Refused is why the library would not run it, in its words.
	Refused string `json:"refused,omitempty"`
	// Repeats says every check of the setting found the same bits.
	Repeats bool `json:"repeats"`
	// BusBW is its first run's out-of-place bus bandwidth per size
	// (GB/s), what the choice of the fastest reads.
	BusBW        []AuditBusBW `json:"bus_bw"`
	TrialSeconds float64      `json:"trial_s"`
}

// AuditBusBW is one size's out-of-place bus bandwidth, GB/s.
type AuditBusBW struct {
	Name  string  `json:"name"` // the row: type and operator
	Size  int64   `json:"size"`
	BusBW float64 `json:"bus_bw"`
}

// AuditCheck is one comparison: of Setting's outputs of one case
// against Against's (the reference call, the first run, the library's
// own choice, or the same case at the next smaller size), over every
// rank.
type AuditCheck struct {
	Kind    string `json:"kind"`
	Setting string `json:"setting"`
	Against string `json:"against"`
	Type    string `json:"type"`
	RedOp   string `json:"redop"`
	Root    int    `json:"root"`
	InPlace bool   `json:"in_place"`
	Size    int64  `json:"size"`  // bytes, as nccl-tests counts the call
	Count   int64  `json:"count"` // elements compared per rank
	// AgainstSize is the other call's size in a check across sizes.
	AgainstSize int64 `json:"against_size,omitempty"`
	Elements    int64 `json:"different_elements"`
	Bits        int64 `json:"different_bits"`
	// First is the first difference: the lowest rank's first element;
	// null when every bit was the same.
	First   *AuditFirst `json:"first"`
	MaxULPs uint64      `json:"max_ulps"`
}

// Differs says whether the check found a difference.
func (c AuditCheck) Differs() bool { return c.Bits > 0 }

// AuditFirst is where a check first found a difference.
type AuditFirst struct {
	Call    int64  `json:"call"` // run to run: the repeat, from 0; otherwise 0
	Rank    int64  `json:"rank"`
	Element int64  `json:"element"`
	Bit     int64  `json:"bit"`  // from the element's least significant
	ULPs    uint64 `json:"ulps"` // how far apart the values are, in steps of the type
}

// Encode writes the record as indented JSON.
func (r *AuditRun) Encode(w io.Writer) error {
	return writeIndented(w, r)
}

// Saved is a file whose table collbench report prints: a run or an
// audit.
type Saved struct {
	Run   *Run
	Audit *AuditRun
}

// DecodeSaved reads a run or an audit record, telling them apart by their
// schema key, with DecodeRun's strict checks.
func DecodeSaved(r io.Reader) (Saved, error) {
	d, err := readDocument(r)
	if err != nil {
		return Saved{}, err
	}
	if d.head.Schema == AuditSchemaName {
		var a AuditRun
		if err := d.decodeSince(AuditSchemaName, 1, AuditSchemaVersion, "collbench audit record", &a); err != nil {
			return Saved{}, err
		}
		if err := a.validate(); err != nil {
			return Saved{}, fmt.Errorf("collbench audit record: %w", err)
		}
		return Saved{Audit: &a}, nil
	}
	run, err := d.run()
	return Saved{Run: run}, err
}
