package host

import (
	"bufio"
	"bytes"
	"io/fs"
	"path"
	"strconv"
	"strings"
)

// memoryRoom is what memory this process may still take: the machine's
// available memory (MemAvailable), and the room left under the tightest
// memory limit of the cgroups it belongs to, v1 or v2, with the cgroup
// that sets it. A zero field is not known (or no limit).
type memoryRoom struct {
	avail      int64  // the machine's available memory
	left       int64  // the tightest cgroup limit less the cgroup's use
	limit      int64  // that cgroup's limit
	limitGroup string // that cgroup, as /proc/self/cgroup names it
}

// unlimited is a cgroup v1 limit at or above which there is none (the
// kernel shows "no limit" as the largest page-aligned int64).
const unlimited = int64(1) << 62

// readMemoryRoom reads the room from fsys, the root file system: the
// proc files under proc/self and the cgroup files where mountinfo says
// the hierarchies are mounted.
func readMemoryRoom(fsys fs.FS) memoryRoom {
	var r memoryRoom
	if b, err := fs.ReadFile(fsys, "proc/meminfo"); err == nil {
		r.avail = meminfoAvailable(b)
	}
	cg, err := fs.ReadFile(fsys, "proc/self/cgroup")
	if err != nil {
		return r
	}
	mi, err := fs.ReadFile(fsys, "proc/self/mountinfo")
	if err != nil {
		return r
	}
	mounts := cgroupMounts(mi)
	for _, line := range strings.Split(strings.TrimSpace(string(cg)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		var m cgroupMount
		var limitFile, useFile string
		switch {
		case parts[0] == "0" && parts[1] == "":
			m, limitFile, useFile = mounts["cgroup2"], "memory.max", "memory.current"
		case hasController(parts[1], "memory"):
			m, limitFile, useFile = mounts["memory"], "memory.limit_in_bytes", "memory.usage_in_bytes"
		default:
			continue
		}
		if m.point == "" {
			continue
		}
		rel := strings.TrimPrefix(parts[2], m.root)
		// The limits of the cgroup and of every cgroup above it apply.
		for dir := path.Join(m.point, rel); ; dir = path.Dir(dir) {
			limit, lok := readBytes(fsys, path.Join(dir, limitFile))
			use, uok := readBytes(fsys, path.Join(dir, useFile))
			if lok && uok && limit < unlimited {
				if left := max(limit-use, 0); r.limit == 0 || left < r.left {
					group := "/" + strings.TrimPrefix(strings.TrimPrefix(dir, m.point), "/")
					r.left, r.limit, r.limitGroup = left, limit, group
				}
			}
			if dir == m.point || dir == "." || dir == "/" {
				break
			}
		}
	}
	return r
}

// cgroupMount is where a cgroup hierarchy is mounted (without the leading
// slash, for fs.FS) and the hierarchy's path the mount shows as its root.
type cgroupMount struct{ point, root string }

// cgroupMounts reads mountinfo for the cgroup2 hierarchy ("cgroup2") and
// the v1 hierarchy of each controller (by controller name).
func cgroupMounts(mountinfo []byte) map[string]cgroupMount {
	out := map[string]cgroupMount{}
	sc := bufio.NewScanner(bytes.NewReader(mountinfo))
	for sc.Scan() {
		// id parent major:minor root point options [optional…] - type source super
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 3 {
			continue
		}
		m := cgroupMount{point: strings.TrimPrefix(f[4], "/"), root: f[3]}
		if m.root == "/" {
			m.root = ""
		}
		switch g[0] {
		case "cgroup2":
			out["cgroup2"] = m
		case "cgroup":
			for _, opt := range strings.Split(g[2], ",") {
				out[opt] = m
			}
		}
	}
	return out
}

func hasController(list, name string) bool {
	for _, c := range strings.Split(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// readBytes reads a cgroup file of one number of bytes; "max" (v2's no
// limit) and anything unreadable are not a number.
func readBytes(fsys fs.FS, name string) (int64, bool) {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return 0, false
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return v, err == nil
}

// meminfoAvailable is MemAvailable from /proc/meminfo, in bytes.
func meminfoAvailable(meminfo []byte) int64 {
	sc := bufio.NewScanner(bytes.NewReader(meminfo))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemAvailable:" {
			if kb, err := strconv.ParseInt(fields[1], 10, 64); err == nil {
				return kb << 10
			}
		}
	}
	return 0
}
