/* The MLIR front end seen from libcrec: the entry points of include/crec/lower.h.
 * libcrec links no MLIR or LLVM (whose start-up alone costs a process about
 * 30 ms); the first call that needs the front end opens the plugin,
 * libcrec-mlir.so (lower/plugin.h), once per process, and every call after
 * goes to it. Looked for, in order:
 *   1. the front end linked into the same program (libcrec-mlir.a, the target
 *      crec::crec_mlir_static): no file is opened;
 *   2. $CREC_MLIR_PLUGIN (the file, or its folder): when set, the only place tried;
 *   3. next to libcrec: the folder of the loaded libcrec.so (or of the program
 *      linked with libcrec.a), found with dladdr;
 *   4. the loader's path (LD_LIBRARY_PATH, libcrec's RUNPATH, the ldconfig cache).
 * When none opens, the call fails with CREC_ERR_UNSUPPORTED saying where it
 * looked and why each failed; later calls repeat that answer. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugin.h"

/* Defined when the program links the front end itself (libcrec-mlir.a): the
 * weak reference leaves it NULL otherwise, and pulls in nothing. */
extern __attribute__((weak)) const crec__mlir_plugin *crec__mlir_plugin_open(const crec__mlir_host *host, char *reason,
                                                                             size_t reason_size);

static const crec__mlir_host host = {
    .struct_size = sizeof(crec__mlir_host),
    .abi = CREC__MLIR_PLUGIN_ABI,
    .version = CREC_VERSION_STRING,
#define CREC__MLIR_HOST_INIT(f) .f = f,
    CREC__MLIR_HOST_FUNCS(CREC__MLIR_HOST_INIT)
#undef CREC__MLIR_HOST_INIT
};

static pthread_once_t once = PTHREAD_ONCE_INIT;
static _Atomic(const crec__mlir_plugin *) front;
/* Why the front end is not available: every place tried, and what each said. */
static char tried[1800];

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...) {
  size_t n = strlen(tried);
  if (n + 2 >= sizeof tried) return;
  if (n) {
    memcpy(tried + n, "; ", 3);
    n += 2;
  }
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(tried + n, sizeof tried - n, fmt, ap);
  va_end(ap);
}

/* Opens the plugin at `path` (a path, or a bare name for the loader's path) and
 * hands it libcrec's table; true when it took it. */
static bool try_open(const char *what, const char *path) {
  struct stat st;
  if (strchr(path, '/') && stat(path, &st) != 0) {
    note("%s: %s: no such file", what, path);
    return false;
  }
  /* never closed: host functions the front end compiles stay in use by programs */
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *e = dlerror();
    note("%s: %s", what, e ? e : path);
    return false;
  }
  const crec__mlir_plugin *(*open)(const crec__mlir_host *, char *, size_t);
  void *sym = dlsym(lib, CREC__MLIR_PLUGIN_ENTRY);
  if (!sym) {
    note("%s: %s: no %s(): not crec's MLIR front end", what, path, CREC__MLIR_PLUGIN_ENTRY);
    return false;
  }
  /* function pointers are stored through their object representation (POSIX dlsym) */
  memcpy(&open, &sym, sizeof open);
  char reason[512] = "";
  const crec__mlir_plugin *p = open(&host, reason, sizeof reason);
  if (!p || p->struct_size < sizeof(crec__mlir_plugin)) {
    note("%s: %s: %s", what, path, reason[0] ? reason : "refused this libcrec");
    return false;
  }
  atomic_store_explicit(&front, p, memory_order_release);
  return true;
}

/* The folder of the object that holds libcrec's code (libcrec.so, or the
 * program linked with libcrec.a), with a trailing '/'; "" when unknown. */
static void own_folder(char *dir, size_t size) {
  Dl_info info;
  dir[0] = '\0';
  const char *name = NULL;
  if (dladdr((void *)&crec_lower_mlir_file, &info) && info.dli_fname && strchr(info.dli_fname, '/'))
    name = info.dli_fname;
  char exe[4096];
  if (!name) {
    /* the main program: dladdr may give its name as it was started */
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return;
    exe[n] = '\0';
    name = exe;
  }
  const char *slash = strrchr(name, '/');
  snprintf(dir, size, "%.*s", (int)(slash - name + 1), name);
}

static void open_front_end(void) {
  if (crec__mlir_plugin_open) {
    char reason[512] = "";
    const crec__mlir_plugin *p = crec__mlir_plugin_open(&host, reason, sizeof reason);
    if (p) {
      atomic_store_explicit(&front, p, memory_order_release);
      return;
    }
    note("the front end linked into this program: %s", reason);
  }
  char path[4200];
  const char *env = getenv(CREC__MLIR_PLUGIN_ENV);
  if (env && env[0]) {
    struct stat st;
    if (stat(env, &st) == 0 && S_ISDIR(st.st_mode))
      snprintf(path, sizeof path, "%s/%s", env, CREC__MLIR_PLUGIN_FILE);
    else
      snprintf(path, sizeof path, "%s", env);
    try_open(CREC__MLIR_PLUGIN_ENV, path);
    return;
  }
  char dir[4096];
  own_folder(dir, sizeof dir);
  if (dir[0]) {
    snprintf(path, sizeof path, "%s%s", dir, CREC__MLIR_PLUGIN_FILE);
    if (try_open("next to libcrec", path)) return;
  }
  try_open("the loader's path", CREC__MLIR_PLUGIN_FILE);
}

/* The front end, opened on the first call; NULL (with the last error set for
 * `fn`) when it is not available. */
static const crec__mlir_plugin *front_end(const char *fn) {
  pthread_once(&once, open_front_end);
  const crec__mlir_plugin *p = atomic_load_explicit(&front, memory_order_acquire);
  if (!p)
    crec__error(CREC_ERR_UNSUPPORTED, fn,
                "the MLIR front end (%s) is not available: %s. Install it next to libcrec, set %s to its path, "
                "or build crec with CREC_WITH_MLIR=ON",
                CREC__MLIR_PLUGIN_FILE, tried, CREC__MLIR_PLUGIN_ENV);
  return p;
}

/* The front end when an earlier call opened it; never opens it. */
static const crec__mlir_plugin *front_end_if_open(void) {
  return atomic_load_explicit(&front, memory_order_acquire);
}

crec_status crec_lower_mlir_file(const char *path, const crec_lower_options *options, crec_program **out) {
  if (out) *out = NULL;
  const crec__mlir_plugin *p = front_end("crec_lower_mlir_file");
  return p ? p->lower_mlir_file(path, options, out) : CREC_ERR_UNSUPPORTED;
}

crec_status crec_lower_mlir_string(const char *text, size_t length, const crec_lower_options *options,
                                   crec_program **out) {
  if (out) *out = NULL;
  const crec__mlir_plugin *p = front_end("crec_lower_mlir_string");
  return p ? p->lower_mlir_string(text, length, options, out) : CREC_ERR_UNSUPPORTED;
}

crec_status crec_lower_cache_get_stats(crec_lower_cache_stats *out) {
  static const char fn[] = "crec_lower_cache_get_stats";
  const crec__mlir_plugin *p = front_end_if_open();
  if (p) return p->cache_get_stats(out);
  /* nothing was lowered in this process yet: every counter is zero, and reading
   * them does not cost a process the front end's start-up */
  if (!out) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'out' is NULL");
  crec_lower_cache_stats st = CREC_LOWER_CACHE_STATS_INIT;
  return crec__give_struct(out, &st, sizeof st, offsetof(crec_lower_cache_stats, disk_hits), fn, "argument 'out'",
                           "CREC_LOWER_CACHE_STATS_INIT");
}

void crec_lower_cache_clear(void) {
  const crec__mlir_plugin *p = front_end_if_open();
  if (p) p->cache_clear();
}

crec_status crec_lower_disk_cache_get_info(crec_lower_disk_cache_info *out) {
  const crec__mlir_plugin *p = front_end("crec_lower_disk_cache_get_info");
  return p ? p->disk_cache_get_info(out) : CREC_ERR_UNSUPPORTED;
}

crec_status crec_lower_disk_cache_clear(uint64_t *removed) {
  if (removed) *removed = 0;
  const crec__mlir_plugin *p = front_end("crec_lower_disk_cache_clear");
  return p ? p->disk_cache_clear(removed) : CREC_ERR_UNSUPPORTED;
}
