package fileio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func write(ctx context.Context, path, text string) error {
	return WriteBytes(ctx, path, []byte(text))
}

func readText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Regular files are replaced whole, keep their permissions, and links
// keep pointing at the file they name, which gets the new contents.
func TestWriteRegularAndLinks(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	tests := []struct {
		name  string
		setup func(t *testing.T) (asked, real string)
	}{
		{"new file", func(t *testing.T) (string, string) {
			p := filepath.Join(dir, "new.json")
			return p, p
		}},
		{"existing file", func(t *testing.T) (string, string) {
			p := filepath.Join(dir, "old.json")
			os.WriteFile(p, []byte("old"), 0o600)
			return p, p
		}},
		{"absolute link", func(t *testing.T) (string, string) {
			real := filepath.Join(dir, "real.json")
			os.WriteFile(real, []byte("old"), 0o640)
			link := filepath.Join(dir, "abs-link.json")
			os.Symlink(real, link)
			return link, real
		}},
		{"relative link chain", func(t *testing.T) (string, string) {
			os.Mkdir(filepath.Join(dir, "sub"), 0o755)
			real := filepath.Join(dir, "sub", "chain.json")
			os.WriteFile(real, []byte("old"), 0o644)
			os.Symlink("sub/chain.json", filepath.Join(dir, "hop.json"))
			os.Symlink("hop.json", filepath.Join(dir, "rel-link.json"))
			return filepath.Join(dir, "rel-link.json"), real
		}},
		{"dangling link", func(t *testing.T) (string, string) {
			real := filepath.Join(dir, "made-by-link.json")
			link := filepath.Join(dir, "dangling.json")
			os.Symlink(real, link)
			return link, real
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			asked, real := tt.setup(t)
			var mode fs.FileMode = 0o644
			if fi, err := os.Stat(real); err == nil {
				mode = fi.Mode().Perm()
			}
			linkBefore, _ := os.Readlink(asked)
			if err := Check(asked); err != nil {
				t.Fatal(err)
			}
			if err := write(ctx, asked, "new"); err != nil {
				t.Fatal(err)
			}
			if got := readText(t, real); got != "new" {
				t.Errorf("%s holds %q", real, got)
			}
			fi, err := os.Lstat(real)
			if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != mode {
				t.Errorf("%s: %v %v, want a regular file with mode %v", real, fi.Mode(), err, mode)
			}
			if linkAfter, _ := os.Readlink(asked); linkAfter != linkBefore {
				t.Errorf("the link changed from %q to %q", linkBefore, linkAfter)
			}
		})
	}
	leftovers, _ := filepath.Glob(filepath.Join(dir, ".*"))
	leftovers2, _ := filepath.Glob(filepath.Join(dir, "sub", ".*"))
	if len(leftovers)+len(leftovers2) > 0 {
		t.Errorf("temporary files left: %v %v", leftovers, leftovers2)
	}
}

// Devices and the standard-output names are written through: they stay
// what they are, and a device that refuses the bytes is an error.
func TestWriteThroughDevices(t *testing.T) {
	ctx := context.Background()
	for _, dev := range []string{"/dev/null", "/dev/stdout", "/dev/stderr"} {
		before, err := os.Stat(dev)
		if err != nil {
			t.Skipf("%s: %v", dev, err)
		}
		if err := Check(dev); err != nil {
			t.Errorf("Check(%s): %v", dev, err)
		}
		if err := write(ctx, dev, ""); err != nil {
			t.Errorf("%s: %v", dev, err)
		}
		after, err := os.Stat(dev)
		if err != nil || after.Mode() != before.Mode() || !os.SameFile(before, after) {
			t.Errorf("%s was replaced: %v → %v", dev, before.Mode(), after.Mode())
		}
	}
	if _, err := os.Stat("/dev/full"); err == nil {
		err := write(ctx, "/dev/full", "data")
		if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "writing /dev/full") {
			t.Errorf("/dev/full: %v, want no space left", err)
		}
		if fi, err := os.Stat("/dev/full"); err != nil || fi.Mode()&fs.ModeCharDevice == 0 {
			t.Errorf("/dev/full is no longer a device: %v %v", fi.Mode(), err)
		}
	}
}

// A redirected standard output that is a regular file gets the bytes
// appended, as the shell's redirection would, not replaced.
func TestWriteThroughRedirectedStdout(t *testing.T) {
	p := filepath.Join(t.TempDir(), "out.txt")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteString("table\n")
	fdPath := "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))
	if err := write(context.Background(), fdPath, "json\n"); err != nil {
		t.Fatal(err)
	}
	if got := readText(t, p); got != "table\njson\n" {
		t.Errorf("file holds %q", got)
	}
}

// A FIFO reaches its reader and stays a FIFO; without a reader the write
// gives up when the context ends.
func TestWriteFIFO(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	got := make(chan string, 1)
	go func() {
		f, err := os.Open(fifo)
		if err != nil {
			got <- err.Error()
			return
		}
		b, _ := io.ReadAll(f)
		f.Close() // before the test goes on: an open reader would take the next write
		got <- string(b)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := write(ctx, fifo, "through the pipe"); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != "through the pipe" {
		t.Errorf("reader got %q", s)
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&fs.ModeNamedPipe == 0 {
		t.Errorf("the FIFO was replaced: %v %v", fi.Mode(), err)
	}

	short, cancel2 := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel2()
	err := write(short, fifo, "nobody listens")
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "nobody read the FIFO") {
		t.Errorf("write to a FIFO without a reader: %v", err)
	}
}

// What cannot be written is one sentence in the user's words, and a
// failed write leaves the old file as it was.
func TestWriteErrors(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	for _, tt := range []struct{ path, want string }{
		{dir, "it is a directory"},
		{filepath.Join(dir, "missing", "x.json"), "the folder " + filepath.Join(dir, "missing") + " does not exist"},
	} {
		for name, err := range map[string]error{"Check": Check(tt.path), "Write": write(ctx, tt.path, "x")} {
			if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), ".x.json.") {
				t.Errorf("%s(%s) = %v, want %q", name, tt.path, err, tt.want)
			}
		}
	}
	p := filepath.Join(dir, "keep.json")
	os.WriteFile(p, []byte("precious"), 0o644)
	err := Write(ctx, p, func(w io.Writer) error {
		w.Write([]byte("half"))
		return errors.New("encoder broke")
	})
	if err == nil || readText(t, p) != "precious" {
		t.Errorf("failed write: err %v, file %q", err, readText(t, p))
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".keep.json.*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestRead(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	p := filepath.Join(dir, "doc.json")
	os.WriteFile(p, []byte(`{"a":1}`), 0o644)
	if b, err := Read(ctx, p, 100); err != nil || string(b) != `{"a":1}` {
		t.Errorf("Read = %q, %v", b, err)
	}
	if _, err := Read(ctx, p, 3); err == nil || !strings.Contains(err.Error(), "larger than 3 bytes") {
		t.Errorf("over the limit: %v", err)
	}
	if _, err := Read(ctx, dir, 100); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Errorf("a directory: %v", err)
	}
	if _, err := Read(ctx, "/dev/zero", 4<<20); err == nil || !strings.Contains(err.Error(), "larger than 4 MiB") {
		t.Errorf("/dev/zero: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Read(cctx, "/dev/zero", MaxInput); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled read of /dev/zero: %v", err)
	}
}

// A FIFO whose writer never writes does not hold the reader past its
// context; one whose writer writes is read whole.
func TestReadFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "pipe")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	// A writer that holds the FIFO open and says nothing.
	w, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := Read(ctx, fifo, MaxInput); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("silent FIFO: %v, want the context's deadline", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a read of a silent FIFO ignored its context")
	}
	w.Write([]byte("late"))
	w.Close()
}

// A FIFO whose writer opens it late is read once the writer comes, not
// taken for empty; one no writer ever opens holds the reader only until
// its context ends.
func TestReadFIFOLateWriter(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "pipe")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	go func() {
		time.Sleep(200 * time.Millisecond)
		if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			w.Write([]byte("16 32\n"))
			w.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if b, err := Read(ctx, fifo, MaxInput); err != nil || string(b) != "16 32\n" {
		t.Errorf("late writer: %q, %v", b, err)
	}
	never, stop := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer stop()
	start := time.Now()
	if _, err := Read(never, fifo, MaxInput); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("no writer: %v, want the context's deadline", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("no writer: returned after %v", d)
	}
}

func TestDistinct(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "r.svg")
	os.WriteFile(in, []byte("x"), 0o644)
	link := filepath.Join(dir, "link.svg")
	os.Symlink(in, link)
	hard := filepath.Join(dir, "hard.svg")
	os.Link(in, hard)
	for _, out := range []string{in, link, hard, filepath.Join(dir, ".", "r.svg")} {
		if err := Distinct(out, []string{in}); err == nil || !strings.Contains(err.Error(), "is the input") {
			t.Errorf("Distinct(%s): %v", out, err)
		}
	}
	if err := Distinct(filepath.Join(dir, "new.svg"), []string{in}); err != nil {
		t.Errorf("a new file: %v", err)
	}
}

// failingWriter fails every write after the first n bytes.
type failingWriter struct{ n int }

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.n < len(p) {
		return 0, errors.New("disk full")
	}
	w.n -= len(p)
	return len(p), nil
}

// The first write error is kept, and every later write fails with it.
func TestCheckedWriter(t *testing.T) {
	c := &CheckedWriter{W: &failingWriter{n: 4}}
	fmt.Fprint(c, "1234")
	fmt.Fprint(c, "5")
	fmt.Fprint(c, "")
	if c.Err == nil || c.Err.Error() != "disk full" {
		t.Errorf("err = %v, want disk full", c.Err)
	}
	if _, err := c.Write([]byte("6")); err != c.Err {
		t.Errorf("a later write gave %v", err)
	}
}

// "-" saves to the writer given; a file is saved even after ctx ended.
func TestSave(t *testing.T) {
	var out strings.Builder
	write := func(w io.Writer) error { _, err := io.WriteString(w, "doc\n"); return err }
	if err := Save(context.Background(), Stdout, &out, write); err != nil || out.String() != "doc\n" {
		t.Errorf("-: %q, %v", out.String(), err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	path := filepath.Join(t.TempDir(), "run.json")
	if err := Save(ctx, path, &out, write); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "doc\n" {
		t.Errorf("after the end of ctx the file holds %q", b)
	}
}

// ReplaceEntry replaces a link or a FIFO left under the name, never the
// file the link leads to, and never waits on the FIFO.
func TestReplaceEntry(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	link, fifo, plain := filepath.Join(dir, "link.log"), filepath.Join(dir, "fifo.log"), filepath.Join(dir, "new.log")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{link, fifo, plain} {
		done := make(chan error, 1)
		go func() { done <- ReplaceEntry(p, []byte("log")) }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: still writing after 10 s", p)
		}
		fi, err := os.Lstat(p)
		if err != nil || !fi.Mode().IsRegular() {
			t.Errorf("%s: %v, %v; want a regular file", p, fi, err)
		}
		if got, _ := os.ReadFile(p); string(got) != "log" {
			t.Errorf("%s holds %q", p, got)
		}
	}
	if got, _ := os.ReadFile(victim); string(got) != "keep" {
		t.Errorf("the file the link led to now holds %q", got)
	}
	if err := ReplaceEntry(filepath.Join(dir, "missing", "x.log"), nil); err == nil || !strings.Contains(err.Error(), "cannot write") {
		t.Errorf("a missing folder: %v", err)
	}
}
