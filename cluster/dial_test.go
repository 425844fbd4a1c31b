package cluster

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"
)

// A rendezvous port that accepts and never answers (rank 0's listener
// still queued in a process that will not serve it, or another program)
// holds a joining rank only until it is interrupted: a signal cancels the
// wait at once, whatever the start-up deadline.
func TestDialInterruptedWhileUnanswered(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close() // accepted by the kernel, never by anyone
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	_, err = Dial(ctx, ln.Addr().String(), DialConfig{Token: token, Rank: 1, Size: 2})
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("interrupted after %v", took)
	}
	if err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Errorf("err = %v, want an interruption", err)
	}
	// With only the start-up deadline, the wait ends there, and says the
	// port answered nothing.
	dctx, dcancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer dcancel()
	_, err = Dial(dctx, ln.Addr().String(), DialConfig{Token: token, Rank: 1, Size: 2})
	if err == nil || !strings.Contains(err.Error(), "did not answer") {
		t.Errorf("err = %v, want the silence named", err)
	}
}

// A rendezvous that closes the connection before answering is not a
// refusal of the token: rank 0 has gone, or another program holds the
// port, and the rank says so at once.
func TestDialNamesAClosedRendezvous(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	_, err = Dial(ctx, ln.Addr().String(), DialConfig{Token: token, Rank: 1, Size: 2})
	if err == nil || !strings.Contains(err.Error(), "closed the connection before answering") || strings.Contains(err.Error(), "token") {
		t.Errorf("err = %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %v", took)
	}
}

// Where the launcher opened the listener before any rank started (Held),
// a refused connection means rank 0 has exited: the rank fails at once.
// Elsewhere rank 0 may simply not be up yet, and the rank keeps trying
// until its deadline.
func TestDialHeldRendezvousGone(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	_, err = Dial(ctx, addr, DialConfig{Token: token, Rank: 1, Size: 2, Held: true})
	if err == nil || !strings.Contains(err.Error(), "rank 0, which hosts it, has exited") {
		t.Errorf("held: err = %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("held: took %v", took)
	}
	sctx, scancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer scancel()
	if _, err := Dial(sctx, addr, DialConfig{Token: token, Rank: 1, Size: 2}); err == nil || !strings.Contains(err.Error(), "unreachable") {
		t.Errorf("not held: err = %v", err)
	}
}
