package cuda

/*
#include "driver.h"
*/
import "C"

import "fmt"

// Error is a failed driver call.
type Error struct {
	Call string // the entry point, e.g. "cuMemAlloc"
	Code int    // CUresult
	Name string // e.g. "CUDA_ERROR_OUT_OF_MEMORY"
	Text string // the driver's description
}

func (e *Error) Error() string {
	if e.Text == "" {
		return fmt.Sprintf("%s: %s", e.Call, e.Name)
	}
	return fmt.Sprintf("%s: %s (%s)", e.Call, e.Name, e.Text)
}

// Codes that callers test for.
const (
	Success          = 0
	ErrorNotReady    = 600
	ErrorOutOfMemory = 2
	ErrorNoDevice    = 100
	codeMissing      = -1
)

// knownNames covers the results a benchmark run meets, so an error has a
// name even when the driver's own lookup is unavailable. Every name is a
// CUresult of the driver API's cuda.h (CUDA 12.4); the runtime API's codes
// (cudaError_t) differ and do not belong here.
var knownNames = map[int]string{
	0: "CUDA_SUCCESS", 1: "CUDA_ERROR_INVALID_VALUE", 2: "CUDA_ERROR_OUT_OF_MEMORY",
	3: "CUDA_ERROR_NOT_INITIALIZED", 4: "CUDA_ERROR_DEINITIALIZED", 34: "CUDA_ERROR_STUB_LIBRARY",
	46: "CUDA_ERROR_DEVICE_UNAVAILABLE", 100: "CUDA_ERROR_NO_DEVICE",
	101: "CUDA_ERROR_INVALID_DEVICE", 201: "CUDA_ERROR_INVALID_CONTEXT", 400: "CUDA_ERROR_INVALID_HANDLE",
	600: "CUDA_ERROR_NOT_READY", 700: "CUDA_ERROR_ILLEGAL_ADDRESS", 719: "CUDA_ERROR_LAUNCH_FAILED",
	900: "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", 901: "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
	999: "CUDA_ERROR_UNKNOWN",
}

// newError names a result, asking the driver for its name and text when it
// can.
func newError(call string, code int) *Error {
	e := &Error{Call: call, Code: code}
	if code == codeMissing {
		e.Name = "not supported by this driver"
		return e
	}
	var s *C.char
	if C.cb_cuGetErrorName(C.CUresult(code), &s) == 0 && s != nil {
		e.Name = C.GoString(s)
	} else if n, ok := knownNames[code]; ok {
		e.Name = n
	} else {
		e.Name = fmt.Sprintf("CUDA error %d", code)
	}
	if C.cb_cuGetErrorString(C.CUresult(code), &s) == 0 && s != nil {
		e.Text = C.GoString(s)
	}
	return e
}

func check(call string, r C.CUresult) error {
	if r == 0 {
		return nil
	}
	return newError(call, int(r))
}

// ResultError describes a result that C code got from the entry point
// call; nil for success.
func ResultError(call string, result int) error {
	if result == 0 {
		return nil
	}
	return newError(call, result)
}
