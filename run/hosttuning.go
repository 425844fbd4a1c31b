package run

import (
	"fmt"
	"os"
	"syscall"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/bench/host"
	"github.com/collbench/collbench/tuner"
)

// maxTunerFile bounds a tuner file read: a row is at most 255 bytes.
const maxTunerFile = 4 << 20

// HostTuning reads the host backend's choices from an environment, as a
// run started with it would, for a caller that checks a run it will start
// (an ab arm) before starting it. The log is not opened.
func HostTuning(getenv func(string) string) (host.Tuning, error) {
	return hostTuning(func(k string) string {
		if k == host.TuningLogVar {
			return ""
		}
		return getenv(k)
	})
}

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
		f, err := openTuningLog(path)
		if err != nil {
			return t, UsageError{fmt.Errorf("%s=%s: %w", host.TuningLogVar, path, err)}
		}
		t.Log = f // written for the rest of the process, closed at its exit
	}
	return t, nil
}

// openTuningLog opens the host backend's log for appending. It is a
// regular file or a character device (/dev/null, /dev/stderr): a FIFO
// would hold the open until some reader came, deaf to an interrupt, and a
// socket or folder cannot be appended to. The check and the open do not
// block: O_NONBLOCK keeps a FIFO put there in between from waiting.
func openTuningLog(path string) (*os.File, error) {
	if st, err := os.Stat(path); err == nil {
		if err := appendable(st.Mode()); err != nil {
			return nil, err
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND|syscall.O_NONBLOCK, 0o644)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil {
		err = appendable(st.Mode())
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// appendable refuses what a log cannot be appended to without waiting.
func appendable(m os.FileMode) error {
	switch {
	case m.IsRegular(), m&os.ModeCharDevice != 0:
		return nil
	case m.IsDir():
		return fmt.Errorf("a directory: name a regular file")
	case m&os.ModeNamedPipe != 0:
		return fmt.Errorf("a FIFO: name a regular file")
	default:
		return fmt.Errorf("not a regular file")
	}
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
