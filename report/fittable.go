package report

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/collbench/collbench/document"
)

// FitTable sums a profile up for a person: one line per curve with its
// fit, then the overlap probes.
func FitTable(w io.Writer, p *document.Profile) {
	fmt.Fprintf(w, "# collbench profile: %d rank(s) on %d node(s), %s, backend %s\n", p.Meta.WorldSize, p.Meta.NumNodes, p.Suite.Type, p.Backend)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "op\tranks\tlayout\tgroups\tsizes\talpha(us)\talpha 95% CI\tbusbw∞(GB/s)\tbusbw∞ 95% CI\tn½(bytes)\tR²\tmax err\tmodel\t")
	for i := range p.Curves {
		c := &p.Curves[i]
		if c.Fit == nil {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%d\t-\t-\t-\t-\t-\t-\t-\t-\t\n", c.Op, c.Group.Size, c.Group.Layout, c.Group.Groups, len(c.Samples))
			continue
		}
		f := c.Fit
		alphaCI, busbwCI := intervals(c)
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%d\t%.2f\t%s\t%.2f\t%s\t%.4g\t%.4f\t%.1f%%\t%s\t\n", c.Op, c.Group.Size, c.Group.Layout,
			c.Group.Groups, len(c.Samples), f.Alpha, alphaCI, f.BusBWInf, busbwCI, f.NHalf, f.R2, f.MaxRel*100, f.Model)
	}
	tw.Flush()
	for i := range p.Curves {
		if c := &p.Curves[i]; c.Note != "" {
			fmt.Fprintf(w, "# %s: %s\n", c.Key(), c.Note)
		}
	}
	for _, o := range p.Overlap {
		fmt.Fprintf(w, "# overlap %s: %s of %d bytes next to %s: comm ×%.3f, compute ×%.3f, overlap_coe %.3f, processor_usage %.3f\n",
			o.Name, o.Collective, o.Size, o.Workload, o.CommSlowdown, o.ComputeSlowdown, o.OverlapCoe, o.ProcessorUsage)
	}
	for _, e := range p.Errors {
		fmt.Fprintf(w, "# error: %s\n", e)
	}
}

// intervals renders a fit's bootstrap intervals of α (µs) and of busbw∞
// (GB/s, from β's: the bus factor over each end), "-" where the profile
// has none; a β interval that reaches 0 leaves busbw∞ unbounded above.
func intervals(c *document.ProfileCurve) (alpha, busbw string) {
	f := c.Fit
	alpha, busbw = "-", "-"
	if f.AlphaCI != nil {
		alpha = fmt.Sprintf("%.2f–%.2f", f.AlphaCI[0], f.AlphaCI[1])
	}
	if f.BetaCI != nil {
		bw := func(beta float64) string {
			if beta <= 0 {
				return "∞"
			}
			return fmt.Sprintf("%.2f", c.BusFactor*1e-3/beta)
		}
		busbw = bw(f.BetaCI[1]) + "–" + bw(f.BetaCI[0])
	}
	return alpha, busbw
}
