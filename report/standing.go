package report

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/collbench/collbench/compare"
	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/judge"
)

// Standings prints how each run stands against the wire and the
// published figures, as their judgements (--judge) say: each run's
// summary line, then a row per judged size. It returns the number of
// rows where the new run fell below a published figure the base run met.
func Standings(w io.Writer, base, next *document.Run, ss []compare.Standing) int {
	if len(ss) == 0 {
		return 0
	}
	for _, r := range []struct {
		name string
		doc  *document.Run
	}{{"base", base}, {"new", next}} {
		line := "not judged (run without {Judge})"
		if r.doc.Judgement != nil {
			line = r.doc.Judgement.Summary
		}
		fmt.Fprintf(w, "# judged %-4s: %s\n", r.name, line)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "row\tsize(B)\tbase wire\tnew wire\tbase ×ref\tnew ×ref\tbase\tnew\t")
	fell := 0
	for _, s := range ss {
		note := ""
		if s.Fell() {
			fell++
			note = "  fell below"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Key, s.Size, wire(s.Base), wire(s.New),
			refRatio(s.Base), refRatio(s.New), verdict(s.Base), verdict(s.New), note)
	}
	tw.Flush()
	fmt.Fprintf(w, "# %d judged size(s); the new run fell below a published figure the base met at %d\n", len(ss), fell)
	return fell
}

func wire(j *judge.RowJudgement) string {
	if j == nil || j.WireShare <= 0 {
		return "-"
	}
	return strconv.FormatFloat(j.WireShare*100, 'f', 1, 64) + "%"
}

func refRatio(j *judge.RowJudgement) string {
	if j == nil || j.Reference == nil {
		return "-"
	}
	return strconv.FormatFloat(j.RefRatio, 'f', 2, 64)
}

func verdict(j *judge.RowJudgement) string {
	if j == nil || j.Reference == nil {
		return "-"
	}
	return j.VerdictText()
}
