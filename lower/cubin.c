/* Ahead-of-time cubin (crec_lower_options.cubin): the PTX compiled from a
 * gpu.module body becomes SASS for the target chip through nvJitLink, opened at
 * run time (libnvJitLink.so.13, from the CUDA 13 toolkit), so that recording the
 * program loads its kernels without the driver's PTX JIT. No CUDA header is
 * included here (docs/architecture.md): the few declarations nvJitLink's C API
 * needs are written out, with the values of nvJitLink.h. */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "lower_internal.h"

#define NVJITLINK_SONAME "libnvJitLink.so.13"
#define NVJITLINK_INPUT_PTX 2 /* nvJitLinkInputType */

typedef struct nvjitlink *nvjl_handle;
/* (name, parameter list) of each function crec calls; every one returns an nvJitLinkResult (0: success) */
#define CREC__NVJL_FUNCS(X)                                                   \
  X(nvJitLinkCreate, (nvjl_handle *, uint32_t, const char *const *))          \
  X(nvJitLinkDestroy, (nvjl_handle *))                                         \
  X(nvJitLinkAddData, (nvjl_handle, int, const void *, size_t, const char *))  \
  X(nvJitLinkComplete, (nvjl_handle))                                          \
  X(nvJitLinkGetLinkedCubinSize, (nvjl_handle, size_t *))                      \
  X(nvJitLinkGetLinkedCubin, (nvjl_handle, void *))                            \
  X(nvJitLinkGetErrorLogSize, (nvjl_handle, size_t *))                         \
  X(nvJitLinkGetErrorLog, (nvjl_handle, char *))

typedef struct nvjl_table {
#define CREC__NVJL_FIELD(name, params) int(*name) params;
  CREC__NVJL_FUNCS(CREC__NVJL_FIELD)
#undef CREC__NVJL_FIELD
} nvjl_table;

static pthread_once_t nvjl_once = PTHREAD_ONCE_INIT;
static nvjl_table nvjl;
static bool nvjl_loaded;
static char nvjl_why[600];

static void nvjl_load(void) {
  void *lib = crec__open_library(NVJITLINK_SONAME, nvjl_why, sizeof nvjl_why);
  if (!lib) return;
  static const crec__symbol syms[] = {
#define CREC__NVJL_SYM(name, params) {offsetof(nvjl_table, name), #name},
      CREC__NVJL_FUNCS(CREC__NVJL_SYM)
#undef CREC__NVJL_SYM
  };
  const char *missing = crec__load_symbols(lib, syms, sizeof syms / sizeof *syms, &nvjl);
  if (missing) {
    snprintf(nvjl_why, sizeof nvjl_why, "%s has no %s", NVJITLINK_SONAME, missing);
    return; /* the library stays open: a process opens it once */
  }
  nvjl_loaded = true;
}

/* The name of an nvJitLinkResult (nvJitLink.h's enum, in order). */
static const char *result_name(int r) {
  static const char *const names[] = {
      "NVJITLINK_SUCCESS", "NVJITLINK_ERROR_UNRECOGNIZED_OPTION", "NVJITLINK_ERROR_MISSING_ARCH",
      "NVJITLINK_ERROR_INVALID_INPUT", "NVJITLINK_ERROR_PTX_COMPILE", "NVJITLINK_ERROR_NVVM_COMPILE",
      "NVJITLINK_ERROR_INTERNAL", "NVJITLINK_ERROR_THREADPOOL", "NVJITLINK_ERROR_UNRECOGNIZED_INPUT",
      "NVJITLINK_ERROR_FINALIZE", "NVJITLINK_ERROR_NULL_INPUT", "NVJITLINK_ERROR_INCOMPATIBLE_OPTIONS",
      "NVJITLINK_ERROR_INCORRECT_INPUT_TYPE", "NVJITLINK_ERROR_ARCH_MISMATCH", "NVJITLINK_ERROR_OUTDATED_LIBRARY",
      "NVJITLINK_ERROR_MISSING_FATBIN", "NVJITLINK_ERROR_UNRECOGNIZED_ARCH", "NVJITLINK_ERROR_UNSUPPORTED_ARCH",
      "NVJITLINK_ERROR_LTO_NOT_ENABLED"};
  return r >= 0 && (size_t)r < sizeof names / sizeof *names ? names[r] : "an unknown result";
}

/* The error log of `h` into `log` (one line), or "" when there is none. */
static void error_log(nvjl_handle h, char *log, size_t size) {
  log[0] = '\0';
  size_t n = 0;
  if (nvjl.nvJitLinkGetErrorLogSize(h, &n) != 0 || n <= 1) return;
  char *full = crec__malloc(n);
  if (!full) return;
  if (nvjl.nvJitLinkGetErrorLog(h, full) == 0) {
    for (char *c = full; *c; c++)
      if (*c == '\n' || *c == '\r') *c = ' ';
    snprintf(log, size, "; nvJitLink's log: %s", full);
  }
  crec__free(full);
}

crec_status crec__lw_ptx_to_cubin(lw *L, MlirOperation at, const char *chip, const char *ptx, size_t size,
                                  char **cubin, size_t *cubin_size) {
  *cubin = NULL;
  *cubin_size = 0;
  pthread_once(&nvjl_once, nvjl_load);
  if (!nvjl_loaded)
    return crec__lw_fail(L, at, CREC_ERR_UNSUPPORTED,
                         "ahead-of-time cubin needs nvJitLink: %s (install the CUDA 13 toolkit, or lower to PTX: "
                         "crec_lower_options.cubin = 0, no --cubin)",
                         nvjl_why);
  char arch[48];
  snprintf(arch, sizeof arch, "-arch=%s", chip);
  const char *opts[] = {arch};
  nvjl_handle h = NULL;
  int r = nvjl.nvJitLinkCreate(&h, 1, opts);
  if (r != 0)
    return crec__lw_fail(L, at, CREC_ERR_UNSUPPORTED, "ahead-of-time cubin for %s: nvJitLinkCreate(%s) failed: %s (%d)",
                         chip, arch, result_name(r), r);
  const char *call = "nvJitLinkAddData";
  r = nvjl.nvJitLinkAddData(h, NVJITLINK_INPUT_PTX, ptx, size, "gpu.module");
  if (r == 0) call = "nvJitLinkComplete", r = nvjl.nvJitLinkComplete(h);
  size_t n = 0;
  if (r == 0) call = "nvJitLinkGetLinkedCubinSize", r = nvjl.nvJitLinkGetLinkedCubinSize(h, &n);
  char *out = NULL;
  if (r == 0 && !(out = crec__malloc(n ? n : 1))) {
    nvjl.nvJitLinkDestroy(&h);
    return crec__oom(L->fn);
  }
  if (r == 0) call = "nvJitLinkGetLinkedCubin", r = nvjl.nvJitLinkGetLinkedCubin(h, out);
  if (r != 0) {
    char log[1024];
    error_log(h, log, sizeof log);
    nvjl.nvJitLinkDestroy(&h);
    crec__free(out);
    return crec__lw_fail(L, at, CREC_ERR_CUDA, "compiling the module's PTX to a cubin for %s: %s failed: %s (%d)%s",
                         chip, call, result_name(r), r, log);
  }
  nvjl.nvJitLinkDestroy(&h);
  *cubin = out;
  *cubin_size = n;
  return CREC_OK;
}
