package cuda

/*
#include <stdint.h>
#include "driver.h"

// Events made by C code travel through Go as integers.
static CUresult cb_elapsed_handles(float* ms, uintptr_t start, uintptr_t end) {
  return cb_cuEventElapsedTime(ms, (CUevent)start, (CUevent)end);
}
*/
import "C"

import (
	"time"
	"unsafe"
)

// Stream flags.
const (
	StreamDefault     = 0
	StreamNonBlocking = 1 // does not synchronise with the legacy default stream
)

// Stream is a CUstream in the context that created it.
type Stream struct{ s C.CUstream }

// NewStream creates a stream in the current context with the default
// priority, as the runtime's cudaStreamCreateWithFlags does.
func NewStream(flags uint) (*Stream, error) {
	var s C.CUstream
	if err := check("cuStreamCreate", C.cb_cuStreamCreate(&s, C.uint(flags))); err != nil {
		return nil, err
	}
	return &Stream{s: s}, nil
}

// NewStreamWithPriority creates a stream in the current context at a
// priority; lower numbers run first, 0 is the default.
func NewStreamWithPriority(flags uint, priority int) (*Stream, error) {
	var s C.CUstream
	if err := check("cuStreamCreateWithPriority", C.cb_cuStreamCreateWithPriority(&s, C.uint(flags), C.int(priority))); err != nil {
		return nil, err
	}
	return &Stream{s: s}, nil
}

// NullStream is the legacy default stream of the current context (the
// NULL stream), which synchronises with every blocking stream; it is
// never created or destroyed.
func NullStream() *Stream { return &Stream{} }

// Handle is the CUstream (equal to cudaStream_t) for C code and NCCL.
func (s *Stream) Handle() uintptr { return uintptr(unsafe.Pointer(s.s)) }

// Query reports whether all work on the stream has completed.
func (s *Stream) Query() (bool, error) {
	r := C.cb_cuStreamQuery(s.s)
	if r == ErrorNotReady {
		return false, nil
	}
	return r == 0, check("cuStreamQuery", r)
}

// Destroy releases the stream; the NULL stream is left alone.
func (s *Stream) Destroy() error {
	if s.s == nil {
		return nil
	}
	return check("cuStreamDestroy", C.cb_cuStreamDestroy(s.s))
}

// Event flags.
const (
	EventDefault       = 0
	EventBlockingSync  = 1
	EventDisableTiming = 2
)

// Event is a CUevent.
type Event struct{ e C.CUevent }

// NewEvent creates an event in the current context.
func NewEvent(flags uint) (*Event, error) {
	var e C.CUevent
	if err := check("cuEventCreate", C.cb_cuEventCreate(&e, C.uint(flags))); err != nil {
		return nil, err
	}
	return &Event{e: e}, nil
}

// Handle is the CUevent for C code.
func (e *Event) Handle() uintptr { return uintptr(unsafe.Pointer(e.e)) }

// Record captures the stream's position.
func (e *Event) Record(s *Stream) error { return check("cuEventRecord", C.cb_cuEventRecord(e.e, s.s)) }

// Destroy releases the event.
func (e *Event) Destroy() error { return check("cuEventDestroy", C.cb_cuEventDestroy(e.e)) }

// Elapsed is the GPU time between two recorded events (about 0.5 µs
// resolution).
func Elapsed(start, end *Event) (time.Duration, error) {
	return ElapsedHandles(start.Handle(), end.Handle())
}

// ElapsedHandles is Elapsed for events created by C code.
func ElapsedHandles(start, end uintptr) (time.Duration, error) {
	var ms C.float
	if err := check("cuEventElapsedTime", C.cb_elapsed_handles(&ms, C.uintptr_t(start), C.uintptr_t(end))); err != nil {
		return 0, err
	}
	return time.Duration(float64(ms) * float64(time.Millisecond)), nil
}
