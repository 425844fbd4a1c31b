package report

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/collbench/collbench/charge"
)

// ChargeTable prints, per call of a plan, each planner's charge ÷ the time
// collbench measured for it; a ratio beyond charge.Tolerance is marked *,
// a call a planner's files cannot time "-", and the reasons follow.
func ChargeTable(w io.Writer, rows []charge.Row) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "# what each planner charges per call ÷ what was measured (* beyond %.0f %%, - not timed)\n", charge.Tolerance*100)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "dim\tcollective\tgroup\tlayout\tbytes/call\tmeasured(us)\t")
	for _, c := range rows[0].Charges {
		fmt.Fprintf(tw, "%s\t", c.Planner)
	}
	fmt.Fprintln(tw)
	var why []string
	seen := map[string]bool{}
	off := 0
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%.0f\t%.3f\t", r.Dim, r.Coll, r.Group, r.Layout, r.Bytes, r.Us)
		for _, c := range r.Charges {
			fmt.Fprint(tw, ratioCell(c.Cannot == "", c.Ratio, c.Off))
			switch {
			case c.Cannot != "":
				if line := c.Planner + ": " + c.Cannot; !seen[line] {
					seen[line] = true
					why = append(why, line)
				}
			case c.Off:
				off++
			}
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprint(tw, "step\t\t\t\t\t\t")
	for _, s := range charge.Steps(rows) {
		fmt.Fprint(tw, ratioCell(s.Timed > 0, s.Ratio, s.Off))
	}
	fmt.Fprintln(tw)
	tw.Flush()
	fmt.Fprintf(w, "# step: each planner's charge for a step's calls ÷ what was measured for them, over the calls it times\n")
	fmt.Fprintf(w, "# %d charge(s) beyond %.0f %%\n", off, charge.Tolerance*100)
	for _, line := range why {
		fmt.Fprintf(w, "# - %s\n", line)
	}
}

// ratioCell is one cell of the table: the ratio, * when it is beyond the
// tolerance, - when the planner timed nothing.
func ratioCell(timed bool, ratio float64, off bool) string {
	switch {
	case !timed:
		return "-\t"
	case off:
		return fmt.Sprintf("%.4f*\t", ratio)
	}
	return fmt.Sprintf("%.4f\t", ratio)
}
