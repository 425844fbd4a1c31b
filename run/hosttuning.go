package run

import (
	"fmt"
	"os"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/host"
	"github.com/collbench/collbench/tuner"
)

// maxTunerFile bounds a tuner file read: a row is at most 255 bytes.
const maxTunerFile = 4 << 20

// hostTuning reads the host backend's choices from the environment. A
// value that cannot be taken is refused in one line naming the variable.
func hostTuning(getenv func(string) string) (host.Tuning, error) {
	t := host.Tuning{Algorithm: getenv(host.AlgoVar)}
	if s := getenv(host.SegmentVar); s != "" {
		seg, err := bench.ParseSize(s)
		if err == nil {
			err = host.CheckSegment(seg)
		}
		if err != nil {
			return t, UsageError{fmt.Errorf("%s=%s: %w", host.SegmentVar, s, err)}
		}
		t.Segment = seg
	}
	if s := getenv(host.DoublingMaxVar); s != "" {
		limit, err := bench.ParseSize(s)
		if err != nil {
			return t, UsageError{fmt.Errorf("%s=%s: %w", host.DoublingMaxVar, s, err)}
		}
		t.DoublingMax = limit
		if limit == 0 {
			t.DoublingMax = host.NoDoubling
		}
	}
	if err := t.Check(); err != nil {
		return t, UsageError{fmt.Errorf("%s=%s: %w", host.AlgoVar, t.Algorithm, err)}
	}
	if path := getenv(host.TunerFileVar); path != "" {
		data, err := readTunerFile(path)
		if err != nil {
			return t, UsageError{fmt.Errorf("%s=%s: %w", host.TunerFileVar, path, err)}
		}
		rows, err := tuner.ParseStrict(data, host.Vocabulary)
		if err != nil {
			return t, UsageError{fmt.Errorf("%s=%s: %w", host.TunerFileVar, path, err)}
		}
		t.Table = host.Rules(rows)
	}
	if path := getenv(host.TuningLogVar); path != "" {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return t, UsageError{fmt.Errorf("%s=%s: %w", host.TuningLogVar, path, err)}
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
