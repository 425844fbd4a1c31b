package fileio

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A temporary file or folder that only a SIGKILL could leave behind is
// named after its creator, prefix-PID-START-nNS-…, START being the
// process's start time and NS its PID namespace: the next start of any
// collbench that makes such things removes those whose creator is gone
// (Reap), a PID given to another process since is told apart by its start
// time, and a name made in another PID namespace (a container sharing
// /dev/shm or /tmp but not PIDs, as --ipc=host does) is left alone, since
// this one's /proc cannot say whether its creator lives.

// selfStart is this process's start time.
var selfStart = ProcStart(os.Getpid())

// selfNS is this process's PID namespace as a name field.
var selfNS = PIDNamespace()

// PIDNamespace is this process's PID namespace as a field of an owned
// name, "n" and the namespace's inode number; "n0" when unknown.
func PIDNamespace() string {
	link, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return "n0"
	}
	inode := strings.TrimSuffix(strings.TrimPrefix(link, "pid:["), "]")
	if _, err := strconv.ParseUint(inode, 10, 64); err != nil {
		return "n0"
	}
	return "n" + inode
}

// OwnedName is the start of a name this process owns: prefix-PID-START-nNS-.
func OwnedName(prefix string) string {
	return fmt.Sprintf("%s-%d-%s-%s-", prefix, os.Getpid(), selfStart, selfNS)
}

// Ours says whether a name's namespace field (ns; "" in names made before
// it was written) is this PID namespace's, so that /proc can tell whether
// its creator lives.
func Ours(ns string) bool { return ns == "" || ns == selfNS }

// nsField says whether a name's field is a namespace field.
func nsField(f string) bool {
	if !strings.HasPrefix(f, "n") {
		return false
	}
	_, err := strconv.ParseUint(f[1:], 10, 64)
	return err == nil
}

// MkdirOwned makes a new folder in the system's temporary folder, named
// as this process's (OwnedName), after removing those of prefix whose
// creator is gone.
func MkdirOwned(prefix string) (string, error) {
	Reap(os.TempDir(), prefix)
	return os.MkdirTemp("", OwnedName(prefix))
}

// Reap removes the files and folders in dir named prefix-PID-START-…
// whose creator has ended. Names of another form, names from another PID
// namespace, and another user's entries, stay.
func Reap(dir, prefix string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix+"-")
		if !ok {
			continue
		}
		parts := strings.SplitN(rest, "-", 4)
		if len(parts) < 3 {
			continue // not named by its creator: nothing tells whether it lives
		}
		if len(parts) == 4 && nsField(parts[2]) && !Ours(parts[2]) {
			continue // made in another PID namespace
		}
		pid, err := strconv.Atoi(parts[0])
		if err != nil || pid <= 0 {
			continue
		}
		if start := ProcStart(pid); start != "" && start == parts[1] {
			continue // its creator lives
		}
		os.RemoveAll(filepath.Join(dir, e.Name()))
	}
}

// ProcStart is a process's start time as /proc/PID/stat gives it (field
// 22, clock ticks after boot), or "" when there is no such process or it
// has ended (a zombie).
func ProcStart(pid int) string {
	f := procStat(pid)
	if len(f) <= 19 || f[0] == "Z" || f[0] == "X" {
		return ""
	}
	return f[19]
}

// ProcState is a process's state letter as /proc/PID/stat gives it ('R',
// 'S', 'T' stopped, …), 0 when there is no such process.
func ProcState(pid int) byte {
	f := procStat(pid)
	if len(f) == 0 || f[0] == "" {
		return 0
	}
	return f[0][0]
}

// procStat is /proc/PID/stat's fields from the state on (field 3): the
// command's name before it is in parentheses and may hold spaces and
// parentheses, so the fields count from after the last ')'. Nil when
// there is no such process.
func procStat(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(b[i+1:]))
}
