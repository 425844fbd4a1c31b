package host

import (
	"context"
	"os"
	"syscall"
	"testing"

	"github.com/collbench/collbench/bench"
)

// minorFaults is the process's minor page faults so far.
func minorFaults(t *testing.T) int64 {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return ru.Minflt
}

// A communicator's buffers are mapped when it opens: the calls walk them
// in steps of their footprint, and a page first touched inside a timed
// call would add the kernel's fault to the collective's time (a profile's
// 512 KiB all-reduces on 4 ranks took 10-20 ms instead of 2 ms that way).
func TestBuffersMappedAtOpen(t *testing.T) {
	const bufBytes = 32 << 20
	c, err := Backend{}.Open(context.Background(), bench.Setup{JobRanks: 1, LocalRanks: 1, BufBytes: bufBytes})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := c.(*Comm).ranks[0]
	page := os.Getpagesize()
	before := minorFaults(t)
	for _, buf := range [][]byte{r.send, r.recv} {
		for i := 0; i < len(buf); i += page {
			buf[i] = 1
		}
	}
	pages := int64(2 * bufBytes / page)
	if faults := minorFaults(t) - before; faults > pages/8 {
		t.Errorf("writing the buffers' %d pages after Open faulted %d in", pages, faults)
	}
}
