// Package progress draws the live progress line on a terminal's standard
// error during long measurements, and nothing anywhere else.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
)

// Bar is the live line on stderr during sweeps, profiles and
// overlap runs. It is drawn only when stderr is a terminal (not a pipe,
// file or launcher) and --quiet is not given; a nil *Bar is off
// and every method is a no-op.
type Bar struct {
	mu    sync.Mutex
	w     io.Writer
	label string
	total int
	done  int
	what  string
	start time.Time
	drawn time.Time
	now   func() time.Time
	width int
	shown bool
}

// redrawEvery limits redraws, so a sweep of tiny sizes does not spend its
// time painting the terminal.
const redrawEvery = 100 * time.Millisecond

// New returns the bar for a job of total steps, drawn at once at
// 0, or nil when stderr is not a terminal, TERM is dumb, or quiet is set.
func New(stderr io.Writer, quiet bool, label string, total int) *Bar {
	f, ok := stderr.(*os.File)
	if quiet || !ok || !term.IsTerminal(int(f.Fd())) || os.Getenv("TERM") == "dumb" {
		return nil
	}
	width := 80
	if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 20 {
		width = w
	}
	p := start(stderr, label, total, width, time.Now)
	p.Update(0, "")
	return p
}

func start(w io.Writer, label string, total, width int, now func() time.Time) *Bar {
	return &Bar{w: w, label: label, total: max(total, 1), width: width, now: now, start: now()}
}

// Update says done steps are done, the last one described by what.
func (p *Bar) Update(done int, what string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done = min(max(done, 0), p.total)
	p.what = what
	if t := p.now(); t.Sub(p.drawn) >= redrawEvery || p.done == p.total {
		p.draw(t)
	}
}

// Print writes a line of its own above the bar.
func (p *Bar) Print(line string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	fmt.Fprintln(p.w, line)
	p.draw(p.now())
}

// Clear takes the bar off the screen, before something else is printed
// on the terminal (a table row on stdout) or at the end.
func (p *Bar) Clear() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
}

func (p *Bar) clear() {
	if p.shown {
		io.WriteString(p.w, "\r\x1b[K")
		p.shown = false
	}
}

func (p *Bar) draw(t time.Time) {
	const cells = 20
	filled := cells * p.done / p.total
	bar := strings.Repeat("#", filled) + strings.Repeat(".", cells-filled)
	line := fmt.Sprintf("%s [%s] %d/%d %s %s", p.label, bar, p.done, p.total, p.what, t.Sub(p.start).Round(100*time.Millisecond))
	if r := []rune(line); len(r) > p.width-1 {
		line = string(r[:p.width-1])
	}
	io.WriteString(p.w, "\r\x1b[K"+line)
	p.shown, p.drawn = true, t
}
