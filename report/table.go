package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/collbench/collbench/bench"
)

// Info is what the preamble of a run says about it.
type Info struct {
	Version    string // collbench version
	Backend    string
	Notes      []string // extra comment lines, e.g. why a backend was chosen
	TestName   string   // nccl-tests binary name, e.g. "all_reduce_perf"
	NThreads   int
	NGPUs      int // ranks (devices) per process
	MinBytes   int64
	MaxBytes   int64
	StepFactor int64
	StepBytes  int64
	Warmup     int
	Iters      int
	Agg        int
	Check      int
	Graph      int
	Blocking   bench.Blocking
	CPUTime    bool
	Unalign    int // -u, in elements
	// Bitwise is -B's repeats: the table gains nccl-tests' #bitdiff
	// column after each #wrong, and a line under a row whose repeats
	// differed.
	Bitwise    int
	Timestamps bool // -S: each row ends with the time it was written
	// Now is the clock of the timestamps; nil is time.Now.
	Now     func() time.Time
	Devices []bench.Device
	// Coll is the collective measured; it names the redop column and
	// holds an uneven all-to-all's traffic. Nil prints the operator.
	Coll *bench.Collective
	// Ranks is the size of the measured communicator, for the per-rank
	// summary of an uneven all-to-all.
	Ranks int
	// RankSummary prints that summary before each row, as nccl-tests'
	// NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY does.
	RankSummary bool
}

// Table writes a run in nccl-tests' text layout, row by row as results
// arrive.
type Table struct {
	W    io.Writer
	Info Info
	// MemoryUse, when set, adds nccl-tests' -M line to the footer.
	MemoryUse *bench.MemoryUse
	// Judgement, when set (--judge), is the line under the footer's
	// average that judges the run.
	Judgement string
	// Extra, when set, is a set of columns after nccl-tests' own (an
	// opt-in set such as JudgeColumns): a table without it is
	// nccl-tests' byte for byte.
	Extra *Columns
	// estimates are the rows that carried the backend's own estimate
	// (--nccl-estimate), for the block under the footer.
	estimates []bench.Row
}

// Preamble writes the comment block and column headers.
func (t *Table) Preamble() {
	t.head()
	t.columns()
}

// head writes the comment block: the run's settings and its devices.
func (t *Table) head() {
	in := t.Info
	p := func(format string, a ...any) { fmt.Fprintf(t.W, format, a...) }
	p("# collbench version %s backend=%s\n", in.Version, in.Backend)
	p("# Collective test starting: %s\n", in.TestName)
	step, kind := in.StepBytes, "bytes"
	if in.StepFactor > 1 {
		step, kind = in.StepFactor, "factor"
	}
	p("# nThread %d nGpus %d minBytes %d maxBytes %d step: %d(%s) warmup iters: %d iters: %d agg iters: %d validation: %d graph: %d unalign: %d\n",
		in.NThreads, in.NGPUs, in.MinBytes, in.MaxBytes, step, kind, in.Warmup, in.Iters, in.Agg, in.Check, in.Graph, in.Unalign)
	switch in.Blocking {
	case bench.SyncBarrierPerCall:
		p("# Blocking Enabled: wait and barrier after each inner iteration (-m) \n")
	case bench.SyncPerCall:
		p("# Blocking Enabled: wait after each inner iteration (-m), no barrier \n")
	case bench.SyncPerCallBarrierPerIter:
		p("# Blocking Enabled: wait and barrier after each outer iteration (-n); time excludes barrier \n")
	}
	if in.Bitwise > 0 {
		p("# Bitwise Repeatability: %d comparisons after one reference run \n", in.Bitwise)
	}
	for _, n := range in.Notes {
		p("# %s\n", n)
	}
	p("#\n")
	p("# Using devices\n")
	for _, d := range in.Devices {
		p("#  Rank %2d Group %2d Pid %6d on %10s device %2d [%04x:%02x:%02x] %s\n",
			d.Rank, d.Group, d.PID, d.Hostname, d.Ordinal, d.BusID[0], d.BusID[1], d.BusID[2], d.Name)
	}
}

// columns writes the nccl-tests table's column headers.
func (t *Table) columns() {
	in := t.Info
	p := func(format string, a ...any) { fmt.Fprintf(t.W, format, a...) }
	timeCol := "time"
	if in.CPUTime {
		timeCol = "cputime"
	}
	// nccl-tests pads the last header cell to a timestamp's 19
	// characters with -S, and to nothing otherwise.
	stampPad, stampLabel, stampFormat := 0, "", ""
	if in.Timestamps {
		stampPad, stampLabel, stampFormat = 19, "timestamp", "%Y-%m-%d %H:%M:%S"
	}
	// Added columns start where they start in a row: after the 118
	// characters of nccl-tests' cells and the timestamp's 21, while the
	// header lines end at 116 and 119 plus the timestamp's pad.
	x, rowEnd := t.Extra, 118
	if in.Timestamps {
		rowEnd += 21
	}
	p("#\n")
	if in.Bitwise > 0 {
		// nccl-tests' -B layout: a #bitdiff cell of 8 after each #wrong.
		rowEnd += 20
		p("# %10s  %12s  %8s  %6s  %6s               out-of-place + bitwise                           in-place + bitwise          %s\n", "", "", "", "", "",
			x.title(144, rowEnd))
		p("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %8s  %7s  %6s  %6s  %6s  %8s %*s%s\n", "size", "count", "type", "redop", "root",
			timeCol, "algbw", "busbw", "#wrong", "#bitdiff", timeCol, "algbw", "busbw", "#wrong", "#bitdiff", stampPad, stampLabel,
			x.cellsAt(x.heads(), 139+stampPad, rowEnd))
		p("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %8s  %7s  %6s  %6s  %6s  %8s %*s%s\n", "(B)", "(elements)", "", "", "",
			"(us)", "(GB/s)", "(GB/s)", "", "", "(us)", "(GB/s)", "(GB/s)", "", "", stampPad, stampFormat, x.cellsAt(x.units(), 139+stampPad, rowEnd))
		return
	}
	p("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          %s\n", "", "", "", "", "",
		x.title(116, rowEnd))
	p("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s%s\n", "size", "count", "type", "redop", "root",
		timeCol, "algbw", "busbw", "#wrong", timeCol, "algbw", "busbw", "#wrong", stampPad, stampLabel, x.cellsAt(x.heads(), 119+stampPad, rowEnd))
	p("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s%s\n", "(B)", "(elements)", "", "", "",
		"(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "", stampPad, stampFormat, x.cellsAt(x.units(), 119+stampPad, rowEnd))
}

// Row writes one result line.
func (t *Table) Row(r bench.Row) {
	if r.OutOfPlace.Estimate > 0 {
		t.estimates = append(t.estimates, r)
	}
	op := r.Op.String()
	if c := t.Info.Coll; c != nil {
		op = c.OpName(r.Op)
		if t.Info.RankSummary && c.Traffic != nil {
			t.rankSummary(c.Traffic, r)
		}
	}
	fmt.Fprintf(t.W, "%12d  %12d  %8s  %6s  %6s", r.Size, r.Count, r.Type, op, fmt.Sprintf("%6d", r.Root))
	for _, p := range []bench.Placement{r.OutOfPlace, r.InPlace} {
		fmt.Fprintf(t.W, "  %7s  %6s  %6s", FloatStr(p.Time, 7), FloatStr(p.AlgBW, 6), FloatStr(p.BusBW, 6))
		if p.Checked {
			fmt.Fprintf(t.W, "  %6s", CFormatG(float64(p.Wrong), 6))
		} else {
			fmt.Fprint(t.W, "    N/A")
		}
		if t.Info.Bitwise > 0 {
			var bits int64
			if p.Bitwise != nil {
				bits = p.Bitwise.Bits
			}
			fmt.Fprintf(t.W, "  %s", CFormatG(float64(bits), 8))
		}
	}
	if t.Info.Timestamps {
		now := time.Now
		if t.Info.Now != nil {
			now = t.Info.Now
		}
		fmt.Fprintf(t.W, "%21s", now().Format("2006-01-02 15:04:05"))
	}
	if t.Extra != nil {
		fmt.Fprint(t.W, t.Extra.cells(t.Extra.Cells(r)))
	}
	fmt.Fprint(t.W, "\n")
	for _, m := range []struct {
		place string
		b     *bench.Bitwise
	}{{"out-of-place", r.OutOfPlace.Bitwise}, {"in-place", r.InPlace.Bitwise}} {
		if b := m.b; !b.Repeated() {
			fmt.Fprintf(t.W, "# Bitwise mismatch (%s): first repeat %d, rank %d, element %d, bit %d; %d elements and %d bits differ\n",
				m.place, b.FirstRepeat, b.FirstRank, b.FirstElement, b.FirstBit, b.Elements, b.Bits)
		}
	}
}

// Footer writes the summary lines that close the table.
func (t *Table) Footer(s bench.Summary) {
	status := "OK"
	if s.ErrorCases > 0 {
		status = "FAILED"
	}
	fmt.Fprintf(t.W, "# %-20s : %d %s\n", "Out of bounds values", s.ErrorCases, status)
	if t.Info.Bitwise > 0 {
		status = "OK"
		if s.BitwiseCases > 0 {
			status = "FAILED"
		}
		fmt.Fprintf(t.W, "# %-20s : %d %s\n", "Bitwise mismatches", s.BitwiseCases, status)
	}
	verdict := "" // nccl-tests writes "%g %s": a trailing space when unchecked
	if s.MinBusBW > 0 {
		verdict = "FAILED"
		if s.BandwidthOK() {
			verdict = "OK"
		}
	}
	fmt.Fprintf(t.W, "# %-20s : %s %s\n", "Avg bus bandwidth", CFormatG(s.AvgBusBW, 0), verdict)
	t.estimateBlock()
	if t.Judgement != "" {
		fmt.Fprintf(t.W, "# %-20s : %s\n", "Judgement", t.Judgement)
	}
	fmt.Fprintf(t.W, "#\n")
	fmt.Fprintf(t.W, "# Collective test concluded: %s\n", t.Info.TestName)
	if t.MemoryUse != nil {
		t.Memory(*t.MemoryUse)
	}
	fmt.Fprintf(t.W, "#\n")
	fmt.Fprintf(t.W, "\n")
}

// FloatStr renders v right-aligned in width characters with as many
// decimals as fit: %.2f, then %.1f, then %.0f, then exponent notation
// (nccl-tests' getFloatStr).
func FloatStr(v float64, width int) string {
	for _, prec := range []int{2, 1, 0} {
		if s := fmt.Sprintf("%*.*f", width, prec, v); len(s) <= width {
			return s
		}
	}
	prec := 1
	if width < 7 {
		prec = 0
	}
	s := CFormatE(v, width, prec)
	if len(s) > width { // C's snprintf truncates to the buffer
		s = s[:width]
	}
	return s
}

// CFormatE is C's "%*.*e": Go writes at least two exponent digits as C does.
func CFormatE(v float64, width, prec int) string {
	return fmt.Sprintf("%*.*e", width, prec, v)
}

// CFormatG is C's "%*g" (six significant digits, trailing zeros trimmed,
// exponent form outside 1e-4..1e6).
func CFormatG(v float64, width int) string {
	s := strconv.FormatFloat(v, 'g', 6, 64)
	if i := strings.IndexAny(s, "e"); i >= 0 {
		mant, exp := s[:i], s[i+1:]
		sign := exp[0]
		digits := exp[1:]
		if len(digits) < 2 {
			digits = "0" + digits
		}
		s = mant + "e" + string(sign) + digits
	}
	if len(s) < width {
		s = strings.Repeat(" ", width-len(s)) + s
	}
	return s
}
