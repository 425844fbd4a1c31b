package main

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// memoryCgroup makes a memory cgroup of limit bytes (v2, or v1's memory
// hierarchy), or skips where this process may not.
func memoryCgroup(t *testing.T, limit int64) string {
	t.Helper()
	return makeCgroup(t, fmt.Sprintf("collbench-test-%d", os.Getpid()), "memory", []cgroupLimit{
		{"/sys/fs/cgroup", map[string]string{"memory.max": fmt.Sprint(limit)}},                   // v2
		{"/sys/fs/cgroup/memory", map[string]string{"memory.limit_in_bytes": fmt.Sprint(limit)}}, // v1
	})
}

// cgroupLimit is one way to make a limited cgroup: under a hierarchy, the
// files to write (in the order of their names) and what.
type cgroupLimit struct {
	root  string
	files map[string]string
}

// makeCgroup makes the cgroup name by the first way this machine takes
// (v2 only where its controller's file exists), removed when the test
// ends, or skips where this process may not make one.
func makeCgroup(t *testing.T, name, controller string, ways []cgroupLimit) string {
	t.Helper()
	for i, w := range ways {
		files := slices.Sorted(maps.Keys(w.files))
		if _, err := os.Stat(filepath.Join(w.root, files[0])); err != nil && i == 0 {
			continue // no v2 controller here
		}
		dir := filepath.Join(w.root, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			continue
		}
		t.Cleanup(func() { os.Remove(dir) })
		ok := true
		for _, f := range files {
			ok = ok && os.WriteFile(filepath.Join(dir, f), []byte(w.files[f]), 0o644) == nil
		}
		if ok {
			return dir
		}
	}
	t.Skipf("cannot make a %s cgroup here (needs root and a %s controller)", controller, controller)
	return ""
}

// In a memory cgroup of 1.5 GiB, ranks whose buffers or shared-memory
// links would not fit are refused in one line naming the cgroup's room
// and the machine's, before anything is allocated, instead of being
// killed by the OOM killer without a word.
func TestMemoryCgroupRefusal(t *testing.T) {
	bin := builtBinary(t)
	dir := memoryCgroup(t, 1536<<20)
	for _, args := range [][]string{
		{"allreduce", "-g", "100", "-b", "1K", "-e", "1K", "-n", "1", "-w", "0"},
		{"allreduce", "-g", "2", "-b", "1G", "-e", "1G", "-n", "1", "-w", "0"},
	} {
		cmd := exec.Command("sh", append([]string{"-c", `echo $$ > "$0/cgroup.procs" && exec "$@"`, dir, bin}, args...)...)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		text := strings.TrimSpace(string(out))
		if code != exitUsage || !strings.Contains(text, "the memory cgroup /"+filepath.Base(dir)+" allows") || strings.Contains(text, "\n") {
			t.Errorf("%v in a 1.5 GiB cgroup: exit %d (%v), %q", args, code, err, text)
		}
	}
}

// Under launch -n 4, four processes that each fit the cgroup alone but
// not together are refused before anything is allocated, each saying so
// in memory's words, instead of being killed by the OOM killer ("left the
// job (EOF)", exit 137), and before the job meets: no process reports a
// peer that went away, and the four alike lines are shown once.
func TestMemoryAcrossProcesses(t *testing.T) {
	bin := builtBinary(t)
	dir := memoryCgroup(t, 1536<<20)
	args := []string{"launch", "-n", "4", "--", "allreduce", "-b", "200M", "-e", "200M", "-n", "1", "-w", "0", "--transport", "tcp"}
	cmd := exec.Command("sh", append([]string{"-c", `echo $$ > "$0/cgroup.procs" && exec "$@"`, dir, bin}, args...)...)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	text := string(out)
	if code != exitUsage || !strings.Contains(text, "4 processes on this host, each with -e 209715200 bytes on 1 ranks") ||
		!strings.Contains(text, "the memory cgroup /"+filepath.Base(dir)+" allows") || strings.Contains(text, "137") ||
		!strings.Contains(text, "ranks 0-3 refused their arguments (exit 2)") || strings.Contains(text, "has exited") ||
		strings.Count(text, "buffers too large") != 1 {
		t.Errorf("launch -n 4 in a 1.5 GiB cgroup: exit %d (%v)\n%s", code, err, text)
	}
}

// A process killed while its ranks set up their shared-memory links
// leaves segments behind, whose peers never mapped them; the next set-up
// on the host removes them.
func TestKilledSetUpLeavesNoSegments(t *testing.T) {
	if _, err := os.Stat("/dev/shm"); err != nil {
		t.Skip("no /dev/shm")
	}
	bin := builtBinary(t)
	cmd := exec.Command(bin, "allreduce", "-g", "64", "-b", "8", "-e", "8", "-n", "1", "-w", "0")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	prefix := fmt.Sprintf("collbench-%d-", cmd.Process.Pid)
	left := func() int {
		n := 0
		entries, _ := os.ReadDir("/dev/shm")
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), prefix) {
				n++
			}
		}
		return n
	}
	for deadline := time.Now().Add(20 * time.Second); left() == 0 && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
	}
	cmd.Process.Kill()
	cmd.Wait()
	before := left()
	if code, _, errOut := runCLI("allreduce", "-g", "2", "-b", "8", "-e", "8"); code != 0 {
		t.Fatalf("the next run: exit %d: %s", code, errOut)
	}
	if n := left(); n != 0 {
		t.Errorf("%d of the killed process's %d segments outlived it", n, before)
	}
	t.Logf("the kill left %d segments; the next set-up removed them", before)
}
