package libpath

/*
#cgo LDFLAGS: -ldl
#define _GNU_SOURCE // dladdr
#include <dlfcn.h>
#include <stdlib.h>

static void* cb_dlopen(const char* path, int global) {
  return dlopen(path, RTLD_NOW | (global ? RTLD_GLOBAL : RTLD_LOCAL));
}
static const char* cb_dlerror(void) { return dlerror(); }
static int cb_has(void* h, const char* sym) { return dlsym(h, sym) != NULL; }
static const char* cb_mapped(void* h, const char* sym) {
  Dl_info info;
  void* p = dlsym(h, sym);
  if (!p || !dladdr(p, &info)) return NULL;
  return info.dli_fname;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"unsafe"
)

// Library is a library loaded into this process: the path it was found
// at and its handle, from which a binding's C code resolves its entry
// points. A library is never closed: a process loads each once.
type Library struct {
	Path   string
	Handle unsafe.Pointer
	probe  string
}

// Load finds the library s names (explicit first, as Find does) and
// opens it with dlopen, refusing a file that lacks any of s.Probes, so
// that the search goes on past a file of the right name that is not the
// library. This is the one place collbench opens a library.
func Load(s Spec, explicit string) (Library, error) {
	if len(s.Probes) == 0 {
		return Library{}, fmt.Errorf("libpath: %s names no entry point that proves it is %s", s.File, s.Is)
	}
	var h unsafe.Pointer
	path, err := Find(s, explicit, func(p string) error {
		var err error
		h, err = open(p, s)
		return err
	})
	if err != nil {
		return Library{}, err
	}
	return Library{Path: path, Handle: h, probe: s.Probes[0]}, nil
}

// open loads one path and checks its probes; a file that fails them is
// closed again.
func open(path string, s Spec) (unsafe.Pointer, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	global := C.int(0)
	if s.Global {
		global = 1
	}
	h := C.cb_dlopen(cpath, global)
	if h == nil {
		if e := C.cb_dlerror(); e != nil {
			return nil, errors.New(C.GoString(e))
		}
		return nil, errors.New("dlopen failed")
	}
	for _, probe := range s.Probes {
		csym := C.CString(probe)
		ok := C.cb_has(h, csym) != 0
		C.free(unsafe.Pointer(csym))
		if !ok {
			C.dlclose(h)
			return nil, fmt.Errorf("%s has no %s; it is not %s", path, strings.Join(s.Probes, "/"), s.Is)
		}
	}
	return h, nil
}

// File is the real file the library was mapped from, its links resolved
// and made absolute: the loader's search may have found a bare soname
// anywhere on its path, and two names for one file should read the same.
// It is Path when the loader cannot say.
func (l Library) File() string {
	if l.Handle == nil {
		return l.Path
	}
	csym := C.CString(l.probe)
	defer C.free(unsafe.Pointer(csym))
	name := C.cb_mapped(l.Handle, csym)
	if name == nil {
		return l.Path
	}
	file := C.GoString(name)
	if real, err := filepath.EvalSymlinks(file); err == nil {
		file = real
	}
	if abs, err := filepath.Abs(file); err == nil {
		file = abs
	}
	return file
}
