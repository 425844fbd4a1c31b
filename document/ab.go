package document

import (
	"io"
)

// ABSchemaName identifies the record of collbench ab; see docs/ab.md and
// docs/ab.schema.json. Version 2 added correction, p_adjusted and
// stopped.
const (
	ABSchemaName    = "collbench.ab"
	ABSchemaVersion = 2
)

// ABRun is the record of an A/B run: the arms, every round each of them
// ran, and each row judged against the base arm.
type ABRun struct {
	Stamp
	Command   []string `json:"command"` // the sweep every arm ran
	Rounds    int      `json:"rounds"`
	Threshold float64  `json:"threshold"` // relative, e.g. 0.05
	Alpha     float64  `json:"alpha"`
	// Correction is how the table's p-values were adjusted for each
	// other before they were held against alpha: holm, bh or none.
	Correction string  `json:"correction"`
	Arms       []ABArm `json:"arms"`
	// Base is the arm the others are judged against: the first that
	// ran, -1 when none did.
	Base  int      `json:"base"`
	Rows  []ABRow  `json:"rows"`
	Bands []ABBand `json:"bands"`
	// Slower counts the rows where an arm was significantly slower than
	// the base beyond the threshold.
	Slower int `json:"slower"`
	// Stopped says why the rounds ended early: fewer than two arms were
	// left to compare.
	Stopped string   `json:"stopped,omitempty"`
	Errors  []string `json:"errors"`
}

// ABArm is one arm: what it changes, the NCCL it loaded, and its rounds.
type ABArm struct {
	Letter      string    `json:"letter"` // how the table names it: A, B, …
	Label       string    `json:"label"`
	Changes     string    `json:"changes"`
	Lib         string    `json:"lib,omitempty"`
	Env         []string  `json:"env"`
	Args        []string  `json:"args"`
	NCCLVersion string    `json:"nccl_version,omitempty"`
	NCCLPath    string    `json:"nccl_path,omitempty"`
	NCCLError   string    `json:"nccl_error,omitempty"`
	Failed      string    `json:"failed,omitempty"`       // why it stopped
	FailedRound int       `json:"failed_round,omitempty"` // 0 with Failed: before the first round
	Rounds      []ABRound `json:"rounds"`
}

// ABRound is one round of one arm: its wall time and its out-of-place
// times.
type ABRound struct {
	Seconds float64  `json:"seconds"`
	Times   []ABTime `json:"times"`
}

// ABTime is one row of one round.
type ABTime struct {
	Name  string  `json:"name"` // collective, type, reduction, root
	Size  int64   `json:"size"`
	Time  float64 `json:"time_us"`
	BusBW float64 `json:"bus_bw"`
}

// ABRow is one row judged across the arms.
type ABRow struct {
	Name string     `json:"name"`
	Size int64      `json:"size"`
	Arms []ABFigure `json:"arms"`
}

// ABFigure is one arm at one row: the median of its rounds (µs) with
// the median's interval and that interval's confidence, the ratio to the
// base arm's median, the rank-sum p-value against the base arm's
// rounds and that p-value adjusted for the table's other tests (both
// null for the base arm), and the verdict.
type ABFigure struct {
	Arm       int      `json:"arm"`
	Rounds    int      `json:"rounds"`
	Median    float64  `json:"median_us"`
	Low       float64  `json:"low_us"`
	High      float64  `json:"high_us"`
	Level     float64  `json:"level"`
	BusBW     float64  `json:"bus_bw"`
	Ratio     float64  `json:"ratio"`
	P         *float64 `json:"p"`
	PAdjusted *float64 `json:"p_adjusted"`
	Verdict   string   `json:"verdict"`
}

// ABBand is a range of sizes and the arm that did best in it.
type ABBand struct {
	Name   string  `json:"name"`
	From   int64   `json:"from"`
	To     int64   `json:"to"` // exclusive; 0 = no upper end
	Best   int     `json:"best"`
	Ratio  float64 `json:"ratio"` // the best arm's geometric mean ratio to the base
	Faster int     `json:"faster"`
	Rows   int     `json:"rows"`
}

// Encode writes the record as indented JSON.
func (d *ABRun) Encode(w io.Writer) error {
	return writeIndented(w, d)
}
