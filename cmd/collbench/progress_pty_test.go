//go:build linux

package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// openPTY returns a pseudo-terminal pair: what the program writes to the
// follower can be read from the leader.
func openPTY(t *testing.T) (leader, follower *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err == nil {
		err = unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0)
	}
	if err != nil {
		m.Close()
		t.Skipf("cannot unlock a pseudo-terminal: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Skipf("cannot open the pseudo-terminal follower: %v", err)
	}
	return m, s
}

// On a real terminal the sweep draws its bar on stderr, wipes it before
// each table row and at the end; --quiet draws nothing.
func TestProgressOnTerminal(t *testing.T) {
	for _, quiet := range []bool{false, true} {
		leader, follower := openPTY(t)
		args := []string{"allreduce", "-b", "1K", "-e", "256K", "-f", "2", "-g", "2", "-n", "2", "--backend", "host"}
		if quiet {
			args = append(args, "--quiet")
		}
		cmd := exec.Command(os.Args[0], args...)
		var stdout bytes.Buffer
		cmd.Env = append(os.Environ(), asMain+"=1", "TERM=xterm")
		cmd.Stdout, cmd.Stderr = &stdout, follower
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		follower.Close()
		var screen bytes.Buffer
		done := make(chan struct{})
		go func() { io.Copy(&screen, leader); close(done) }() // ends with EIO once the program exits
		err := cmd.Wait()
		<-done
		leader.Close()
		if err != nil {
			t.Fatalf("quiet=%v: %v\n%s", quiet, err, screen.String())
		}
		got := screen.String()
		switch {
		case quiet && got != "":
			t.Errorf("--quiet drew %q", got)
		case !quiet && (!strings.Contains(got, "allreduce [") || !strings.Contains(got, "9/9 256K") || !strings.HasSuffix(got, "\r\x1b[K")):
			t.Errorf("terminal got %q; want the bar up to 9/9 256K, wiped at the end", got)
		}
		if strings.Contains(stdout.String(), "\x1b") {
			t.Errorf("the bar leaked into stdout: %q", stdout.String())
		}
	}
}

// A run whose stderr is not a terminal prints no bar.
func TestNoProgressWithoutTerminal(t *testing.T) {
	code, _, errOut := runCLI("allreduce", "-b", "1K", "-e", "64K", "-f", "2", "-g", "2", "-n", "2", "--backend", "host")
	if code != 0 || strings.Contains(errOut, "\x1b") || errOut != "" {
		t.Errorf("exit %d, stderr %q; want nothing on stderr", code, errOut)
	}
}
