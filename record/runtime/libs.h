/* Libraries opened at run time (libs.c): CUDA's and the others crec reaches
 * through dlopen, each opened once per process by one loader. No CUDA header
 * is needed, so the front end opens nvJitLink with it too. */
#ifndef CREC_LIBS_H
#define CREC_LIBS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "crec/status.h"

/* Opens a library by soname, then in the CUDA toolkit's library folder; NULL with
 * the reason in `reason` when neither works. */
void *crec__open_library(const char *soname, char *reason, size_t reason_size);

/* A function to look up in a library: where its pointer goes in a table struct, and its name. */
typedef struct crec__symbol {
  size_t offset;
  const char *name;
} crec__symbol;

/* Looks up every symbol of `syms` in `lib` (dlsym) and stores each pointer at its
 * offset in `out`; returns the name of the first one missing, or NULL. */
const char *crec__load_symbols(void *lib, const crec__symbol *syms, size_t n, void *out);

/* One library's loading, once per process: a file's `load` function (run by
 * pthread_once) fills its table and sets `loaded`, or writes `why` it cannot.
 * `loaded` is read after crec__loader_run() only, whose pthread_once orders it
 * after the load (another thread may be loading while this one frees what it
 * made: it reads nothing here). */
typedef struct crec__loader {
  pthread_once_t once;
  bool loaded;
  char why[900];
} crec__loader;
#define CREC__LOADER_INIT {PTHREAD_ONCE_INIT, false, {0}}

/* Runs `load` once per process for `l`; returns whether the library loaded. */
bool crec__loader_run(crec__loader *l, void (*load)(void));
/* crec__loader_run() as a status: CREC_ERR_UNSUPPORTED as `fn`'s, saying why
 * (after "`label`: " when `label` is not NULL). */
crec_status crec__loader_check(crec__loader *l, void (*load)(void), const char *label, const char *fn);

/* For a `load` function: looks up `syms` of `lib` (file `soname`) into `table`;
 * false with l->why "`what` is not available: `soname` has no ...`note`" when
 * one is missing (the handle stays open: a process opens it once). */
bool crec__loader_symbols(crec__loader *l, const char *what, void *lib, const char *soname, const crec__symbol *syms,
                          size_t n, void *table, const char *note);
/* crec__open_library(`soname`) then crec__loader_symbols(); NULL with l->why
 * "`what` is not available: ..." when the library cannot be opened. */
void *crec__loader_open(crec__loader *l, const char *what, const char *soname, const crec__symbol *syms, size_t n,
                        void *table, const char *note);

/* The crec__symbol of X-macro entry (field, symbol, ret, params): its field in
 * the table type crec__table_type, which CREC__SYMBOLS declares. */
#define CREC__SYMBOL_ENTRY(field, symbol, ret, params) {offsetof(crec__table_type, field), symbol},
/* Declares (in a function) `syms`, the crec__symbol of every function that
 * X-macro FUNCS lists, in table type `type`. */
#define CREC__SYMBOLS(syms, type, FUNCS) \
  typedef type crec__table_type;        \
  static const crec__symbol syms[] = {FUNCS(CREC__SYMBOL_ENTRY)}
/* One library opened by soname: the file's `loader`, its table `var` of type
 * `type`, and load(), which opens `soname` and looks up every function FUNCS
 * lists (`what` names the library in why it cannot be used). */
#define CREC__LIBRARY_LOADER(type, var, FUNCS, what, soname)                                          \
  static crec__loader loader = CREC__LOADER_INIT;                                                    \
  static type var;                                                                                   \
  static void load(void) {                                                                           \
    CREC__SYMBOLS(syms, type, FUNCS);                                                                \
    size_t n_ = sizeof syms / sizeof *syms;                                                          \
    loader.loaded = crec__loader_open(&loader, what, soname, syms, n_, &var, NULL) != NULL;          \
  }

#endif
