package host

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/numeric"
)

// linkPair sets up a shared-memory link over a real loopback connection,
// the dialing side offering and the accepting side answering, as the mesh
// does.
func linkPair(t *testing.T, groupSize int) (dialer, acceptor link) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type result struct {
		l   link
		err error
	}
	accepted := make(chan result, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			accepted <- result{nil, err}
			return
		}
		l, err := answerLink(context.Background(), c, TransportSharedMemory)
		accepted <- result{l, err}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	d, err := offerLink(context.Background(), c, TransportSharedMemory, groupSize)
	a := <-accepted
	if err != nil || a.err != nil {
		t.Fatalf("offer: %v, answer: %v", err, a.err)
	}
	t.Cleanup(func() { d.Close(); a.l.Close() })
	return d, a.l
}

// eachWait runs test with both sides sleeping on channels, as two ranks
// of one process do, and on the futex, as ranks of two processes do.
func eachWait(t *testing.T, test func(*testing.T)) {
	for _, futex := range []bool{false, true} {
		name := "bells"
		if futex {
			name = "futex"
		}
		t.Run(name, func(t *testing.T) {
			saved := bellsInProcess
			bellsInProcess = !futex
			t.Cleanup(func() { bellsInProcess = saved })
			test(t)
			d, _ := linkPair(t, 2)
			if got := d.(*shmLink).tx.headBell == nil; got != futex {
				t.Errorf("the futex path was taken: %v", got)
			}
		})
	}
}

// Messages of every length around the ring's size and the publish step,
// both ways at once, arrive whole and in order; the ring wraps many times.
func TestShmLinkCarriesBytes(t *testing.T) { eachWait(t, shmLinkCarriesBytes) }

func shmLinkCarriesBytes(t *testing.T) {
	d, a := linkPair(t, 4)
	ring := d.(*shmLink).ringSize
	lengths := []int{1, 7, publishBytes - 1, publishBytes, publishBytes + 1, ring - 1, ring, ring + 1, 3*ring + 12345}
	rng := rand.New(rand.NewPCG(1, 2))
	send := func(w io.Writer, msgs [][]byte) error {
		for _, m := range msgs {
			if _, err := w.Write(m); err != nil {
				return err
			}
		}
		return nil
	}
	check := func(r io.Reader, msgs [][]byte) error {
		for i, m := range msgs {
			got := make([]byte, len(m))
			if _, err := io.ReadFull(r, got); err != nil {
				return err
			}
			if !bytes.Equal(got, m) {
				return fmt.Errorf("message %d (%d bytes) differs", i, len(m))
			}
		}
		return nil
	}
	msgs := make([][]byte, len(lengths))
	for i, n := range lengths {
		msgs[i] = make([]byte, n)
		for j := range msgs[i] {
			msgs[i][j] = byte(rng.Uint32())
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i, f := range []func() error{
		func() error { return send(d, msgs) }, func() error { return check(a, msgs) },
		func() error { return send(a, msgs) }, func() error { return check(d, msgs) },
	} {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = f() }()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("side %d: %v", i, err)
		}
	}
}

// What a peer wrote before it closed is still read, then the reader gets
// EOF; a writer to a closed peer fails instead of waiting for space.
func TestShmLinkPeerClose(t *testing.T) { eachWait(t, shmLinkPeerClose) }

func shmLinkPeerClose(t *testing.T) {
	d, a := linkPair(t, 2)
	if _, err := d.Write([]byte("last words")); err != nil {
		t.Fatal(err)
	}
	d.Close()
	got := make([]byte, 10)
	if _, err := io.ReadFull(a, got); err != nil || string(got) != "last words" {
		t.Fatalf("read %q, %v", got, err)
	}
	if _, err := a.Read(got); err != io.EOF {
		t.Errorf("read after the data: %v, want EOF", err)
	}
	big := make([]byte, 4*a.(*shmLink).ringSize)
	if _, err := a.Write(big); !errors.Is(err, errPeerClosed) {
		t.Errorf("write to a closed peer: %v", err)
	}
}

// Closing a side wakes its own reader and writer that sleep on the futex.
func TestShmLinkCloseWakesWaiters(t *testing.T) { eachWait(t, shmLinkCloseWakesWaiters) }

func shmLinkCloseWakesWaiters(t *testing.T) {
	d, _ := linkPair(t, 2)
	errs := make(chan error, 2)
	go func() { _, err := d.Read(make([]byte, 1)); errs <- err }()
	go func() { _, err := d.Write(make([]byte, 8*d.(*shmLink).ringSize)); errs <- err }()
	time.Sleep(2 * probeEvery) // both asleep
	d.Close()
	for range 2 {
		select {
		case err := <-errs:
			if err == nil {
				t.Error("a call on a closed link succeeded")
			}
		case <-time.After(time.Minute):
			t.Fatal("Close left a call waiting")
		}
	}
}

// A peer whose process ends without closing the link (killed: the kernel
// closes its socket, nothing is written to the segment) is noticed by a
// reader asleep on the futex.
func TestShmLinkNoticesDeadPeer(t *testing.T) { eachWait(t, shmLinkNoticesDeadPeer) }

func shmLinkNoticesDeadPeer(t *testing.T) {
	d, a := linkPair(t, 2)
	done := make(chan error, 1)
	go func() { _, err := a.Read(make([]byte, 1)); done <- err }()
	time.Sleep(probeEvery / 2)
	d.(*shmLink).conn.Close() // what the kernel does for a killed process
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "peer") {
			t.Errorf("read from a dead peer: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the reader still waits for a dead peer")
	}
}

// A segment is unlinked once both sides mapped it, and a path that is
// not a segment of ours (elsewhere, a FIFO, a wrong nonce) is not mapped.
func TestSegments(t *testing.T) {
	linkPair(t, 2)
	left, _ := filepath.Glob(filepath.Join(shmDir, "collbench-"+strconv.Itoa(os.Getpid())+"-*"))
	if len(left) != 0 {
		t.Errorf("segments left behind: %v", left)
	}
	path, mem, nonce, err := createSegment(ringFor(2))
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(path)
	defer syscall.Munmap(mem)
	fifo := filepath.Join(shmDir, "collbench-fifo-"+strconv.Itoa(os.Getpid()))
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(fifo)
	for _, c := range []struct {
		path  string
		nonce []byte
	}{
		{"/etc/passwd", nonce},
		{fifo, nonce},
		{path, make([]byte, nonceLen)},
		{filepath.Join(shmDir, "..", filepath.Base(path)), nonce},
	} {
		if m, _, err := openSegment(c.path, c.nonce); err == nil {
			syscall.Munmap(m)
			t.Errorf("%s was mapped", c.path)
		}
	}
	if m, _, err := openSegment(path, nonce); err != nil {
		t.Errorf("the segment itself: %v", err)
	} else {
		syscall.Munmap(m)
	}
}

// Where no segment can be made (here: no tmpfs folder), auto joins the
// ranks over TCP and says so in the device name, and shm refuses in a
// sentence.
func TestTransportFallback(t *testing.T) {
	saved := shmDir
	shmDir = filepath.Join(t.TempDir(), "missing")
	t.Cleanup(func() { shmDir = saved })
	s := bench.Setup{JobRanks: 3, LocalRanks: 3, BufBytes: 1 << 10}
	comm, err := Backend{}.Open(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range comm.Devices() {
		if d.Name != "host CPU (TCP loopback)" {
			t.Errorf("rank %d: %q", d.Rank, d.Name)
		}
	}
	comm.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = Backend{Transport: TransportSharedMemory}.Open(ctx, s)
	if err == nil || !strings.Contains(err.Error(), "no shared memory with the peer") || !strings.Contains(err.Error(), "missing") {
		t.Errorf("shm without a tmpfs: %v", err)
	}
}

func TestParseTransport(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Transport
		ok   bool
	}{{"auto", TransportAuto, true}, {"tcp", TransportTCP, true}, {"shm", TransportSharedMemory, true}, {"SHM", 0, false}, {"", 0, false}} {
		got, err := ParseTransport(c.in)
		if (err == nil) != c.ok || (c.ok && got != c.want) {
			t.Errorf("%q: %v, %v", c.in, got, err)
		}
		if c.ok && got.String() != c.in {
			t.Errorf("%v prints as %q", got, got.String())
		}
	}
}

// A tmpfs too small for every segment (a container's /dev/shm) gives
// shared memory to the pairs that fit and TCP to the others under auto,
// with every result right; no segment is left in it.
func TestTransportFullTmpfs(t *testing.T) {
	dir := t.TempDir()
	size := segmentSize(ringFor(3)) + segmentSize(ringFor(3))/2 // one segment fits, not two
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+strconv.Itoa(size)); err != nil {
		t.Skipf("cannot mount a small tmpfs here (%v)", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	saved := shmDir
	shmDir = dir
	t.Cleanup(func() { shmDir = saved })
	comm := openVia(t, TransportAuto, 3, 1<<16)
	shared := 0
	for _, d := range comm.Devices() {
		if strings.Contains(d.Name, "shared memory, TCP loopback") {
			shared++
		}
	}
	if shared != 2 { // the two ranks of the one pair that fit
		t.Errorf("%d ranks with one shared-memory peer, want 2: %v", shared, comm.Devices())
	}
	coll, _ := bench.LookupCollective("allreduce")
	o := bench.Options{Coll: coll, Sweep: bench.Sweep{Min: 1 << 10, Max: 1 << 16, Factor: 8}, Iters: 2, Warmup: 1,
		Agg: 1, Cycles: 1, Check: 1, Types: []numeric.DataType{numeric.Float32}, Ops: []numeric.RedOp{numeric.Sum}, Average: 1}
	if sum, rows := runEngine(t, comm, 3, o); sum.ErrorCases != 0 || len(rows) == 0 {
		t.Errorf("%d rows, %d wrong", len(rows), sum.ErrorCases)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("left in the tmpfs: %v", left)
	}
}

// Links whose sides sleep on a futex leave the runtime a P for every
// goroutine that may sleep at once, beside one per CPU.
func TestFutexSleepersKeepProcs(t *testing.T) {
	saved, savedProcs := bellsInProcess, runtime.GOMAXPROCS(0)
	bellsInProcess = false
	t.Cleanup(func() { bellsInProcess = saved; runtime.GOMAXPROCS(savedProcs) })
	runtime.GOMAXPROCS(1)
	openVia(t, TransportSharedMemory, 3, 1<<10) // 3 links, each seen from both sides
	if got, want := runtime.GOMAXPROCS(0), runtime.NumCPU()+2*6; got < want {
		t.Errorf("GOMAXPROCS %d, want at least %d", got, want)
	}
}

// Segments whose creator is gone (killed between making a segment and its
// peer's mapping it) are removed at the next set-up; a live process's,
// and other files, stay. The creator is named by PID and start time, so a
// PID given to another process does not keep a dead creator's segment,
// and a segment made in another PID namespace (a container sharing
// /dev/shm, not PIDs) is left to that namespace.
func TestReapSegments(t *testing.T) {
	was := shmDir
	shmDir = t.TempDir()
	defer func() { shmDir = was }()
	me := os.Getpid()
	names := map[string]bool{ // name: kept
		fmt.Sprintf("collbench-%d-%s-aa", me, selfStart):            true,
		fmt.Sprintf("collbench-%d-1-bb", me):                        false, // our PID, another start: a dead creator's
		"collbench-2147483646-5-cc":                                 false, // no such process
		"collbench-2147483646-dd":                                   false, // an earlier release's, creator gone
		fmt.Sprintf("collbench-%d-ee", me):                          true,  // an earlier release's, creator alive
		fmt.Sprintf("collbench-2147483646-5-%s-ff", selfNS):         false, // this PID namespace's, creator gone
		"collbench-2147483646-5-n1-gg":                              true,  // another PID namespace's: its creator may live there
		fmt.Sprintf("collbench-%d-%s-%s-hh", me, selfStart, selfNS): true,
		"notes.txt": true,
	}
	for n := range names {
		if err := os.WriteFile(filepath.Join(shmDir, n), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	reapSegments()
	for n, kept := range names {
		if _, err := os.Stat(filepath.Join(shmDir, n)); (err == nil) != kept {
			t.Errorf("%s: kept %v, want %v", n, err == nil, kept)
		}
	}
}
