package report

import (
	"fmt"
	"strings"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/judge"
)

// Columns is a set of columns a table adds after nccl-tests' own, under
// a title of their own: tools that read nccl-tests' columns by position
// still find them where they were.
type Columns struct {
	Title string
	Head  []Column
	// Cells gives a row's cells, one per column.
	Cells func(bench.Row) []string
}

// Column is one added column's name and unit, and its width.
type Column struct {
	Name, Unit string
	Width      int
}

func (c *Columns) heads() []string { return c.each(func(h Column) string { return h.Name }) }
func (c *Columns) units() []string { return c.each(func(h Column) string { return h.Unit }) }

// each is one string per column; none without columns.
func (c *Columns) each(f func(Column) string) []string {
	if c == nil {
		return nil
	}
	out := make([]string, len(c.Head))
	for i, h := range c.Head {
		out[i] = f(h)
	}
	return out
}

// cells right-aligns each value in its column, two spaces apart.
func (c *Columns) cells(values []string) string {
	if c == nil {
		return ""
	}
	var b strings.Builder
	for i, h := range c.Head {
		v := ""
		if i < len(values) {
			v = values[i]
		}
		fmt.Fprintf(&b, "  %*s", h.Width, v)
	}
	return b.String()
}

// cellsAt is cells for a line that has reached column at, placed to
// begin at column want as they do in a row.
func (c *Columns) cellsAt(values []string, at, want int) string {
	out := c.cells(values)
	if out == "" {
		return ""
	}
	if at > want {
		return out[min(at-want, len(out)):]
	}
	return strings.Repeat(" ", want-at) + out
}

// title is the first header line's cell over the added columns, for a
// line that has reached column at.
func (c *Columns) title(at, want int) string {
	if c == nil {
		return ""
	}
	return c.cellsAt(nil, at, want)[:want-at+2] + c.Title
}

// JudgeColumns are the judgement's columns (--columns judge): the row's
// out-of-place bus bandwidth as a share of the wire, its ratio to the
// published figure judged against and the verdict, and the time's ratio
// to NCCL's estimate. "-" where a figure does not apply.
func JudgeColumns(j *judge.Judger, row func(bench.Row) judge.Row) *Columns {
	return judgeColumns(func(r bench.Row) (judge.RowJudgement, bool) { return j.Row(row(r)), true })
}

// SavedJudgeColumns are the judge columns of a saved run, from its
// record's judgement.
func SavedJudgeColumns(j *judge.Judgement) *Columns {
	return judgeColumns(func(r bench.Row) (judge.RowJudgement, bool) { return rowJudgement(j, r.Size) })
}

func judgeColumns(of func(bench.Row) (judge.RowJudgement, bool)) *Columns {
	return &Columns{
		Title: "judged (out-of-place)",
		Head:  []Column{{"wire", "(%)", 6}, {"ref", "(x)", 6}, {"verdict", "", 7}, {"est", "(x)", 6}},
		Cells: func(r bench.Row) []string {
			cells := []string{"-", "-", "-", "-"}
			rj, ok := of(r)
			if !ok {
				return cells
			}
			if rj.WireShare > 0 {
				cells[0] = FloatStr(rj.WireShare*100, 6)
			}
			if rj.Reference != nil {
				cells[1] = FloatStr(rj.RefRatio, 6)
				cells[2] = rj.VerdictText()
			}
			if rj.EstimateRatio > 0 {
				cells[3] = FloatStr(rj.EstimateRatio, 6)
			}
			return cells
		},
	}
}
