package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// memoryCgroup makes a memory cgroup of limit bytes (v2, or v1's memory
// hierarchy), or skips where this process may not.
func memoryCgroup(t *testing.T, limit int64) string {
	t.Helper()
	name := fmt.Sprintf("collbench-test-%d", os.Getpid())
	for _, c := range []struct{ dir, file string }{
		{"/sys/fs/cgroup", "memory.max"},                   // v2
		{"/sys/fs/cgroup/memory", "memory.limit_in_bytes"}, // v1
	} {
		if _, err := os.Stat(filepath.Join(c.dir, c.file)); err != nil && c.file == "memory.max" {
			continue // no v2 memory controller here
		}
		dir := filepath.Join(c.dir, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			continue
		}
		t.Cleanup(func() { os.Remove(dir) })
		if err := os.WriteFile(filepath.Join(dir, c.file), []byte(fmt.Sprint(limit)), 0o644); err != nil {
			continue
		}
		return dir
	}
	t.Skip("cannot make a memory cgroup here (needs root and a memory controller)")
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
