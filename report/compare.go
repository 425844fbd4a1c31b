package report

import (
	"fmt"
	"io"
	"math"
	"text/tabwriter"

	"github.com/collbench/collbench/compare"
)

// CompareTable prints the comparison; it returns the number of
// regressions.
func CompareTable(w io.Writer, cs []compare.Comparison, o compare.Options) int {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "collective\tsize(B)\tbase(us)\tnew(us)\tΔtime\tbase busbw\tnew busbw\tΔbusbw\tp\tverdict\t")
	regressions := 0
	for _, c := range cs {
		p := "-"
		if !math.IsNaN(c.P) {
			p = fmt.Sprintf("%.3g", c.P)
		}
		if c.Verdict == compare.Regression {
			regressions++
		}
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.2f\t%+.1f%%\t%.2f\t%.2f\t%+.1f%%\t%s\t%s\t\n", c.Key, c.Size, c.BaseTime, c.NewTime,
			c.TimeChange*100, c.BaseBW, c.NewBW, c.BWChange*100, p, c.Verdict)
	}
	tw.Flush()
	fmt.Fprintf(w, "# %d sizes compared; %d regression(s) beyond %.1f%% at p < %g (Mann-Whitney U on per-iteration times; ~ = within noise)\n",
		len(cs), regressions, o.Threshold*100, o.Alpha)
	return regressions
}

// LeftOut says, one comment line each, the rows a comparison could not
// match.
func LeftOut(w io.Writer, left []string) {
	for _, l := range left {
		fmt.Fprintf(w, "# left out: %s\n", l)
	}
}

// Floor prints whether a run's average bus bandwidth avg is above floor
// (both GB/s) and reports whether it is.
func Floor(w io.Writer, avg, floor float64) bool {
	if avg < floor {
		fmt.Fprintf(w, "# FAILED: average bus bandwidth %.3f GB/s is below the floor of %.3f GB/s\n", avg, floor)
		return false
	}
	fmt.Fprintf(w, "# average bus bandwidth %.3f GB/s is above the floor of %.3f GB/s\n", avg, floor)
	return true
}
