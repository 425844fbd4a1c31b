package main

import "testing"

// NCCL's debug lines go to stderr when they are on and the user has not
// chosen a file; otherwise the environment is left alone.
func TestSteerNCCLDebug(t *testing.T) {
	for _, tt := range []struct {
		debug, file string
		want        string
	}{
		{"INFO", "", ncclDebugFile},
		{"WARN", "/tmp/nccl.%h.%p", "/tmp/nccl.%h.%p"},
		{"", "", ""},
	} {
		env := map[string]string{"NCCL_DEBUG": tt.debug, "NCCL_DEBUG_FILE": tt.file}
		set := steerNCCLDebug(func(k string) string { return env[k] }, func(k, v string) error { env[k] = v; return nil })
		if got := env["NCCL_DEBUG_FILE"]; got != tt.want || set != (tt.file == "" && tt.debug != "") {
			t.Errorf("NCCL_DEBUG=%q NCCL_DEBUG_FILE=%q: now %q (set %v), want %q", tt.debug, tt.file, got, set, tt.want)
		}
	}
}
