package report

import (
	"encoding/csv"
	"io"
	"strconv"

	"github.com/collbench/collbench/document"
)

// CSVHeader names the columns of WriteCSV: one line per row and placement,
// with the per-iteration statistics (µs) of that placement.
var CSVHeader = []string{"collective", "size", "count", "type", "redop", "root", "placement",
	"time_us", "algbw_gbps", "busbw_gbps", "nwrong",
	"iters", "min_us", "p50_us", "p95_us", "p99_us", "max_us", "avg_us", "stdev_us"}

// WriteCSV writes the results of a run as CSV with a header line. nwrong is
// empty for placements that were not checked.
func WriteCSV(w io.Writer, d *document.Run) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVHeader); err != nil {
		return err
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
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
			if err := cw.Write(rec); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}
