package progress

import (
	"fmt"
	"io"
)

// Lines is a measuring command's progress on stderr, for any measurement
// alike: the bar, on a terminal, while the steps run, and the lines a
// measurement prints of its own (each after Prefix), above the bar or on
// their own where there is none. Quiet shows neither.
type Lines struct {
	W      io.Writer
	Quiet  bool
	Prefix string
	bar    *Bar
}

// Begin draws the bar for planned steps (on a terminal).
func (l *Lines) Begin(label string, planned int) { l.bar = New(l.W, l.Quiet, label, planned) }

// Update says done steps are done, the last one described by what.
func (l *Lines) Update(done int, what string) { l.bar.Update(done, what) }

// Clear takes the bar off the screen before something else is printed.
func (l *Lines) Clear() { l.bar.Clear() }

// Print writes a line of the measurement's own.
func (l *Lines) Print(line string) {
	switch {
	case l.Quiet:
	case l.bar != nil:
		l.bar.Print(l.Prefix + line)
	default:
		fmt.Fprintln(l.W, l.Prefix+line)
	}
}
