package export

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collbench/collbench/internal/fixture"
)

// A name a profile carries reaches a path only as one plain folder name:
// a backend or NCCL version that climbs out of the export folder, names
// a folder by an absolute path or holds a separator is refused before a
// file is written, and nothing lands outside the folder asked for.
func TestExportNamesFromTheProfileStayInTheFolder(t *testing.T) {
	for _, tc := range []struct{ backend, version string }{
		{"../../../../escape", ""},
		{"..", ""},
		{"/tmp/escape", ""},
		{`a\b`, ""},
		{"", ""},
		{"host", "../x"},
		{"a/../../escape", "."},
		{"nul\x00byte", ""},
	} {
		root := t.TempDir()
		dir := filepath.Join(root, "sub", "ex")
		p := fixture.Profile(t, 1, 4)
		p.Backend, p.Meta.NCCLVersion = tc.backend, tc.version
		_, err := Write(context.Background(), p, "aiconfigurator", dir, Options{})
		if err == nil || !strings.Contains(err.Error(), "cannot name a folder") {
			t.Errorf("backend %q version %q: err %v, want a refusal", tc.backend, tc.version, err)
		}
		var written []string
		_ = filepath.Walk(root, func(path string, fi os.FileInfo, err error) error {
			if err == nil && !fi.IsDir() {
				written = append(written, path)
			}
			return nil
		})
		if len(written) > 0 {
			t.Errorf("backend %q version %q: wrote %v", tc.backend, tc.version, written)
		}
	}
	// A version that is one plain name is the folder; without one, the
	// backend.
	p := fixture.Profile(t, 1, 4)
	p.Meta.NCCLVersion = "2.30.7"
	if got := AIConfiguratorDir(p); got != filepath.Join("comm", "nccl", "2.30.7") {
		t.Errorf("dir %q", got)
	}
}

// writeFiles refuses a file whose name is not local to the folder,
// whatever renderer made it.
func TestWriteFilesRefusesNamesOutsideTheFolder(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "ex")
	for _, name := range []string{"../x", "/abs", "a/../../x", ""} {
		_, err := writeFiles(context.Background(), []exportFile{{name: "ok.json", data: []byte("{}")}, {name: name, data: []byte("x")}}, dir, nil)
		if err == nil {
			t.Errorf("%q written", name)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "ok.json")); err == nil {
		t.Error("a file was written before the refusal")
	}
}
