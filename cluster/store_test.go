package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/collbench/collbench/bench"
)

const token = "job-token-1234"

// startStore listens on loopback and collects the store's log lines.
func startStore(t *testing.T, size int) (*Store, func() []string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var logs []string
	s := Serve(ln, StoreConfig{Token: token, Size: size, Logf: func(f string, a ...any) {
		mu.Lock()
		logs = append(logs, fmt.Sprintf(f, a...))
		mu.Unlock()
	}})
	t.Cleanup(func() { s.Close() })
	return s, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string{}, logs...)
	}
}

// joinAll dials size clients concurrently.
func joinAll(t *testing.T, addr string, size int) []*Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	clients := make([]*Client, size)
	errs := make([]error, size)
	var wg sync.WaitGroup
	for r := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			clients[r], errs[r] = Dial(ctx, addr, DialConfig{Token: token, Rank: r, Size: size})
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
		t.Cleanup(func() { clients[r].Close() })
	}
	return clients
}

// each runs f on every rank at once and returns the errors.
func each(clients []*Client, f func(r int, c *Client) error) []error {
	errs := make([]error, len(clients))
	var wg sync.WaitGroup
	for r, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = f(r, c)
		}()
	}
	wg.Wait()
	return errs
}

func TestRendezvousRounds(t *testing.T) {
	s, _ := startStore(t, 4)
	clients := joinAll(t, s.Addr().String(), 4)
	ctx := context.Background()
	errs := each(clients, func(r int, c *Client) error {
		p := Peers{C: c}
		for round := 0; round < 20; round++ {
			parts, err := c.AllGather(ctx, []byte(fmt.Sprintf("r%d-%d", r, round)))
			if err != nil {
				return err
			}
			for q, part := range parts {
				if string(part) != fmt.Sprintf("r%d-%d", q, round) {
					return fmt.Errorf("round %d: part %d is %q", round, q, part)
				}
			}
			if err := p.Barrier(ctx); err != nil {
				return err
			}
		}
		for how, want := range map[bench.Reduction]float64{bench.ReduceSum: 0 + 1 + 2 + 3, bench.ReduceMin: 0, bench.ReduceMax: 3} {
			got, err := p.AllReduce(ctx, []float64{float64(r), 1}, how)
			if err != nil {
				return err
			}
			if got[0] != want {
				return fmt.Errorf("reduction %d: %v, want %v", how, got[0], want)
			}
		}
		if p.Proc() != r || p.NProcs() != 4 {
			return fmt.Errorf("proc %d of %d", p.Proc(), p.NProcs())
		}
		return nil
	})
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}

// TestRendezvousRefusesStrangers: a wrong token, garbage bytes, a silent
// connection and a duplicate rank are refused, and the job still runs.
func TestRendezvousRefusesStrangers(t *testing.T) {
	s, logs := startStore(t, 2)
	addr := s.Addr().String()
	silent, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	garbage, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	garbage.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
	defer garbage.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := Dial(ctx, addr, DialConfig{Token: "not-the-token", Rank: 0, Size: 2}); err == nil || !strings.Contains(err.Error(), "refused rank 0: wrong job token") {
		t.Errorf("a wrong token: %v, want the store's reason", err)
	}
	clients := joinAll(t, addr, 2)
	if _, err := Dial(ctx, addr, DialConfig{Token: token, Rank: 1, Size: 2}); err == nil {
		t.Error("a second rank 1 was accepted")
	}
	errs := each(clients, func(r int, c *Client) error { return Peers{C: c}.Barrier(ctx) })
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d after strangers: %v", r, err)
		}
	}
	// The garbage is read on its own goroutine: give its refusal time to
	// be logged before Close drops what is still pending (on a loaded
	// machine it may not have been read yet).
	wants := []string{"wrong job token", "malformed", "joined twice"}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		text := strings.Join(logs(), "\n")
		if !slices.ContainsFunc(wants, func(w string) bool { return !strings.Contains(text, w) }) {
			break
		}
	}
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(3 * time.Second):
		t.Error("Close waited for a connection that never said hello")
	}
	text := strings.Join(logs(), "\n")
	for _, want := range wants {
		if !strings.Contains(text, want) {
			t.Errorf("log lacks %q:\n%s", want, text)
		}
	}
}

// TestRendezvousPeerLost: when a rank's connection ends without a
// goodbye (a killed process), or a rank says goodbye while the others
// still wait for it, the others stop waiting and learn which rank and why.
func TestRendezvousPeerLost(t *testing.T) {
	for _, c := range []struct {
		name  string
		leave func(*Client)
		want  string
	}{
		{"killed", func(c *Client) { c.conn.Close() }, "rank 2 left"},
		{"early goodbye", func(c *Client) { c.Close() }, "rank 2 finished while the others still waited"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, _ := startStore(t, 3)
			clients := joinAll(t, s.Addr().String(), 3)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c.leave(clients[2])
			start := time.Now()
			errs := each(clients[:2], func(r int, c *Client) error { return Peers{C: c}.Barrier(ctx) })
			for r, err := range errs {
				if !errors.Is(err, ErrPeerLost) || !strings.Contains(err.Error(), c.want) {
					t.Errorf("rank %d: %v, want a lost-peer error saying %q", r, err, c.want)
				}
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v to notice", d)
			}
		})
	}
}

// TestRendezvousDeadline: a round a rank never joins ends at ctx's
// deadline.
func TestRendezvousDeadline(t *testing.T) {
	s, _ := startStore(t, 2)
	clients := joinAll(t, s.Addr().String(), 2)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := Peers{C: clients[0]}.Barrier(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got %v, want the deadline", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("returned after %v", d)
	}
}

func TestWireRoundTrip(t *testing.T) {
	for _, m := range []message{
		{kind: kindHello, token: "t", rank: 3, size: 8},
		{kind: kindWelcome},
		{kind: kindGather, seq: 42, parts: [][]byte{{1, 2}, {}, {3}}},
		{kind: kindFail, text: "rank 2 left"},
		{kind: kindBeat, text: "allreduce of 8 bytes (in-place)"},
		{kind: kindPing},
	} {
		b := encode(m)
		got, err := decode(b[4:])
		if err != nil || fmt.Sprint(got) != fmt.Sprint(m) {
			t.Errorf("%+v: decoded %+v %v", m, got, err)
		}
	}
}

// FuzzDecode: any bytes decode or fail without a panic, and what decodes
// encodes back to the same bytes.
func FuzzDecode(f *testing.F) {
	f.Add(encode(message{kind: kindHello, token: "tok", rank: 1, size: 2})[4:])
	f.Add(encode(message{kind: kindGather, seq: 7, parts: [][]byte{[]byte("ab"), nil}})[4:])
	f.Add(encode(message{kind: kindFail, text: "x"})[4:])
	f.Add(encode(message{kind: kindBeat, text: "y"})[4:])
	f.Add([]byte("GET / HTTP/1.1"))
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := decode(body)
		if err != nil {
			return
		}
		if again := encode(m)[4:]; string(again) != string(body) {
			t.Fatalf("decode/encode changed %x into %x", body, again)
		}
	})
}

// startWatched runs a store with the watchdog's deadlines set.
func startWatched(t *testing.T, size int, join, stall time.Duration) *Store {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := Serve(ln, StoreConfig{Token: token, Size: size, Join: join, Stall: stall})
	t.Cleanup(func() { s.Close() })
	return s
}

// rawHello joins as rank without a heartbeat: a process that was stopped
// right after it arrived.
func rawHello(t *testing.T, addr string, rank, size int) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.Write(encode(message{kind: kindHello, token: token, rank: rank, size: size}))
	if m, err := readMessage(c); err != nil || m.kind != kindWelcome {
		t.Fatalf("hello: %v %v", m, err)
	}
	return c
}

// The watchdog names the rank at fault, and the others stop waiting
// within the deadline plus a moment.
func TestWatchdogNamesTheRank(t *testing.T) {
	cases := []struct {
		name   string
		join   time.Duration
		stall  time.Duration
		absent func(t *testing.T, addr string)
		want   string
	}{
		{"never joined", 300 * time.Millisecond, 0, func(*testing.T, string) {}, "rank 2 never joined"},
		{"stopped", 0, 300 * time.Millisecond, func(t *testing.T, addr string) { rawHello(t, addr, 2, 3) }, "rank 2 stopped responding"},
		{"killed", 0, 0, func(t *testing.T, addr string) { rawHello(t, addr, 2, 3).Close() }, "rank 2 left the job"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := startWatched(t, 3, c.join, c.stall)
			addr := s.Addr().String()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var clients []*Client
			for r := 0; r < 2; r++ {
				cl, err := Dial(ctx, addr, DialConfig{Token: token, Rank: r, Size: 3, Stall: c.stall})
				if err != nil {
					t.Fatal(err)
				}
				defer cl.Close()
				cl.Doing("allreduce of 1024 bytes (out-of-place)")
				clients = append(clients, cl)
			}
			c.absent(t, addr)
			start := time.Now()
			errs := each(clients, func(r int, cl *Client) error { return Peers{C: cl}.Barrier(ctx) })
			for r, err := range errs {
				if !errors.Is(err, ErrPeerLost) || !strings.Contains(err.Error(), c.want) {
					t.Errorf("rank %d: %v, want %q", r, err, c.want)
				}
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

// A rank blocked outside the rendezvous (inside a collective) learns of
// the failure through OnFail, once.
func TestOnFailWakesBlockedRank(t *testing.T) {
	s := startWatched(t, 2, 0, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := Dial(ctx, s.Addr().String(), DialConfig{Token: token, Rank: 0, Size: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := make(chan error, 2)
	cl.OnFail(func(err error) { got <- err })
	rawHello(t, s.Addr().String(), 1, 2).Close()
	select {
	case err := <-got:
		if !strings.Contains(err.Error(), "rank 1 left the job") {
			t.Errorf("OnFail got %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("OnFail was not called")
	}
	cl.OnFail(func(err error) { got <- err }) // registered late: called at once
	if err := <-got; err == nil {
		t.Error("late OnFail got no error")
	}
	if len(got) != 0 {
		t.Error("OnFail called twice")
	}
}

// A rank gives up on a store that stops answering (rank 0 stopped).
func TestClientNoticesSilentStore(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		readMessage(c)
		c.Write(encode(message{kind: kindWelcome}))
		time.Sleep(5 * time.Second)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := Dial(ctx, ln.Addr().String(), DialConfig{Token: token, Rank: 1, Size: 2, Stall: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	err = Peers{C: cl}.Barrier(ctx)
	if !errors.Is(err, ErrPeerLost) || !strings.Contains(err.Error(), "rank 0 (hosting the rendezvous) stopped responding") {
		t.Errorf("got %v", err)
	}
}

func TestRankList(t *testing.T) {
	for _, c := range []struct {
		in   []int
		want string
	}{
		{[]int{3}, "rank 3"},
		{[]int{1, 4}, "ranks 1, 4"},
		{[]int{1, 2, 3, 4, 5, 7, 9, 10}, "ranks 1-5, 7, 9-10"},
	} {
		if got := bench.RankNames(c.in); got != c.want {
			t.Errorf("%v: %q, want %q", c.in, got, c.want)
		}
	}
}

// A rank that dies names the call it was in, not one from before its
// last heartbeat: a change of call reaches the store at once (at most one
// message every few milliseconds), not at the next beat.
func TestLeftRankNamesItsLatestCall(t *testing.T) {
	s := startWatched(t, 2, 0, 0) // heartbeats once a second
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var clients []*Client
	for r := 0; r < 2; r++ {
		cl, err := Dial(ctx, s.Addr().String(), DialConfig{Token: token, Rank: r, Size: 2})
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		clients = append(clients, cl)
	}
	clients[1].Doing("allreduce of 268435456 bytes (warm-up)")
	time.Sleep(50 * time.Millisecond)
	clients[1].Doing("allreduce of 65536 bytes (out-of-place)")
	time.Sleep(100 * time.Millisecond)
	clients[1].conn.Close() // killed: no goodbye
	err := Peers{C: clients[0]}.Barrier(ctx)
	if err == nil || !strings.Contains(err.Error(), "it was in allreduce of 65536 bytes (out-of-place)") {
		t.Errorf("err = %v, want the call rank 1 was in", err)
	}
}
