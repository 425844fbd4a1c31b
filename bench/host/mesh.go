package host

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/collbench/collbench/bench"
)

// socketBuffer is the kernel buffer size asked for on every connection;
// large buffers keep loopback transfers of big messages streaming.
var socketBuffer = 4 << 20

// keyLen is the length of the secret a peer must present when it connects
// to a rank's listener; the key travels only through the job's exchange.
const keyLen = 16

// helloTimeout bounds how long an accepted connection may take to say who
// it is, so a silent stranger cannot stall the mesh.
const helloTimeout = 10 * time.Second

// member is one local rank that takes part: where it stands in the job and
// in its group.
type member struct {
	local, global    int
	group, groupRank int
}

// mesh holds one link between every pair of ranks of a group: conns[i][p]
// is local member i's link to the rank at group rank p, a TCP connection
// or shared memory set up over one (Transport).
// While it is being built, connections land in it under mu; once closed,
// a connection that completes its handshake late is closed, not stored.
type mesh struct {
	conns [][]link
	hosts map[int]string // global rank → the host its address names

	mu      sync.Mutex
	closed  bool
	pending map[net.Conn]bool // accepted, still saying hello
}

// endpoint is what a process publishes about itself through the exchange.
type endpoint struct {
	Key   []byte         `json:"key"`
	Addrs map[int]string `json:"addrs"` // global rank → host:port
}

// dialMesh connects every member to the other ranks of its group, in this
// process or others: each member listens, the listeners' addresses and the
// process's key go round through s.Exchange, then every rank dials each
// lower rank of its group and presents its number and that process's key.
// The first failure (a refused dial, a failed accept) cancels the rest.
func dialMesh(ctx context.Context, s bench.Setup, members []member, t Transport) (*mesh, error) {
	key := make([]byte, keyLen)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("making the mesh key: %w", err)
	}
	bind, advertise := "127.0.0.1", "127.0.0.1"
	if s.Addr != "" {
		bind, advertise = "", s.Addr
	}
	lns := make([]net.Listener, len(members))
	defer closeAll(lns)
	mine := endpoint{Key: key, Addrs: map[int]string{}}
	for i, m := range members {
		var lc net.ListenConfig
		ln, err := lc.Listen(ctx, "tcp", net.JoinHostPort(bind, "0"))
		if err != nil {
			return nil, fmt.Errorf("rank %d listening: %w", m.global, err)
		}
		lns[i] = ln
		_, port, _ := net.SplitHostPort(ln.Addr().String())
		mine.Addrs[m.global] = net.JoinHostPort(advertise, port)
	}
	addrs, keys, err := exchangeEndpoints(ctx, s, mine)
	if err != nil {
		return nil, err
	}
	bctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(bctx, func() { closeAll(lns) })
	defer stop()

	size := s.Groups.Of(s.JobRanks)
	msh := &mesh{conns: make([][]link, len(members)), pending: map[net.Conn]bool{}, hosts: map[int]string{}}
	for rank, a := range addrs {
		msh.hosts[rank], _, _ = net.SplitHostPort(a)
	}
	var wg sync.WaitGroup
	for i, m := range members {
		msh.conns[i] = make([]link, size)
		wg.Add(2)
		go func() {
			defer wg.Done()
			if err := msh.accept(bctx, lns[i], i, m, s, key, t); err != nil {
				cancel(err)
			}
		}()
		go func() {
			defer wg.Done()
			for p := 0; p < m.groupRank; p++ {
				peer := s.Groups.Member(s.JobRanks, m.group, p)
				c, err := dialPeer(bctx, addrs[peer], m.global, keys[peer])
				var l link
				if err == nil {
					if l, err = offerLink(bctx, c, t, size); err != nil {
						c.Close()
					}
				}
				if err != nil {
					cancel(fmt.Errorf("rank %d connecting to rank %d at %s: %w", m.global, peer, addrs[peer], err))
					return
				}
				if !msh.store(i, p, l) {
					return
				}
			}
		}()
	}
	wg.Wait()
	if bctx.Err() == nil {
		return msh, nil
	}
	msh.close()
	err = context.Cause(bctx)
	if ctx.Err() != nil {
		if cause := context.Cause(ctx); cause != ctx.Err() {
			return nil, fmt.Errorf("connecting the ranks: %w", cause)
		}
		return nil, fmt.Errorf("connecting the ranks: %w", ctx.Err())
	}
	return nil, err
}

// nodes counts the hosts group's ranks are on, as their addresses name
// them (a tuner file's rows match a communicator's nodes).
func (msh *mesh) nodes(s bench.Setup, group int) int {
	seen := map[string]bool{}
	for p := 0; p < s.Groups.Of(s.JobRanks); p++ {
		seen[msh.hosts[s.Groups.Member(s.JobRanks, group, p)]] = true
	}
	return len(seen)
}

// store puts a finished link in place, or closes it when the mesh was
// closed meanwhile; it reports whether the link was kept.
func (msh *mesh) store(i, p int, c link) bool {
	msh.mu.Lock()
	defer msh.mu.Unlock()
	if msh.closed || msh.conns[i][p] != nil {
		c.Close()
		return false
	}
	msh.conns[i][p] = c
	return true
}

// exchangeEndpoints publishes this process's endpoint and returns every
// rank's address and the key of the process that holds it.
func exchangeEndpoints(ctx context.Context, s bench.Setup, mine endpoint) (map[int]string, map[int][]byte, error) {
	blob, err := json.Marshal(mine)
	if err != nil {
		return nil, nil, err
	}
	parts := [][]byte{blob}
	if s.Exchange != nil {
		if parts, err = s.Exchange(ctx, blob); err != nil {
			return nil, nil, fmt.Errorf("exchanging rank addresses: %w", err)
		}
	}
	addrs, keys := map[int]string{}, map[int][]byte{}
	for proc, part := range parts {
		var ep endpoint
		if err := json.Unmarshal(part, &ep); err != nil || len(ep.Key) != keyLen {
			return nil, nil, fmt.Errorf("process %d published an unreadable endpoint", proc)
		}
		for r, a := range ep.Addrs {
			addrs[r], keys[r] = a, ep.Key
		}
	}
	return addrs, keys, nil
}

// dialPeer connects to a peer's listener and introduces rank self with the
// peer process's key.
func dialPeer(ctx context.Context, addr string, self int, key []byte) (net.Conn, error) {
	if addr == "" {
		return nil, errors.New("the rank published no address")
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	hello := make([]byte, 4+keyLen)
	binary.LittleEndian.PutUint32(hello, uint32(self))
	copy(hello[4:], key)
	if _, err := c.Write(hello); err != nil {
		c.Close()
		return nil, err
	}
	tune(c)
	return c, nil
}

// accept takes one connection from every higher rank of member i's group.
// Each newcomer is heard on its own, so connections that present a wrong
// key, an unexpected rank or nothing at all are dropped without holding up
// the real peers. A listener that fails (out of descriptors) is an error,
// not a silent wait.
func (msh *mesh) accept(ctx context.Context, ln net.Listener, i int, m member, s bench.Setup, key []byte, t Transport) error {
	want := s.Groups.Of(s.JobRanks) - 1 - m.groupRank
	if want == 0 {
		return nil
	}
	done := make(chan struct{})
	failed := make(chan error, 1)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				failed <- err
				return
			}
			if !msh.greet(c) {
				c.Close()
				return
			}
			go func() {
				peer, ok := readHello(c, key)
				group, gr, active := s.Groups.Place(s.JobRanks, peer)
				wanted := func() bool {
					return !msh.closed && ok && peer >= 0 && peer < s.JobRanks && active && group == m.group && gr > m.groupRank && msh.conns[i][gr] == nil
				}
				msh.mu.Lock()
				fit := wanted()
				msh.mu.Unlock()
				var l link = c
				if fit {
					tune(c)
					var err error
					if l, err = answerLink(ctx, c, t); err != nil {
						l, fit = c, false
						if errors.Is(err, errNoSharedMemory) {
							select {
							case failed <- err:
							default:
							}
						}
					}
				}
				msh.mu.Lock()
				defer msh.mu.Unlock()
				delete(msh.pending, c)
				if !fit || !wanted() {
					l.Close()
					return
				}
				msh.conns[i][gr] = l
				if want--; want == 0 {
					close(done)
				}
			}()
		}
	}()
	select {
	case <-done:
		return nil
	case err := <-failed:
		if ctx.Err() != nil {
			return fmt.Errorf("rank %d waiting for its peers: %w", m.global, ctx.Err())
		}
		return fmt.Errorf("rank %d accepting its peers: %w", m.global, err)
	case <-ctx.Done():
		return fmt.Errorf("rank %d waiting for its peers: %w", m.global, ctx.Err())
	}
}

// greet records a connection that has yet to say hello, so that closing
// the mesh closes it too; false when the mesh is closed already.
func (msh *mesh) greet(c net.Conn) bool {
	msh.mu.Lock()
	defer msh.mu.Unlock()
	if msh.closed {
		return false
	}
	msh.pending[c] = true
	return true
}

func readHello(c net.Conn, key []byte) (int, bool) {
	hello := make([]byte, 4+keyLen)
	_ = c.SetReadDeadline(time.Now().Add(helloTimeout))
	if _, err := io.ReadFull(c, hello); err != nil {
		return 0, false
	}
	_ = c.SetReadDeadline(time.Time{})
	if subtle.ConstantTimeCompare(hello[4:], key) != 1 {
		return 0, false
	}
	return int(int32(binary.LittleEndian.Uint32(hello))), true
}

func tune(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
		_ = tc.SetReadBuffer(socketBuffer)
		_ = tc.SetWriteBuffer(socketBuffer)
	}
}

// sendBuffer is the send buffer the kernel gave c (SO_SNDBUF, which
// Linux doubles from what was asked and caps at wmem_max), or 0 when it
// cannot be read.
func sendBuffer(c net.Conn) int {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return 0
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return 0
	}
	n := 0
	_ = raw.Control(func(fd uintptr) { n, _ = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF) })
	return n
}

func closeAll(lns []net.Listener) {
	for _, ln := range lns {
		if ln != nil {
			ln.Close()
		}
	}
}

// close shuts every connection, and those still saying hello; blocked
// reads and writes fail at once, and late handshakes are refused.
func (msh *mesh) close() {
	msh.mu.Lock()
	defer msh.mu.Unlock()
	msh.closed = true
	for _, row := range msh.conns {
		for _, c := range row {
			if c != nil {
				c.Close()
			}
		}
	}
	for c := range msh.pending {
		c.Close()
	}
}
