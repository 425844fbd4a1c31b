// Package nccl is a thin binding to NCCL, opened with dlopen at run time
// (libnccl.so.2) so programs build without NCCL or CUDA headers and start
// on machines that lack them. It exposes what collbench calls from Go:
// loading and versions, communicators (init, split, abort, destroy),
// groups, NCCL-allocated memory and buffer registration, with NCCL's types
// and results; the collectives themselves are issued from C (bench/gpu's
// batch.c) through the same loaded entry points. Entry points newer than
// the loaded library return an *UnsupportedError naming the release that
// added them. Where to look for the library is libpath's decision.
//
// Group calls (GroupStart/GroupEnd) are per OS thread in NCCL: callers pin
// their goroutine with runtime.LockOSThread around a group.
package nccl

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "library.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/collbench/collbench/libpath"
)

// ErrNotFound means no NCCL library could be opened.
var ErrNotFound = errors.New("NCCL not found")

// loaded is the outcome of loading NCCL, and version what the loaded
// library says it is.
var (
	loaded  libpath.Once
	version atomic.Int64
)

// Load opens libnccl.so.2 and reads its version. explicit, when not empty,
// is a file or folder the user named; otherwise libpath searches. The
// path returned is the file the library was mapped from, its links
// resolved, so that two names for one file (a bare soname the loader
// found, a folder, a symbolic link) read the same. Only the first call
// does the work.
func Load(explicit string) (path string, err error) {
	return loaded.Do(func() (string, error) { return load(explicit) })
}

func load(explicit string) (string, error) {
	lib, err := libpath.Load(libpath.NCCL, explicit)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	C.cb_nccl_resolve(lib.Handle)
	path := lib.File()
	var v C.int
	if err := call("ncclGetVersion", C.cb_ncclGetVersion(&v)); err != nil {
		return path, err
	}
	version.Store(int64(v))
	return path, nil
}

// RuntimeVersion is the loaded library's version (0 before Load).
func RuntimeVersion() Version { return Version(version.Load()) }

// Has reports whether the loaded library can make the call, with the
// reason when it cannot.
func Has(name string) error {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	return gate(name, RuntimeVersion(), C.cb_nccl_sym(cname) != nil)
}

// Proc returns the resolved address of an entry point, for C code that
// batches calls without crossing back into Go; nil when the library lacks
// it or its version predates it.
func Proc(name string) unsafe.Pointer {
	if Has(name) != nil {
		return nil
	}
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	return C.cb_nccl_sym(cname)
}

// call turns a result into an error carrying NCCL's own description.
func call(name string, r C.ncclResult_t) error {
	return callComm(name, r, nil)
}

func callComm(name string, r C.ncclResult_t, comm C.ncclComm_t) error {
	switch r {
	case 0:
		return nil
	case C.CB_NCCL_MISSING:
		return gate(name, RuntimeVersion(), false)
	}
	e := &Error{Call: name, Result: Result(r)}
	if s := C.cb_ncclGetErrorString(r); s != nil {
		e.Text = C.GoString(s)
	}
	// The text is NCCL's last failure, kept across later successes: read
	// it right after the failing call only, and not for a result that sets
	// none (an operation still in progress).
	if Result(r) != InProgress && RuntimeVersion() >= Since("ncclGetLastError") {
		if s := C.cb_ncclGetLastError(comm); s != nil {
			e.Last = C.GoString(s)
		}
	}
	return e
}

// ResultError describes a result that C code got from the entry point
// call; last is NCCL's last-error text as the C code read it right after
// the failing call (empty when it did not). nil for success.
func ResultError(call string, result int, last string) error {
	if result == 0 {
		return nil
	}
	if result == int(C.CB_NCCL_MISSING) {
		return gate(call, RuntimeVersion(), false)
	}
	e := &Error{Call: call, Result: Result(result), Last: last}
	if s := C.cb_ncclGetErrorString(C.ncclResult_t(result)); s != nil {
		e.Text = C.GoString(s)
	}
	return e
}
