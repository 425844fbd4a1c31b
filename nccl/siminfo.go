package nccl

// ncclSimInfo_t (ncclSimInfo_v22200, NCCL 2.22 and later), which
// ncclGroupSimulateEnd reads and fills: size_t size, unsigned magic,
// unsigned version, float estimatedTime (µs). Callers that lay it out in C
// check their layout against these, and the real-library check checks
// these against each real nccl.h.
const (
	SimInfoSize       = 24
	SimInfoTimeOffset = 16
	// SimInfoMagic is NCCL_SIM_INFO_INITIALIZER's magic; NCCL refuses a
	// struct without it.
	SimInfoMagic = 0x74685283
)
