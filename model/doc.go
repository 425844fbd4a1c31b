// Package model turns measured collective curves into cost models and
// uses them: alpha-beta fits t(S) = α + β·S (piecewise where a protocol
// switch bends the curve), monotone interpolation of the raw tables, and
// predictions of the communication time and memory of a training step
// under a parallel strategy, one split or every split of a job's ranks.
// A Request states a prediction in a person's terms (a preset, shape
// overrides, the split) and is checked and resolved here.
//
// Units: sizes in bytes, times in µs, bandwidths in GB/s (1e9 B/s).
package model
