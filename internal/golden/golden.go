// Package golden compares test output with files under testdata, and
// rewrites them when the tests run with -update.
package golden

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// Updating reports whether the tests run with -update.
func Updating() bool { return *update }

// Check compares got with testdata/name, or rewrites that file under
// -update. Text files show both sides on a mismatch; others name the file.
func Check(t testing.TB, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the tests with -update to create it)", err)
	}
	if bytes.Equal(got, want) {
		return
	}
	if len(got) < 8<<10 && len(want) < 8<<10 {
		t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", name, got, want)
		return
	}
	t.Errorf("%s differs from the golden file; run the tests with -update and review the diff", name)
}
