package run

import (
	"strconv"
	"strings"
	"time"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/numeric"
)

// ProfileRequest is a profile as a person states it: lists and names,
// not yet checked. Spec checks it and builds the ProfileSpec.
type ProfileRequest struct {
	MinBytes, MaxBytes int64
	Factor             int64
	Colls              string // comma-separated collective names
	GroupSizes         string // comma-separated; empty: the defaults of ProfileSpec.Groups
	Layouts            string // consecutive, strided or both, comma-separated
	DType, Op          string
	Iters, MinIters    int
	Warmup, Check      int
	Budget             time.Duration
	NoOverlap          bool
	OverlapGEMMs       []string
	OverlapBytes       int64
	OverlapTarget      float64 // seconds; 0 is the backend's default
	// PowerWindow is how long, in s, each size runs on while NVML reads
	// the GPUs' power draw; 0 reads none.
	PowerWindow float64
	// Routing shapes alltoallv's traffic when its MoE is set.
	Routing TrafficRequest
}

// DefaultProfileColls are the collectives planners read.
const DefaultProfileColls = "allreduce,allgather,reducescatter,alltoall,broadcast,sendrecv,pipeline"

// DefaultProfileRequest is a profile as collbench takes it without
// settings: the collectives planners read, bfloat16 sums from 1 MiB to
// 1 GiB by ×2 over every group size and both layouts, up to 20 timed
// iterations (at least 3 under a budget) after 5 warm-up calls, no
// verification, and the backend's overlap probes.
func DefaultProfileRequest() ProfileRequest {
	return ProfileRequest{MinBytes: 1 << 20, MaxBytes: 1 << 30, Factor: 2, Colls: DefaultProfileColls, Layouts: "consecutive,strided",
		DType: "bfloat16", Op: "sum", Iters: 20, MinIters: 3, Warmup: 5, Routing: DefaultTrafficRequest()}
}

// Spec checks the request and builds the profile; args is the command
// line the document records. What the profile's own settings allow is
// checked where a Go program's spec is checked too (ProfileSpec.Plan).
func (r *ProfileRequest) Spec(args []string) (ProfileSpec, error) {
	if w := r.PowerWindow; w != 0 && !(w >= minPowerWindow.Seconds() && w <= maxPowerWindow.Seconds()) {
		// Checked before it becomes a duration, where 1e-300 s is 0: not
		// read, which is not what was asked.
		return ProfileSpec{}, powerWindowError(w)
	}
	s := ProfileSpec{Sweep: bench.Sweep{Min: r.MinBytes, Max: r.MaxBytes, Factor: r.Factor},
		Iters: r.Iters, MinIters: r.MinIters, Warmup: r.Warmup, Check: r.Check, Budget: r.Budget,
		NoOverlap: r.NoOverlap, OverlapGEMMs: r.OverlapGEMMs, OverlapBytes: r.OverlapBytes,
		OverlapTarget: duration(r.OverlapTarget), PowerWindow: duration(r.PowerWindow), Args: args}
	routed := false
	for _, name := range strings.Split(r.Colls, ",") {
		c, err := bench.LookupCollective(strings.TrimSpace(name))
		if err != nil {
			return s, Usagef("{Colls}: %v", err)
		}
		if c.Traffic != nil && r.Routing.MoE != "" {
			if c, err = r.Routing.Apply(c, r.Iters); err != nil {
				return s, err
			}
			routed = true
		}
		s.Colls = append(s.Colls, c)
	}
	if r.Routing.MoE != "" && !routed {
		return s, Usagef("{MoE} shapes alltoallv's traffic: add alltoallv to {Colls}")
	}
	var err error
	if s.Type, err = numeric.ParseDataType(r.DType); err != nil {
		return s, Usagef("{DataType}: %v", err)
	}
	if s.RedOp, err = numeric.ParseRedOp(r.Op); err != nil {
		return s, Usagef("{Op}: %v", err)
	}
	if r.GroupSizes != "" {
		for _, g := range strings.Split(r.GroupSizes, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(g))
			if err != nil {
				return s, Usagef("{GroupSizes}: %q is not a group size of 2 or more that divides the ranks", g)
			}
			s.Groups = append(s.Groups, n)
		}
	}
	for _, l := range strings.Split(r.Layouts, ",") {
		s.Layout = append(s.Layout, strings.TrimSpace(l))
	}
	return s, nil
}
