package fileio

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Component checks a name that a document supplies before it is used as
// one folder or file name below a folder the user chose: a profile's
// backend, an NCCL version. A document is input like any other, so a name
// that is empty, is "." or "..", holds a separator or a NUL byte, or is
// absolute could place a file outside the folder asked for, and is refused.
// what says whose name it is, for the error.
func Component(what, name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\\\x00") || filepath.IsAbs(name) {
		return fmt.Errorf("%s %q cannot name a folder: want one plain name, with no separator and not . or ..", what, name)
	}
	return nil
}

// Local checks a path relative to a folder, made from names collbench or a
// document chose, before anything is written under that folder: it must
// stay inside it (no "..", not absolute, not empty).
func Local(name string) error {
	if !filepath.IsLocal(name) || strings.ContainsRune(name, 0) {
		return fmt.Errorf("%q is not a name inside the output folder", name)
	}
	return nil
}
