package nccl

import "fmt"

// Version is NCCL's version code: X·1000+Y·100+Z up to 2.8, X·10000+Y·100+Z
// from 2.9 on (NCCL_VERSION in nccl.h), as ncclGetVersion reports it.
type Version int

// V encodes major.minor.patch the way nccl.h's NCCL_VERSION macro does.
func V(major, minor, patch int) Version {
	if major <= 2 && minor <= 8 {
		return Version(major*1000 + minor*100 + patch)
	}
	return Version(major*10000 + minor*100 + patch)
}

// Parts decodes the version code.
func (v Version) Parts() (major, minor, patch int) {
	n := int(v)
	if n < 10000 {
		return n / 1000, n % 1000 / 100, n % 100
	}
	return n / 10000, n % 10000 / 100, n % 100
}

func (v Version) String() string {
	a, b, c := v.Parts()
	return fmt.Sprintf("%d.%d.%d", a, b, c)
}

// since is the first NCCL release that has each optional entry point in
// its public API; an entry point is used only when the loaded library is
// at least that version and exports the symbol.
var since = map[string]Version{
	"ncclCommAbort":            V(2, 4, 0),
	"ncclCommGetAsyncError":    V(2, 4, 0),
	"ncclSend":                 V(2, 7, 0),
	"ncclRecv":                 V(2, 7, 0),
	"ncclRedOpCreatePreMulSum": V(2, 11, 0),
	"ncclRedOpDestroy":         V(2, 11, 0),
	"ncclGetLastError":         V(2, 13, 0),
	"ncclCommInitRankConfig":   V(2, 14, 0),
	"ncclCommFinalize":         V(2, 14, 0),
	"ncclCommSplit":            V(2, 18, 0),
	"ncclMemAlloc":             V(2, 19, 0),
	"ncclGroupSimulateEnd":     V(2, 22, 0),
	"ncclMemFree":              V(2, 19, 0),
	"ncclCommRegister":         V(2, 19, 0),
	"ncclCommDeregister":       V(2, 19, 0),
	"ncclCommWindowRegister":   V(2, 27, 0),
	"ncclCommWindowDeregister": V(2, 27, 0),
	"ncclAlltoAll":             V(2, 28, 0),
	"ncclGather":               V(2, 28, 0),
	"ncclScatter":              V(2, 28, 0),
}

// Since returns the release that introduced an entry point, or 0 for the
// ones every supported release has.
func Since(name string) Version { return since[name] }

// UnsupportedError is a call the loaded NCCL cannot make.
type UnsupportedError struct {
	Call string
	Need Version // 0 when the symbol is simply missing
	Have Version
}

func (e *UnsupportedError) Error() string {
	if e.Need > e.Have {
		a, b, _ := e.Need.Parts()
		return fmt.Sprintf("%s is not supported by NCCL %s (needs %d.%d or later)", e.Call, e.Have, a, b)
	}
	return fmt.Sprintf("%s is not exported by NCCL %s", e.Call, e.Have)
}

// gate decides whether name may be called on a library of version have
// that does (exported) or does not export it.
func gate(name string, have Version, exported bool) error {
	if need := since[name]; need > have {
		return &UnsupportedError{Call: name, Need: need, Have: have}
	}
	if !exported {
		return &UnsupportedError{Call: name, Have: have}
	}
	return nil
}
