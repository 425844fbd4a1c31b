package cluster

import (
	"net"
	"testing"
)

func TestBind(t *testing.T) {
	for _, c := range []struct{ host, port, want string }{
		{"127.0.0.1", "0", "127.0.0.1:0"}, {"::1", "29511", "[::1]:29511"},
		{"node-0", "29511", ":29511"}, {"10.0.0.5", "0", ":0"},
	} {
		if got := Bind(c.host, c.port); got != c.want {
			t.Errorf("Bind(%q, %q) = %q, want %q", c.host, c.port, got, c.want)
		}
	}
}

// The file a child inherits listens on the port returned.
func TestListenFile(t *testing.T) {
	f, port, err := ListenFile("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	l, err := net.FileListener(f)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, p, _ := net.SplitHostPort(l.Addr().String()); p != port || port == "0" {
		t.Errorf("listening on %s, told %s", l.Addr(), port)
	}
}
