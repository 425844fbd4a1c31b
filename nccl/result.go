package nccl

import "fmt"

// Result is an ncclResult_t.
type Result int

// NCCL's result codes.
const (
	Success            Result = 0
	UnhandledCudaError Result = 1
	SystemError        Result = 2
	InternalError      Result = 3
	InvalidArgument    Result = 4
	InvalidUsage       Result = 5
	RemoteError        Result = 6 // 2.13
	InProgress         Result = 7 // 2.14
	Timeout            Result = 8 // 2.30
)

var resultNames = [...]string{"ncclSuccess", "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
	"ncclInvalidArgument", "ncclInvalidUsage", "ncclRemoteError", "ncclInProgress", "ncclTimeout"}

// Name is the enumerator's name in nccl.h.
func (r Result) Name() string {
	if r >= 0 && int(r) < len(resultNames) {
		return resultNames[r]
	}
	return fmt.Sprintf("ncclResult(%d)", int(r))
}

// Error is a failed NCCL call: the call, NCCL's result name, the library's
// description of it and, where NCCL has one, its last error message.
type Error struct {
	Call   string
	Result Result
	Text   string // ncclGetErrorString
	Last   string // ncclGetLastError, often naming the real cause
}

func (e *Error) Error() string {
	s := e.Call + ": " + e.Result.Name()
	if e.Text != "" {
		s += " (" + e.Text + ")"
	}
	if e.Last != "" {
		s += ": " + e.Last
	}
	return s
}
