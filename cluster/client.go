package cluster

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/collbench/collbench/bench"
)

// Client is one rank's connection to the store. A background reader takes
// every message the store sends; a heartbeat tells the store the rank is
// alive and what it is doing, and watches that the store is alive too.
type Client struct {
	conn       net.Conn
	rank, size int
	stall      time.Duration

	wmu sync.Mutex // one writer at a time
	mu  sync.Mutex // one round at a time
	seq uint64
	// issued is the last round this rank joined and waiting the round it
	// waits for now (0: none). A reply to an earlier round, one that an
	// interrupted AllGather gave up on, is dropped by the reader.
	issued, waiting atomic.Uint64

	replies  chan message
	failed   chan struct{}
	failOnce sync.Once
	err      error
	why      string // a failure this rank found itself, told to the store on Close
	onFail   atomic.Pointer[func(error)]
	heard    atomic.Int64 // unix nanoseconds of the last message from the store
	doing    atomic.Pointer[string]
	nudge    chan struct{} // the call changed: beat now
	closed   atomic.Bool
	done     chan struct{}
}

// nudgeGap is the least time between two beats sent for changes of call,
// so that a fast sweep does not flood the store.
const nudgeGap = 5 * time.Millisecond

// ErrPeerLost means another rank left the job, went silent or never came.
var ErrPeerLost = errors.New("the job lost a rank")

// ErrTimedOut marks a failure of the job that a deadline found: a rank
// that never joined within it, or went silent for longer (-T, or the
// default deadlines). It comes with ErrPeerLost.
var ErrTimedOut = errors.New("a deadline of the job expired")

// DialConfig is how a rank joins the job.
type DialConfig struct {
	Token      string // the job's, which the store checks
	Rank, Size int
	// Stall is how long the store may stay silent before this rank
	// gives up on it; 0 never does.
	Stall time.Duration
	// Held says the rendezvous listener was open before any rank started
	// (collbench launch opens it and hands it to rank 0): a refused
	// connection then means rank 0 has exited, not that it has yet to
	// start.
	Held bool
	// Settings are what this rank was started with; the store compares
	// them with rank 0's (StoreConfig.Settings).
	Settings []Setting
}

// Dial joins the job at addr, retrying while the store is not up yet
// (rank 0 may start after the others) until ctx ends; a cancelled ctx (a
// signal) ends every wait at once.
func Dial(ctx context.Context, addr string, cfg DialConfig) (*Client, error) {
	var d net.Dialer
	wait := 20 * time.Millisecond
	for {
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			c := &Client{conn: conn, rank: cfg.Rank, size: cfg.Size, stall: cfg.Stall, nudge: make(chan struct{}, 1),
				replies: make(chan message, 1), failed: make(chan struct{}), done: make(chan struct{})}
			if err := c.hello(ctx, addr, cfg.Token, cfg.Settings); err != nil {
				conn.Close()
				return nil, err
			}
			c.heard.Store(time.Now().UnixNano())
			go c.read()
			go c.beat()
			return c, nil
		}
		if cfg.Held && errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("the rendezvous at %s refused the connection: rank 0, which hosts it, has exited (its own output says why)", addr)
		}
		select {
		case <-ctx.Done():
			if interrupted(ctx) {
				return nil, fmt.Errorf("interrupted while joining the rendezvous at %s: %w", addr, context.Cause(ctx))
			}
			return nil, pastDeadline{fmt.Errorf("rendezvous at %s unreachable until the start-up deadline (rank 0 hosts it; has it started?): %w", addr, err)}
		case <-time.After(wait):
		}
		wait = min(2*wait, 500*time.Millisecond)
	}
}

// interrupted says ctx ended by cancellation (a signal, the caller), not
// by its deadline.
func interrupted(ctx context.Context) bool {
	return ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded)
}

// hello presents the token and waits for the store's welcome, until ctx's
// deadline, or at once when ctx is cancelled. What ended a wait without a
// welcome is named: a refusal gives the store's reason; a connection
// closed unanswered means rank 0 has gone (or the port is another
// program's), not that the token was wrong.
func (c *Client) hello(ctx context.Context, addr, token string, settings []Setting) error {
	if d, ok := ctx.Deadline(); ok {
		c.conn.SetDeadline(d)
	}
	stop := context.AfterFunc(ctx, func() { c.conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	defer c.conn.SetDeadline(time.Time{})
	_, err := c.conn.Write(encode(message{kind: kindHello, token: token, rank: c.rank, size: c.size, settings: encodeSettings(settings)}))
	var m message
	if err == nil {
		m, err = readMessage(c.conn)
	}
	switch {
	case interrupted(ctx):
		return fmt.Errorf("interrupted while waiting for the rendezvous at %s to answer: %w", addr, context.Cause(ctx))
	case ctx.Err() != nil, errors.Is(err, os.ErrDeadlineExceeded): // the connection's deadline is ctx's, and may pass first
		return pastDeadline{fmt.Errorf("the rendezvous at %s accepted rank %d's connection but did not answer before the start-up deadline (rank 0 hosts it: is it stuck, or is another program listening there?)", addr, c.rank)}
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return fmt.Errorf("the rendezvous at %s closed the connection before answering: rank 0, which hosts it, has exited (its own output says why), or another program holds the port", addr)
	case errors.Is(err, errFrame):
		return fmt.Errorf("the rendezvous at %s answered in another protocol: another program holds the port", addr)
	case err != nil:
		return fmt.Errorf("rendezvous hello: %w", err)
	case m.kind == kindMismatch:
		return fmt.Errorf("%w: %s", ErrSettingsDiffer, m.text)
	case m.kind == kindFail:
		return fmt.Errorf("the rendezvous refused rank %d: %s", c.rank, m.text)
	case m.kind != kindWelcome:
		return fmt.Errorf("rendezvous: unexpected reply to hello")
	}
	return nil
}

// read dispatches the store's messages until the connection ends.
func (c *Client) read() {
	for {
		m, err := readMessage(c.conn)
		if err != nil {
			if !c.closed.Load() {
				c.fail(fmt.Errorf("%w: lost the rendezvous hosted by rank 0 (%v)", ErrPeerLost, err))
			}
			return
		}
		c.heard.Store(time.Now().UnixNano())
		switch m.kind {
		case kindFail:
			c.fail(fmt.Errorf("%w: %s", ErrPeerLost, m.text))
			return
		case kindTimeout:
			c.fail(lostByDeadline(m.text))
			return
		case kindMismatch:
			c.fail(fmt.Errorf("%w: %s", ErrSettingsDiffer, m.text))
			return
		case kindGather:
			switch {
			case m.seq == c.waiting.Load():
			case m.seq <= c.issued.Load():
				continue // a round given up on: its reply came late
			default: // a round this rank never joined: the store is out of step
				c.fail(errors.New("rendezvous: a reply nobody asked for"))
				return
			}
			select {
			case c.replies <- m:
			case <-c.done:
				return
			}
		}
	}
}

// beat sends heartbeats and gives up on a store that went silent.
func (c *Client) beat() {
	tick := time.NewTicker(pingInterval(c.stall))
	defer tick.Stop()
	var sent time.Time
	for {
		select {
		case <-c.done:
			return
		case <-c.failed:
			return
		case <-c.nudge:
			// The call changed: the store hears of it now, so that a
			// rank lost before its next beat is named in the right one.
			if wait := nudgeGap - time.Since(sent); wait > 0 {
				time.Sleep(wait)
			}
		case now := <-tick.C:
			if c.stall > 0 && now.Sub(time.Unix(0, c.heard.Load())) > c.stall {
				why := fmt.Sprintf("rank 0 (hosting the rendezvous) stopped responding (silent for more than %v)", c.stall)
				c.failFound(why)
				return
			}
		}
		doing := ""
		if d := c.doing.Load(); d != nil {
			doing = *d
		}
		sent = time.Now()
		if err := c.write(encode(message{kind: kindBeat, text: doing})); err != nil && !c.closed.Load() {
			c.fail(fmt.Errorf("%w: cannot reach the rendezvous hosted by rank 0 (%v)", ErrPeerLost, err))
			return
		}
	}
}

func (c *Client) write(frame []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.conn.SetWriteDeadline(time.Now().Add(writeTimeout))
	_, err := c.conn.Write(frame)
	return err
}

// failFound is a failure this rank found itself: the store is told why
// when the rank leaves, so that a store that was only paused (a stopped
// process resumed) blames what the ranks saw, not their leaving.
func (c *Client) failFound(why string) { c.end(lostByDeadline(why), why) }

// lostByDeadline is a lost rank found by a deadline: ErrPeerLost and
// ErrTimedOut both, in one line.
type lostByDeadline string

func (e lostByDeadline) Error() string   { return ErrPeerLost.Error() + ": " + string(e) }
func (e lostByDeadline) Unwrap() []error { return []error{ErrPeerLost, ErrTimedOut} }

// fail records the first reason the job cannot go on and tells OnFail.
func (c *Client) fail(err error) { c.end(err, "") }

// end records the job's failure once; why, if this rank found it, is
// told to the store when the rank leaves.
func (c *Client) end(err error, why string) {
	c.failOnce.Do(func() {
		c.err, c.why = err, why
		close(c.failed)
		if f := c.onFail.Load(); f != nil {
			(*f)(err)
		}
	})
}

// OnFail registers f to run once, from another goroutine, when the job
// fails: another rank left, went silent or never arrived. It is how a rank
// blocked inside a collective learns to abort.
func (c *Client) OnFail(f func(error)) {
	var once sync.Once
	g := func(err error) { once.Do(func() { f(err) }) }
	c.onFail.Store(&g)
	select {
	case <-c.failed: // failed before f was registered
		g(c.err)
	default:
	}
}

// Doing tells the store what this rank is doing, at once when it changes
// (a beat sent out of turn, at most one every nudgeGap), so a rank that
// stops or dies can be reported with the call it was in.
func (c *Client) Doing(what string) {
	if old := c.doing.Swap(&what); old != nil && *old == what {
		return
	}
	select {
	case c.nudge <- struct{}{}:
	default: // a beat is already due
	}
}

// AllGather contributes data and returns every rank's contribution, in
// rank order. It fails when ctx ends or the job fails.
func (c *Client) AllGather(ctx context.Context, data []byte) ([][]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	if data == nil {
		data = []byte{}
	}
	select {
	case <-c.failed:
		return nil, c.err
	default:
	}
	c.issued.Store(c.seq)
	c.waiting.Store(c.seq)
	defer c.waiting.Store(0)
	if err := c.write(encode(message{kind: kindGather, seq: c.seq, parts: [][]byte{data}})); err != nil {
		return nil, fmt.Errorf("rendezvous: %w", err)
	}
	// The reader queues a reply before any later failure, so a round that
	// completed is not lost to a failure (or a cancellation caused by one)
	// that came after it.
	// A reply to an earlier round, queued just before that round was
	// given up on, is skipped.
	completed := func() ([][]byte, bool, error) {
		for {
			select {
			case m := <-c.replies:
				if m.seq < c.seq {
					continue
				}
				parts, err := c.reply(m)
				return parts, true, err
			default:
				return nil, false, nil
			}
		}
	}
	for {
		select {
		case m := <-c.replies:
			if m.seq < c.seq {
				continue
			}
			return c.reply(m)
		case <-c.failed:
			if parts, ok, err := completed(); ok {
				return parts, err
			}
			return nil, c.err
		case <-ctx.Done():
			if parts, ok, err := completed(); ok {
				return parts, err
			}
			return nil, context.Cause(ctx)
		}
	}
}

func (c *Client) reply(m message) ([][]byte, error) {
	if m.seq != c.seq || len(m.parts) != c.size {
		return nil, fmt.Errorf("rendezvous: out-of-step reply")
	}
	return m.parts, nil
}

// Failed is closed when the job has failed; Err then says why.
func (c *Client) Failed() <-chan struct{} { return c.failed }

// Err is why the job failed, or nil.
func (c *Client) Err() error {
	select {
	case <-c.failed:
		return c.err
	default:
		return nil
	}
}

// Close leaves the job, telling the store this rank is done rather than
// lost.
func (c *Client) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	close(c.done)
	bye := message{kind: kindBye}
	select {
	case <-c.failed:
		if c.why != "" {
			bye = message{kind: kindFail, text: c.why}
		}
	default:
	}
	c.write(encode(bye))
	return c.conn.Close()
}

// Peers adapts a Client to the engine's bench.Peers.
type Peers struct{ C *Client }

func (p Peers) Proc() int   { return p.C.rank }
func (p Peers) NProcs() int { return p.C.size }

// Doing implements bench.Tracker.
func (p Peers) Doing(what string) { p.C.Doing(what) }

// Barrier returns once every rank has reached it.
func (p Peers) Barrier(ctx context.Context) error {
	_, err := p.C.AllGather(ctx, nil)
	return err
}

// AllReduce combines vals element-wise over the ranks, in rank order so
// every rank gets bit-identical sums.
func (p Peers) AllReduce(ctx context.Context, vals []float64, how bench.Reduction) ([]float64, error) {
	buf := make([]byte, 8*len(vals))
	for i, v := range vals {
		binary.BigEndian.PutUint64(buf[8*i:], math.Float64bits(v))
	}
	parts, err := p.C.AllGather(ctx, buf)
	if err != nil {
		return nil, err
	}
	out := make([]float64, len(vals))
	for r, part := range parts {
		if len(part) != len(buf) {
			return nil, fmt.Errorf("rank %d sent %d values, want %d", r, len(part)/8, len(vals))
		}
		for i := range out {
			v := math.Float64frombits(binary.BigEndian.Uint64(part[8*i:]))
			switch {
			case r == 0:
				out[i] = v
			case how == bench.ReduceSum:
				out[i] += v
			case how == bench.ReduceMin:
				out[i] = min(out[i], v)
			case how == bench.ReduceMax:
				out[i] = max(out[i], v)
			}
		}
	}
	return out, nil
}

// LocalAddr is this end of the connection to the store.
func (c *Client) LocalAddr() net.Addr { return c.conn.LocalAddr() }

// pastDeadline is a failure to join that the start-up deadline ended: it
// reads as its own text and counts as ErrTimedOut, as a rank that never
// joined does at the store.
type pastDeadline struct{ error }

func (e pastDeadline) Unwrap() []error { return []error{e.error, ErrTimedOut} }
