package document

import (
	"io"
)

// TuneSchemaName identifies the record of collbench tune; see
// docs/tune.md and docs/tune.schema.json.
const (
	TuneSchemaName    = "collbench.tune"
	TuneSchemaVersion = 1
)

// TuneRun is the record of a tuning: what the library chose by itself,
// every setting tried and every round of those measured, the verdict per
// size, the bands written, the proof, and the rows of the file.
type TuneRun struct {
	Stamp
	Command    []string `json:"command"`    // the sweep: a collective and its flags
	Collective string   `json:"collective"` // as the tuner file names it
	Ranks      int      `json:"ranks"`      // of each communicator measured
	Nodes      int      `json:"nodes"`
	// NCCLVersion is the NCCL the sweep loaded (nccl backend).
	NCCLVersion string  `json:"nccl_version,omitempty"`
	Rounds      int     `json:"rounds"`
	Threshold   float64 `json:"threshold"` // relative, e.g. 0.05
	Alpha       float64 `json:"alpha"`
	// Correction is how the search's tests were adjusted for each other
	// (bh: the false discovery rate); the proof is held to holm.
	Correction string  `json:"correction"`
	Budget     float64 `json:"budget_s"` // 0: none
	// Plugin is the tuner plugin the proof loaded (nccl backend).
	Plugin string     `json:"plugin,omitempty"`
	Arms   []TuneArm  `json:"arms"`
	Sizes  []TuneSize `json:"sizes"`
	Bands  []TuneBand `json:"bands"`
	Proof  *TuneProof `json:"proof"` // null when none ran
	Rows   []TunerRow `json:"rows"`  // the file as written
	Notes  []string   `json:"notes"` // what a user of the file must know
	Errors []string   `json:"errors"`
}

// TuneChoice is a choice of algorithm, protocol and channels, as a tuner
// file writes them (on the host backend the protocol is the segment).
type TuneChoice struct {
	Algorithm string `json:"algorithm"`
	Protocol  string `json:"protocol"`
	Channels  int    `json:"channels"` // 0: the library's own count
}

// TuneLogged is the choice the library logged for one size.
type TuneLogged struct {
	Size int64 `json:"size"`
	TuneChoice
}

// TuneArm is one setting tried: its environment, its trial (a run of the
// sweep that logged the library's choice per size), and its rounds.
type TuneArm struct {
	Letter  string     `json:"letter"`
	Label   string     `json:"label"`
	Default bool       `json:"default"` // the library's own choice: the sweep as it is
	Setting TuneChoice `json:"setting"` // what it forces; empty for the default
	Env     []string   `json:"env"`
	// Refused is why the library would not run the setting, in its
	// words; SameAs, the arm whose choices it repeated at every size.
	// Neither is measured.
	Refused      string       `json:"refused,omitempty"`
	SameAs       string       `json:"same_as,omitempty"`
	TrialSeconds float64      `json:"trial_s"`
	Choices      []TuneLogged `json:"choices"`
	Failed       string       `json:"failed,omitempty"` // why it stopped in the rounds
	FailedRound  int          `json:"failed_round,omitempty"`
	Rounds       []ABRound    `json:"rounds"`
}

// TuneSize is one size judged: every measured arm against the default,
// and the winner, the arm significantly faster beyond the threshold with
// the lowest median (-1 when none is).
type TuneSize struct {
	Size   int64       `json:"size"`
	Arms   []ABFigure  `json:"arms"`
	Winner int         `json:"winner"`
	Choice *TuneChoice `json:"choice"` // the winner's, as logged; null without a winner
	Ratio  float64     `json:"ratio"`  // the winner's median ÷ the default's; 1 without a winner
	Note   string      `json:"note,omitempty"`
}

// TuneBand is a range of sizes with one choice: a winner's, written and
// proven, or the library's own.
type TuneBand struct {
	From      uint64     `json:"from"` // bytes, both ends included, as the tuner file's rows
	To        uint64     `json:"to"`
	Sizes     []int64    `json:"sizes"` // the sizes measured in it
	Choice    TuneChoice `json:"choice"`
	Own       bool       `json:"own"`       // the library's own choice (pinned on NCCL, or left alone)
	Predicted float64    `json:"predicted"` // geometric mean of the search's ratios over its sizes
	Realised  *float64   `json:"realised"`  // the proof's, null before it
	Held      *bool      `json:"held"`      // every size significantly faster in the proof
	Dropped   string     `json:"dropped,omitempty"`
}

// TuneProof is the default against the library steered by the file, as
// ab runs two arms.
type TuneProof struct {
	Rounds  int          `json:"rounds"`
	Env     []string     `json:"env"` // what the tuned arm added
	Choices []TuneLogged `json:"choices"`
	// Mismatches are sizes where the tuned library did not do what the
	// file says, one line each.
	Mismatches []string        `json:"mismatches"`
	Sizes      []TuneProofSize `json:"sizes"`
	Default    []ABRound       `json:"default_rounds"`
	Tuned      []ABRound       `json:"tuned_rounds"`
	Failed     string          `json:"failed,omitempty"`
}

// TuneProofSize is one size of the proof.
type TuneProofSize struct {
	Size      int64    `json:"size"`
	Default   float64  `json:"default_us"` // median of the rounds
	Tuned     float64  `json:"tuned_us"`
	Ratio     float64  `json:"ratio"`
	Predicted float64  `json:"predicted"` // the search's ratio; 1 where the file keeps the library's choice
	P         *float64 `json:"p"`
	PAdjusted *float64 `json:"p_adjusted"`
	Verdict   string   `json:"verdict"`
}

// TunerRow is one row of the file.
type TunerRow struct {
	Collective string `json:"collective"`
	MinBytes   uint64 `json:"min_bytes"`
	MaxBytes   uint64 `json:"max_bytes"`
	TuneChoice
	Nodes   int    `json:"nodes"`
	Ranks   int    `json:"ranks"`
	PipeOps int    `json:"pipe_ops"`
	RegBuff int    `json:"reg_buff"`
	Why     string `json:"why"`
}

// Encode writes the record as indented JSON.
func (d *TuneRun) Encode(w io.Writer) error {
	return writeIndented(w, d)
}
