package cluster

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// helloTimeout is how long a new connection has to introduce itself; a
// silent stranger is dropped after it and the job goes on.
const helloTimeout = 10 * time.Second

// Store is the rendezvous that rank 0 hosts: every rank connects, proves
// it belongs to the job with the token, and then takes part in rounds in
// which each rank contributes bytes and receives everybody's (barriers,
// sharing the NCCL id, combining results). When a rank's connection drops,
// every other rank is told which one left.
type Store struct {
	ln    net.Listener
	token string
	size  int
	logf  func(format string, a ...any)

	mu     sync.Mutex
	conns  map[int]net.Conn
	greet  map[net.Conn]bool // connections that have not said hello yet
	rounds map[uint64]*round
	failed string
	closed bool
	wg     sync.WaitGroup
}

type round struct {
	parts [][]byte
	got   int
}

// Serve runs a store for size ranks on ln until Close. logf reports
// refused connections; nil discards them.
func Serve(ln net.Listener, token string, size int, logf func(format string, a ...any)) *Store {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	s := &Store{ln: ln, token: token, size: size, logf: logf, conns: map[int]net.Conn{}, greet: map[net.Conn]bool{}, rounds: map[uint64]*round{}}
	s.wg.Add(1)
	go s.accept()
	return s
}

// Addr is where the store listens.
func (s *Store) Addr() net.Addr { return s.ln.Addr() }

// Close stops the store and drops every connection.
func (s *Store) Close() error {
	s.mu.Lock()
	s.closed = true
	for _, c := range s.conns {
		c.Close()
	}
	for c := range s.greet {
		c.Close()
	}
	s.mu.Unlock()
	err := s.ln.Close()
	s.wg.Wait()
	return err
}

func (s *Store) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.greet[c] = true
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			s.serve(c)
		}()
	}
}

// admit checks a newcomer's hello; it returns the rank or why not.
func (s *Store) admit(c net.Conn) (int, error) {
	defer func() {
		s.mu.Lock()
		delete(s.greet, c)
		s.mu.Unlock()
	}()
	c.SetReadDeadline(time.Now().Add(helloTimeout))
	m, err := readMessage(c)
	if err != nil {
		return 0, err
	}
	c.SetReadDeadline(time.Time{})
	switch {
	case m.kind != kindHello:
		return 0, fmt.Errorf("first message is not a hello")
	case subtle.ConstantTimeCompare([]byte(m.token), []byte(s.token)) != 1:
		return 0, fmt.Errorf("wrong job token")
	case m.size != s.size:
		return 0, fmt.Errorf("rank %d thinks the job has %d ranks, not %d", m.rank, m.size, s.size)
	case m.rank < 0 || m.rank >= s.size:
		return 0, fmt.Errorf("rank %d is outside a job of %d", m.rank, s.size)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, net.ErrClosed
	}
	if _, dup := s.conns[m.rank]; dup {
		return 0, fmt.Errorf("rank %d joined twice", m.rank)
	}
	s.conns[m.rank] = c
	return m.rank, nil
}

func (s *Store) serve(c net.Conn) {
	rank, err := s.admit(c)
	if err != nil {
		if !errors.Is(err, net.ErrClosed) {
			s.logf("rendezvous: refused a connection from %s: %v", c.RemoteAddr(), err)
		}
		c.Close()
		return
	}
	if _, err := c.Write(encode(message{kind: kindWelcome})); err != nil {
		s.drop(rank, err)
		return
	}
	for {
		m, err := readMessage(c)
		if err != nil {
			s.drop(rank, err)
			return
		}
		if m.kind != kindGather || len(m.parts) != 1 {
			s.drop(rank, fmt.Errorf("unexpected message"))
			return
		}
		s.contribute(rank, m.seq, m.parts[0])
	}
}

// contribute adds rank's part to round seq and, once every rank has
// given, sends all parts to everybody.
func (s *Store) contribute(rank int, seq uint64, part []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.rounds[seq]
	if r == nil {
		r = &round{parts: make([][]byte, s.size)}
		s.rounds[seq] = r
	}
	if r.parts[rank] == nil {
		r.got++
	}
	r.parts[rank] = append([]byte{}, part...)
	if r.got < s.size {
		return
	}
	delete(s.rounds, seq)
	reply := encode(message{kind: kindGather, seq: seq, parts: r.parts})
	for _, c := range s.conns {
		c.Write(reply)
	}
}

// drop handles a rank whose connection ended: the others are told, so
// nobody waits for it.
func (s *Store) drop(rank int, cause error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.conns[rank]; ok {
		c.Close()
		delete(s.conns, rank)
	}
	if s.closed || s.failed != "" {
		return
	}
	s.failed = fmt.Sprintf("rank %d left the job (%v)", rank, cause)
	fail := encode(message{kind: kindFail, text: s.failed})
	for _, c := range s.conns {
		c.Write(fail)
	}
}
