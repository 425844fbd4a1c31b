package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// The rendezvous speaks length-prefixed frames: a 4-byte big-endian
// length, then a 1-byte kind and the kind's fields. Integers are
// big-endian; byte strings carry a 4-byte length.

// maxFrame bounds one frame so a stranger cannot make a peer allocate
// without limit.
const maxFrame = 64 << 20

// Message kinds.
const (
	kindHello   = 1 // client → store: token, rank, size
	kindWelcome = 2 // store → client: accepted
	kindGather  = 3 // client → store: seq, data; store → client: seq, every rank's data
	kindFail    = 4 // store → client: why the job cannot go on
	kindBeat    = 5 // client → store: alive, and what it is doing (text)
	kindPing    = 6 // store → client: the store is alive
	kindBye     = 7 // client → store: finished; leaving is not a failure
	kindTimeout = 8 // store → client: a deadline of the job expired, and which (text)
	// kindMismatch: store → client: a rank was started with other
	// settings than rank 0 (text names which).
	kindMismatch = 9
)

// message is one decoded frame.
type message struct {
	kind  byte
	token string
	rank  int
	size  int
	seq   uint64
	parts [][]byte // kindGather: one part from a client, size parts from the store
	text  string   // kindFail, kindBeat, kindTimeout, kindMismatch
	// settings (kindHello, optional) are what the rank was started with,
	// as JSON; a hello without them is an older release's.
	settings []byte
}

var errFrame = errors.New("malformed rendezvous message")

func encode(m message) []byte {
	b := []byte{0, 0, 0, 0, m.kind}
	putBytes := func(p []byte) {
		b = binary.BigEndian.AppendUint32(b, uint32(len(p)))
		b = append(b, p...)
	}
	switch m.kind {
	case kindHello:
		putBytes([]byte(m.token))
		b = binary.BigEndian.AppendUint32(b, uint32(m.rank))
		b = binary.BigEndian.AppendUint32(b, uint32(m.size))
		if len(m.settings) > 0 {
			putBytes(m.settings)
		}
	case kindGather:
		b = binary.BigEndian.AppendUint64(b, m.seq)
		b = binary.BigEndian.AppendUint32(b, uint32(len(m.parts)))
		for _, p := range m.parts {
			putBytes(p)
		}
	case kindFail, kindBeat, kindTimeout, kindMismatch:
		putBytes([]byte(m.text))
	}
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// decode parses one frame's body (after the length).
func decode(body []byte) (message, error) {
	if len(body) == 0 {
		return message{}, errFrame
	}
	m := message{kind: body[0]}
	r := body[1:]
	u32 := func() (uint32, bool) {
		if len(r) < 4 {
			return 0, false
		}
		v := binary.BigEndian.Uint32(r)
		r = r[4:]
		return v, true
	}
	bytesField := func() ([]byte, bool) {
		n, ok := u32()
		if !ok || uint64(n) > uint64(len(r)) {
			return nil, false
		}
		p := r[:n:n]
		r = r[n:]
		return p, true
	}
	ok := true
	switch m.kind {
	case kindHello:
		var tok []byte
		var rank, size uint32
		tok, ok = bytesField()
		if ok {
			rank, ok = u32()
		}
		if ok {
			size, ok = u32()
		}
		if ok && len(r) > 0 {
			// The field is written only when there are settings: an
			// empty one is no frame collbench writes, and would read
			// as settings where there are none.
			m.settings, ok = bytesField()
			ok = ok && len(m.settings) > 0
		}
		m.token, m.rank, m.size = string(tok), int(int32(rank)), int(int32(size))
	case kindWelcome, kindPing, kindBye:
	case kindGather:
		if len(r) < 12 {
			return m, errFrame
		}
		m.seq = binary.BigEndian.Uint64(r)
		r = r[8:]
		var n uint32
		n, ok = u32()
		if ok && uint64(n) > uint64(len(r))/4 {
			ok = false // every part needs at least its length
		}
		for i := uint32(0); ok && i < n; i++ {
			var p []byte
			p, ok = bytesField()
			m.parts = append(m.parts, p)
		}
	case kindFail, kindBeat, kindTimeout, kindMismatch:
		var t []byte
		t, ok = bytesField()
		m.text = string(t)
	default:
		return m, fmt.Errorf("%w: unknown kind %d", errFrame, m.kind)
	}
	if !ok || len(r) != 0 {
		return m, errFrame
	}
	return m, nil
}

// readMessage reads one frame.
func readMessage(r io.Reader) (message, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return message{}, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n == 0 || n > maxFrame {
		return message{}, fmt.Errorf("%w: frame of %d bytes", errFrame, n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return message{}, err
	}
	return decode(body)
}
