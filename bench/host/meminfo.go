package host

import (
	"os"
	"runtime"
)

// rootFS is the file system the memory room is read from; tests point it
// at fixtures.
var rootFS = os.DirFS("/")

// Resources is what the host backend runs on here: the CPUs this process
// may use and the memory available for buffers (0 when unknown): the
// machine's available memory, or less where a cgroup's limit leaves less.
func Resources() (cpus int, availBytes int64) {
	r := readMemoryRoom(rootFS)
	avail := r.avail
	if r.limit > 0 && (avail == 0 || r.left < avail) {
		avail = r.left
	}
	return runtime.GOMAXPROCS(0), avail
}
