package bench

import (
	"github.com/montanaflynn/stats"
)

// IterStats summarises per-iteration times (µs). Percentiles use the
// nearest-rank method on the sorted samples, as nccl-tests' -I report does;
// Stdev is the population standard deviation.
type IterStats struct {
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

// Summarize computes the statistics of samples (µs). It keeps the samples.
func Summarize(samples []float64) IterStats {
	s := IterStats{N: len(samples), Times: samples}
	if len(samples) == 0 {
		return s
	}
	d := stats.Float64Data(samples)
	// The stats functions only fail on empty input, excluded above.
	s.Min, _ = d.Min()
	s.Max, _ = d.Max()
	s.Mean, _ = d.Mean()
	s.Stdev, _ = d.StandardDeviationPopulation()
	s.P50, _ = d.PercentileNearestRank(50)
	s.P95, _ = d.PercentileNearestRank(95)
	s.P99, _ = d.PercentileNearestRank(99)
	if s.Mean != 0 {
		s.CV = s.Stdev / s.Mean * 100
	}
	return s
}
