/* Opening libraries at run time (CUDA's, and the others crec reaches through
 * dlopen), each once per process by one loader: no CUDA header is needed, so
 * the front end can use them too. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "libs.h"

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

/* ---- loaders ---- */

bool crec__loader_run(crec__loader *l, void (*load)(void)) {
  pthread_once(&l->once, load);
  return l->loaded;
}

crec_status crec__loader_check(crec__loader *l, void (*load)(void), const char *label, const char *fn) {
  if (crec__loader_run(l, load)) return CREC_OK;
  return label ? crec__error(CREC_ERR_UNSUPPORTED, fn, "%s: %s", label, l->why)
               : crec__error(CREC_ERR_UNSUPPORTED, fn, "%s", l->why);
}

bool crec__loader_symbols(crec__loader *l, const char *what, void *lib, const char *soname, const crec__symbol *syms,
                          size_t n, void *table, const char *note) {
  const char *missing = crec__load_symbols(lib, syms, n, table);
  if (!missing) return true;
  snprintf(l->why, sizeof l->why, "%s is not available: %s has no %s%s", what, soname, missing, note ? note : "");
  return false;
}

void *crec__loader_open(crec__loader *l, const char *what, const char *soname, const crec__symbol *syms, size_t n,
                        void *table, const char *note) {
  char reason[600];
  void *lib = crec__open_library(soname, reason, sizeof reason);
  if (!lib) {
    snprintf(l->why, sizeof l->why, "%s is not available: %s", what, reason);
    return NULL;
  }
  return crec__loader_symbols(l, what, lib, soname, syms, n, table, note) ? lib : NULL;
}
