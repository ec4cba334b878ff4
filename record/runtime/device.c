/* The public device API (crec/device.h): whether CUDA is usable here, the
 * devices, which libraries crec opens at run time can be used, memory, copies,
 * and streams with their waits. */
#include <stdio.h>
#include <string.h>

#include "cupti_internal.h"
#include "runtime_internal.h"

/* ---- devices and libraries ---- */

int crec_device_available(void) { return crec__driver("crec_device_available") != NULL; }

crec_status crec_device_count(int *count) {
  static const char fn[] = "crec_device_count";
  if (!count) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'count' is NULL");
  *count = 0;
  const crec__cu *cu = crec__driver(fn);
  if (!cu) return CREC_ERR_NO_DEVICE;
  CREC__CU_TRY(fn, NULL, cu, cuDeviceGetCount, count);
  return CREC_OK;
}

crec_status crec_driver_version(int *version) {
  static const char fn[] = "crec_driver_version";
  if (!version) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'version' is NULL");
  *version = 0;
  const crec__cu *cu = crec__driver(fn);
  if (!cu) return CREC_ERR_NO_DEVICE;
  *version = cu->driver_version;
  return CREC_OK;
}

crec_status crec_device_describe(int ordinal, char *name, size_t name_size, int *major, int *minor) {
  static const char fn[] = "crec_device_describe";
  if (!name || !major || !minor)
    return crec__error(CREC_ERR_NULL_POINTER, fn, "argument '%s' is NULL",
                       !name ? "name" : !major ? "major" : "minor");
  if (name_size) name[0] = '\0';
  *major = *minor = 0;
  const crec__cu *cu = crec__driver(fn);
  if (!cu) return CREC_ERR_NO_DEVICE;
  int count = 0;
  cu->cuDeviceGetCount(&count);
  if (ordinal < 0 || ordinal >= count)
    return crec__error(CREC_ERR_OUT_OF_RANGE, fn, "argument 'ordinal': %d, but there are %d devices",
                       ordinal, count);
  CUdevice dev;
  char what[32];
  snprintf(what, sizeof what, "device %d", ordinal);
  CREC__CU_TRY(fn, what, cu, cuDeviceGet, &dev, ordinal);
  if (name_size) CREC__CU_TRY(fn, what, cu, cuDeviceGetName, name, (int)(name_size > 0x7fffffff ? 0x7fffffff : name_size), dev);
  cu->cuDeviceGetAttribute(major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
  cu->cuDeviceGetAttribute(minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
  return CREC_OK;
}

crec_status crec_library_check(crec_library library) {
  static const char fn[] = "crec_library_check";
  switch (library) {
    case CREC_LIBRARY_CUBLASLT: return crec__gemm_library(fn);
    case CREC_LIBRARY_NCCL: return crec__nccl_library(fn);
    case CREC_LIBRARY_CUFFT: return crec__fft_library(fn);
    case CREC_LIBRARY_CUSOLVER: return crec__cholesky_library(fn);
    case CREC_LIBRARY_CUDNN: return crec__conv_library(fn);
    case CREC_LIBRARY_CUPTI: return crec__cupti_library(fn);
  }
  return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "argument 'library': %d is no crec_library", (int)library);
}

/* ---- memory, copies and streams ---- */

/* Makes device `ordinal`'s primary context current (crec__enter); the caller
 * calls crec__leave(*cu_out, *pushed). */
static crec_status enter_device(int ordinal, const char *fn, const crec__cu **cu_out, bool *pushed) {
  *pushed = false;
  const crec__cu *cu = crec__driver(fn);
  if (!cu) return CREC_ERR_NO_DEVICE;
  CUcontext ctx;
  crec_status s = crec__use_device(cu, ordinal, fn, &ctx);
  if (!s) s = crec__enter(cu, ctx, pushed, fn);
  *cu_out = cu;
  return s;
}

crec_status crec_device_alloc(int ordinal, uint64_t size, void **ptr) {
  static const char fn[] = "crec_device_alloc";
  if (!ptr) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'ptr' is NULL");
  *ptr = NULL;
  const crec__cu *cu;
  bool pushed;
  crec_status s = enter_device(ordinal, fn, &cu, &pushed);
  if (s) return s;
  CUdeviceptr d = 0;
  char what[64];
  snprintf(what, sizeof what, "%llu bytes on device %d", (unsigned long long)size, ordinal);
  CREC__CU_STEP(s, fn, what, cu, cuMemAlloc, &d, size ? size : 1);
  crec__leave(cu, pushed);
  if (!s) *ptr = (void *)(uintptr_t)d;
  return s;
}

/* The context that owns `ptr`, or NULL for memory CUDA does not know (ordinary
 * host memory). cuPointerGetAttributes (plural) answers for any pointer without
 * failing; cuPointerGetAttribute fails on host pointers, and compute-sanitizer
 * reports every failed call as an error of the user's program. */
static CUcontext owner_of(const crec__cu *cu, const void *ptr) {
  CUcontext ctx = NULL;
  CUpointer_attribute attr = CU_POINTER_ATTRIBUTE_CONTEXT;
  void *data[1] = {&ctx};
  if (cu->cuPointerGetAttributes(1, &attr, data, (CUdeviceptr)(uintptr_t)ptr) != CUDA_SUCCESS) return NULL;
  return ctx;
}

/* Runs `op` with the context that owns `ptr` current. */
static CUresult with_owner(const crec__cu *cu, const void *ptr, CUresult (*op)(const crec__cu *, const void *)) {
  CUcontext ctx = owner_of(cu, ptr);
  bool pushed;
  if (!ctx) return CUDA_ERROR_INVALID_VALUE;
  if (crec__enter(cu, ctx, &pushed, NULL)) return CUDA_ERROR_INVALID_CONTEXT;
  CUresult r = op(cu, ptr);
  crec__leave(cu, pushed);
  return r;
}

static CUresult free_device(const crec__cu *cu, const void *p) { return cu->cuMemFree((CUdeviceptr)(uintptr_t)p); }
static CUresult free_host(const crec__cu *cu, const void *p) { return cu->cuMemFreeHost((void *)p); }

void crec_device_free(void *ptr) {
  const crec__cu *cu = ptr ? crec__driver("crec_device_free") : NULL;
  if (cu) with_owner(cu, ptr, free_device);
}

crec_status crec_host_alloc(int ordinal, uint64_t size, void **ptr) {
  static const char fn[] = "crec_host_alloc";
  if (!ptr) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'ptr' is NULL");
  *ptr = NULL;
  const crec__cu *cu;
  bool pushed;
  crec_status s = enter_device(ordinal, fn, &cu, &pushed);
  if (s) return s;
  char what[64];
  snprintf(what, sizeof what, "%llu bytes for device %d", (unsigned long long)size, ordinal);
  CREC__CU_STEP(s, fn, what, cu, cuMemHostAlloc, ptr, size ? size : 1,
                CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP);
  crec__leave(cu, pushed);
  if (s) *ptr = NULL;
  return s;
}

void crec_host_free(void *ptr) {
  const crec__cu *cu = ptr ? crec__driver("crec_host_free") : NULL;
  if (cu && with_owner(cu, ptr, free_host) != CUDA_SUCCESS) cu->cuMemFreeHost(ptr);
}

crec_status crec_copy(void *dst, const void *src, uint64_t size) {
  static const char fn[] = "crec_copy";
  if (!dst || !src) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument '%s' is NULL", dst ? "src" : "dst");
  const crec__cu *cu = crec__driver(fn);
  if (!cu) return CREC_ERR_NO_DEVICE;
  CUcontext ctx = owner_of(cu, dst);
  if (!ctx) ctx = owner_of(cu, src);
  if (!ctx) {
    memmove(dst, src, size); /* both ordinary host memory */
    return CREC_OK;
  }
  bool pushed;
  crec_status s = crec__enter(cu, ctx, &pushed, fn);
  if (s) return s;
  char what[64];
  snprintf(what, sizeof what, "%llu bytes", (unsigned long long)size);
  CREC__CU_STEP(s, fn, what, cu, cuMemcpy, (CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, size);
  /* From pageable host memory cuMemcpy returns once the data is staged, before
   * it reaches the device; work on a non-blocking stream would not wait for the
   * rest. Waiting for the legacy stream, where the copy runs, finishes it. */
  CREC__CU_STEP(s, fn, what, cu, cuStreamSynchronize, NULL);
  crec__leave(cu, pushed);
  return s;
}

crec_status crec_stream_create(int ordinal, crec_stream *stream) {
  static const char fn[] = "crec_stream_create";
  if (!stream) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'stream' is NULL");
  *stream = NULL;
  const crec__cu *cu;
  bool pushed;
  crec_status s = enter_device(ordinal, fn, &cu, &pushed);
  if (s) return s;
  CREC__CU_STEP(s, fn, NULL, cu, cuStreamCreate, stream, CU_STREAM_NON_BLOCKING);
  crec__leave(cu, pushed);
  if (s) *stream = NULL;
  return s;
}

void crec_stream_destroy(crec_stream stream) {
  const crec__cu *cu = stream ? crec__driver("crec_stream_destroy") : NULL;
  if (cu) cu->cuStreamDestroy(stream);
}

/* Waits for `stream` (see crec_stream_wait()); timeout_ms <= 0: no deadline. */
static crec_status stream_wait(crec_stream stream, int timeout_ms, const char *fn) {
  const crec__cu *cu = crec__driver(fn);
  if (!cu) return CREC_ERR_NO_DEVICE;
  /* the legacy stream belongs to the current context: device 0's when none is */
  CUcontext cur = NULL;
  bool pushed = false;
  crec_status s = CREC_OK;
  if (!stream && (cu->cuCtxGetCurrent(&cur) != CUDA_SUCCESS || !cur)) {
    s = crec__use_device(cu, 0, fn, &cur);
    if (!s) s = crec__enter(cu, cur, &pushed, fn);
    if (s) return s;
  }
  if (timeout_ms > 0) {
    uint64_t end = crec__now_ns() + (uint64_t)timeout_ms * 1000000u;
    unsigned polls = 0;
    for (;;) {
      CUresult r = CREC__CU(cu, cuStreamQuery, stream);
      if (r == CUDA_SUCCESS) break;
      if (r != CUDA_ERROR_NOT_READY) {
        s = crec__cu_fail(fn, r, "cuStreamQuery", NULL);
        break;
      }
      if (crec__now_ns() >= end) {
        s = crec__error(CREC_ERR_TIMEOUT, fn,
                        "the stream's work did not finish within %d ms and is still running: a kernel that waits "
                        "for what never comes (an mbarrier short of arrivals, a flag nothing sets) runs until the "
                        "process ends",
                        timeout_ms);
        break;
      }
      crec__back_off(&polls);
    }
  }
  /* done (or no deadline): a synchronization also writes out the kernels' printf */
  if (!s) CREC__CU_STEP(s, fn, NULL, cu, cuStreamSynchronize, stream);
  crec__leave(cu, pushed);
  return s;
}

crec_status crec_stream_synchronize(crec_stream stream) { return stream_wait(stream, 0, "crec_stream_synchronize"); }

crec_status crec_stream_wait(crec_stream stream, int timeout_ms) {
  return stream_wait(stream, timeout_ms, "crec_stream_wait");
}
