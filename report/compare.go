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
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", c.Key, c.Size, fixed(c.BaseTime), fixed(c.NewTime),
			change(c.TimeChange), fixed(c.BaseBW), fixed(c.NewBW), change(c.BWChange), p, c.Verdict)
	}
	tw.Flush()
	fmt.Fprintf(w, "# %d sizes compared; %d regression(s) beyond %.1f%% at p < %g (Mann-Whitney U on per-iteration times; ~ = within noise)\n",
		len(cs), regressions, o.Threshold*100, o.Alpha)
	return regressions
}

// fixed is a figure with two decimals, or in %g beyond a billion (a
// figure from a document can be anything up to 1e308, which %.2f spells
// in 309 digits); "-" when not finite.
func fixed(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "-"
	case math.Abs(v) >= 1e9:
		return fmt.Sprintf("%.3g", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// change is a relative change in percent; "-" when it has none (a base
// of zero).
func change(v float64) string {
	pct := v * 100
	if math.IsNaN(pct) || math.IsInf(pct, 0) {
		return "-"
	}
	if math.Abs(pct) >= 1e9 {
		return fmt.Sprintf("%+.3g%%", pct)
	}
	return fmt.Sprintf("%+.1f%%", pct)
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
