#include <dlfcn.h>
#include <stdio.h>
#include "dl.h"

void* cb_dlopen_checked(const char* path, const char* probe, const char* what, char* err, size_t errlen) {
  void* h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
  if (!h) {
    const char* e = dlerror();
    snprintf(err, errlen, "%s", e ? e : "dlopen failed");
    return NULL;
  }
  if (!dlsym(h, probe)) {
    snprintf(err, errlen, "%s has no %s; it is not %s", path, probe, what);
    dlclose(h);
    return NULL;
  }
  return h;
}
