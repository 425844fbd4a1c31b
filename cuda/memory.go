package cuda

/*
#include "driver.h"
*/
import "C"

import "unsafe"

// DevicePtr is a device memory address.
type DevicePtr uintptr

// MemAlloc allocates device memory in the current context.
func MemAlloc(n int64) (DevicePtr, error) {
	var p C.CUdeviceptr
	if err := check("cuMemAlloc", C.cb_cuMemAlloc(&p, C.size_t(n))); err != nil {
		return 0, err
	}
	return DevicePtr(p), nil
}

// MemFree releases memory from MemAlloc.
func MemFree(p DevicePtr) error { return check("cuMemFree", C.cb_cuMemFree(C.CUdeviceptr(p))) }

// CopyToDevice copies src to device memory at dst (synchronous).
func CopyToDevice(dst DevicePtr, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	return check("cuMemcpyHtoD", C.cb_cuMemcpyHtoD(C.CUdeviceptr(dst), unsafe.Pointer(&src[0]), C.size_t(len(src))))
}

// CopyFromDevice copies device memory at src into dst (synchronous).
func CopyFromDevice(dst []byte, src DevicePtr) error {
	if len(dst) == 0 {
		return nil
	}
	return check("cuMemcpyDtoH", C.cb_cuMemcpyDtoH(unsafe.Pointer(&dst[0]), C.CUdeviceptr(src), C.size_t(len(dst))))
}

// Memset sets n bytes at p to v.
func Memset(p DevicePtr, v byte, n int64) error {
	return check("cuMemsetD8", C.cb_cuMemsetD8(C.CUdeviceptr(p), C.uchar(v), C.size_t(n)))
}

// MemInfo returns the free and total device memory of the current
// context's device, in bytes.
func MemInfo() (free, total int64, err error) {
	var f, t C.size_t
	if err := check("cuMemGetInfo", C.cb_cuMemGetInfo(&f, &t)); err != nil {
		return 0, 0, err
	}
	return int64(f), int64(t), nil
}
