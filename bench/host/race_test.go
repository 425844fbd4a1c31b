package host

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/numeric"
)

// Enqueue racing Close never sends on a closed queue: it succeeds or says
// the communicator was aborted.
func TestEnqueueAgainstClose(t *testing.T) {
	coll, _ := bench.LookupCollective("allreduce")
	op := bench.Op{Coll: coll, Type: numeric.Float32, RedOp: numeric.Sum, Counts: coll.Counts(2, 4, 1)}
	for round := 0; round < 300; round++ {
		comm, err := Backend{}.Open(context.Background(), bench.Setup{JobRanks: 1, LocalRanks: 1, BufBytes: 64})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		started := make(chan struct{}, 4)
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					if err := comm.Enqueue(bench.Batch{Op: op, Iters: 1, Agg: 1}); err != nil {
						return
					}
					if i == 0 {
						started <- struct{}{}
					}
				}
			}()
		}
		<-started // Close lands while the queues are busy
		comm.Close()
		wg.Wait()
	}
}

// More compute batches than the queue holds, enqueued without waiting,
// all run: a full queue waits for its loop instead of blocking it.
func TestEnqueueComputeBeyondQueue(t *testing.T) {
	comm := open(t, 2, 64).(*Comm)
	if err := comm.SetWorkload(bench.Workload{Kind: bench.Copy, Bytes: 4 << 10}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		for i := 0; i < 20; i++ {
			if err := comm.EnqueueCompute(1); err != nil {
				done <- err
				return
			}
		}
		_, err := comm.WaitCompute(context.Background())
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("20 compute batches without waiting deadlocked the compute streams")
	}
}

// A handshake that completes after the mesh gave up is refused: its
// connection is closed, not stored in a mesh nobody will close again.
func TestLateHandshakeAfterFailedMesh(t *testing.T) {
	var mine endpoint
	published := make(chan struct{})
	s := bench.Setup{JobRanks: 2, LocalRanks: 1, BufBytes: 64,
		Exchange: func(ctx context.Context, blob []byte) ([][]byte, error) {
			if err := json.Unmarshal(blob, &mine); err != nil {
				return nil, err
			}
			close(published)
			other, _ := json.Marshal(endpoint{Key: make([]byte, keyLen), Addrs: map[int]string{1: "127.0.0.1:9"}})
			return [][]byte{blob, other}, nil
		}}
	ctx, cancel := context.WithCancel(context.Background())
	failed := make(chan error, 1)
	go func() {
		_, err := dialMesh(ctx, s, []member{{local: 0, global: 0}}, TransportAuto)
		failed <- err
	}()
	<-published
	// Rank 1 connects but has not said hello when the mesh is given up.
	c, err := net.Dial("tcp", mine.Addrs[0])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	time.Sleep(50 * time.Millisecond) // let the listener take it
	cancel()
	if err := <-failed; !errors.Is(err, context.Canceled) {
		t.Fatalf("dialMesh: %v, want the cancellation", err)
	}
	hello := make([]byte, 4+keyLen)
	binary.LittleEndian.PutUint32(hello, 1)
	copy(hello[4:], mine.Key)
	c.Write(hello)
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !isReset(err) {
		t.Errorf("the late connection was kept open (read: %v)", err)
	}
}

func isReset(err error) bool {
	var ne *net.OpError
	return errors.As(err, &ne) && !ne.Timeout()
}
