package bench

import (
	"context"
	"fmt"

	"github.com/collbench/collbench/bench/numeric"
)

// MoEPhase is one exchange of a mixture-of-experts layer, measured.
type MoEPhase struct {
	Name string // "dispatch" (tokens to their experts) or "combine" (back)
	// Row is the measurement as a sweep's row out of place: Size is the
	// busiest rank's bytes in the heaviest draw (the buffers' size), the
	// time is the mean over calls that each follow their own draw, and
	// the bandwidths are the busiest rank's bytes of each timed call,
	// averaged, over that time.
	Row Row
	// MeanBytes is what a rank sends in a call, on average; Busiest the
	// busiest rank's bytes (sent or received) averaged over the timed
	// calls; Imbalance their ratio, the mean of each call's.
	MeanBytes, Busiest float64
	Imbalance          float64
	Draws              int // distinct routing draws the timed calls cycle through
}

// MoE measures dispatch and then combine for routing r with draws routing
// draws, on the engine's communicators: each is an uneven all-to-all
// whose call k follows draw k mod draws, timed, checked and combined
// across processes as a sweep's size out of place.
func (e *Engine) MoE(ctx context.Context, r *Routing, t numeric.DataType, draws int) ([]MoEPhase, error) {
	if err := r.Check(e.CommRanks); err != nil {
		return nil, err
	}
	if draws < 1 {
		return nil, fmt.Errorf("draws must be at least 1 (got %d)", draws)
	}
	// Combine is dispatch reversed: one set of draws serves both.
	dispatch, err := r.Traffic(ctx, e.CommRanks, t.Size(), draws)
	if err != nil {
		return nil, err
	}
	var out []MoEPhase
	for i, traffic := range []*Traffic{dispatch, dispatch.Reversed()} {
		coll, err := Collectives[AllToAllV].WithTraffic(traffic)
		if err != nil {
			return nil, err
		}
		phase := *e
		phase.Opts.Coll = coll
		row, err := phase.Point(ctx, t, numeric.NoOp, -1, 0, PointPlan{})
		e.rep, e.scratch = phase.rep, phase.scratch
		if err != nil {
			return out, err
		}
		p := MoEPhase{Name: [...]string{"dispatch", "combine"}[i], Row: row, Draws: draws}
		calls := e.Opts.Iters * max(e.Opts.Agg, 1)
		for k := 0; k < calls; k++ {
			busiest, mean := traffic.load(k, e.CommRanks)
			p.Busiest += busiest
			p.MeanBytes += mean
			if mean > 0 {
				p.Imbalance += busiest / mean
			}
		}
		p.Busiest /= float64(calls)
		p.MeanBytes /= float64(calls)
		p.Imbalance /= float64(calls)
		if us := row.OutOfPlace.Time; us > 0 {
			p.Row.OutOfPlace.AlgBW = p.Busiest / 1e3 / us
			p.Row.OutOfPlace.BusBW = p.Row.OutOfPlace.AlgBW * coll.BusFactor(e.CommRanks)
		}
		out = append(out, p)
	}
	return out, nil
}

// load is call k's busiest rank's bytes (the larger of what it sends and
// receives) and the mean rank's.
func (t *Traffic) load(k, n int) (busiest, mean float64) {
	var most, all int64
	for r := 0; r < n; r++ {
		send, recv := t.RankBytesAt(k, r, n, 0)
		most = max(most, send, recv)
		all += send
	}
	return float64(most), float64(all) / float64(n)
}
