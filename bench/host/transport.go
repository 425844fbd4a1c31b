package host

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/collbench/collbench/setting"
)

// Transport is how two ranks of one host exchange bytes.
type Transport int

const (
	// TransportAuto joins ranks in one network stack through shared
	// memory where both can map one segment, and any others over TCP.
	TransportAuto Transport = iota
	// TransportTCP joins every pair over TCP, loopback included.
	TransportTCP
	// TransportSharedMemory requires shared memory between every pair:
	// a pair that cannot share a segment fails the set-up.
	TransportSharedMemory
)

var transportNames = [...]string{"auto", "tcp", "shm"}

func (t Transport) String() string {
	if t >= 0 && int(t) < len(transportNames) {
		return transportNames[t]
	}
	return fmt.Sprintf("Transport(%d)", int(t))
}

// ParseTransport reads a transport's name: auto, tcp or shm.
func ParseTransport(s string) (Transport, error) {
	for i, n := range transportNames {
		if s == n {
			return Transport(i), nil
		}
	}
	return 0, fmt.Errorf("unknown transport %q (want auto, tcp or shm)", s)
}

// bellsInProcess lets two sides in one process sleep on channels (ring);
// tests clear it to run the futex path, which ranks in different
// processes take, within one.
var bellsInProcess = true

// errNoSharedMemory is a pair that cannot share memory under
// TransportSharedMemory.
var errNoSharedMemory = errors.New("no shared memory with the peer")

// link is a rank's duplex connection to one peer: a TCP connection, or a
// shared-memory link set up over one.
type link interface {
	io.Reader
	io.Writer
	Close() error
}

// linkBuffer is how many bytes a write to l may leave unread by the peer
// before it waits: the ring, or the socket's send buffer.
func linkBuffer(l link) int {
	if s, ok := l.(*shmLink); ok {
		return s.ringSize
	}
	if c, ok := l.(net.Conn); ok {
		return sendBuffer(c)
	}
	return 0
}

// sameStack says whether a connection's two ends have one address, as
// ranks in one host's network stack do. Only they try shared memory:
// ranks in other network namespaces of a host are measured over their
// network, as a test of that network expects.
func sameStack(c net.Conn) bool {
	l, lok := c.LocalAddr().(*net.TCPAddr)
	r, rok := c.RemoteAddr().(*net.TCPAddr)
	return lok && rok && l.IP.Equal(r.IP)
}

// During the set-up, the dialing side offers a segment after its hello:
// the path's length (two bytes), the path and the segment's nonce; or, for
// no offer, a length of 0 and why not (two bytes of length, the text).
// The accepting side answers one byte, 0 when it did not map the segment,
// 1 when it mapped it and checked the nonce, answerSameProcess when it
// did and the two sides are in one process; the creator then unlinks it.
const (
	answerSameProcess = 2
	nonceLen          = 16
	maxReason         = 512
)

// readReason reads the dialing side's reason for offering no segment.
func readReason(c net.Conn) (string, error) {
	var n [2]byte
	if _, err := io.ReadFull(c, n[:]); err != nil {
		return "", err
	}
	size := int(binary.LittleEndian.Uint16(n[:]))
	if size > maxReason {
		return "", fmt.Errorf("a reason of %d bytes", size)
	}
	text := make([]byte, size)
	_, err := io.ReadFull(c, text)
	return string(text), err
}

// handshake bounds the offer and answer by helloTimeout and by ctx.
func handshake(ctx context.Context, c net.Conn) func() {
	_ = c.SetDeadline(time.Now().Add(helloTimeout))
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Now()) })
	return func() {
		stop()
		_ = c.SetDeadline(time.Time{})
	}
}

// offerLink is the dialing side's part: it offers a segment when t allows
// and the peer shares this network stack, and returns the link the two
// sides agreed on.
func offerLink(ctx context.Context, c net.Conn, t Transport, groupSize int) (link, error) {
	defer handshake(ctx, c)()
	var path string
	var mem, nonce []byte
	ring := ringFor(groupSize)
	why := setting.Errorf("{Transport} tcp")
	if t != TransportTCP {
		why = errors.New("the peer is in another network stack")
		if sameStack(c) {
			path, mem, nonce, why = createSegment(ring)
		}
	}
	local := newBells()
	if path != "" {
		localSegments.Store(path, local)
		defer localSegments.Delete(path)
	}
	msg := binary.LittleEndian.AppendUint16(nil, uint16(len(path)))
	msg = append(append(msg, path...), nonce...)
	if path == "" {
		text := why.Error()[:min(len(why.Error()), maxReason)]
		msg = append(binary.LittleEndian.AppendUint16(msg, uint16(len(text))), text...)
	}
	_, err := c.Write(msg)
	reply := []byte{0}
	if err == nil {
		_, err = io.ReadFull(c, reply)
	}
	if path != "" {
		os.Remove(path)
	}
	if err != nil || reply[0] == 0 {
		if mem != nil {
			syscall.Munmap(mem)
		}
		if err != nil {
			return nil, err
		}
		if why == nil {
			why = errors.New("the peer could not map the segment")
		}
		if t == TransportSharedMemory {
			return nil, fmt.Errorf("%w: %w", errNoSharedMemory, why)
		}
		return c, nil
	}
	if reply[0] != answerSameProcess {
		local = nil
	}
	return newShmLink(c, mem, ring, true, local), nil
}

// answerLink is the accepting side's part: it maps an offered segment
// when t allows, and answers.
func answerLink(ctx context.Context, c net.Conn, t Transport) (link, error) {
	defer handshake(ctx, c)()
	var n [2]byte
	if _, err := io.ReadFull(c, n[:]); err != nil {
		return nil, err
	}
	pathLen := int(binary.LittleEndian.Uint16(n[:]))
	var why error
	var mem []byte
	var ring int
	var local *bells // set when the peer is in this process
	if pathLen == 0 {
		text, err := readReason(c)
		if err != nil {
			return nil, err
		}
		why = fmt.Errorf("the peer offered none (%s)", text)
	} else {
		if pathLen > 4096 {
			return nil, fmt.Errorf("a segment path of %d bytes", pathLen)
		}
		buf := make([]byte, pathLen+nonceLen)
		if _, err := io.ReadFull(c, buf); err != nil {
			return nil, err
		}
		why = setting.Errorf("{Transport} tcp")
		if t != TransportTCP {
			mem, ring, why = openSegment(string(buf[:pathLen]), buf[pathLen:])
		}
		if b, ok := localSegments.Load(string(buf[:pathLen])); ok && bellsInProcess {
			local = b.(*bells)
		}
	}
	ok := byte(0)
	switch {
	case why == nil && local != nil:
		ok = answerSameProcess
	case why == nil:
		ok = 1
	}
	if _, err := c.Write([]byte{ok}); err != nil {
		if mem != nil {
			syscall.Munmap(mem)
		}
		return nil, err
	}
	if why != nil {
		if t == TransportSharedMemory {
			return nil, fmt.Errorf("%w: %w", errNoSharedMemory, why)
		}
		return c, nil
	}
	return newShmLink(c, mem, ring, false, local), nil
}
