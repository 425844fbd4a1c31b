package report

import (
	"encoding/csv"
	"io"
	"slices"
	"strconv"

	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/judge"
)

// CSVHeader names the columns of WriteCSV: one line per row and placement,
// with the per-iteration statistics (µs) of that placement.
var CSVHeader = []string{"collective", "size", "count", "type", "redop", "root", "placement",
	"time_us", "algbw_gbps", "busbw_gbps", "nwrong",
	"iters", "min_us", "p50_us", "p95_us", "p99_us", "max_us", "avg_us", "stdev_us"}

// CSVJudgeHeader names the columns WriteCSV adds for a judged run (each
// out-of-place line's judgement; in-place lines leave them empty, as the
// table's judge columns judge out-of-place).
var CSVJudgeHeader = []string{"wire_share", "reference", "reference_ratio", "verdict", "estimate_ratio"}

// WriteCSV writes the results of a run as CSV with a header line. nwrong is
// empty for placements that were not checked. A judged run has the
// judgement's columns too.
func WriteCSV(w io.Writer, d *document.Run) error {
	cw := csv.NewWriter(w)
	header := CSVHeader
	if d.Judgement != nil {
		header = append(slices.Clone(CSVHeader), CSVJudgeHeader...)
	}
	if err := cw.Write(header); err != nil {
		return err
	}
	f := csvFloat
	for _, r := range d.Results {
		for _, pl := range []struct {
			name string
			m    document.Measure
			it   document.Stats
		}{{"out_of_place", r.OutOfPlace, r.OOPIter}, {"in_place", r.InPlace, r.IPIter}} {
			it := pl.it
			wrong := ""
			if pl.m.NWrong != nil {
				wrong = strconv.FormatInt(*pl.m.NWrong, 10)
			}
			rec := []string{d.Collective, strconv.FormatInt(r.Size, 10), strconv.FormatInt(r.Count, 10), r.Type, r.RedOp,
				strconv.Itoa(r.Root), pl.name, f(pl.m.Time), f(pl.m.AlgBW), f(pl.m.BusBW), wrong,
				strconv.Itoa(it.N), f(it.Min), f(it.P50), f(it.P95), f(it.P99), f(it.Max), f(it.Mean), f(it.Stdev)}
			if d.Judgement != nil {
				rec = append(rec, judgeCSV(d.Judgement, r.Size, pl.name == "out_of_place")...)
			}
			if err := cw.Write(rec); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// judgeCSV is one line's judgement columns: the size's, on an
// out-of-place line; empty otherwise.
func judgeCSV(j *judge.Judgement, size int64, outOfPlace bool) []string {
	cells := make([]string, len(CSVJudgeHeader))
	rj, ok := rowJudgement(j, size)
	if !outOfPlace || !ok {
		return cells
	}
	f := func(v float64) string {
		if v == 0 {
			return ""
		}
		return csvFloat(v)
	}
	cells[0] = f(rj.WireShare)
	if rj.Reference != nil {
		cells[1], cells[2], cells[3] = rj.Reference.ID, f(rj.RefRatio), rj.Verdict
	}
	cells[4] = f(rj.EstimateRatio)
	return cells
}

// rowJudgement is the judgement of size in j.
func rowJudgement(j *judge.Judgement, size int64) (judge.RowJudgement, bool) {
	for _, r := range j.Rows {
		if r.Size == size {
			return r, true
		}
	}
	return judge.RowJudgement{}, false
}

// csvFloat writes a figure to 12 significant digits, more than any
// measurement holds, so that arithmetic's last bits do not show
// (0.6910000000000001 is 0.691); the JSON keeps every bit.
func csvFloat(v float64) string { return strconv.FormatFloat(v, 'g', 12, 64) }
