/* Opening libraries at run time (CUDA's, and the others crec reaches through
 * dlopen): no CUDA header is needed, so the front end can use them too. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

#ifndef CREC_CUDA_LIBDIR
#define CREC_CUDA_LIBDIR "/usr/local/cuda/lib64"
#endif

void *crec__open_library(const char *soname, char *reason, size_t reason_size) {
  /* the soname through the loader's path; then the toolkit crec was built with,
   * and the usual toolkit folder, which are often missing from the loader's path */
  void *lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (lib) return lib;
  const char *e = dlerror();
  char first[256];
  snprintf(first, sizeof first, "%s", e ? e : "not found");
  static const char *const dirs[] = {CREC_CUDA_LIBDIR, "/usr/local/cuda/lib64"};
  char path[512];
  for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
    snprintf(path, sizeof path, "%s/%s", dirs[i], soname);
    if ((lib = dlopen(path, RTLD_NOW | RTLD_LOCAL))) return lib;
  }
  snprintf(reason, reason_size, "cannot open %s (%s), nor in %s or %s", soname, first, dirs[0], dirs[1]);
  return NULL;
}

const char *crec__load_symbols(void *lib, const crec__symbol *syms, size_t n, void *out) {
  for (size_t i = 0; i < n; i++) {
    void *f = dlsym(lib, syms[i].name);
    if (!f) return syms[i].name;
    /* function pointers are stored through their object representation (POSIX dlsym) */
    memcpy((char *)out + syms[i].offset, &f, sizeof f);
  }
  return NULL;
}

