package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/collbench/collbench/compare"
	"github.com/collbench/collbench/document"
)

// ABArms prints the arms, one comment line each: its letter, what it
// changes, the NCCL it loaded, and why it stopped if it did.
func ABArms(w io.Writer, rec *document.ABRun) {
	fmt.Fprintf(w, "# collbench ab: %s; %d rounds, the arms in turn, their order rotated each round\n",
		strings.Join(rec.Command, " "), rec.Rounds)
	for _, a := range rec.Arms {
		line := fmt.Sprintf("# arm %s: %s", a.Letter, a.Label)
		if a.Label != a.Changes {
			line += " (" + a.Changes + ")"
		}
		switch {
		case a.NCCLVersion != "":
			line += "; NCCL " + a.NCCLVersion + " (" + a.NCCLPath + ")"
		case a.NCCLError != "":
			line += "; no NCCL found"
		}
		fmt.Fprintln(w, line)
	}
}

// describeCorrection says how the p column was adjusted, and over how
// many tests.
func describeCorrection(rec *document.ABRun) string {
	tests := 0
	for _, r := range rec.Rows {
		for _, f := range r.Arms {
			if f.P != nil {
				tests++
			}
		}
	}
	return compare.Correction(rec.Correction).Describe(tests)
}

// ABFailures prints each arm that stopped, one line each, and why the
// rounds ended early if they did.
func ABFailures(w io.Writer, rec *document.ABRun) {
	defer func() {
		if rec.Stopped != "" {
			fmt.Fprintf(w, "# %s\n", rec.Stopped)
		}
	}()
	for _, a := range rec.Arms {
		if a.Failed == "" {
			continue
		}
		ran := ""
		if a.FailedRound > 1 {
			ran = fmt.Sprintf(" (its %d round(s) before are kept in the JSON, not judged)", a.FailedRound-1)
		}
		fmt.Fprintf(w, "# arm %s %s%s\n", a.Letter, a.Failed, ran)
	}
}

// ABTable prints every row judged: per size and arm, the median of the
// rounds with its interval, the ratio to the base arm, the p-value and the
// verdict; then the best arm per size band and the count of slower rows.
func ABTable(w io.Writer, rec *document.ABRun) {
	names := map[string]bool{}
	for _, r := range rec.Rows {
		names[r.Name] = true
	}
	named := len(names) > 1
	if len(names) == 1 {
		for n := range names {
			fmt.Fprintf(w, "# %s, out-of-place time: each arm's median of the rounds (µs) and the interval of that median;\n", n)
		}
	} else {
		fmt.Fprintln(w, "# out-of-place time: each arm's median of the rounds (µs) and the interval of that median;")
	}
	base := "no arm"
	if rec.Base >= 0 && rec.Base < len(rec.Arms) {
		base = "arm " + rec.Arms[rec.Base].Letter
	}
	if rec.Base > 0 {
		fmt.Fprintf(w, "# the base is %s, the first arm that ran\n", base)
	}
	fmt.Fprintf(w, "# ratio to %s's median; p: rank-sum over the rounds against %s, %s; verdict beyond %g %% at p < %g\n",
		base, base, describeCorrection(rec), rec.Threshold*100, rec.Alpha)
	if len(rec.Rows) == 0 {
		fmt.Fprintln(w, "# no row to judge: no arm finished a round")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "size(B)\tarm\tmedian(us)\tinterval\tlevel\tbusbw\tratio\tp\tverdict\t"
	if named {
		head = "row\t" + head
	}
	fmt.Fprintln(tw, head)
	for _, r := range rec.Rows {
		for _, f := range r.Arms {
			p := "-"
			switch {
			case f.PAdjusted != nil:
				p = fmt.Sprintf("%.3g", *f.PAdjusted)
			case f.P != nil:
				p = fmt.Sprintf("%.3g", *f.P)
			}
			ratio, verdict := "-", f.Verdict
			if f.Ratio > 0 {
				ratio = fmt.Sprintf("%.3f", f.Ratio)
			}
			if verdict == "" {
				verdict = "no base"
			}
			line := fmt.Sprintf("%d\t%s\t%.2f\t%.2f–%.2f\t%.0f%%\t%.2f\t%s\t%s\t%s\t", r.Size, rec.Arms[f.Arm].Letter, f.Median,
				f.Low, f.High, f.Level*100, f.BusBW, ratio, p, verdict)
			if named {
				line = r.Name + "\t" + line
			}
			fmt.Fprintln(tw, line)
		}
	}
	tw.Flush()
	for _, b := range rec.Bands {
		if b.Best < 0 {
			continue
		}
		best := rec.Arms[b.Best]
		fmt.Fprintf(w, "# best %s: arm %s (%s), %.3f× %s's time (geometric mean over %d size(s)); significantly faster at %d\n",
			b.Name, best.Letter, best.Label, b.Ratio, base, b.Rows, b.Faster)
	}
	fmt.Fprintf(w, "# %d row(s) slower than %s beyond %g %% at p < %g\n", rec.Slower, base, rec.Threshold*100, rec.Alpha)
}
