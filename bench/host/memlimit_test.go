package host

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/collbench/collbench/bench"
)

func file(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }

const meminfo = "MemTotal:       24000000 kB\nMemFree:         1000000 kB\nMemAvailable:   20971520 kB\n"

// The room left under the tightest memory limit of the process's
// cgroups, read from recorded files: cgroup v2 (the limit on a parent
// applies), v1 (the "no limit" value skipped), a container's namespaced
// view, and no limit at all.
func TestReadMemoryRoom(t *testing.T) {
	v2 := fstest.MapFS{
		"proc/meminfo":                          file(meminfo),
		"proc/self/cgroup":                      file("0::/job/step\n"),
		"proc/self/mountinfo":                   file("30 23 0:27 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n"),
		"sys/fs/cgroup/job/step/memory.max":     file("max\n"),
		"sys/fs/cgroup/job/step/memory.current": file("100\n"),
		"sys/fs/cgroup/job/memory.max":          file("1073741824\n"),
		"sys/fs/cgroup/job/memory.current":      file("268435456\n"),
		"sys/fs/cgroup/memory.max":              file("max\n"),
	}
	v1 := fstest.MapFS{
		"proc/meminfo":        file(meminfo),
		"proc/self/cgroup":    file("9:name=systemd:/\n4:memory:/process_api/x\n3:cpuset:/\n0::/\n"),
		"proc/self/mountinfo": file("35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n36 31 0:33 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n"),
		"sys/fs/cgroup/memory/process_api/x/memory.limit_in_bytes": file("9223372036854771712\n"),
		"sys/fs/cgroup/memory/process_api/x/memory.usage_in_bytes": file("4096\n"),
		"sys/fs/cgroup/memory/process_api/memory.limit_in_bytes":   file("1610612736\n"),
		"sys/fs/cgroup/memory/process_api/memory.usage_in_bytes":   file("536870912\n"),
		"sys/fs/cgroup/memory/memory.limit_in_bytes":               file("9223372036854771712\n"),
		"sys/fs/cgroup/memory/memory.usage_in_bytes":               file("8000000000\n"),
	}
	container := fstest.MapFS{
		"proc/meminfo":                 file(meminfo),
		"proc/self/cgroup":             file("0::/\n"),
		"proc/self/mountinfo":          file("40 30 0:27 /kubepods/pod1 /sys/fs/cgroup ro - cgroup2 cgroup2 rw\n"),
		"sys/fs/cgroup/memory.max":     file("2147483648\n"),
		"sys/fs/cgroup/memory.current": file("1073741824\n"),
	}
	free := fstest.MapFS{
		"proc/meminfo":                            file(meminfo),
		"proc/self/cgroup":                        file("0::/user.slice\n"),
		"proc/self/mountinfo":                     file("30 23 0:27 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"),
		"sys/fs/cgroup/user.slice/memory.max":     file("max\n"),
		"sys/fs/cgroup/user.slice/memory.current": file("5\n"),
	}
	for _, tt := range []struct {
		name        string
		fs          fstest.MapFS
		left, limit int64
		group       string
	}{
		{"v2, the parent's limit", v2, 768 << 20, 1 << 30, "/job"},
		{"v1", v1, 1 << 30, 1536 << 20, "/process_api"},
		{"a container's namespace", container, 1 << 30, 2 << 30, "/"},
		{"no limit", free, 0, 0, ""},
	} {
		r := readMemoryRoom(tt.fs)
		if r.avail != 20<<30 || r.left != tt.left || r.limit != tt.limit || r.limitGroup != tt.group {
			t.Errorf("%s: %+v, want left %d limit %d in %q, 20 GiB available", tt.name, r, tt.left, tt.limit, tt.group)
		}
	}
}

// What the ranks of one process need is counted before anything is
// allocated, their links' shared-memory segments with it (they grow with
// the square of the ranks), and held against a cgroup's limit as well as
// the machine's available memory, both named in one sentence.
func TestCheckMemoryCountsSegmentsAndCgroup(t *testing.T) {
	was := rootFS
	defer func() { rootFS = was }()
	rootFS = fstest.MapFS{
		"proc/meminfo":                     file(meminfo),
		"proc/self/cgroup":                 file("0::/job\n"),
		"proc/self/mountinfo":              file("30 23 0:27 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"),
		"sys/fs/cgroup/job/memory.max":     file("1610612736\n"),
		"sys/fs/cgroup/job/memory.current": file("0\n"),
	}
	setup := func(ranks int, buf int64) bench.Setup {
		return bench.Setup{JobRanks: ranks, LocalRanks: ranks, BufBytes: buf}
	}
	err := checkMemory(setup(100, 1024), TransportAuto)
	if err == nil || !strings.Contains(err.Error(), "4950 shared-memory links of 516 KiB") ||
		!strings.Contains(err.Error(), "the memory cgroup /job allows 1.5 GiB more (limit 1.5 GiB) and the machine has 20.0 GiB available") {
		t.Errorf("-g 100: %v", err)
	}
	if err := checkMemory(setup(100, 1024), TransportTCP); err != nil {
		t.Errorf("-g 100 over TCP needs no segments: %v", err)
	}
	if err := checkMemory(setup(2, 1<<30), TransportAuto); err == nil || !strings.Contains(err.Error(), "MaxBytes 1073741824 bytes on 2 ranks") {
		t.Errorf("-g 2 -e 1G: %v", err)
	}
	if err := checkMemory(setup(4, 1<<20), TransportAuto); err != nil {
		t.Errorf("-g 4 -e 1M: %v", err)
	}
	// Four processes of one rank each that fit alone but not together
	// (launch -n 4), counted before anything is allocated.
	one := bench.Setup{JobRanks: 4, LocalRanks: 1, BufBytes: 200 << 20, HostProcs: 1}
	if err := checkMemory(one, TransportTCP); err != nil {
		t.Errorf("one process of 4: %v", err)
	}
	one.HostProcs = 4
	if err := checkMemory(one, TransportTCP); err == nil || !strings.Contains(err.Error(), "4 processes on this host, each with MaxBytes 209715200 bytes on 1 ranks needs 2.3 GiB") ||
		!strings.Contains(err.Error(), "start fewer processes on each host") {
		t.Errorf("4 processes on one host: %v", err)
	}
}
