package host

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// availableMemory reads MemAvailable from /proc/meminfo, in bytes.
func availableMemory() (int64, bool) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemAvailable:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}

// Resources is what the host backend runs on here: the CPUs this process
// may use and the memory available for buffers (0 when unknown).
func Resources() (cpus int, availBytes int64) {
	avail, _ := availableMemory()
	return runtime.GOMAXPROCS(0), avail
}
