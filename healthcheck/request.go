package healthcheck

import (
	"bytes"
	"context"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/collbench/collbench/bench/numeric"
	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/fileio"
	"github.com/collbench/collbench/health"
	"github.com/collbench/collbench/run"
)

// Request is a health check as a person states it.
type Request struct {
	PairBytes, ARBytes int64 // 0: the backend's default (DefaultBytes)
	DType              string
	Warmup, Iters      int
	Passes             int
	Budget             time.Duration
	MinDrop, Z         float64
	Expect             []string // level=GB/s
	Baseline           string   // a previous health record
	Bisect             bool
	// ScreenRounds screens the node pairs in that many rounds of random
	// partners (0: automatically from health.ScreenFrom nodes, in
	// health.MaxScreenRounds); AllPairs measures every pair whatever the
	// number of nodes.
	ScreenRounds int
	AllPairs     bool
	// ScreenSeed draws the screening's partners ("": afresh for each
	// check, so that checks after checks meet other pairs; a number
	// repeats a check's screening, as its record names it).
	ScreenSeed string
	// RacksFile ("HOST RACK" lines) and RackPattern (a host-name pattern
	// whose one group is the rack) say which rack each node sits in;
	// without them Slurm's SLURM_TOPOLOGY_ADDR does, where it is set.
	RacksFile, RackPattern string
}

// DefaultRequest is collbench health's defaults; docs/health.md
// says how they were chosen.
func DefaultRequest() Request {
	return Request{DType: "float", Warmup: 5, Iters: 20, Passes: 2,
		MinDrop: health.DefaultCriteria.MinDrop, Z: health.DefaultCriteria.Z}
}

// Spec checks the request and builds the check: the baseline file (read
// up to limit bytes) gives the expectations --expect does not.
func (r Request) Spec(ctx context.Context, args []string, limit int64) (Spec, error) {
	t, err := numeric.ParseDataType(r.DType)
	if err != nil {
		return Spec{}, run.Usagef("{DataType}: %v", err)
	}
	s := Spec{PairBytes: r.PairBytes, ARBytes: r.ARBytes, Type: t, Warmup: r.Warmup, Iters: r.Iters, Passes: r.Passes,
		Budget: r.Budget, Criteria: health.Criteria{MinDrop: r.MinDrop, Z: r.Z}, Expect: map[string]float64{},
		Baseline: r.Baseline, Bisect: r.Bisect, Args: args, ScreenRounds: r.ScreenRounds, AllPairs: r.AllPairs}
	if r.ScreenSeed != "" {
		seed, err := strconv.ParseUint(strings.TrimSpace(r.ScreenSeed), 0, 64)
		if err != nil {
			return Spec{}, run.Usagef("{ScreenSeed} %q: want a whole number from 0 to %d", r.ScreenSeed, uint64(math.MaxUint64))
		}
		s.ScreenSeed = &seed
	}
	for _, e := range r.Expect {
		for _, part := range strings.Split(e, ",") {
			level, val, ok := strings.Cut(part, "=")
			gbps, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
			if !ok || err != nil {
				return Spec{}, run.Usagef("{Expect} %q: want level=GB/s, e.g. inter=45", part)
			}
			level = strings.TrimSpace(level)
			if was, twice := s.Expect[level]; twice {
				return Spec{}, run.Usagef("{Expect} gives %s twice (%g and %g GB/s); give one", level, was, gbps)
			}
			s.Expect[level] = gbps
		}
	}
	if r.RacksFile != "" {
		data, err := fileio.Read(ctx, r.RacksFile, limit)
		if err != nil {
			return Spec{}, run.Usagef("racks file: %v", err)
		}
		if s.Racks.Labels, err = health.ParseRackLabels(bytes.NewReader(data)); err != nil {
			return Spec{}, run.Usagef("racks file %s: %v", r.RacksFile, err)
		}
	}
	if r.RackPattern != "" {
		var err error
		if s.Racks.Pattern, err = health.ParseRackPattern(r.RackPattern); err != nil {
			return Spec{}, run.Usagef("rack pattern: %v", err)
		}
	}
	if r.Baseline != "" {
		base, err := document.Load(ctx, r.Baseline, limit, document.DecodeHealth)
		if err != nil {
			return Spec{}, err
		}
		s.base = base
		s.fromBaseline = map[string]bool{}
		for level, v := range Expectations(base) {
			if _, given := s.Expect[level]; !given {
				s.Expect[level] = v
				s.fromBaseline[level] = true
			}
		}
	}
	return s, s.check()
}
