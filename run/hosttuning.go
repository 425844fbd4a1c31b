package run

import (
	"fmt"
	"os"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/host"
	"github.com/collbench/collbench/tuner"
)

// The variables that tell the host backend its choices, as NCCL_ALGO,
// NCCL_PROTO, NCCL_TUNER_CONFIG_FILE and NCCL_DEBUG_SUBSYS=TUNING tell
// NCCL its own (docs/tune.md).
const (
	HostAlgoVar      = "COLLBENCH_HOST_ALGO"       // ring, doubling, pipeline or direct, for every call that has it
	HostSegmentVar   = "COLLBENCH_HOST_SEGMENT"    // the segment, e.g. 64K
	HostTunerFileVar = "COLLBENCH_HOST_TUNER_FILE" // a tuner file in the host backend's vocabulary
	HostTuningLogVar = "COLLBENCH_HOST_TUNING_LOG" // a file each group's rank 0 logs its choice per call to
	// HostDoublingMaxVar sets the host backend's own model: the largest
	// call it runs by recursive doubling (0: none), as NCCL's model sets
	// its own choice; a tuner file's rows win over it.
	HostDoublingMaxVar = "COLLBENCH_HOST_DOUBLING_MAX"
)

// maxTunerFile bounds a tuner file read: a row is at most 255 bytes.
const maxTunerFile = 4 << 20

// hostTuning reads the host backend's choices from the environment. A
// value that cannot be taken is refused in one line naming the variable.
func hostTuning(getenv func(string) string) (host.Tuning, error) {
	t := host.Tuning{Algorithm: getenv(HostAlgoVar)}
	if s := getenv(HostSegmentVar); s != "" {
		seg, err := bench.ParseSize(s)
		if err == nil {
			err = host.CheckSegment(seg)
		}
		if err != nil {
			return t, UsageError{fmt.Errorf("%s=%s: %w", HostSegmentVar, s, err)}
		}
		t.Segment = seg
	}
	if s := getenv(HostDoublingMaxVar); s != "" {
		limit, err := bench.ParseSize(s)
		if err != nil {
			return t, UsageError{fmt.Errorf("%s=%s: %w", HostDoublingMaxVar, s, err)}
		}
		t.DoublingMax = limit
		if limit == 0 {
			t.DoublingMax = host.NoDoubling
		}
	}
	if err := t.Check(); err != nil {
		return t, UsageError{fmt.Errorf("%s=%s: %w", HostAlgoVar, t.Algorithm, err)}
	}
	if path := getenv(HostTunerFileVar); path != "" {
		data, err := readTunerFile(path)
		if err != nil {
			return t, UsageError{fmt.Errorf("%s=%s: %w", HostTunerFileVar, path, err)}
		}
		rows, err := tuner.ParseStrict(data, host.Vocabulary)
		if err != nil {
			return t, UsageError{fmt.Errorf("%s=%s: %w", HostTunerFileVar, path, err)}
		}
		t.Table = host.Rules(rows)
	}
	if path := getenv(HostTuningLogVar); path != "" {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return t, UsageError{fmt.Errorf("%s=%s: %w", HostTuningLogVar, path, err)}
		}
		t.Log = f // written for the rest of the process, closed at its exit
	}
	return t, nil
}

// readTunerFile reads a regular file of at most maxTunerFile bytes.
func readTunerFile(path string) ([]byte, error) {
	st, err := os.Stat(path)
	switch {
	case err != nil:
		return nil, err
	case !st.Mode().IsRegular():
		return nil, fmt.Errorf("not a regular file")
	case st.Size() > maxTunerFile:
		return nil, fmt.Errorf("%d bytes; a tuner file of rows of at most 255 bytes is far smaller", st.Size())
	}
	return os.ReadFile(path)
}
