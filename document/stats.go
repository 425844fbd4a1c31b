package document

import (
	"github.com/collbench/collbench/bench"
)

// Stats are the per-iteration statistics of one placement, in µs.
type Stats struct {
	N     int       `json:"n"`
	Min   float64   `json:"min_us"`
	P50   float64   `json:"p50_us"`
	P95   float64   `json:"p95_us"`
	P99   float64   `json:"p99_us"`
	Max   float64   `json:"max_us"`
	Mean  float64   `json:"avg_us"`
	Stdev float64   `json:"stdev_us"`
	CV    float64   `json:"cv_pct"`
	Times []float64 `json:"times_us,omitempty"`
}

// StatsOf converts the engine's statistics. The conversion is by field,
// so an engine field renamed or retyped fails to compile here instead of
// silently changing the file format.
func StatsOf(s bench.IterStats) Stats { return Stats(s) }

// Line is t(S) = Alpha + Beta·S: Alpha in µs, Beta in µs per byte.
type Line struct {
	Alpha float64 `json:"alpha_us"`
	Beta  float64 `json:"beta_us_per_byte"`
}

// Segment is a line that holds from From bytes up to To bytes.
type Segment struct {
	From float64 `json:"from_bytes"`
	To   float64 `json:"to_bytes"`
	Line
}

// Fit is a curve's fitted cost model as the profile records it.
type Fit struct {
	// Model is "alpha_beta" (one line) or "piecewise" (Segments, split
	// where the curve bends).
	Model  string `json:"model"`
	Method string `json:"method"` // huber_relative or theil_sen (wls_relative in older profiles)
	// Line is the large-message line: the only line, or the last segment.
	Line
	BusBWInf float64   `json:"busbw_inf_GBps"` // bus factor / Beta, in GB/s
	NHalf    float64   `json:"n_half_bytes"`   // Hockney's n½ = Alpha/Beta
	R2       float64   `json:"r2"`
	MaxRel   float64   `json:"max_rel_err"` // largest |model−measured|/measured
	Range    [2]int64  `json:"range_bytes"`
	Points   int       `json:"points"`
	Segments []Segment `json:"segments,omitempty"`
	// AlphaCI and BetaCI are the large-message line's 95 % bootstrap
	// intervals (the cost model's bootstrap); profiles before them have none.
	AlphaCI *[2]float64 `json:"alpha_ci_us,omitempty"`
	BetaCI  *[2]float64 `json:"beta_ci_us_per_byte,omitempty"`
}
