// Package cuda is a thin binding to the CUDA driver API (libcuda.so.1),
// opened with dlopen at run time so programs build and start on machines
// without CUDA. It mirrors the C API closely and holds no policy.
//
// The driver keeps the current context per OS thread: callers pin their
// goroutine (runtime.LockOSThread) and make a context current before using
// memory, stream or event calls.
package cuda

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "driver.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/collbench/collbench/libpath"
)

var loaded libpath.Once

// ErrNoDriver means no CUDA driver library could be opened.
var ErrNoDriver = errors.New("no CUDA driver")

// Load opens the driver library and initialises it with cuInit. explicit,
// when not empty, is a file or folder the user named. Only the first call
// does the work; later calls return its result. A library that is not the
// driver is refused and leaves nothing resolved; the real driver whose
// cuInit fails (a machine without a GPU) is an error too, but stays
// loaded, so that DriverVersion still says what it supports.
func Load(explicit string) (string, error) {
	return loaded.Do(func() (string, error) { return load(explicit) })
}

func load(explicit string) (string, error) {
	lib, err := libpath.Load(libpath.CUDA, explicit)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrNoDriver, err)
	}
	C.cb_cuda_resolve(lib.Handle)
	path := lib.Path
	if err := check("cuInit", C.cb_cuInit(0)); err != nil {
		return path, fmt.Errorf("%w: %s loaded but %w", ErrNoDriver, path, err)
	}
	return path, nil
}

// Proc returns the resolved address of a driver entry point by its Go-side
// name ("cuEventRecord", "cuStreamQuery", ...), for C code that batches
// calls without crossing back into Go. It is nil before Load or when the
// driver lacks the entry point.
func Proc(name string) unsafe.Pointer {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	return C.cb_cuda_sym(cname)
}

// DriverVersion is the CUDA version the driver supports, e.g. 12080.
func DriverVersion() (int, error) {
	var v C.int
	if err := check("cuDriverGetVersion", C.cb_cuDriverGetVersion(&v)); err != nil {
		return 0, err
	}
	return int(v), nil
}

// FormatVersion renders a CUDA version number (major·1000 + minor·10) as
// "12.8".
func FormatVersion(v int) string { return fmt.Sprintf("%d.%d", v/1000, v%1000/10) }
