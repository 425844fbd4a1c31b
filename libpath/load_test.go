package libpath

import (
	"path/filepath"
	"strings"
	"testing"
)

// libc is a library every Linux process has, to load for real.
func libc(probes ...string) Spec {
	return Spec{File: "libc.so.6", Probes: probes, Is: "the C library", Hint: "no hint"}
}

func TestLoadOpensAndProbes(t *testing.T) {
	lib, err := Load(libc("printf", "malloc"), "")
	if err != nil {
		t.Fatal(err)
	}
	if lib.Handle == nil || lib.Path == "" {
		t.Fatalf("loaded %+v", lib)
	}
	if f := lib.File(); !filepath.IsAbs(f) || !strings.Contains(filepath.Base(f), "libc") {
		t.Errorf("the mapped file is %q, want libc's absolute path", f)
	}
}

func TestLoadRefuses(t *testing.T) {
	for _, c := range []struct {
		name     string
		spec     Spec
		explicit string
		want     string
	}{
		{"a file that is not the library", libc("printf", "cb_no_such_entry"), "",
			"has no printf/cb_no_such_entry; it is not the C library"},
		{"a named file that is not the library", libc("cb_no_such_entry"), "/bin/sh",
			"could not open /bin/sh (given by the caller)"},
		{"no probes", libc(), "", "names no entry point"},
		{"nothing there", Spec{File: "libcb-none.so.9", Probes: []string{"x"}, Hint: "install it"}, "",
			"could not open libcb-none.so.9"},
	} {
		t.Run(c.name, func(t *testing.T) {
			lib, err := Load(c.spec, c.explicit)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Load = %+v, %v; want an error with %q", lib, err, c.want)
			}
		})
	}
}
