package run

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/cluster"
	"github.com/collbench/collbench/launch"
)

// Every run's start-up is bounded, a one-process run's too.
func TestStartupAlwaysBounded(t *testing.T) {
	for _, multi := range []bool{false, true} {
		if d := DeadlinesFor(0, multi); d.Bootstrap <= 0 {
			t.Errorf("multi=%v: no start-up deadline without -T: %+v", multi, d)
		}
	}
	if d := DeadlinesFor(0, false); d.Collective != 0 {
		t.Errorf("a one-process run's calls have no fixed limit without -T, as in nccl-tests: %+v", d)
	}
}

// Without -T the stall watchdog is on (it bounds calls that can stall
// silently, on GPUs, by what the run measures); -T replaces it.
func TestWatchdogUnlessTimeout(t *testing.T) {
	for _, multi := range []bool{false, true} {
		if d := DeadlinesFor(0, multi); d.Watchdog != bench.DefaultStallFloor {
			t.Errorf("multi=%v, no -T: watchdog floor %v, want %v", multi, d.Watchdog, bench.DefaultStallFloor)
		}
		if d := DeadlinesFor(5*time.Second, multi); d.Watchdog != 0 || d.Collective != 5*time.Second {
			t.Errorf("multi=%v, -T 5: %+v, want -T alone", multi, d)
		}
	}
}

// The rendezvous port launch chooses stays bound from the moment it is
// chosen until rank 0 takes the listener over, so nothing else can take it.
func TestLaunchHoldsItsPort(t *testing.T) {
	env, ln, err := launch.Env(nil, "")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var host, port string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "MASTER_ADDR="); ok {
			host = v
		}
		if v, ok := strings.CutPrefix(kv, "MASTER_PORT="); ok {
			port = v
		}
	}
	if other, err := net.Listen("tcp", net.JoinHostPort(host, port)); err == nil {
		other.Close()
		t.Fatalf("port %s was free for anybody to take before rank 0 started", port)
	}
	// The listener rank 0 inherits accepts on that port.
	l, err := listenStore(net.JoinHostPort(host, port), func(k string) string {
		if k == cluster.ListenerFDVar {
			return strconv.Itoa(int(ln.Fd()))
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.Addr().String() != net.JoinHostPort(host, port) {
		t.Errorf("inherited listener on %s, want %s:%s", l.Addr(), host, port)
	}
}

// An interrupted rank records the interruption, not the peers it lost to
// the same Ctrl-C: every rank of a job gets the signal, and one that
// stops first leaves the others waiting for it.
func TestExplainInterruption(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := cluster.Serve(ln, cluster.StoreConfig{Token: "t", Size: 1})
	defer s.Close()
	c, err := cluster.Dial(t.Context(), ln.Addr().String(), cluster.DialConfig{Token: "t", Rank: 0, Size: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	j := &Job{client: c}
	sig := errors.New("interrupt signal received")
	ctx, cancel := context.WithCancelCause(t.Context())
	cancel(sig)
	lost := fmt.Errorf("%w: rank 3 finished while the others still waited for it", cluster.ErrPeerLost)
	if got := j.Explain(ctx, lost).Error(); got != sig.Error() {
		t.Errorf("peer lost to the same interrupt: %q, want %q", got, sig.Error())
	}
	local := fmt.Errorf("allreduce of 1048576 bytes: aborted: %w", sig)
	if got := j.Explain(ctx, local).Error(); !strings.Contains(got, "allreduce of 1048576 bytes") || strings.Contains(got, "finished") {
		t.Errorf("an interrupted call: %q", got)
	}
}
