package cluster

import (
	"sync"
	"time"
)

// Refused connections are logged one by one up to shownRefusals; after
// that a flood (a port scanner, a misconfigured job on the same port) is
// summed up at most every refusalSummary, so it cannot bury the job's own
// messages.
const (
	shownRefusals  = 5
	refusalSummary = 5 * time.Second
)

// refusalLog rate-limits the store's "refused a connection" lines.
type refusalLog struct {
	logf func(format string, a ...any)

	mu     sync.Mutex
	shown  int
	hidden int    // refused since the last line
	last   string // the latest of those, for the summary
	next   time.Time
}

func (r *refusalLog) add(from string, err error) {
	r.mu.Lock()
	if r.shown < shownRefusals {
		r.shown++
		r.mu.Unlock()
		r.logf("rendezvous: refused a connection from %s: %v", from, err)
		return
	}
	r.hidden++
	r.last = from + ": " + err.Error()
	now := time.Now()
	if now.Before(r.next) {
		r.mu.Unlock()
		return
	}
	n, last := r.hidden, r.last
	r.hidden, r.next = 0, now.Add(refusalSummary)
	r.mu.Unlock()
	r.logf("rendezvous: refused %d more connection(s), the last from %s", n, last)
}

// flush sums up what was refused since the last line.
func (r *refusalLog) flush() {
	r.mu.Lock()
	n, last := r.hidden, r.last
	r.hidden = 0
	r.mu.Unlock()
	if n > 0 {
		r.logf("rendezvous: refused %d more connection(s), the last from %s", n, last)
	}
}
