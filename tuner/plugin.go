package tuner

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"strings"
)

// CheckPlugin refuses a file NCCL could not load as a tuner plugin, and
// NCCL's example plugin built from a source older than NCCL 2.30: it
// reads NCCL's cost table as an array of pointers, where NCCL passes a
// float[7][3] (src/enqueue.cc), and crashes on its first matching row.
// That one is known by its log text and the v6 entry point it lacks.
func CheckPlugin(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", path)
	}
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("%s is not a shared library: %v", path, err)
	}
	defer f.Close()
	syms, err := f.DynamicSymbols()
	if err != nil {
		return fmt.Errorf("%s exports no symbols: %v", path, err)
	}
	var versions []string
	for _, s := range syms {
		if v, ok := strings.CutPrefix(s.Name, "ncclTunerPlugin_"); ok && s.Section != elf.SHN_UNDEF {
			versions = append(versions, v)
		}
	}
	if len(versions) == 0 {
		return fmt.Errorf("%s exports no ncclTunerPlugin_v* symbol: it is not an NCCL tuner plugin", path)
	}
	for _, v := range versions {
		if v == "v6" {
			return nil
		}
	}
	data, err := os.ReadFile(path)
	if err == nil && bytes.Contains(data, []byte("TUNER/ExamplePlugin")) {
		return fmt.Errorf("%s is NCCL's example plugin from a source older than 2.30 (no ncclTunerPlugin_v6): it reads NCCL's cost table as an array of pointers and crashes on its first matching row; build it from NCCL 2.30 or later (scripts/tuner-plugin.sh)", path)
	}
	return nil
}
