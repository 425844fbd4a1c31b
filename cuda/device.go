package cuda

/*
#include "driver.h"
*/
import "C"

import (
	"fmt"
	"strings"
	"unsafe"
)

// Device is a CUDA device ordinal.
type Device int

// Attribute is a CUdevice_attribute value.
type Attribute int

// Attributes collbench reads.
const (
	AttrMultiprocessorCount Attribute = 16
	AttrComputeCapMajor     Attribute = 75
	AttrComputeCapMinor     Attribute = 76
	AttrPCIBusID            Attribute = 33
	AttrPCIDeviceID         Attribute = 34
	AttrPCIDomainID         Attribute = 50
	AttrMemoryClockRateKHz  Attribute = 36
	AttrGlobalMemoryBusBits Attribute = 37
)

// DeviceCount is the number of devices the driver sees.
func DeviceCount() (int, error) {
	var n C.int
	if err := check("cuDeviceGetCount", C.cb_cuDeviceGetCount(&n)); err != nil {
		return 0, err
	}
	return int(n), nil
}

func (d Device) handle() (C.CUdevice, error) {
	var h C.CUdevice
	if err := check("cuDeviceGet", C.cb_cuDeviceGet(&h, C.int(d))); err != nil {
		return 0, fmt.Errorf("device %d: %w", int(d), err)
	}
	return h, nil
}

// Name is the product name, e.g. "NVIDIA H100 80GB HBM3".
func (d Device) Name() (string, error) {
	h, err := d.handle()
	if err != nil {
		return "", err
	}
	var buf [256]C.char
	if err := check("cuDeviceGetName", C.cb_cuDeviceGetName(&buf[0], C.int(len(buf)), h)); err != nil {
		return "", err
	}
	return C.GoString(&buf[0]), nil
}

// Attribute reads one device attribute.
func (d Device) Attribute(a Attribute) (int, error) {
	h, err := d.handle()
	if err != nil {
		return 0, err
	}
	var v C.int
	if err := check("cuDeviceGetAttribute", C.cb_cuDeviceGetAttribute(&v, C.int(a), h)); err != nil {
		return 0, err
	}
	return int(v), nil
}

// ComputeCapability returns the SM version, e.g. 9, 0 for Hopper.
func (d Device) ComputeCapability() (major, minor int, err error) {
	if major, err = d.Attribute(AttrComputeCapMajor); err != nil {
		return 0, 0, err
	}
	minor, err = d.Attribute(AttrComputeCapMinor)
	return major, minor, err
}

// TotalMem is the device memory in bytes.
func (d Device) TotalMem() (int64, error) {
	h, err := d.handle()
	if err != nil {
		return 0, err
	}
	var n C.size_t
	if err := check("cuDeviceTotalMem", C.cb_cuDeviceTotalMem(&n, h)); err != nil {
		return 0, err
	}
	return int64(n), nil
}

// PCIBusID is the device's PCI address, e.g. "0000:18:00.0".
func (d Device) PCIBusID() (string, error) {
	h, err := d.handle()
	if err != nil {
		return "", err
	}
	var buf [64]C.char
	if err := check("cuDeviceGetPCIBusId", C.cb_cuDeviceGetPCIBusId(&buf[0], C.int(len(buf)), h)); err != nil {
		return "", err
	}
	return strings.ToLower(C.GoString(&buf[0])), nil
}

// Context is a device's primary context, the one the CUDA runtime (and so
// NCCL) uses for that device.
type Context struct {
	c   C.CUcontext
	Dev Device
}

// PrimaryContext retains the device's primary context.
func (d Device) PrimaryContext() (*Context, error) {
	h, err := d.handle()
	if err != nil {
		return nil, err
	}
	var c C.CUcontext
	if err := check("cuDevicePrimaryCtxRetain", C.cb_cuDevicePrimaryCtxRetain(&c, h)); err != nil {
		return nil, fmt.Errorf("device %d: %w", int(d), err)
	}
	return &Context{c: c, Dev: d}, nil
}

// SetCurrent makes the context current on the calling OS thread.
func (c *Context) SetCurrent() error {
	return check("cuCtxSetCurrent", C.cb_cuCtxSetCurrent(c.c))
}

// Handle is the CUcontext for C code.
func (c *Context) Handle() uintptr { return uintptr(unsafe.Pointer(c.c)) }

// Synchronize waits for all work in the current context.
func Synchronize() error { return check("cuCtxSynchronize", C.cb_cuCtxSynchronize()) }

// Release drops this retention of the primary context.
func (c *Context) Release() error {
	h, err := c.Dev.handle()
	if err != nil {
		return err
	}
	return check("cuDevicePrimaryCtxRelease", C.cb_cuDevicePrimaryCtxRelease(h))
}

// StreamPriorityRange returns the least and greatest stream priorities of
// the current context (greatest is numerically smallest).
func StreamPriorityRange() (least, greatest int, err error) {
	var l, g C.int
	if err := check("cuCtxGetStreamPriorityRange", C.cb_cuCtxGetStreamPriorityRange(&l, &g)); err != nil {
		return 0, 0, err
	}
	return int(l), int(g), nil
}
