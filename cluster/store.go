package cluster

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"sort"
	"sync"
	"time"
)

// helloTimeout is how long a new connection has to introduce itself; a
// silent stranger is dropped after it and the job goes on.
const helloTimeout = 10 * time.Second

// writeTimeout bounds every write to a rank, so a rank that stopped
// reading cannot hold the store up.
const writeTimeout = 5 * time.Second

// StoreConfig describes the job a store serves.
type StoreConfig struct {
	Token string // every rank must present it
	Size  int    // ranks in the job
	// Join is how long the ranks have to arrive, counted from Serve; the
	// ranks still missing then are named to the others. 0 waits forever.
	Join time.Duration
	// Stall is how long a joined rank may stay silent (its heartbeats
	// stop when the process is stopped or frozen) before the others are
	// told. 0 never gives up on a rank.
	Stall time.Duration
	// Logf reports refused connections; nil discards them.
	Logf func(format string, a ...any)
	// PerProc is how many ranks each process runs, for messages that
	// name processes (0 or 1: a process is a rank).
	PerProc int
	// Settings are rank 0's: a rank whose hello carries others ends the
	// job before anything runs (kindMismatch), since ranks that disagree
	// on what to run wait for each other for ever. None: not compared.
	Settings []Setting
}

// Store is the rendezvous that rank 0 hosts: every rank connects, proves
// it belongs to the job with the token, and then takes part in rounds in
// which each rank contributes bytes and receives everybody's (barriers,
// sharing the NCCL id, combining results). It watches the job: when a
// rank's connection drops, when a rank never arrives or stops sending
// heartbeats, every other rank is told which one and why.
type Store struct {
	ln       net.Listener
	cfg      StoreConfig
	refusals *refusalLog

	mu       sync.Mutex
	conns    map[int]*link
	seen     map[int]time.Time // last message from each rank
	doing    map[int]string    // what each rank last said it was doing
	greet    map[net.Conn]bool // connections that have not said hello yet
	finished map[int]bool      // ranks that said goodbye
	rounds   map[uint64]*round
	failed   string
	failKind byte // kindFail, or kindTimeout when a deadline found it
	closed   bool
	start    time.Time
	stopTick chan struct{}
	wg       sync.WaitGroup
}

type round struct {
	parts [][]byte
	got   int
}

// Serve runs a store on ln until Close.
func Serve(ln net.Listener, cfg StoreConfig) *Store {
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	s := &Store{ln: ln, cfg: cfg, conns: map[int]*link{}, seen: map[int]time.Time{}, doing: map[int]string{},
		greet: map[net.Conn]bool{}, finished: map[int]bool{}, rounds: map[uint64]*round{}, start: time.Now(), stopTick: make(chan struct{})}
	s.refusals = &refusalLog{logf: cfg.Logf}
	s.wg.Add(2)
	go s.accept()
	go s.watch()
	return s
}

// Addr is where the store listens.
func (s *Store) Addr() net.Addr { return s.ln.Addr() }

// Drain waits up to timeout for every rank to hang up, so that the last
// replies reach them before Close drops the connections.
func (s *Store) Drain(timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		s.mu.Lock()
		n := len(s.conns)
		s.mu.Unlock()
		if n == 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Close stops the store and drops every connection.
func (s *Store) Close() error {
	s.mu.Lock()
	if !s.closed {
		close(s.stopTick)
	}
	s.closed = true
	for _, l := range s.conns {
		l.close()
	}
	for c := range s.greet {
		c.Close()
	}
	s.mu.Unlock()
	err := s.ln.Close()
	s.wg.Wait()
	s.refusals.flush()
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
	case subtle.ConstantTimeCompare([]byte(m.token), []byte(s.cfg.Token)) != 1:
		return 0, fmt.Errorf("wrong job token")
	case m.size != s.cfg.Size:
		return 0, fmt.Errorf("rank %d thinks the job has %d ranks, not %d", m.rank, m.size, s.cfg.Size)
	case m.rank < 0 || m.rank >= s.cfg.Size:
		return 0, fmt.Errorf("rank %d is outside a job of %d", m.rank, s.cfg.Size)
	}
	if len(s.cfg.Settings) > 0 {
		theirs, err := decodeSettings(m.settings)
		if err != nil {
			return 0, err
		}
		if why := differ(m.rank, theirs, s.cfg.Settings); why != "" {
			s.mu.Lock()
			s.endLocked(kindMismatch, why)
			s.mu.Unlock()
			return 0, &mismatch{why}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, net.ErrClosed
	}
	if _, dup := s.conns[m.rank]; dup {
		return 0, fmt.Errorf("rank %d joined twice", m.rank)
	}
	l := newLink(c, &s.wg)
	s.conns[m.rank] = l
	s.seen[m.rank] = time.Now()
	l.push(encode(message{kind: kindWelcome}))
	if s.failed != "" { // a late rank learns at once that the job is over
		l.push(encode(message{kind: s.failKind, text: s.failed}))
	}
	return m.rank, nil
}

// mismatch is a hello whose settings differ from rank 0's.
type mismatch struct{ why string }

func (e *mismatch) Error() string { return e.why }

func (s *Store) serve(c net.Conn) {
	rank, err := s.admit(c)
	if err != nil {
		var mm *mismatch
		switch {
		case errors.As(err, &mm): // the whole job was told; this rank too
			c.SetWriteDeadline(time.Now().Add(time.Second))
			c.Write(encode(message{kind: kindMismatch, text: mm.why}))
		case !errors.Is(err, net.ErrClosed):
			s.refusals.add(c.RemoteAddr().String(), err)
			// The refused rank learns why, rather than see a closed
			// connection, which means the store has gone.
			c.SetWriteDeadline(time.Now().Add(time.Second))
			c.Write(encode(message{kind: kindFail, text: err.Error()}))
		}
		c.Close()
		return
	}
	for {
		m, err := readMessage(c)
		if err != nil {
			s.drop(rank, err)
			return
		}
		s.mu.Lock()
		s.seen[rank] = time.Now()
		if m.kind == kindBeat {
			s.doing[rank] = m.text
		}
		s.mu.Unlock()
		switch {
		case m.kind == kindBeat:
		case m.kind == kindBye:
			s.finish(rank)
			c.Close()
			return
		case m.kind == kindFail:
			s.gaveUp(rank, m.text)
			return
		case m.kind == kindGather && len(m.parts) == 1:
			s.contribute(rank, m.seq, m.parts[0])
		default:
			s.drop(rank, fmt.Errorf("unexpected message"))
			return
		}
	}
}

// finish takes a rank's goodbye. A rank that leaves while a round still
// waits for it can never complete that round, so the others are told.
func (s *Store) finish(rank int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.disconnectLocked(rank)
	s.finished[rank] = true
	if len(s.rounds) > 0 {
		s.failLocked(fmt.Sprintf("%s finished while the others still waited for it", s.name(rank)))
	}
}

// disconnectLocked closes a rank's link and forgets it.
func (s *Store) disconnectLocked(rank int) {
	if l, ok := s.conns[rank]; ok {
		l.close()
		delete(s.conns, rank)
	}
}

// name is how messages call a process of the job.
func (s *Store) name(proc int) string { return ProcName(proc, s.cfg.PerProc) }

// gaveUp takes a process's report that it cannot go on (it found the
// rendezvous host silent, say): that reason, not the process's leaving,
// is the job's failure.
func (s *Store) gaveUp(rank int, why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.disconnectLocked(rank)
	s.finished[rank] = true
	s.failLocked(fmt.Sprintf("%s gave up: %s", s.name(rank), why))
}

// contribute adds rank's part to round seq and, once every rank has
// given, sends all parts to everybody.
func (s *Store) contribute(rank int, seq uint64, part []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for f := range s.finished {
		s.failLocked(fmt.Sprintf("%s finished while the others still waited for it", s.name(f)))
		return
	}
	r := s.rounds[seq]
	if r == nil {
		r = &round{parts: make([][]byte, s.cfg.Size)}
		s.rounds[seq] = r
	}
	if r.parts[rank] == nil {
		r.got++
	}
	r.parts[rank] = append([]byte{}, part...)
	if r.got < s.cfg.Size {
		return
	}
	delete(s.rounds, seq)
	reply := encode(message{kind: kindGather, seq: seq, parts: r.parts})
	for _, l := range s.conns {
		l.push(reply)
	}
}

// drop handles a rank whose connection ended: the others are told, so
// nobody waits for it.
func (s *Store) drop(rank int, cause error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.disconnectLocked(rank)
	where := ""
	if d := s.doing[rank]; d != "" {
		where = "; it was in " + d
	}
	s.failLocked(fmt.Sprintf("%s left the job (%v%s)", s.name(rank), cause, where))
}

// failLocked ends the job once: every connected rank gets why.
func (s *Store) failLocked(why string) { s.endLocked(kindFail, why) }

// endLocked ends the job once with a failure of kind (kindFail, or
// kindTimeout when a deadline found it).
func (s *Store) endLocked(kind byte, why string) {
	if s.closed || s.failed != "" {
		return
	}
	s.failed, s.failKind = why, kind
	fail := encode(message{kind: kind, text: why})
	for _, l := range s.conns {
		l.push(fail)
	}
}

// watch pings the ranks, and names the ranks that never arrived or went
// silent.
func (s *Store) watch() {
	defer s.wg.Done()
	tick := time.NewTicker(pingInterval(s.cfg.Stall))
	defer tick.Stop()
	for {
		select {
		case <-s.stopTick:
			return
		case now := <-tick.C:
			s.mu.Lock()
			if s.failed == "" {
				if why := s.check(now); why != "" {
					s.endLocked(kindTimeout, why)
				}
			}
			ping := encode(message{kind: kindPing})
			for _, l := range s.conns {
				l.push(ping)
			}
			s.mu.Unlock()
		}
	}
}

// check returns why the job cannot go on at now, or "".
func (s *Store) check(now time.Time) string {
	if len(s.seen) < s.cfg.Size && s.cfg.Join > 0 && now.Sub(s.start) > s.cfg.Join {
		var missing []int
		for r := 0; r < s.cfg.Size; r++ {
			if _, ok := s.seen[r]; !ok {
				missing = append(missing, r)
			}
		}
		return fmt.Sprintf("%s never joined the job (waited %v at the rendezvous)", procList(missing, s.cfg.PerProc), s.cfg.Join)
	}
	if s.cfg.Stall <= 0 {
		return ""
	}
	var late []int
	for r, t := range s.seen {
		if _, connected := s.conns[r]; connected && now.Sub(t) > s.cfg.Stall {
			late = append(late, r)
		}
	}
	if len(late) == 0 {
		return ""
	}
	sort.Ints(late)
	where := ""
	if d := s.doing[late[0]]; d != "" {
		where = "; last seen in " + d
	}
	return fmt.Sprintf("%s stopped responding (silent for more than %v%s)", procList(late, s.cfg.PerProc), s.cfg.Stall, where)
}

// pingInterval is how often heartbeats go each way: often enough that a
// silence of stall is unmistakable.
func pingInterval(stall time.Duration) time.Duration {
	if stall <= 0 {
		return time.Second
	}
	return min(max(stall/5, 50*time.Millisecond), time.Second)
}
