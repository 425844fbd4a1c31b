package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
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

// fullTmp is a TMPDIR with no room left: a 16 KiB tmpfs, filled. Where
// this process may not mount one, the test is skipped.
func fullTmp(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=16k"); err != nil {
		t.Skipf("cannot mount a small tmpfs here: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	f, err := os.Create(filepath.Join(dir, "fill"))
	if err != nil {
		t.Fatal(err)
	}
	f.Write(make([]byte, 64<<10)) // fails once full, as meant
	f.Close()
	return dir
}

// A full TMPDIR fails tune and audit as the machine's failure (exit 1),
// not as a refusal of what was asked (exit 2), in one line.
func TestTurnsOnAFullDisk(t *testing.T) {
	selfEnv(t)
	t.Setenv("TMPDIR", fullTmp(t))
	dir := t.TempDir()
	sweep := []string{"--", "allreduce", "-g", "2", "-b", "1K", "-e", "4K", "-n", "5", "-w", "1"}
	for _, args := range [][]string{
		append([]string{"tune", "-q", "--algorithms", "ring", "--protocols", "256K", "-o", filepath.Join(dir, "t.conf")}, sweep...),
		append([]string{"audit", "-q"}, sweep...),
	} {
		code, out, errOut := runCLI(args...)
		if code != exitFailure || out != "" || !strings.Contains(errOut, "no space left on device") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 1 and one line", args[0], code, out, errOut)
		}
	}
}

// A file tune cannot write at the end (--measured on a full device) is
// said, exit 1, and costs none of the others: -o and -J are written.
func TestTuneWritesEveryFileItCan(t *testing.T) {
	selfEnv(t)
	dir := t.TempDir()
	conf, rec := filepath.Join(dir, "t.conf"), filepath.Join(dir, "t.json")
	code, _, errOut := runCLI("tune", "-q", "--algorithms", "ring,doubling", "--protocols", "256K", "-o", conf, "--measured", "/dev/full", "-J", rec,
		"--", "allreduce", "-g", "2", "-b", "1K", "-e", "4K", "-n", "5", "-w", "1")
	if code != exitFailure || !strings.Contains(errOut, "/dev/full") {
		t.Errorf("exit %d, stderr %q; want exit 1 naming /dev/full", code, errOut)
	}
	for _, p := range []string{conf, rec} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s not written: %v", p, err)
		}
	}
}
