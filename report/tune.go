package report

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/collbench/collbench/document"
)

// Tune prints a tuning: the arms with their trials, the search's verdict
// per size, the bands, the proof per size and per band, and the file's
// rows and notes.
func Tune(w io.Writer, rec *document.TuneRun) {
	nccl := ""
	if rec.NCCLVersion != "" {
		nccl = ", NCCL " + rec.NCCLVersion
	}
	fmt.Fprintf(w, "# collbench tune: %s; %s backend%s, %d rank(s) on %d node(s)\n", strings.Join(rec.Command, " "), rec.Backend, nccl,
		rec.Ranks, rec.Nodes)
	for _, a := range rec.Arms {
		line := fmt.Sprintf("# arm %s: %s", a.Letter, a.Label)
		switch {
		case a.Refused != "":
			line += "; refused: " + a.Refused
		case a.SameAs != "":
			line += "; the same choice as arm " + a.SameAs + " at every size: not measured"
		case a.Failed != "":
			line += "; " + a.Failed
		}
		fmt.Fprintln(w, line)
	}
	if len(rec.Sizes) > 0 {
		tuneSearch(w, rec)
	}
	tuneBands(w, rec)
	if p := rec.Proof; p != nil {
		tuneProof(w, rec, p)
	}
	fmt.Fprintf(w, "# the file: %d row(s)\n", len(rec.Rows))
	for _, r := range rec.Rows {
		fmt.Fprintf(w, "#   %s,%d,%d,%s,%s,%d,%d,%d,%d,%d  %s\n", r.Collective, r.MinBytes, r.MaxBytes, r.Algorithm, r.Protocol, r.Channels,
			r.Nodes, r.Ranks, r.PipeOps, r.RegBuff, r.Why)
	}
	for _, n := range rec.Notes {
		fmt.Fprintf(w, "# note: %s\n", n)
	}
	for _, e := range rec.Errors {
		fmt.Fprintf(w, "# error: %s\n", e)
	}
}

// tuneSearch is the search's table: per size, the library's own choice
// and time, and the best setting significantly faster with its ratio.
func tuneSearch(w io.Writer, rec *document.TuneRun) {
	tests := 0
	for _, s := range rec.Sizes {
		for _, f := range s.Arms {
			if f.P != nil {
				tests++
			}
		}
	}
	fmt.Fprintf(w, "# search: %d rounds; each setting's median of the rounds against the library's own (arm A); p: rank-sum, Benjamini–Hochberg-adjusted over %d tests; written where faster beyond %g %% at p < %g\n",
		rec.Rounds, tests, rec.Threshold*100, rec.Alpha)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "size(B)\town choice\town(us)\tbest\tits choice\tits(us)\tratio\tp\tverdict\t")
	for _, s := range rec.Sizes {
		own := choiceAt(rec.Arms[0].Choices, s.Size)
		ownUS := 0.0
		var best *document.ABFigure
		for i := range s.Arms {
			f := &s.Arms[i]
			if f.Arm == 0 {
				ownUS = f.Median
				continue
			}
			if best == nil || f.Median < best.Median {
				best = f
			}
		}
		if s.Winner >= 0 {
			for i := range s.Arms {
				if s.Arms[i].Arm == s.Winner {
					best = &s.Arms[i]
				}
			}
		}
		line := fmt.Sprintf("%d\t%s\t%.2f\t", s.Size, own, ownUS)
		if best == nil {
			line += "-\t-\t-\t-\t-\tno setting ran\t"
		} else {
			p := "-"
			if best.PAdjusted != nil {
				p = fmt.Sprintf("%.3g", *best.PAdjusted)
			}
			verdict := best.Verdict
			if s.Winner < 0 && verdict == "faster" {
				verdict = "not written"
			}
			line += fmt.Sprintf("%s\t%s\t%.2f\t%.3f\t%s\t%s\t", rec.Arms[best.Arm].Letter, choiceAt(rec.Arms[best.Arm].Choices, s.Size),
				best.Median, best.Ratio, p, verdict)
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
	for _, s := range rec.Sizes {
		if s.Note != "" {
			fmt.Fprintf(w, "# %d B: %s\n", s.Size, s.Note)
		}
	}
}

// tuneBands lists the bands the search made, and what became of each.
func tuneBands(w io.Writer, rec *document.TuneRun) {
	for _, b := range rec.Bands {
		if b.Own {
			continue
		}
		line := fmt.Sprintf("# band %s: %s/%s/%dch, %.3f× the library's own time in the search", bytesRange(b.From, b.To),
			b.Choice.Algorithm, b.Choice.Protocol, b.Choice.Channels, b.Predicted)
		if b.Realised != nil {
			line += fmt.Sprintf(", %.3f× in the proof", *b.Realised)
		}
		switch {
		case b.Dropped != "":
			line += "; taken out: " + b.Dropped
		case b.Held != nil && *b.Held:
			line += "; held"
		case b.Held == nil:
			line += "; not proven"
		}
		fmt.Fprintln(w, line)
	}
}

// tuneProof is the proof's table: per size, the library's own time and
// the time steered by the file, predicted and realised ratios.
func tuneProof(w io.Writer, rec *document.TuneRun, p *document.TuneProof) {
	fmt.Fprintf(w, "# proof: %d rounds, the library's own choice against it steered by the file (%s); p: rank-sum, Holm-adjusted over %d sizes\n",
		p.Rounds, strings.Join(p.Env, " "), len(p.Sizes))
	if p.Failed != "" {
		fmt.Fprintf(w, "# proof failed: %s\n", p.Failed)
	}
	if len(p.Sizes) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "size(B)\town(us)\ttuned(us)\tpredicted\trealised\tp\tverdict\ttuned choice\t")
		for _, s := range p.Sizes {
			pv := "-"
			if s.PAdjusted != nil {
				pv = fmt.Sprintf("%.3g", *s.PAdjusted)
			}
			fmt.Fprintf(tw, "%d\t%.2f\t%.2f\t%.3f\t%.3f\t%s\t%s\t%s\t\n", s.Size, s.Default, s.Tuned, s.Predicted, s.Ratio, pv, s.Verdict,
				choiceAt(p.Choices, s.Size))
		}
		tw.Flush()
	}
	for _, m := range p.Mismatches {
		fmt.Fprintf(w, "# not as the file says: %s\n", m)
	}
}

// choiceAt is the logged choice at size, "-" when none was logged.
func choiceAt(cs []document.TuneLogged, size int64) string {
	for _, c := range cs {
		if c.Size == size {
			return fmt.Sprintf("%s/%s/%dch", c.Algorithm, c.Protocol, c.Channels)
		}
	}
	return "-"
}

// bytesRange writes an inclusive range of bytes, 2^64−1 as "…".
func bytesRange(from, to uint64) string {
	if to == math.MaxUint64 {
		return fmt.Sprintf("%d B and up", from)
	}
	return fmt.Sprintf("%d–%d B", from, to)
}
