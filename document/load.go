package document

import (
	"bytes"
	"context"
	"io"

	"github.com/collbench/collbench/fileio"
)

// InputError is a file that could not be read, or is not a document of
// the kind asked for; it reads as the file's name and the problem.
type InputError struct {
	Path string
	Err  error
}

func (e *InputError) Error() string { return e.Path + ": " + e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// Load reads path (at most limit bytes, giving up when ctx ends) and
// decodes it; a missing file or a bad document is an *InputError.
func Load[T any](ctx context.Context, path string, limit int64, decode func(io.Reader) (T, error)) (T, error) {
	var zero T
	data, err := fileio.Read(ctx, path, limit)
	if err != nil {
		if ctx.Err() != nil {
			return zero, err
		}
		return zero, &InputError{path, err}
	}
	doc, err := decode(bytes.NewReader(data))
	if err != nil {
		return zero, &InputError{path, err}
	}
	return doc, ctx.Err()
}
