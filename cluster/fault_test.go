package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A round this rank gave up on (its context ended) may still complete and
// its reply arrive late; the next round is not confused by it.
func TestCancelledRoundThenNext(t *testing.T) {
	s, _ := startStore(t, 2)
	clients := joinAll(t, s.Addr().String(), 2)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := clients[0].AllGather(ctx, []byte("a1")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("round 1 alone: %v, want the deadline", err)
	}
	// Rank 1 completes round 1 now: its reply reaches rank 0 late.
	if _, err := clients[1].AllGather(context.Background(), []byte("b1")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // the late reply lands at rank 0
	errs := each(clients, func(r int, c *Client) error {
		parts, err := c.AllGather(context.Background(), []byte(fmt.Sprintf("round2-%d", r)))
		if err != nil {
			return err
		}
		if string(parts[0]) != "round2-0" || string(parts[1]) != "round2-1" {
			return fmt.Errorf("round 2 got %q", parts)
		}
		return nil
	})
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}

// A rank that stops reading does not hold the store up for the others:
// their rounds take about as long as when it read, while its own writes
// wait.
func TestStalledReaderDoesNotBlockOthers(t *testing.T) {
	s, _ := startStore(t, 3)
	addr := s.Addr().String()
	clients := make([]*Client, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Rank 2 speaks the protocol by hand: it contributes to every round
	// and reads only while draining is on.
	raw, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Write(encode(message{kind: kindHello, token: token, rank: 2, size: 3})); err != nil {
		t.Fatal(err)
	}
	var draining atomic.Bool
	draining.Store(true)
	go func() {
		buf := make([]byte, 1<<20)
		for {
			if !draining.Load() {
				return
			}
			raw.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
			if _, err := raw.Read(buf); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
				return
			}
		}
	}()
	for r := range clients {
		if clients[r], err = Dial(ctx, addr, DialConfig{Token: token, Rank: r, Size: 3}); err != nil {
			t.Fatal(err)
		}
		defer clients[r].Close()
	}
	part := make([]byte, 2<<20) // replies of 6 MiB fill a stalled socket within two rounds
	const rounds = 6
	seq := uint64(0)
	phase := func() time.Duration {
		start := time.Now()
		first, last := seq+1, seq+rounds
		seq = last
		go func() {
			for q := first; q <= last; q++ {
				raw.Write(encode(message{kind: kindGather, seq: q, parts: [][]byte{part}}))
			}
		}()
		errs := each(clients, func(r int, c *Client) error {
			for i := 0; i < rounds; i++ {
				if _, err := c.AllGather(context.Background(), part); err != nil {
					return fmt.Errorf("round %d: %w", i+1, err)
				}
			}
			return nil
		})
		for r, err := range errs {
			if err != nil {
				t.Fatalf("rank %d: %v", r, err)
			}
		}
		return time.Since(start)
	}
	reading := phase()
	draining.Store(false)
	time.Sleep(50 * time.Millisecond)
	stalled := phase()
	t.Logf("%d rounds: %v with every rank reading, %v with rank 2 stalled", rounds, reading, stalled)
	// A store that wrote under its lock would spend writeTimeout on the
	// stalled rank in most rounds before serving the others.
	if stalled > 2*reading+writeTimeout/2 {
		t.Errorf("the others waited on the stalled rank: %v against %v (write timeout %v)", stalled, reading, writeTimeout)
	}
}

// A flood of strangers at the rendezvous port is logged a few lines at a
// time, with every refusal counted, and the job goes on.
func TestRefusalFloodIsSummarised(t *testing.T) {
	begin := time.Now()
	s, logs := startStore(t, 2)
	addr := s.Addr().String()
	const strangers = 300
	for i := 0; i < strangers; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte("GET / HTTP/1.1\r\n\r\n"))
		c.Close()
	}
	clients := joinAll(t, addr, 2)
	errs := each(clients, func(r int, c *Client) error { return Peers{C: c}.Barrier(context.Background()) })
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d after the flood: %v", r, err)
		}
	}
	// Every stranger is refused before the store closes: a connection
	// still saying hello at Close is dropped unlogged, by design. Those
	// refused but not yet summed up wait in the log's hidden count.
	count := func(lines []string) int {
		refused := 0
		for _, l := range lines {
			var n int
			switch {
			case strings.Contains(l, "refused a connection"):
				refused++
			case strings.Contains(l, "more connection(s)"):
				if _, err := fmt.Sscanf(l[strings.Index(l, "refused ")+len("refused "):], "%d", &n); err != nil {
					t.Errorf("unreadable summary %q", l)
				}
				refused += n
			}
		}
		return refused
	}
	for wait := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		s.refusals.mu.Lock()
		hidden := s.refusals.hidden
		s.refusals.mu.Unlock()
		if count(logs())+hidden >= strangers {
			break
		}
		if time.Now().After(wait) {
			t.Fatalf("only %d of %d strangers refused after 30 s", count(logs())+hidden, strangers)
		}
	}
	s.Close()
	lines := logs()
	refused := count(lines)
	elapsed := time.Since(begin)
	maxLines := shownRefusals + 2 + int(elapsed/refusalSummary)
	if refused != strangers || len(lines) > maxLines+1 {
		t.Errorf("%d refusals in %d log lines (want %d refusals in at most %d lines):\n%s",
			refused, len(lines), strangers, maxLines, strings.Join(lines, "\n"))
	}
}
