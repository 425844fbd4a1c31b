package progress

import (
	"bytes"
	"testing"
	"time"
)

func TestProgressBar(t *testing.T) {
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := func() time.Time { return clock }
	var b bytes.Buffer
	p := start(&b, "allreduce", 4, 60, now)
	const clr = "\r\x1b[K"
	steps := []struct {
		advance time.Duration
		do      func()
		want    string
	}{
		{0, func() { p.Update(0, "") }, clr + "allreduce [....................] 0/4  0s"},
		{50 * time.Millisecond, func() { p.Update(1, "1K") }, ""}, // within 100 ms of the last draw
		{100 * time.Millisecond, func() { p.Update(2, "2K") }, clr + "allreduce [##########..........] 2/4 2K 200ms"},
		{0, func() { p.Print("a line of its own") }, clr + "a line of its own\n" + clr + "allreduce [##########..........] 2/4 2K 200ms"},
		{time.Second, func() { p.Update(9, "a size with a long description that does not fit") }, clr + "allreduce [####################] 4/4 a size with a long des"},
		{0, p.Clear, clr},
		{0, p.Clear, ""}, // nothing left to clear
	}
	for i, s := range steps {
		clock = clock.Add(s.advance)
		b.Reset()
		s.do()
		if got := b.String(); got != s.want {
			t.Errorf("step %d: wrote %q, want %q", i, got, s.want)
		}
	}
	var off *Bar // what every command gets when stderr is no terminal
	off.Update(1, "x")
	off.Print("x")
	off.Clear()
}

// Progress is for terminals: a buffer (a pipe, a file, a launcher) or
// --quiet gets no bar.
func TestProgressOffWithoutTerminal(t *testing.T) {
	var b bytes.Buffer
	if p := New(&b, false, "x", 1); p != nil {
		t.Error("a progress bar on a buffer")
	}
}
