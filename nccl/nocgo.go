//go:build !cgo

package nccl

// collbench loads the NVIDIA libraries through cgo, so it cannot be built
// with CGO_ENABLED=0. This declaration makes such a build fail with a
// message that says so, instead of errors deep inside go-nvml.
var _ = collbench_needs_cgo_build_with_CGO_ENABLED_1_and_a_C_compiler_such_as_gcc
