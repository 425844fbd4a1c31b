package host

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// socketBuffer is the kernel buffer size asked for on every connection;
// large buffers keep loopback transfers of big messages streaming.
const socketBuffer = 4 << 20

// mesh holds one TCP connection between every pair of ranks: conns[a][b] is
// rank a's end of the connection to rank b.
type mesh struct {
	conns [][]net.Conn
}

// dialMesh connects n in-process ranks over loopback: each rank listens,
// every rank dials each lower rank and introduces itself with its number.
func dialMesh(ctx context.Context, n int) (*mesh, error) {
	m := &mesh{conns: make([][]net.Conn, n)}
	lns := make([]net.Listener, n)
	for i := range lns {
		var lc net.ListenConfig
		ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
		if err != nil {
			closeAll(lns)
			return nil, fmt.Errorf("listening on loopback: %w", err)
		}
		lns[i] = ln
		m.conns[i] = make([]net.Conn, n)
	}
	defer closeAll(lns)

	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for i := 0; i < n; i++ {
		wg.Add(2)
		go func(i int) { // accept one connection from every higher rank
			defer wg.Done()
			for k := i + 1; k < n; k++ {
				c, err := lns[i].Accept()
				if err != nil {
					errs <- fmt.Errorf("rank %d accepting: %w", i, err)
					return
				}
				var hello [4]byte
				_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
				if _, err := io.ReadFull(c, hello[:]); err != nil {
					c.Close()
					errs <- fmt.Errorf("rank %d reading peer's hello: %w", i, err)
					return
				}
				_ = c.SetReadDeadline(time.Time{})
				peer := int(binary.LittleEndian.Uint32(hello[:]))
				if peer <= i || peer >= n || m.conns[i][peer] != nil {
					c.Close()
					errs <- fmt.Errorf("rank %d: unexpected hello from rank %d", i, peer)
					return
				}
				tune(c)
				m.conns[i][peer] = c
			}
		}(i)
		go func(i int) { // dial every lower rank
			defer wg.Done()
			var d net.Dialer
			for k := 0; k < i; k++ {
				c, err := d.DialContext(ctx, "tcp", lns[k].Addr().String())
				if err != nil {
					errs <- fmt.Errorf("rank %d dialing rank %d: %w", i, k, err)
					return
				}
				var hello [4]byte
				binary.LittleEndian.PutUint32(hello[:], uint32(i))
				if _, err := c.Write(hello[:]); err != nil {
					c.Close()
					errs <- fmt.Errorf("rank %d greeting rank %d: %w", i, k, err)
					return
				}
				tune(c)
				m.conns[i][k] = c
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		closeAll(lns)
		m.close()
		return nil, err
	}
	return m, nil
}

func tune(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
		_ = tc.SetReadBuffer(socketBuffer)
		_ = tc.SetWriteBuffer(socketBuffer)
	}
}

func closeAll(lns []net.Listener) {
	for _, ln := range lns {
		if ln != nil {
			ln.Close()
		}
	}
}

// close shuts every connection; blocked reads and writes fail at once.
func (m *mesh) close() {
	for _, row := range m.conns {
		for _, c := range row {
			if c != nil {
				c.Close()
			}
		}
	}
}
