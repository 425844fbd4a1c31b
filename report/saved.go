package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/document"
)

// InfoOf is the preamble a saved run's table is printed with: the
// record's settings, notes and devices.
func InfoOf(d *document.Run) Info {
	c := d.Config
	in := Info{Version: Printable(d.Collbench), Backend: Printable(d.Backend), TestName: Printable(d.Test), NThreads: c.NThreads,
		NGPUs: c.NGPUs, Notes: printables(d.Notes),
		MinBytes: c.MinBytes, MaxBytes: c.MaxBytes, Warmup: c.Warmup, Iters: c.Iters, Agg: c.Agg, Check: c.Validation, Bitwise: c.BitwiseRepeats,
		Graph: c.Graph, Blocking: bench.Blocking(c.BlockMode), CPUTime: c.CPUTime, Ranks: c.GroupSize, Unalign: c.Unalign}
	if c.StepFactor != nil {
		in.StepFactor = *c.StepFactor
	}
	if c.StepBytes != nil {
		in.StepBytes = *c.StepBytes
	}
	if coll, err := bench.LookupCollective(d.Collective); err == nil {
		in.Coll = coll
	}
	for _, r := range c.Devices {
		dev := bench.Device{Rank: r.Rank, Group: r.Group, GroupRank: r.GroupRank, PID: r.PID, Hostname: Printable(r.Hostname), Ordinal: r.Device,
			Name: Printable(r.Info)}
		fmt.Sscanf(r.BusID, "%x:%x:%x", &dev.BusID[0], &dev.BusID[1], &dev.BusID[2])
		in.Devices = append(in.Devices, dev)
	}
	return in
}

// TableOf is the table of a run record, its preamble the record's
// settings, notes and devices (InfoOf). The live table and a saved run's
// are both this one: the live one is handed each result as it is
// measured, and closed with the finished record.
func TableOf(w io.Writer, d *document.Run) *Table {
	return &Table{W: w, Info: InfoOf(d)}
}

// Result writes one result row of the record.
func (t *Table) Result(r document.Result) error {
	row, err := r.Row()
	if err != nil {
		return err
	}
	t.Row(row)
	return nil
}

// End closes the table with the finished record: the -M line, the
// footer, the judgement and the spread across processes. A record that
// ended in an error has no footer, as nccl-tests prints none.
func (t *Table) End(d *document.Run) error {
	if len(d.Errors) > 0 {
		return nil
	}
	rows, err := rowsOf(d)
	if err != nil {
		return err
	}
	if d.Memory != nil {
		use := bench.MemoryUse(*d.Memory)
		t.MemoryUse = &use
	}
	if d.Judgement != nil {
		t.Judgement = Printable(d.Judgement.Summary)
	}
	t.Footer(d.Summary())
	t.Spread(rows, ProcLabels(d.Config.NProcs, max(1, d.Config.NThreads)*d.Config.NGPUs))
	return nil
}

// rowsOf is a record's results as the engine's rows.
func rowsOf(d *document.Run) ([]bench.Row, error) {
	rows := make([]bench.Row, len(d.Results))
	for i, r := range d.Results {
		row, err := r.Row()
		if err != nil {
			return nil, err
		}
		rows[i] = row
	}
	return rows, nil
}

// SavedTable prints a saved run as the nccl-tests table its run printed
// (with the judge columns where judgeColumns says the run showed them):
// the same preamble, data rows, footer, judgement and spread across
// processes, byte for byte, being the same printer (what the record does
// not hold, -S's timestamps and an uneven all-to-all's per-rank summary
// lines, is left out). A record it cannot read prints nothing.
func SavedTable(w io.Writer, d *document.Run, judgeColumns bool) error {
	if _, err := rowsOf(d); err != nil {
		return err
	}
	t := TableOf(w, d)
	if d.Judgement != nil && judgeColumns {
		t.Extra = SavedJudgeColumns(d.Judgement)
	}
	t.Preamble()
	for _, r := range d.Results {
		if err := t.Result(r); err != nil {
			return err
		}
	}
	return t.End(d)
}

// Printable is text from a document as a terminal may be given it: every
// control character (an escape sequence's start, a new line that would
// fake a line of output) written as Go writes it in a quoted string. A
// document collbench wrote holds none; a document is still input.
func Printable(s string) string {
	if !strings.ContainsFunc(s, unicode.IsControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unicode.IsControl(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func printables(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = Printable(s)
	}
	return out
}
