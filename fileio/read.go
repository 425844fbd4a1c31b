package fileio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// MaxInput is the largest document collbench reads: far above any run or
// profile it writes (a few MiB), far below what would exhaust memory.
const MaxInput = 256 << 20

// Read returns the contents of path, at most limit bytes. A larger input
// is refused with one sentence; a FIFO is opened without waiting for its
// writer; the read gives up when ctx ends, with ctx's cause.
func Read(ctx context.Context, path string, limit int64) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, unwrapPath(err)
	}
	if fi.IsDir() {
		return nil, errors.New("it is a directory")
	}
	var f *os.File
	if fi.Mode()&fs.ModeNamedPipe != 0 {
		f, err = openFIFO(ctx, path)
	} else {
		f, err = os.Open(path)
	}
	if err != nil {
		return nil, unwrapPath(err)
	}
	defer f.Close()
	stop := context.AfterFunc(ctx, func() { _ = f.SetReadDeadline(time.Now()) })
	defer stop()
	var data []byte
	buf := make([]byte, 1<<20)
	for {
		if err := ctx.Err(); err != nil {
			return nil, context.Cause(ctx)
		}
		n, err := f.Read(buf)
		data = append(data, buf[:n]...)
		if int64(len(data)) > limit {
			return nil, fmt.Errorf("larger than %s, which no collbench document is", sizeText(limit))
		}
		switch {
		case errors.Is(err, io.EOF):
			return data, nil
		case errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() != nil:
			return nil, context.Cause(ctx)
		case err != nil:
			return nil, unwrapPath(err)
		}
	}
}

// openFIFO opens a FIFO for reading once a writer has opened it too, so a
// writer that comes late is waited for (a FIFO opened without waiting
// reads as empty until its writer comes). The open waits on its own
// goroutine; when ctx ends first, the FIFO is opened for writing a moment
// to let that open return, and ctx's cause is the error.
func openFIFO(ctx context.Context, path string) (*os.File, error) {
	type opened struct {
		f   *os.File
		err error
	}
	ch := make(chan opened, 1)
	go func() {
		f, err := os.OpenFile(path, os.O_RDONLY, 0)
		ch <- opened{f, err}
	}()
	select {
	case o := <-ch:
		return o.f, o.err
	case <-ctx.Done():
		if w, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		go func() { // the reader's open, when it returns, is closed
			if o := <-ch; o.f != nil {
				o.f.Close()
			}
		}()
		return nil, context.Cause(ctx)
	}
}

func sizeText(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// SameFileError is an output that is one of the inputs.
type SameFileError struct{ Output, Input string }

func (e *SameFileError) Error() string {
	return fmt.Sprintf("the output %s is the input %s; write to another file", e.Output, e.Input)
}

// Distinct refuses an output that is one of the inputs (the same file by
// device and inode, whatever the names), which writing would destroy; the
// error is a *SameFileError.
func Distinct(output string, inputs []string) error {
	out, err := os.Stat(output)
	if err != nil {
		return nil // nothing there yet: nothing to destroy
	}
	for _, in := range inputs {
		if fi, err := os.Stat(in); err == nil && os.SameFile(out, fi) {
			return &SameFileError{output, in}
		}
	}
	return nil
}

// ReadRegular returns the contents of path, a regular file of at most
// limit bytes: for files collbench looks for by name in a folder (a
// planner's export), where a FIFO, a device or a folder put under that
// name is refused rather than read, so nothing can hold the command. The
// file is opened without waiting (O_NONBLOCK) and checked again once open,
// so a FIFO put there in between is refused too.
func ReadRegular(path string, limit int64) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, unwrapPath(err)
	}
	if !st.Mode().IsRegular() {
		return nil, notRegular(st.Mode())
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, unwrapPath(err)
	}
	defer f.Close()
	if st, err = f.Stat(); err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, notRegular(st.Mode())
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, unwrapPath(err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("larger than %s, which no collbench document is", sizeText(limit))
	}
	return data, nil
}

// notRegular says what a file that should be regular is instead.
func notRegular(m fs.FileMode) error {
	switch {
	case m.IsDir():
		return errors.New("it is a directory, not a regular file")
	case m&fs.ModeNamedPipe != 0:
		return errors.New("it is a FIFO, not a regular file")
	case m&fs.ModeDevice != 0:
		return errors.New("it is a device, not a regular file")
	default:
		return errors.New("not a regular file")
	}
}
