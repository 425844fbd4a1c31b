package host

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/collbench/collbench/fileio"
)

// A shared-memory link joins two ranks of one host through a segment that
// both map: a header page and two rings, one per direction. The bytes are
// still copied twice, into the ring by the sender and out of it by the
// receiver, as through a kernel socket, but with no system call while
// both sides are busy: a side sleeps on a futex only when its ring is
// empty (or full), and the other wakes it only when it said it sleeps.
//
// The header page holds, at these offsets:
const (
	offMagic  = 0   // segmentMagic
	offNonce  = 16  // the creator's random nonce, also sent over TCP
	offClosed = 64  // uint32: set by a side that closes its end
	offRings  = 128 // each ring's counters, ringCounters bytes apart
	// A ring's counters: head (bytes written, mod 2^32) and the writer's
	// "waiting for space" flag on one cache line, tail (bytes read) and
	// the reader's "waiting for data" flag on the next.
	ringCounters = 128
	offHead      = 0
	offWriterWt  = 4
	offTail      = 64
	offReaderWt  = 68
	headerBytes  = 4096
)

var segmentMagic = []byte("collbench-shm-1\x00")

// shmDir is where segments are created: a tmpfs on Linux. A segment is
// unlinked as soon as the peer has mapped it (or refused it).
var shmDir = "/dev/shm"

// ringFor is each direction's ring size for a group of n ranks: large
// rings stream big messages with fewer sleeps; groups of many ranks, each
// with a link to every other, take smaller ones. Every size holds four of
// the largest message a rank writes before it reads (inlineLimit).
func ringFor(n int) int {
	if n > 8 {
		return 256 << 10
	}
	return 1 << 20
}

// publishBytes is the most a writer copies into a ring before it moves the
// head, so that the reader starts on a large message while the rest is
// being copied.
const publishBytes = 64 << 10

// spinChecks is how many times a side looks at its ring before it starts
// yielding, and yieldChecks how many times it yields the CPU and looks
// again before it sleeps. A peer that runs usually answers within that
// time, and a sleep and wake-up cost more than looking; on a host with
// more ranks than cores, yielding hands the core to the peer this side
// waits for. Side by side (4 processes on 2 cores, 64 KiB, 100 calls,
// three interleaved runs), 64 and 256 yields were 1.1-2.1x as fast as
// none for all-reduce, all-to-all, all-gather and reduce-scatter.
var (
	spinChecks  = 64
	yieldChecks = 128
)

// probeEvery is how long a side sleeps on its futex before it checks that
// the peer's process is still there.
const probeEvery = 50 * time.Millisecond

// errPeerClosed is a write to (or a read past the data of) a link whose
// other end was closed.
var errPeerClosed = errors.New("the peer closed the shared-memory link")

// ring is one direction of a link, as seen by either side. headBell and
// tailBell are set when both sides are in this process: a side then
// sleeps on a channel, which lets the Go scheduler run other goroutines
// on its thread, where a futex wait would hold the thread (and the
// ranks of one process may outnumber GOMAXPROCS).
type ring struct {
	head, tail             *atomic.Uint32
	writerWaits, readerWts *atomic.Uint32
	data                   []byte // a power of two in length
	headBell, tailBell     chan struct{}
}

// bells are the channels of a link whose two sides are in this process,
// by ring and by counter (head, tail).
type bells [2][2]chan struct{}

func newBells() *bells {
	var b bells
	for i := range b {
		for j := range b[i] {
			b[i][j] = make(chan struct{}, 1)
		}
	}
	return &b
}

// localSegments holds the bells of segments this process offered and has
// not yet heard the answer for: a peer in this process finds them here.
var localSegments sync.Map // path → *bells

// sleep waits on w (futex) or on its bell until w may have changed from
// stale, for at most d; it reports whether the time ran out.
func sleep(w *atomic.Uint32, bell chan struct{}, stale uint32, d time.Duration) bool {
	if bell == nil {
		return waitWord(w, stale, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-bell:
		return false
	case <-t.C:
		return true
	}
}

// yield gives the CPU to others: to other processes (sched_yield) when
// the peer is in another process, to other goroutines when it is in this
// one (bell set), where sched_yield would keep this thread's P busy.
func yield(bell chan struct{}) {
	if bell != nil {
		runtime.Gosched()
		return
	}
	_, _, _ = syscall.Syscall(syscall.SYS_SCHED_YIELD, 0, 0, 0)
}

// ensureProcs raises GOMAXPROCS, never lowers it, so that the goroutines
// that may sleep on a futex at once (a reader and a writer on each link
// to another process) cannot hold every P: a goroutine in a system call
// keeps its P until the runtime's monitor takes it back, up to
// milliseconds later, and meanwhile the ranks' other goroutines wait. Side
// by side, an all-to-all of 1 MiB over 4 processes on 2 cores ran at
// 0.47-0.63 GB/s with GOMAXPROCS 2 and 1.06-1.78 with 8.
func ensureProcs(m *mesh) {
	sleepers := 0
	for _, row := range m.conns {
		for _, l := range row {
			if s, ok := l.(*shmLink); ok && s.rx.headBell == nil {
				sleepers += 2
			}
		}
	}
	procsMu.Lock()
	defer procsMu.Unlock()
	if want := runtime.NumCPU() + sleepers; sleepers > 0 && runtime.GOMAXPROCS(0) < want {
		runtime.GOMAXPROCS(want)
	}
}

var procsMu sync.Mutex

// wake wakes the side that sleeps on w.
func wake(w *atomic.Uint32, bell chan struct{}) {
	if bell == nil {
		wakeWord(w)
		return
	}
	select {
	case bell <- struct{}{}:
	default:
	}
}

// shmLink is a rank's end of a shared-memory link. It keeps the TCP
// connection it was set up over: closing that too tells a peer that is
// asleep on the futex, and a peer whose process died is noticed by its
// connection's end.
type shmLink struct {
	conn     net.Conn
	mem      []byte
	tx, rx   ring
	closed   *atomic.Uint32 // in the segment: either side closed
	ringSize int

	done     atomic.Bool // this side closed
	wmu, rmu sync.Mutex  // one writer and one reader at a time, as on a socket
	// life is held for reading while Read or Write touches the mapping,
	// and for writing while Close unmaps it.
	life  sync.RWMutex
	probe sync.Mutex
}

func segmentSize(ring int) int { return headerBytes + 2*ring }

// selfStart is this process's start time, in clock ticks after boot:
// with the PID, what names a segment's creator, so that one left by a
// process that is gone can be told from one whose PID was given again.
var selfStart = fileio.ProcStart(os.Getpid())

// selfNS is this process's PID namespace, the third part of that name.
var selfNS = fileio.PIDNamespace()

// reapSegments removes the segments in shmDir whose creator is gone: a
// segment is unlinked once its peer has mapped it, so only a process
// killed in between leaves one, and every host set-up clears them.
func reapSegments() {
	entries, err := os.ReadDir(shmDir)
	if err != nil {
		return
	}
	for _, e := range entries {
		// collbench-PID-START-nNS-RANDOM; earlier releases wrote
		// collbench-PID-START-RANDOM and collbench-PID-RANDOM, whose
		// creator lives while its PID does. A segment made in another
		// PID namespace (a container sharing /dev/shm, not PIDs) is not
		// this /proc's to judge.
		parts := strings.Split(e.Name(), "-")
		if len(parts) == 5 && parts[0] == "collbench" {
			if !fileio.Ours(parts[3]) {
				continue
			}
			parts = append(parts[:3], parts[4])
		}
		if (len(parts) != 4 && len(parts) != 3) || parts[0] != "collbench" {
			continue
		}
		pid, err := strconv.Atoi(parts[1])
		start := fileio.ProcStart(pid)
		if err != nil || start != "" && (len(parts) == 3 || start == parts[2]) {
			continue // its creator lives
		}
		os.Remove(filepath.Join(shmDir, e.Name())) // another user's stays: not ours to remove
	}
}

// createSegment makes, reserves and maps a new segment for rings of ring
// bytes. The space is reserved with fallocate, so that a full tmpfs (a
// container's small /dev/shm) fails here, in a sentence, instead of
// killing the process with SIGBUS on first touch.
func createSegment(ring int) (path string, mem, nonce []byte, err error) {
	name := make([]byte, 8)
	nonce = make([]byte, 16)
	if _, err := rand.Read(name); err != nil {
		return "", nil, nil, err
	}
	if _, err := rand.Read(nonce); err != nil {
		return "", nil, nil, err
	}
	path = filepath.Join(shmDir, fmt.Sprintf("collbench-%d-%s-%s-%s", os.Getpid(), selfStart, selfNS, hex.EncodeToString(name)))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return "", nil, nil, fmt.Errorf("creating a shared-memory segment: %w", err)
	}
	defer f.Close()
	size := segmentSize(ring)
	if err := syscall.Fallocate(int(f.Fd()), 0, 0, int64(size)); err != nil {
		os.Remove(path)
		return "", nil, nil, fmt.Errorf("reserving %d bytes in %s: %w", size, shmDir, err)
	}
	mem, err = syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED|syscall.MAP_POPULATE)
	if err != nil {
		os.Remove(path)
		return "", nil, nil, fmt.Errorf("mapping %s: %w", path, err)
	}
	copy(mem[offMagic:], segmentMagic)
	copy(mem[offNonce:], nonce)
	return path, mem, nonce, nil
}

// openSegment maps a segment a peer created, after checking that the path
// is one of ours in shmDir, a regular file of a segment's size, and holds
// the nonce the peer sent: proof that both sides see the same memory.
func openSegment(path string, nonce []byte) ([]byte, int, error) {
	if filepath.Dir(path) != filepath.Clean(shmDir) || !strings.HasPrefix(filepath.Base(path), "collbench-") {
		return nil, 0, fmt.Errorf("%q is not a segment in %s", path, shmDir)
	}
	f, err := os.OpenFile(path, os.O_RDWR|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	ring := int((st.Size() - headerBytes) / 2)
	if !st.Mode().IsRegular() || ring < 4*inlineSend || ring&(ring-1) != 0 || int64(segmentSize(ring)) != st.Size() {
		return nil, 0, fmt.Errorf("%s is not a segment (%d bytes)", path, st.Size())
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, int(st.Size()), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED|syscall.MAP_POPULATE)
	if err != nil {
		return nil, 0, fmt.Errorf("mapping %s: %w", path, err)
	}
	if !bytes.Equal(mem[offMagic:offMagic+len(segmentMagic)], segmentMagic) || !bytes.Equal(mem[offNonce:offNonce+len(nonce)], nonce) {
		syscall.Munmap(mem)
		return nil, 0, fmt.Errorf("%s holds another segment", path)
	}
	return mem, ring, nil
}

func word(mem []byte, off int) *atomic.Uint32 { return (*atomic.Uint32)(unsafe.Pointer(&mem[off])) }

// newShmLink is one side's view of a mapped segment: the side that
// created it writes ring 0 and reads ring 1, the other the reverse.
func newShmLink(conn net.Conn, mem []byte, ringSize int, creator bool, local *bells) *shmLink {
	rings := [2]ring{}
	for d := range rings {
		base := offRings + d*ringCounters
		data := headerBytes + d*ringSize
		rings[d] = ring{head: word(mem, base+offHead), tail: word(mem, base+offTail),
			writerWaits: word(mem, base+offWriterWt), readerWts: word(mem, base+offReaderWt),
			data: mem[data : data+ringSize : data+ringSize]}
		if local != nil {
			rings[d].headBell, rings[d].tailBell = local[d][0], local[d][1]
		}
	}
	l := &shmLink{conn: conn, mem: mem, closed: word(mem, offClosed), ringSize: ringSize, tx: rings[0], rx: rings[1]}
	if !creator {
		l.tx, l.rx = rings[1], rings[0]
	}
	return l
}

// enter takes a side's lock (wmu or rmu) and holds the mapping; false
// when this side is closed, with nothing held.
func (l *shmLink) enter(side *sync.Mutex) bool {
	side.Lock()
	l.life.RLock()
	if l.done.Load() {
		l.leave(side)
		return false
	}
	return true
}

func (l *shmLink) leave(side *sync.Mutex) {
	l.life.RUnlock()
	side.Unlock()
}

// Write copies b into the ring towards the peer, waiting for space as a
// socket write waits for its buffer.
func (l *shmLink) Write(b []byte) (int, error) {
	if !l.enter(&l.wmu) {
		return 0, net.ErrClosed
	}
	defer l.leave(&l.wmu)
	r, size := &l.tx, uint32(l.ringSize)
	n := 0
	for n < len(b) {
		head := r.head.Load()
		free := int(size - (head - r.tail.Load()))
		if free == 0 {
			if err := l.await(r.tail, r.tailBell, r.writerWaits, head-size, true); err != nil {
				return n, err
			}
			continue
		}
		k := min(free, len(b)-n, publishBytes)
		off := int(head & (size - 1))
		c := copy(r.data[off:], b[n:n+k])
		copy(r.data, b[n+c:n+k])
		r.head.Store(head + uint32(k))
		if r.readerWts.Load() != 0 {
			wake(r.head, r.headBell)
		}
		n += k
	}
	return n, nil
}

// Read copies what has arrived, up to len(b) bytes, waiting until there
// is some. Bytes the peer wrote before it closed are still read.
func (l *shmLink) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	if !l.enter(&l.rmu) {
		return 0, net.ErrClosed
	}
	defer l.leave(&l.rmu)
	r, size := &l.rx, uint32(l.ringSize)
	tail := r.tail.Load()
	if r.head.Load() == tail {
		if err := l.await(r.head, r.headBell, r.readerWts, tail, false); err != nil {
			return 0, err
		}
	}
	k := min(int(r.head.Load()-tail), len(b))
	off := int(tail & (size - 1))
	c := copy(b[:k], r.data[off:])
	copy(b[c:k], r.data)
	r.tail.Store(tail + uint32(k))
	if r.writerWaits.Load() != 0 {
		wake(r.tail, r.tailBell)
	}
	return k, nil
}

// await returns once w no longer holds stale: it looks spinChecks times,
// then says it sleeps (flag) and sleeps on the futex. The other side
// stores w before it reads flag, and this side stores flag before it reads
// w, so one of them sees the other: no wake-up is lost. It fails when
// this side is closed, when the peer closed (for a writer at once, for a
// reader once the data is read), or when the peer's process is gone.
func (l *shmLink) await(w *atomic.Uint32, bell chan struct{}, flag *atomic.Uint32, stale uint32, writer bool) error {
	for range spinChecks {
		if w.Load() != stale {
			return nil
		}
	}
	for range yieldChecks {
		if w.Load() != stale {
			return nil
		}
		yield(bell)
	}
	for {
		flag.Store(1)
		if w.Load() != stale {
			flag.Store(0)
			return nil
		}
		if l.done.Load() {
			flag.Store(0)
			return net.ErrClosed
		}
		if l.closed.Load() != 0 {
			flag.Store(0)
			if writer {
				return errPeerClosed
			}
			return io.EOF
		}
		timedOut := sleep(w, bell, stale, probeEvery)
		flag.Store(0)
		if w.Load() != stale {
			return nil
		}
		if timedOut {
			if err := l.peerAlive(); err != nil {
				return err
			}
		}
	}
}

// peerAlive peeks at the link's TCP connection without waiting: nothing
// to read means the peer is there; its end (EOF, reset) means it is gone.
func (l *shmLink) peerAlive() error {
	if !l.probe.TryLock() {
		return nil
	}
	defer l.probe.Unlock()
	sc, ok := l.conn.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	var n int
	var rerr error
	buf := make([]byte, 1)
	if err := raw.Read(func(fd uintptr) bool {
		n, _, rerr = syscall.Recvfrom(int(fd), buf, syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		return true
	}); err != nil {
		return fmt.Errorf("the peer's connection: %w", err)
	}
	switch {
	case rerr == syscall.EAGAIN:
		return nil
	case rerr != nil:
		return fmt.Errorf("the peer's connection: %w", rerr)
	case n == 0:
		return errors.New("the peer's process closed its connection")
	}
	return nil
}

// Close ends this side: the peer is told through the segment and through
// the connection, sleepers on either side are woken, and once no Read or
// Write is inside the mapping it is unmapped.
func (l *shmLink) Close() error {
	if l.done.Swap(true) {
		return nil
	}
	l.closed.Store(1)
	for _, r := range []*ring{&l.tx, &l.rx} {
		wake(r.head, r.headBell)
		wake(r.tail, r.tailBell)
	}
	err := l.conn.Close()
	l.life.Lock()
	defer l.life.Unlock()
	if l.mem != nil {
		syscall.Munmap(l.mem)
		l.mem = nil
	}
	return err
}
