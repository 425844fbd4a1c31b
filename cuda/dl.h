// Opening a library with dlopen, refusing one that lacks a symbol that
// proves it is the library wanted.
#ifndef COLLBENCH_CUDA_DL_H
#define COLLBENCH_CUDA_DL_H

#include <stddef.h>

// cb_dlopen_checked opens path and checks that it exports probe; on
// failure it returns NULL with the reason in err.
void* cb_dlopen_checked(const char* path, const char* probe, const char* what, char* err, size_t errlen);

#endif
