package cluster

import (
	"net"
	"sync"
	"time"
)

// link is the store's side of one rank's connection. Frames for the rank
// are queued and written by the link's own goroutine, so the store never
// writes to the network while it holds its lock: a rank that stops reading
// costs its own link writeTimeout, then the connection, and nothing else.
type link struct {
	conn net.Conn

	mu     sync.Mutex
	queue  [][]byte
	closed bool
	wake   chan struct{} // one pending wake-up at most
	done   chan struct{}
}

// newLink starts the writer of c; wg counts it until it ends.
func newLink(c net.Conn, wg *sync.WaitGroup) *link {
	l := &link{conn: c, wake: make(chan struct{}, 1), done: make(chan struct{})}
	wg.Add(1)
	go func() {
		defer wg.Done()
		l.write()
	}()
	return l
}

// push queues a frame; it never blocks.
func (l *link) push(frame []byte) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.queue = append(l.queue, frame)
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// write sends queued frames in order until the link is closed. A write
// that does not finish within writeTimeout closes the connection, which
// the store's reader then reports as the rank leaving the job.
func (l *link) write() {
	for {
		select {
		case <-l.wake:
		case <-l.done:
			return
		}
		l.mu.Lock()
		frames := l.queue
		l.queue = nil
		l.mu.Unlock()
		for _, f := range frames {
			_ = l.conn.SetWriteDeadline(time.Now().Add(writeTimeout))
			if _, err := l.conn.Write(f); err != nil {
				l.conn.Close()
				return
			}
		}
	}
}

// close ends the writer after what it is writing now and closes the
// connection.
func (l *link) close() {
	l.mu.Lock()
	if !l.closed {
		l.closed = true
		close(l.done)
	}
	l.mu.Unlock()
	l.conn.Close()
}
