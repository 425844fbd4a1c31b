package judge

import (
	"fmt"
	"strings"

	"github.com/montanaflynn/stats"
)

// Verdicts of a bus bandwidth against the published figures that apply.
const (
	Normal = "normal" // within the published range, less 10 %, plus 15 %
	Low    = "low"    // below every figure by more than 10 %
	High   = "high"   // above every figure by more than 15 %: suspicious
)

// Bounds of a normal figure against the lowest and highest reference.
const (
	lowBound  = 0.90
	highBound = 1.15
)

// Row is one measured size.
type Row struct {
	Size     int64
	BusBW    float64 // GB/s
	Time     float64 // µs
	Estimate float64 // NCCL's estimate of the call, µs; 0 none
}

// RowJudgement is one size judged.
type RowJudgement struct {
	Size      int64      `json:"size"`
	WireShare float64    `json:"wire_share,omitempty"` // busbw ÷ the wire limit
	Reference *Reference `json:"reference,omitempty"`  // the figure judged against
	RefRatio  float64    `json:"reference_ratio,omitempty"`
	Verdict   string     `json:"verdict,omitempty"`
	// EstimateRatio is the measured time ÷ NCCL's estimate.
	EstimateRatio float64 `json:"estimate_ratio,omitempty"`
}

// VerdictText is the verdict as tables print it: "normal", or "LOW" and
// "HIGH" in capitals to stand out; "" without a verdict.
func (r RowJudgement) VerdictText() string {
	if r.Verdict == Normal {
		return r.Verdict
	}
	return strings.ToUpper(r.Verdict)
}

// Judgement is a run judged: the wire limit, each size, and the line
// that sums it up.
type Judgement struct {
	Limit *Limit         `json:"limit,omitempty"`
	Rows  []RowJudgement `json:"rows"`
	// Summary is the footer's line: the best size's share of the wire,
	// the verdict at the largest size a reference covers, the median
	// ratio to NCCL's estimate.
	Summary string `json:"summary"`
}

// Judger judges one collective's sizes on one system, a size at a time,
// so that a table can show each row's judgement as it is measured and
// the run's judgement can be put together at the end.
type Judger struct {
	collective string
	limit      *Limit // nil: no wire limit, for the reason in noLimit
	noLimit    string
	tables     []Table
	system     System
}

// NewJudger judges collective on system s: against limit (or, when
// noLimit says why there is none, not) and the references of tables that
// match.
func NewJudger(collective string, limit Limit, noLimit string, tables []Table, s System) *Judger {
	j := &Judger{collective: collective, noLimit: noLimit, tables: tables, system: s}
	if noLimit == "" {
		j.limit = &limit
	}
	return j
}

// Limit is the wire limit judged against; nil when there is none.
func (j *Judger) Limit() *Limit { return j.limit }

// NoLimit says why there is no wire limit; "" when there is one.
func (j *Judger) NoLimit() string { return j.noLimit }

// Row judges one size.
func (j *Judger) Row(r Row) RowJudgement {
	rj := RowJudgement{Size: r.Size}
	if j.limit != nil && j.limit.GBps > 0 && r.BusBW > 0 {
		rj.WireShare = r.BusBW / j.limit.GBps
	}
	if refs := Matches(j.tables, j.system, j.collective, r.Size); len(refs) > 0 && r.BusBW > 0 {
		ref, verdict := against(r.BusBW, refs)
		rj.Reference, rj.Verdict, rj.RefRatio = &ref, verdict, r.BusBW/ref.BusBW
	}
	if r.Estimate > 0 && r.Time > 0 {
		rj.EstimateRatio = r.Time / r.Estimate
	}
	return rj
}

// Judge judges a run's rows and sums them up in one line.
func (j *Judger) Judge(rows []Row) Judgement {
	out := Judgement{Limit: j.limit, Rows: []RowJudgement{}}
	var best, judged *RowJudgement
	var bestBW float64
	var ratios []float64
	for _, r := range rows {
		out.Rows = append(out.Rows, j.Row(r))
		last := &out.Rows[len(out.Rows)-1]
		if last.EstimateRatio > 0 {
			ratios = append(ratios, last.EstimateRatio)
		}
		if r.BusBW > bestBW {
			best, bestBW = last, r.BusBW
		}
		if last.Verdict != "" {
			judged = last
		}
	}
	out.Summary = summary(best, bestBW, judged, ratios, j.limit, j.noLimit)
	return out
}

// Judge judges a collective's rows on a system: against limit (or, when
// noLimit says why there is none, not) and the references that match
// (tables, system).
func Judge(collective string, rows []Row, limit Limit, noLimit string, tables []Table, s System) Judgement {
	return NewJudger(collective, limit, noLimit, tables, s).Judge(rows)
}

// against picks, among the references that apply, the one to judge by:
// below them all, the lowest; above them all, the highest; in between,
// the nearest.
func against(bw float64, refs []Reference) (Reference, string) {
	lo, hi := refs[0], refs[0]
	for _, r := range refs[1:] {
		if r.BusBW < lo.BusBW {
			lo = r
		}
		if r.BusBW > hi.BusBW {
			hi = r
		}
	}
	switch {
	case bw < lowBound*lo.BusBW:
		return lo, Low
	case bw > highBound*hi.BusBW:
		return hi, High
	}
	near := refs[0]
	for _, r := range refs[1:] {
		if abs(bw-r.BusBW) < abs(bw-near.BusBW) {
			near = r
		}
	}
	return near, Normal
}

func summary(best *RowJudgement, bestBW float64, judged *RowJudgement, ratios []float64, limit *Limit, noLimit string) string {
	var parts []string
	if best != nil && limit != nil && best.WireShare > 0 {
		parts = append(parts, fmt.Sprintf("peak %.4g GB/s at %d B is %.0f %% of %s", bestBW, best.Size, best.WireShare*100, limit))
	} else if limit == nil {
		parts = append(parts, "no wire limit ("+noLimit+")")
	}
	if judged != nil {
		r := judged.Reference
		v := judged.Verdict
		switch v {
		case Low:
			v = fmt.Sprintf("LOW (%.0f %% below)", (1-judged.RefRatio)*100)
		case High:
			v = fmt.Sprintf("HIGH (%.0f %% above: suspicious)", (judged.RefRatio-1)*100)
		}
		parts = append(parts, fmt.Sprintf("%s at %d B: %.2f× the published %.4g GB/s (%s; %s)", v, judged.Size, judged.RefRatio, r.BusBW, r.Conditions, r.Source))
	} else {
		parts = append(parts, "no published figure for this system and size")
	}
	if len(ratios) > 0 {
		parts = append(parts, fmt.Sprintf("%.2f× NCCL's estimate (median)", medianOf(ratios)))
	}
	out := parts[0]
	for _, p := range parts[1:] {
		out += "; " + p
	}
	return out
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

func medianOf(v []float64) float64 {
	m, _ := stats.Median(v)
	return m
}
