package host

import (
	"fmt"
	"syscall"
)

// spareDescriptors is what a process needs beside its mesh: standard
// streams, the rendezvous connection, the poller, libraries, telemetry.
const spareDescriptors = 64

// meshDescriptors is how many file descriptors this process's part of the
// mesh holds: each member listens, and holds one connection to every other
// rank of its group (both ends when the peer is in this process too).
func meshDescriptors(members, groupSize int) uint64 {
	return uint64(members)*uint64(groupSize) + spareDescriptors
}

// ensureDescriptors makes sure need file descriptors can be open at once:
// it raises the soft limit as far as the hard one allows and otherwise
// says, in one sentence, how many are needed. Without this a mesh larger
// than the limit fails half-built (accept and dial get EMFILE).
func ensureDescriptors(need uint64, what string) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return nil // cannot tell; the mesh reports its own failure
	}
	if lim.Cur >= need {
		return nil
	}
	if lim.Max >= need {
		raised := lim
		raised.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised); err == nil {
			return nil
		}
	}
	return fmt.Errorf("%s needs about %d open files but this process may open %d (ulimit -n, hard limit %d); raise the limit or run fewer ranks per process",
		what, need, lim.Cur, lim.Max)
}
