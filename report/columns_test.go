package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/numeric"
	"github.com/collbench/collbench/internal/golden"
	"github.com/collbench/collbench/judge"
)

// judgedRows are an 8×H100 all-reduce's out-of-place figures at a size
// no reference covers, at one a reference finds normal and one it finds
// low; two carry NCCL's estimate.
func judgedRows() []bench.Row {
	row := func(size int64, us, busbw, estimate float64) bench.Row {
		p := bench.Placement{Time: us, AlgBW: busbw / 1.75, BusBW: busbw, Checked: true, Estimate: estimate}
		return bench.Row{Size: size, Count: size / 4, Type: numeric.Float32, Op: numeric.Sum, Root: -1, Iters: 20, OutOfPlace: p, InPlace: p}
	}
	return []bench.Row{row(1<<20, 25.1, 73.1, 20.9), row(8<<30, 40636, 370, 38700), row(16<<30, 117000, 257, 0)}
}

func h100Judger() *judge.Judger {
	limit := judge.Limit{GBps: 450, What: "NVLink4 ×18", From: "NVML: 18 active links on sm_90"}
	sys := judge.System{GPU: "NVIDIA H100 80GB HBM3", Link: limit.What, GPUsPerNode: 8, Nodes: 1}
	return judge.NewJudger("allreduce", limit, "", []judge.Table{judge.Builtin()}, sys)
}

func judgeRow(r bench.Row) judge.Row {
	return judge.Row{Size: r.Size, BusBW: r.OutOfPlace.BusBW, Time: r.OutOfPlace.Time, Estimate: r.OutOfPlace.Estimate}
}

// --columns judge: the judgement's columns after nccl-tests' own.
func TestJudgeColumnsGolden(t *testing.T) {
	info, _, sum := sampleRun()
	var buf bytes.Buffer
	tb := &Table{W: &buf, Info: info, Extra: JudgeColumns(h100Judger(), judgeRow)}
	tb.Preamble()
	for _, r := range judgedRows() {
		tb.Row(r)
	}
	tb.Footer(sum)
	golden.Check(t, "judge_columns.golden", buf.Bytes())
}

// The added columns line up with their headers, with and without -S's
// timestamps, and nccl-tests' own columns stay where they were.
func TestAddedColumnsAlign(t *testing.T) {
	for _, stamps := range []bool{false, true} {
		info, rows, _ := sampleRun()
		info.Timestamps = stamps
		info.Now = func() time.Time { return time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC) }
		var plain, added bytes.Buffer
		(&Table{W: &plain, Info: info}).Preamble()
		(&Table{W: &plain, Info: info}).Row(rows[1])
		tb := &Table{W: &added, Info: info, Extra: JudgeColumns(h100Judger(), judgeRow)}
		tb.Preamble()
		tb.Row(rows[1])
		p, a := strings.Split(plain.String(), "\n"), strings.Split(added.String(), "\n")
		n := len(a) - 5 // the three header lines, the row, and the end
		head, units, row := a[n+1], a[n+2], a[n+3]
		if !strings.HasPrefix(row, p[n+3]) || !strings.HasPrefix(head, strings.TrimRight(p[n+1], " ")) {
			t.Errorf("stamps %v: nccl-tests' columns moved:\n%s\n%s", stamps, p[n+3], row)
		}
		for _, col := range []struct{ head, cell string }{{"wire", FloatStr(849.3/450*100, 6)}, {"est", "-"}} {
			he := strings.Index(head, " "+col.head+" ")
			if col.head == "est" {
				he = strings.LastIndex(head, " est")
			}
			end := he + 1 + len(col.head)
			if !strings.Contains(row[:min(end, len(row))], col.cell) || (end < len(row) && row[end] != ' ') {
				t.Errorf("stamps %v: column %q ends at %d; the row there reads %q\n%s\n%s\n%s", stamps, col.head, end, row[max(0, end-8):min(end, len(row))], head, units, row)
			}
		}
		if len(head) != len(row) || len(units) != len(row) {
			t.Errorf("stamps %v: header %d, units %d and row %d characters wide:\n%s\n%s\n%s", stamps, len(head), len(units), len(row), head, units, row)
		}
	}
}
