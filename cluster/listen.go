package cluster

import (
	"fmt"
	"net"
	"os"
)

// Bind is where rank 0 listens for a rendezvous at host:port: the address
// itself on loopback, else every interface (the name may resolve to
// another address than the one the listener should take).
func Bind(host, port string) string {
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return net.JoinHostPort(host, port)
	}
	return net.JoinHostPort("", port)
}

// ListenFile opens a rendezvous listener on bind for a child process to
// inherit (ListenerFDVar): the listener as a file, and the port it took.
// The listener itself is closed; the duplicate in the file stays open, so
// that no other program can take the port before the child listens.
func ListenFile(bind string) (*os.File, string, error) {
	l, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, "", fmt.Errorf("opening the rendezvous port: %w", err)
	}
	_, port, _ := net.SplitHostPort(l.Addr().String())
	f, err := l.(*net.TCPListener).File()
	l.Close()
	if err != nil {
		return nil, "", fmt.Errorf("opening the rendezvous port: %w", err)
	}
	return f, port, nil
}
