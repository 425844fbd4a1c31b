package healthcheck

import (
	"fmt"
	"slices"
	"time"

	"github.com/collbench/collbench/bench/numeric"
	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/health"
	"github.com/collbench/collbench/run"
)

// Spec is a health check as collbench health runs it.
type Spec struct {
	PairBytes int64 // send/recv size between pairs; 0: the backend's default
	ARBytes   int64 // all-reduce size within nodes, blocks and the job; 0: the backend's default
	Type      numeric.DataType
	Warmup    int
	Iters     int // timed iterations per pass, the most the budget may give
	Passes    int // each figure is the best of this many passes
	// Budget bounds the whole check (0: none): iterations shrink to fit
	// and parts that no longer fit are left out, and say so.
	Budget   time.Duration
	Criteria health.Criteria
	// Expect is GB/s per level (intra, node, inter, job); a figure that
	// far below it is flagged whatever its peers say.
	Expect   map[string]float64
	Baseline string // the file Expect's missing levels came from, for the record
	Bisect   bool   // bisect on four nodes or more even when the job's all-reduce is not slow
	Args     []string
	// Judge, when set, also judges the figures against the wire and the
	// published figures (levelJudgers).
	Judge *run.JudgeSpec
	// ScreenRounds and AllPairs choose how node pairs are met (see
	// screenRounds).
	ScreenRounds int
	AllPairs     bool
	// ScreenSeed draws the screening (nil: rank 0 draws one afresh for
	// each check and the record keeps it).
	ScreenSeed *uint64
	// Racks says which rack each node sits in, for rack-aware screening
	// and the racks' uplinks (see healthracks.go).
	Racks health.RackOf

	base *document.Health // the baseline record, whose settings must be this check's
	// fromBaseline are the levels whose expectation the baseline gave
	// (the others' came from Expect as given).
	fromBaseline map[string]bool
}

// sameSettings refuses a baseline measured at other settings than this
// check's (sizes, data type, backend, ranks, the host backend's
// transport): bandwidth depends on all of them, so its medians would be no
// expectation here. transport is "" off the host backend.
func (s Spec) sameSettings(backend string, ranks int, transport string) error {
	if s.base == nil {
		return nil
	}
	b := s.base.Config
	differ := func(what string, was, is any) error {
		return run.Usagef("{Baseline} %s was measured with %s of %v; this check uses %v: bandwidth depends on it, so the baseline's medians are no expectation here (measure one with the same settings, or give {Expect})",
			s.Baseline, what, was, is)
	}
	switch {
	case b.PairBytes != s.PairBytes:
		return differ("pair messages", fmt.Sprintf("%d bytes", b.PairBytes), s.PairBytes)
	case b.ARBytes != s.ARBytes:
		return differ("all-reduces", fmt.Sprintf("%d bytes", b.ARBytes), s.ARBytes)
	case b.Type != s.Type.String():
		return differ("data type", b.Type, s.Type)
	case s.base.Backend != "" && s.base.Backend != backend:
		return differ("backend", s.base.Backend, backend)
	case b.NRanks != ranks:
		return differ("ranks", b.NRanks, ranks)
	case b.Transport != "" && transport != "" && b.Transport != transport:
		return differ("the host backend's transport", b.Transport, transport)
	}
	return nil
}

// transportName is the host backend's transport setting as a record
// keeps it; "" on another backend.
func transportName(j *run.Job, backend string) string {
	if backend != "host" {
		return ""
	}
	return j.Settings.Transport.String()
}

// DefaultBytes is the default message size: large enough that a pair's
// time is its bandwidth, not its latency (NVLink and InfiniBand reach
// their bus bandwidth from about 64 MiB; TCP between hosts from about
// 1 MiB), small enough that a round of pairs takes milliseconds.
func DefaultBytes(onGPU bool) int64 {
	if onGPU {
		return 128 << 20
	}
	return 4 << 20
}

// Expectations reads a previous health record as expectations: the
// median figure of each level it measured.
func Expectations(base *document.Health) map[string]float64 {
	out := map[string]float64{}
	level := func(name string, vals []float64) {
		if len(vals) > 0 {
			m, _ := health.MedianMAD(vals)
			out[name] = m
		}
	}
	var intra, node, inter []float64
	for _, p := range base.Intra {
		intra = append(intra, p.BusBW)
	}
	for _, f := range base.NodeAR {
		node = append(node, f.BusBW)
	}
	for _, p := range base.Inter {
		inter = append(inter, p.BusBW)
	}
	level("intra", intra)
	level("node", node)
	level("inter", inter)
	if base.Job != nil {
		level("job", []float64{base.Job.BusBW})
	}
	return out
}

// Levels are the levels an expectation may name.
var Levels = []string{"intra", "node", "inter", "job"}

// check refuses settings the check cannot run with.
func (s *Spec) check() error {
	switch {
	case s.PairBytes < 0 || s.ARBytes < 0:
		return run.Usagef("sizes cannot be negative (got {PairBytes} %d, {ARBytes} %d)", s.PairBytes, s.ARBytes)
	case s.Iters < 1:
		return run.Usagef("{Iters} must be at least 1 (got %d)", s.Iters)
	case s.Warmup < 0:
		return run.Usagef("{Warmup} cannot be negative (got %d)", s.Warmup)
	case s.Passes < 1:
		return run.Usagef("{Passes} must be at least 1 (got %d)", s.Passes)
	case s.Budget < 0:
		return run.Usagef("{Budget} cannot be negative")
	case s.Criteria.MinDrop <= 0 || s.Criteria.MinDrop >= 1:
		return run.Usagef("{MinDrop} must be between 0 and 1 (got %g)", s.Criteria.MinDrop)
	case s.Criteria.Z <= 0:
		return run.Usagef("{Z} must be positive (got %g)", s.Criteria.Z)
	case s.ScreenRounds < 0 || s.ScreenRounds > health.MaxScreenRounds:
		return run.Usagef("{ScreenRounds} must be between 1 and %d (got %d)", health.MaxScreenRounds, s.ScreenRounds)
	case s.AllPairs && s.ScreenRounds > 0:
		return run.Usagef("{AllPairs} and {ScreenRounds} ask for different things; give one")
	case s.AllPairs && s.ScreenSeed != nil:
		return run.Usagef("{AllPairs} measures every pair: there is no screening for {ScreenSeed} to draw")
	}
	for _, b := range []struct {
		name string
		n    int64
	}{{"{PairBytes}", s.PairBytes}, {"{ARBytes}", s.ARBytes}} {
		if b.n > 0 && b.n < int64(s.Type.Size()) {
			return run.Usagef("%s %d is less than one %s element (%d bytes)", b.name, b.n, s.Type, s.Type.Size())
		}
	}
	for k, v := range s.Expect {
		if !slices.Contains(Levels, k) {
			return run.Usagef("{Expect} %s: unknown level (want intra, node, inter or job)", k)
		}
		if !(v > 0) {
			return run.Usagef("{Expect} %s=%g: want a positive GB/s", k, v)
		}
	}
	return nil
}

// screenRounds is how many rounds of random partners node pairs are
// screened in, 0 for every pair: as asked, or from health.ScreenFrom
// nodes on, health.MaxScreenRounds; a round robin of as few rounds or
// fewer measures every pair instead.
func (s Spec) screenRounds(nodes int) int {
	r := s.ScreenRounds
	if r == 0 && !s.AllPairs && nodes >= health.ScreenFrom {
		r = health.MaxScreenRounds
	}
	if r >= health.RoundCount(nodes) {
		return 0
	}
	return r
}
