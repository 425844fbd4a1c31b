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
	fmt.Fprintln(tw, "op\tranks\tlayout\tgroups\tsizes\talpha(us)\tbusbw∞(GB/s)\tn½(bytes)\tR²\tmax err\tmodel\t")
	for i := range p.Curves {
		c := &p.Curves[i]
		if c.Fit == nil {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%d\t-\t-\t-\t-\t-\t-\t\n", c.Op, c.Group.Size, c.Group.Layout, c.Group.Groups, len(c.Samples))
			continue
		}
		f := c.Fit
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%d\t%.2f\t%.2f\t%.4g\t%.4f\t%.1f%%\t%s\t\n", c.Op, c.Group.Size, c.Group.Layout,
			c.Group.Groups, len(c.Samples), f.Alpha, f.BusBWInf, f.NHalf, f.R2, f.MaxRel*100, f.Model)
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
