package fileio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// maxLinks bounds how many symbolic links a path may pass through, as the
// kernel's own limit does.
const maxLinks = 40

// target is where a write lands once links are followed.
type target struct {
	path    string      // the file to replace or write through
	through bool        // a device, FIFO, socket or /proc file: written in place
	mode    fs.FileMode // permissions to keep when replacing an existing file
	exists  bool
}

// resolve follows path's symbolic links to the file a write must reach.
// A link into /proc (what /dev/stdout is) or one that names no file (a
// pipe's "pipe:[…]") is written through, as the shell's own redirection
// would be.
func resolve(path string) (target, error) {
	p := filepath.Clean(path)
	for hops := 0; ; hops++ {
		if magic(p) {
			return target{path: p, through: true, exists: true}, nil
		}
		fi, err := os.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return target{path: p}, nil
		case err != nil:
			return target{}, fmt.Errorf("cannot write %s: %w", path, unwrapPath(err))
		case fi.Mode()&fs.ModeSymlink == 0:
			return classify(path, p, fi)
		case hops == maxLinks:
			return target{}, fmt.Errorf("cannot write %s: too many levels of symbolic links", path)
		}
		link, err := os.Readlink(p)
		if err != nil {
			return target{}, fmt.Errorf("cannot write %s: %w", path, unwrapPath(err))
		}
		if !strings.HasPrefix(link, "/") && strings.Contains(link, ":[") {
			return target{path: p, through: true, exists: true}, nil // pipe:[…], socket:[…]
		}
		if !filepath.IsAbs(link) {
			link = filepath.Join(filepath.Dir(p), link)
		}
		p = filepath.Clean(link)
	}
}

// magic reports the kernel's per-process files, which are links that
// must be opened, never replaced.
func magic(p string) bool {
	return p == "/proc" || strings.HasPrefix(p, "/proc/") || p == "/dev/fd" || strings.HasPrefix(p, "/dev/fd/")
}

func classify(asked, p string, fi fs.FileInfo) (target, error) {
	switch m := fi.Mode(); {
	case m.IsDir():
		return target{}, fmt.Errorf("cannot write %s: it is a directory", asked)
	case m.IsRegular():
		return target{path: p, mode: m.Perm(), exists: true}, nil
	default: // device, FIFO, socket
		return target{path: p, through: true, exists: true}, nil
	}
}

// Check fails early, before any measurement, when a write to path could
// not succeed: a directory, a missing folder, no permission.
func Check(path string) error {
	t, err := resolve(path)
	if err != nil || t.through {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(t.path), "."+filepath.Base(t.path)+".*")
	if err != nil {
		return createError(path, t.path, err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// Write has write produce the file at path: a regular file (or the file a
// link leads to) is replaced atomically and keeps its permissions; a
// device, FIFO or /dev/stdout is written through. ctx bounds the wait for
// a FIFO's reader.
func Write(ctx context.Context, path string, write func(io.Writer) error) error {
	t, err := resolve(path)
	if err != nil {
		return err
	}
	if t.through {
		return writeThrough(ctx, path, t.path, write)
	}
	return replace(path, t, write)
}

// WriteBytes writes data to path as Write does.
func WriteBytes(ctx context.Context, path string, data []byte) error {
	return Write(ctx, path, func(w io.Writer) error { _, err := w.Write(data); return err })
}

func replace(asked string, t target, write func(io.Writer) error) (err error) {
	f, err := os.CreateTemp(filepath.Dir(t.path), "."+filepath.Base(t.path)+".*")
	if err != nil {
		return createError(asked, t.path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
			err = fmt.Errorf("writing %s: %w", asked, unwrapPath(err))
		}
	}()
	mode := fs.FileMode(0o644)
	if t.exists {
		mode = t.mode
	}
	if err = write(f); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Chmod(mode); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, t.path)
}

// writeThrough opens an existing special file and writes into it, never
// creating, truncating or replacing it. O_APPEND keeps what a redirected
// standard output already holds. A FIFO is opened without blocking and
// retried until its reader comes or ctx ends.
func writeThrough(ctx context.Context, asked, path string, write func(io.Writer) error) error {
	var f *os.File
	for {
		var err error
		f, err = os.OpenFile(path, os.O_WRONLY|os.O_APPEND|syscall.O_NONBLOCK, 0)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.ENXIO) { // ENXIO: a FIFO with no reader yet
			return fmt.Errorf("writing %s: %w", asked, unwrapPath(err))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("writing %s: nobody read the FIFO: %w", asked, context.Cause(ctx))
		case <-time.After(50 * time.Millisecond):
		}
	}
	stop := context.AfterFunc(ctx, func() { _ = f.SetWriteDeadline(time.Now()) })
	defer stop()
	err := write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("writing %s: %w", asked, context.Cause(ctx))
		}
		return fmt.Errorf("writing %s: %w", asked, unwrapPath(err))
	}
	return nil
}

// createError says why no file can be made beside path, in the user's
// words rather than the temporary file's name.
func createError(asked, path string, err error) error {
	dir := filepath.Dir(path)
	if fi, serr := os.Stat(dir); errors.Is(serr, fs.ErrNotExist) {
		return fmt.Errorf("cannot write %s: the folder %s does not exist", asked, dir)
	} else if serr == nil && !fi.IsDir() {
		return fmt.Errorf("cannot write %s: %s is not a folder", asked, dir)
	}
	return fmt.Errorf("cannot write %s: %w", asked, unwrapPath(err))
}

// unwrapPath drops the *PathError's operation and (temporary) path, which
// the caller's message already replaces with the user's.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Stdout is the file name that means standard output (-J -).
const Stdout = "-"

// lateWrite bounds how long the results of an interrupted run may wait
// for a FIFO's reader: they are still written, but nothing waits forever.
const lateWrite = 10 * time.Second

// Save writes a file a user asked for as Write does, or to stdout when
// path is Stdout. The results of a run that was interrupted (ctx ended)
// are written all the same, within lateWrite.
func Save(ctx context.Context, path string, stdout io.Writer, write func(io.Writer) error) error {
	if path == Stdout {
		return write(stdout)
	}
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), lateWrite)
		defer cancel()
	}
	return Write(ctx, path, write)
}

// CheckedWriter remembers the first error of the writer it wraps, so that
// output written with fmt.Fprintf, which drops errors, is still checked:
// a command whose standard output failed (a full disk, a closed
// descriptor) has lost its results, whatever it measured.
type CheckedWriter struct {
	W   io.Writer
	Err error // the first write error; later writes fail with it
}

func (c *CheckedWriter) Write(p []byte) (int, error) {
	if c.Err != nil {
		return 0, c.Err
	}
	n, err := c.W.Write(p)
	if err != nil {
		c.Err = err
	}
	return n, err
}

// ReplaceEntry writes data as a new file at path, replacing whatever
// entry the folder holds under that name (a link itself, not the file it
// leads to; a FIFO without waiting for a reader): for files collbench
// names itself inside a folder it was given, such as logs, where an entry
// left there is no destination the user chose. It is Write's replacement
// with the entry taken as found, never resolved.
func ReplaceEntry(path string, data []byte) error {
	return replace(path, target{path: filepath.Clean(path)}, func(w io.Writer) error { _, err := w.Write(data); return err })
}
