package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/document"
)

// Audit prints an audit: every setting and whether it repeated, a line
// per comparison that found a difference (where first, how far apart),
// the count of checks by kind, the setting chosen, and the price of
// repeating measured against the library's own choice.
func Audit(w io.Writer, rec *document.AuditRun) {
	nccl := ""
	if rec.NCCLVersion != "" {
		nccl = ", NCCL " + rec.NCCLVersion
	}
	fmt.Fprintf(w, "# collbench audit: %s; %s backend%s, %d rank(s); %d call(s) per size and placement compared run to run\n",
		strings.Join(rec.Command, " "), rec.Backend, nccl, rec.Ranks, rec.Repeats)
	auditSettings(w, rec)
	auditDifferences(w, rec)
	auditCounts(w, rec)
	switch {
	case rec.Chosen == nil:
	case *rec.Chosen == 0:
		fmt.Fprintf(w, "# chosen: %s, which repeated in every check\n", rec.Settings[0].Label)
	default:
		fmt.Fprintf(w, "# chosen: %s, the fastest setting that repeated in every check, fresh processes included\n", rec.Settings[*rec.Chosen].Label)
	}
	if p := rec.Price; p != nil {
		fmt.Fprintf(w, "# price: %d rounds, the chosen setting (arm B) against the library's own choice (arm A), taking turns\n", p.Rounds)
		ABFailures(w, p)
		ABTable(w, p)
	}
	for _, n := range rec.Notes {
		fmt.Fprintf(w, "# note: %s\n", n)
	}
	for _, e := range rec.Errors {
		fmt.Fprintf(w, "# error: %s\n", e)
	}
}

// auditSettings lists the settings: what each sets, whether it repeated,
// and its first run's bus bandwidth.
func auditSettings(w io.Writer, rec *document.AuditRun) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	var sizes []string
	if len(rec.Settings) > 0 {
		for _, b := range rec.Settings[0].BusBW {
			sizes = append(sizes, bench.FormatSize(b.Size))
		}
	}
	fmt.Fprintf(tw, "# setting\trepeats\tbusbw(GB/s) at %s\tenvironment\n", strings.Join(sizes, " "))
	for _, s := range rec.Settings {
		verdict := "no"
		switch {
		case s.Refused != "":
			verdict = "refused: " + s.Refused
		case s.Repeats:
			verdict = "yes"
		}
		var bw []string
		for _, b := range s.BusBW {
			bw = append(bw, fmt.Sprintf("%.2f", b.BusBW))
		}
		env := strings.Join(s.Env, " ")
		if s.Default {
			env = "(the sweep as it is)"
		}
		fmt.Fprintf(tw, "#   %s\t%s\t%s\t%s\n", s.Label, verdict, strings.Join(bw, " "), env)
	}
	tw.Flush()
}

// auditDifferences prints, for every setting and kind of check that
// found a difference, how many of its cases differed and where the first
// of them (the smallest size, out of place first) first differed; the
// JSON holds every case.
func auditDifferences(w io.Writer, rec *document.AuditRun) {
	type group struct {
		first          *document.AuditCheck
		cases, differs int
		maxULPs        uint64
	}
	var order []string
	groups := map[string]*group{}
	for i := range rec.Checks {
		c := &rec.Checks[i]
		k := c.Kind + "\x00" + c.Setting + "\x00" + c.Against
		g, ok := groups[k]
		if !ok {
			g = &group{}
			groups[k] = g
			order = append(order, k)
		}
		g.cases++
		if c.Differs() {
			g.differs++
			g.maxULPs = max(g.maxULPs, c.MaxULPs)
			if g.first == nil {
				g.first = c
			}
		}
	}
	found := false
	for _, k := range order {
		found = found || groups[k].differs > 0
	}
	if !found {
		fmt.Fprintln(w, "# every check found the same bits")
		return
	}
	fmt.Fprintln(w, "# differences: the cases that differed, and the first of them: its size and placement, the call (the repeat, from 0), rank, element")
	fmt.Fprintln(w, "# and bit (from the least significant) where it first differed, and how far apart the values were there and at most, in steps of the type")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "kind\tsetting\tagainst\tcases\tsize(B)\tplace\tcall\trank\telement\tbit\tULPs\tmax ULPs\t")
	for _, k := range order {
		g := groups[k]
		if g.differs == 0 {
			continue
		}
		c := g.first
		against := c.Against
		if c.AgainstSize > 0 {
			against = "the next smaller size"
		}
		place := "out-of-place"
		if c.InPlace {
			place = "in-place"
		}
		first := "-\t-\t-\t-\t-"
		if f := c.First; f != nil {
			first = fmt.Sprintf("%d\t%d\t%d\t%d\t%d", f.Call, f.Rank, f.Element, f.Bit, f.ULPs)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d of %d\t%d\t%s\t%s\t%d\t\n", c.Kind, c.Setting, against, g.differs, g.cases, c.Size, place, first, g.maxULPs)
	}
	tw.Flush()
}

// auditCounts prints how many checks of each kind were made and how many
// differed.
func auditCounts(w io.Writer, rec *document.AuditRun) {
	kinds := []string{document.AuditRunToRun, document.AuditFresh, document.AuditSizes, document.AuditSettings}
	made, differ := map[string]int{}, map[string]int{}
	for _, c := range rec.Checks {
		made[c.Kind]++
		if c.Differs() {
			differ[c.Kind]++
		}
	}
	var parts []string
	for _, k := range kinds {
		if made[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d of %d", k, differ[k], made[k]))
		}
	}
	if len(parts) == 0 {
		parts = []string{"none made"}
	}
	fmt.Fprintf(w, "# checks that differed: %s\n", strings.Join(parts, ", "))
}
