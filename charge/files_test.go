package charge

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/collbench/collbench/export"
	"github.com/collbench/collbench/internal/fixture"
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

// A folder that is not there, or is a file, is said to be so; a folder
// with two AIConfigurator version folders is refused rather than charged
// from whichever the glob lists first.
func TestOpenSaysWhatTheFolderIs(t *testing.T) {
	if _, err := Open(filepath.Join(t.TempDir(), "none")); err == nil || !strings.Contains(err.Error(), "no such file or directory") {
		t.Errorf("a missing folder: %v", err)
	}
	file := filepath.Join(t.TempDir(), "f")
	os.WriteFile(file, nil, 0o644)
	if _, err := Open(file); err == nil || !strings.Contains(err.Error(), "is not a folder") {
		t.Errorf("a file: %v", err)
	}
	dir := t.TempDir()
	p := fixture.Profile(t, 2, 4)
	for _, v := range []string{"2.30.7", "2.27.3"} {
		p.Meta.NCCLVersion = v
		if _, err := export.Write(context.Background(), p, "aiconfigurator", dir, export.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "holds 2 of one planner's tables") {
		t.Errorf("two version folders: %v", err)
	}
}
