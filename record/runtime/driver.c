/* Opening libcuda.so.1 at run time (see driver.h). */
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "driver.h"

static crec__loader loader = CREC__LOADER_INIT; /* `why`: why the driver is unusable */
static crec__cu table;

static void load(void) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *e = dlerror();
    snprintf(loader.why, sizeof loader.why, "no CUDA driver: cannot open libcuda.so.1 (%s)", e ? e : "not found");
    return;
  }
  PFN_cuGetProcAddress_v12000 get = (PFN_cuGetProcAddress_v12000)dlsym(lib, "cuGetProcAddress_v2");
  if (!get) {
    snprintf(loader.why, sizeof loader.why,
             "CUDA driver too old: libcuda.so.1 has no cuGetProcAddress_v2 (need CUDA 12.0 or newer)");
    dlclose(lib);
    return;
  }
  CUdriverProcAddressQueryResult q;
#define CREC__CU_LOOKUP(name, version)                                                            \
  if (get(#name, (void **)&table.name, version, CU_GET_PROC_ADDRESS_DEFAULT, &q) != CUDA_SUCCESS || \
      !table.name) {                                                                              \
    if (version <= 12000) {                                                                       \
      snprintf(loader.why, sizeof loader.why, "CUDA driver lacks %s (version %d)", #name, version); \
      dlclose(lib);                                                                               \
      return;                                                                                     \
    }                                                                                             \
    table.name = NULL; /* newer feature: callers check before use */                              \
  }
  CREC__CU_FUNCS(CREC__CU_LOOKUP)
#undef CREC__CU_LOOKUP
  /* dlsym, not cuGetProcAddress: asking an older driver for it would itself be a
   * failing call, which compute-sanitizer reports */
  table.cuFuncGetParamCount = (CUresult(*)(CUfunction, size_t *))dlsym(lib, "cuFuncGetParamCount");
  CUresult r = table.cuInit(0);
  if (r != CUDA_SUCCESS) {
    const char *name = NULL;
    table.cuGetErrorName(r, &name);
    snprintf(loader.why, sizeof loader.why, "no CUDA device: cuInit failed with %s", name ? name : "an unknown error");
    return;
  }
  table.cuDriverGetVersion(&table.driver_version);
  int count = 0;
  r = table.cuDeviceGetCount(&count);
  if (r != CUDA_SUCCESS || count == 0) {
    snprintf(loader.why, sizeof loader.why, "no CUDA device: the driver (version %d.%d) reports none",
             table.driver_version / 1000, table.driver_version % 1000 / 10);
    return;
  }
  /* the library handle stays open for the life of the process */
  loader.loaded = true;
}

const crec__cu *crec__driver(const char *fn) {
  if (!crec__loader_run(&loader, load)) {
    crec__error(CREC_ERR_NO_DEVICE, fn, "%s", loader.why);
    return NULL;
  }
  return &table;
}

bool crec__cu_fault(void) { return crec__fault(CREC_FAULT_CUDA); }

crec_status crec__cu_status(CUresult r) {
  switch (r) {
    case CUDA_SUCCESS: return CREC_OK;
    case CUDA_ERROR_ASSERT: return CREC_ERR_DEVICE_ASSERT;
    case CUDA_ERROR_OUT_OF_MEMORY: return CREC_ERR_DEVICE_OUT_OF_MEMORY;
    /* the sticky errors: a kernel faulted, and the context is lost until the process ends */
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_HARDWARE_STACK_ERROR: return CREC_ERR_CONTEXT_LOST;
    default: return CREC_ERR_CUDA;
  }
}

crec_status crec__cu_fail(const char *fn, CUresult r, const char *call, const char *context) {
  const char *name = NULL, *text = NULL;
  if (loader.loaded) {
    table.cuGetErrorName(r, &name);
    table.cuGetErrorString(r, &text);
  }
  /* a kernel's assert (cf.assert, or assert() in CUDA C++) printed its message
   * on the process's standard error (the driver writes it there); the context is lost with it */
  bool assert_failed = r == CUDA_ERROR_ASSERT;
  crec_status status = crec__cu_status(r);
  return crec__error(status, fn, "%s%s%s failed: %s (%s)%s",
                     context ? context : "", context ? ": " : "", call, name ? name : "CUDA_ERROR_UNKNOWN",
                     text ? text : "no description",
                     assert_failed ? ": a kernel's assertion failed (its message is on standard error), and "
                                     "this process's CUDA context can no longer be used"
                                   : "");
}

void crec__back_off(unsigned *polls) {
  unsigned n = (*polls)++;
  if (n < 200) return;
  if (n < 400) {
    sched_yield();
    return;
  }
  unsigned shift = n - 400 < 4 ? n - 400 : 4;
  struct timespec ts = {0, (long)(10000u << shift)}; /* 10 us .. 160 us */
  nanosleep(&ts, NULL);
}

const char *crec__graph_node_type_name(CUgraphNodeType t) {
  switch (t) {
    case CU_GRAPH_NODE_TYPE_KERNEL: return "kernel";
    case CU_GRAPH_NODE_TYPE_MEMCPY: return "memcpy";
    case CU_GRAPH_NODE_TYPE_MEMSET: return "memset";
    case CU_GRAPH_NODE_TYPE_HOST: return "host";
    case CU_GRAPH_NODE_TYPE_GRAPH: return "child graph";
    case CU_GRAPH_NODE_TYPE_EMPTY: return "empty";
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT: return "event wait";
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD: return "event record";
    case CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL: return "external semaphore signal";
    case CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT: return "external semaphore wait";
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC: return "memory allocation";
    case CU_GRAPH_NODE_TYPE_MEM_FREE: return "memory free";
    case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP: return "batched memory operation";
    case CU_GRAPH_NODE_TYPE_CONDITIONAL: return "conditional";
    default: return "unknown";
  }
}
