package cluster

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"sync"
	"time"

	"github.com/collbench/collbench/bench"
)

// Client is one rank's connection to the store.
type Client struct {
	conn       net.Conn
	rank, size int
	mu         sync.Mutex
	seq        uint64
}

// ErrPeerLost means another rank left the job.
var ErrPeerLost = errors.New("a rank left the job")

// Dial joins the job at addr, retrying until ctx ends while the store is
// not up yet (rank 0 may start after the others).
func Dial(ctx context.Context, addr, token string, rank, size int) (*Client, error) {
	var d net.Dialer
	wait := 20 * time.Millisecond
	for {
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			c := &Client{conn: conn, rank: rank, size: size}
			if err := c.hello(ctx, token); err != nil {
				conn.Close()
				return nil, err
			}
			return c, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("rendezvous at %s unreachable: %w", addr, err)
		case <-time.After(wait):
		}
		wait = min(2*wait, 500*time.Millisecond)
	}
}

func (c *Client) hello(ctx context.Context, token string) error {
	c.deadline(ctx)
	if _, err := c.conn.Write(encode(message{kind: kindHello, token: token, rank: c.rank, size: c.size})); err != nil {
		return fmt.Errorf("rendezvous hello: %w", err)
	}
	m, err := readMessage(c.conn)
	if err != nil {
		return fmt.Errorf("rendezvous refused rank %d (wrong token, size or a duplicate rank?): %w", c.rank, err)
	}
	if m.kind != kindWelcome {
		return fmt.Errorf("rendezvous: unexpected reply to hello")
	}
	return nil
}

func (c *Client) deadline(ctx context.Context) {
	d, ok := ctx.Deadline()
	if !ok {
		d = time.Time{}
	}
	c.conn.SetDeadline(d)
}

// AllGather contributes data and returns every rank's contribution, in
// rank order. It fails when ctx ends or another rank leaves.
func (c *Client) AllGather(ctx context.Context, data []byte) ([][]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	if data == nil {
		data = []byte{}
	}
	c.deadline(ctx)
	stop := context.AfterFunc(ctx, func() { c.conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if _, err := c.conn.Write(encode(message{kind: kindGather, seq: c.seq, parts: [][]byte{data}})); err != nil {
		return nil, c.failure(ctx, err)
	}
	m, err := readMessage(c.conn)
	if err != nil {
		return nil, c.failure(ctx, err)
	}
	switch {
	case m.kind == kindFail:
		return nil, fmt.Errorf("%w: %s", ErrPeerLost, m.text)
	case m.kind != kindGather || m.seq != c.seq || len(m.parts) != c.size:
		return nil, fmt.Errorf("rendezvous: out-of-step reply")
	}
	return m.parts, nil
}

func (c *Client) failure(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	// The socket's deadline is ctx's and may fire a moment before ctx
	// reports it.
	if _, ok := ctx.Deadline(); ok && errors.Is(err, os.ErrDeadlineExceeded) {
		return context.DeadlineExceeded
	}
	return fmt.Errorf("rendezvous: %w", err)
}

// Close leaves the job.
func (c *Client) Close() error { return c.conn.Close() }

// Peers adapts a Client to the engine's bench.Peers.
type Peers struct{ C *Client }

func (p Peers) Proc() int   { return p.C.rank }
func (p Peers) NProcs() int { return p.C.size }

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
