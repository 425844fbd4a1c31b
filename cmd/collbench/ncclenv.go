package main

import "os"

// ncclDebugFile is where NCCL's debug lines go unless the user said
// otherwise: NCCL writes them to standard output, where they would mix
// into the table, the CSV or the JSON document.
const ncclDebugFile = "/dev/stderr"

// steerNCCLDebug sends NCCL_DEBUG output to standard error when it is on
// and NCCL_DEBUG_FILE is not set. It must run before NCCL first logs,
// that is before the library is loaded; it reports whether it set it.
func steerNCCLDebug(getenv func(string) string, setenv func(string, string) error) bool {
	if getenv("NCCL_DEBUG") == "" || getenv("NCCL_DEBUG_FILE") != "" {
		return false
	}
	return setenv("NCCL_DEBUG_FILE", ncclDebugFile) == nil
}

// debugToStderr applies steerNCCLDebug to this process's environment,
// which the loaded NCCL reads: the program decides where its own streams
// go, so the libraries leave the environment alone. Every command that
// may load NCCL calls it first.
func debugToStderr() { steerNCCLDebug(os.Getenv, os.Setenv) }
