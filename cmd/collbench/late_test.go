package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// cancelOnWrite ends a context at the first write it sees: an interrupt
// that comes as the command starts printing what it found, after its
// last round.
type cancelOnWrite struct {
	mu     sync.Mutex
	cancel context.CancelFunc
	buf    bytes.Buffer
}

func (c *cancelOnWrite) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cancel()
	return c.buf.Write(p)
}

// An interrupt that comes after tune's or audit's last round, as the
// results are printed, still ends the command with exit 130, and none of
// the files asked for is written: a run cut short is not reported as
// finished.
func TestLateInterruptWritesNothing(t *testing.T) {
	selfEnv(t)
	sweep := []string{"--", "allreduce", "-g", "2", "-b", "1K", "-e", "4K", "-n", "5", "-w", "1"}
	for _, tc := range []struct {
		name  string
		args  func(dir string) []string
		files []string
	}{
		{"tune", func(d string) []string {
			return append([]string{"tune", "-q", "--algorithms", "ring,doubling", "--protocols", "256K",
				"-o", filepath.Join(d, "t.conf"), "-J", filepath.Join(d, "t.json"), "--measured", filepath.Join(d, "m.csv")}, sweep...)
		}, []string{"t.conf", "t.json", "m.csv"}},
		{"audit", func(d string) []string {
			return append([]string{"audit", "-q", "-J", filepath.Join(d, "a.json")}, sweep...)
		}, []string{"a.json"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			out := &cancelOnWrite{cancel: cancel}
			var errOut bytes.Buffer
			code := cli(ctx, append([]string{"collbench"}, tc.args(dir)...), out, &errOut)
			if code != exitSignal {
				t.Errorf("exit %d, want %d\n%s\n%s", code, exitSignal, out.buf.String(), errOut.String())
			}
			for _, f := range tc.files {
				if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
					t.Errorf("%s written after the interrupt", f)
				}
			}
		})
	}
}
