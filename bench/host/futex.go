package host

import (
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// Linux futex operations without FUTEX_PRIVATE_FLAG, so that a wait in one
// process is woken by a store and a wake in another that maps the same
// page.
const (
	futexWait = 0
	futexWake = 1
)

// waitWord sleeps while *w holds stale, for at most d; it reports whether
// the wait ran out of time. A wake, a signal or a changed word end it
// early, so callers check again what they wait for.
func waitWord(w *atomic.Uint32, stale uint32, d time.Duration) (timedOut bool) {
	ts := syscall.NsecToTimespec(d.Nanoseconds())
	_, _, errno := syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(w)), futexWait, uintptr(stale),
		uintptr(unsafe.Pointer(&ts)), 0, 0)
	return errno == syscall.ETIMEDOUT
}

// wakeWord wakes whoever sleeps on w, in this process or another.
func wakeWord(w *atomic.Uint32) {
	_, _, _ = syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(w)), futexWake, 1<<30, 0, 0, 0)
}
