package fileio

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Reap removes what a process that has ended left, whether its PID is
// free or given to another process since, and keeps what a living
// process owns, names of another form, and other prefixes.
func TestReap(t *testing.T) {
	dir := t.TempDir()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	me := os.Getpid()
	cases := []struct {
		name string
		kept bool
	}{
		{fmt.Sprintf("x-%d-%s-a", dead.Process.Pid, selfStart), false}, // its creator ended
		{fmt.Sprintf("x-%d-1-b", me), false},                           // the PID is another process's now
		{fmt.Sprintf("x-%d-%s-c", me, selfStart), true},                // this process's
		{"x-123456", true},  // an older form: its creator is unknown
		{"x-abc-1-d", true}, // not a PID
		{fmt.Sprintf("y-%d-1-e", dead.Process.Pid), true},                         // another prefix
		{fmt.Sprintf("x-%d-%s-%s-f", dead.Process.Pid, selfStart, selfNS), false}, // this namespace's, creator ended
		{fmt.Sprintf("x-%d-%s-n1-g", dead.Process.Pid, selfStart), true},          // another PID namespace's: not ours to judge
		{fmt.Sprintf("x-%d-%s-%s-h", me, selfStart, selfNS), true},                // this process's
	}
	for _, c := range cases {
		if err := os.MkdirAll(filepath.Join(dir, c.name, "inner"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	Reap(dir, "x")
	for _, c := range cases {
		_, err := os.Stat(filepath.Join(dir, c.name))
		if kept := err == nil; kept != c.kept {
			t.Errorf("%s: kept %v, want %v", c.name, kept, c.kept)
		}
	}
	if got := OwnedName("x"); got != fmt.Sprintf("x-%d-%s-%s-", me, selfStart, selfNS) || selfStart == "" || selfNS == "n0" {
		t.Errorf("OwnedName = %q", got)
	}
}
