package charge

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/collbench/collbench/export"
)

// openBounded is Open(dir), failing the test where it has not returned
// within a minute: a read that waits for a writer never returns.
func openBounded(t *testing.T, dir string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := Open(dir)
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		t.Fatalf("Open(%s) still waiting after a minute", dir)
		return nil
	}
}

// A FIFO, a device link or a folder under a planner's file name is
// refused, naming what it is, and never waited on.
func TestOpenRefusesWhatIsNotARegularFile(t *testing.T) {
	table := filepath.Join("comm", "nccl", "host", export.AIConfiguratorTable)
	for _, tc := range []struct {
		name string
		make func(path string) error
		want string
	}{
		{"a FIFO as the parquet table", func(p string) error { return syscall.Mkfifo(p, 0o600) }, "it is a FIFO, not a regular file"},
		{"a folder as the parquet table", func(p string) error { return os.Mkdir(p, 0o755) }, "it is a directory, not a regular file"},
		{"a link to a device", func(p string) error { return os.Symlink("/dev/zero", p) }, "it is a device, not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, table)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := tc.make(path); err != nil {
				t.Fatal(err)
			}
			if err := openBounded(t, dir); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v, want %q", err, tc.want)
			}
		})
	}
	for _, name := range []string{"calculon_networks.json", "busbw.yaml", "nccl_perf.txt"} {
		dir := t.TempDir()
		if err := syscall.Mkfifo(filepath.Join(dir, name), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := openBounded(t, dir); err == nil || !strings.Contains(err.Error(), "FIFO") {
			t.Errorf("%s as a FIFO: %v", name, err)
		}
	}
}
