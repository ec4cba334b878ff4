/* The CUDA driver, reached at run time: libcuda.so.1 is opened on first use
 * and every function is looked up with cuGetProcAddress at the version whose
 * signature cuda.h declares, so nothing links -lcuda. */
#ifndef CREC_RECORD_DRIVER_H
#define CREC_RECORD_DRIVER_H

#include <cuda.h>
#include <cudaTypedefs.h>

#include "internal.h"
#include "libs.h"

/* (name, version of the PFN typedef) for every driver function crec calls. */
#define CREC__CU_FUNCS(X)                                   \
  /* the driver, devices and errors */                      \
  X(cuInit, 2000)                                           \
  X(cuDriverGetVersion, 2020)                               \
  X(cuDeviceGetCount, 2000)                                 \
  X(cuDeviceGet, 2000)                                      \
  X(cuDeviceGetName, 2000)                                  \
  X(cuDeviceGetAttribute, 2000)                             \
  X(cuGetErrorName, 6000)                                   \
  X(cuGetErrorString, 6000)                                 \
  /* contexts */                                            \
  X(cuDevicePrimaryCtxRetain, 7000)                         \
  X(cuCtxGetCurrent, 4000)                                  \
  X(cuCtxSetCurrent, 4000)                                  \
  X(cuCtxGetDevice, 2000)                                   \
  X(cuCtxPushCurrent, 4000)                                 \
  X(cuCtxPopCurrent, 4000)                                  \
  /* modules and functions */                               \
  X(cuModuleLoadData, 2000)                                 \
  X(cuModuleLoadDataEx, 2010)                               \
  X(cuModuleUnload, 2000)                                   \
  X(cuModuleGetFunction, 2000)                              \
  X(cuFuncSetAttribute, 9000)                               \
  X(cuFuncGetAttribute, 2020)                               \
  X(cuFuncGetParamInfo, 12040)                              \
  X(cuFuncLoad, 12040)                                      \
  X(cuFuncIsLoaded, 12040)                                  \
  X(cuFuncGetName, 12030)                                   \
  X(cuFuncGetModule, 11000)                                 \
  X(cuKernelGetFunction, 12000)                             \
  X(cuTensorMapEncodeTiled, 12000)                          \
  /* memory and copies */                                   \
  X(cuMemAlloc, 3020)                                       \
  X(cuMemFree, 3020)                                        \
  X(cuMemAllocAsync, 11020)                                 \
  X(cuMemFreeAsync, 11020)                                  \
  X(cuMemHostAlloc, 2020)                                   \
  X(cuMemFreeHost, 2000)                                    \
  X(cuMemHostGetDevicePointer, 3020)                        \
  X(cuPointerGetAttributes, 7000)                           \
  X(cuMemcpy, 4000)                                         \
  X(cuMemcpyHtoD, 3020)                                     \
  X(cuMemcpyDtoH, 3020)                                     \
  X(cuMemcpyAsync, 4000)                                    \
  X(cuMemcpyDtoHAsync, 3020)                                \
  X(cuMemsetD8Async, 3020)                                  \
  X(cuMemsetD16Async, 3020)                                 \
  X(cuMemsetD32Async, 3020)                                 \
  /* launches, streams and events */                        \
  X(cuLaunchKernelEx, 11060)                                \
  X(cuLaunchHostFunc, 10000)                                \
  X(cuStreamCreate, 2000)                                   \
  X(cuStreamDestroy, 4000)                                  \
  X(cuStreamSynchronize, 2000)                              \
  X(cuStreamQuery, 2000)                                    \
  X(cuStreamWaitEvent, 3020)                                \
  X(cuStreamBeginCapture, 10010)                            \
  X(cuStreamEndCapture, 10000)                              \
  X(cuStreamIsCapturing, 10000)                             \
  X(cuStreamGetCaptureInfo, 12030)                          \
  X(cuStreamUpdateCaptureDependencies, 12030)               \
  X(cuEventCreate, 2000)                                    \
  X(cuEventDestroy, 4000)                                   \
  X(cuEventRecord, 2000)                                    \
  X(cuEventQuery, 2000)                                     \
  X(cuEventSynchronize, 2000)                               \
  /* graphs: building and reading */                        \
  X(cuGraphCreate, 10000)                                   \
  X(cuGraphDestroy, 10000)                                  \
  X(cuGraphClone, 10000)                                    \
  X(cuGraphNodeFindInClone, 10000)                          \
  X(cuGraphAddNode, 12030)                                  \
  X(cuGraphAddEmptyNode, 10000)                             \
  X(cuGraphAddKernelNode, 12000)                            \
  X(cuGraphAddMemcpyNode, 10000)                            \
  X(cuGraphAddMemsetNode, 10000)                            \
  X(cuGraphAddHostNode, 10000)                              \
  X(cuGraphAddChildGraphNode, 10000)                        \
  X(cuGraphAddDependencies, 12030)                          \
  X(cuGraphConditionalHandleCreate, 12030)                  \
  X(cuGraphGetNodes, 10000)                                 \
  X(cuGraphGetEdges, 12030)                                 \
  X(cuGraphNodeGetType, 10000)                              \
  X(cuGraphChildGraphNodeGetGraph, 10000)                   \
  X(cuGraphKernelNodeGetParams, 12000)                      \
  X(cuGraphKernelNodeSetParams, 12000)                      \
  X(cuGraphKernelNodeGetAttribute, 11000)                   \
  X(cuGraphKernelNodeSetAttribute, 11000)                   \
  X(cuGraphKernelNodeCopyAttributes, 11000)                 \
  X(cuGraphMemcpyNodeGetParams, 10000)                      \
  X(cuGraphMemcpyNodeSetParams, 10000)                      \
  X(cuGraphMemsetNodeGetParams, 10000)                      \
  X(cuGraphMemsetNodeSetParams, 10000)                      \
  X(cuGraphHostNodeGetParams, 10000)                        \
  X(cuGraphDebugDotPrint, 11030)                            \
  /* executable graphs: instantiation, updates, launches */ \
  X(cuGraphInstantiateWithFlags, 11040)                     \
  X(cuGraphUpload, 11010)                                   \
  X(cuGraphLaunch, 10000)                                   \
  X(cuGraphExecDestroy, 10000)                              \
  X(cuGraphExecUpdate, 12000)                               \
  X(cuGraphExecKernelNodeSetParams, 12000)                  \
  X(cuGraphExecMemcpyNodeSetParams, 10020)                  \
  X(cuGraphExecMemsetNodeSetParams, 10020)                  \
  X(cuGraphExecChildGraphNodeSetParams, 11010)              \
  X(cuGraphNodeSetEnabled, 11060)

typedef struct crec__cu {
#define CREC__CU_FIELD(name, version) PFN_##name##_v##version name;
  CREC__CU_FUNCS(CREC__CU_FIELD)
#undef CREC__CU_FIELD
  /* Newer than the cuda.h crec builds with (CUDA 13.0), so declared here and
   * found with dlsym: NULL on a driver without it. A kernel's parameter count,
   * which spares capture's import its one failing probe (record/capture.c). */
  CUresult (*cuFuncGetParamCount)(CUfunction func, size_t *count);
  int driver_version; /* e.g. 13000 */
} crec__cu;

/* Returns the driver table, opening the driver on first use; NULL when there is
 * no usable driver or device (then the thread's last error says why, prefixed
 * with `fn`). */
const crec__cu *crec__driver(const char *fn);

/* Returns true when the armed CUDA fault fires (test hook), counting one call. */
bool crec__cu_fault(void);
/* One pause of a polling wait (cuStreamQuery, NCCL's asynchronous error), a
 * little longer each time: the first 200 polls spin (work often finishes within
 * microseconds), the next 200 yield, later ones sleep 10 us and up to 160 us,
 * which keeps a wait's overshoot small next to the work it waits for. `*polls`
 * starts at 0 and counts. */
void crec__back_off(unsigned *polls);

/* The status a driver result is sorted into: CREC_ERR_DEVICE_ASSERT for
 * CUDA_ERROR_ASSERT, CREC_ERR_DEVICE_OUT_OF_MEMORY for CUDA_ERROR_OUT_OF_MEMORY,
 * CREC_ERR_CONTEXT_LOST for the sticky errors of a faulting kernel (illegal
 * address, launch failure, ...), else CREC_ERR_CUDA (CREC_OK for success). */
crec_status crec__cu_status(CUresult r);

/* Formats "fn: <context>: <call> failed: NAME (description)" as the last error;
 * returns crec__cu_status(r). */
crec_status crec__cu_fail(const char *fn, CUresult r, const char *call, const char *context);

/* A graph node type's name for messages and dumps ("kernel", "child graph", ...). */
const char *crec__graph_node_type_name(CUgraphNodeType t);

/* crec__open_library(), crec__symbol, crec__load_symbols() and the loaders are in libs.h. */

/* Calls a driver function through table `cu`, with the fault hook in front. */
#define CREC__CU(cu, name, ...) (crec__cu_fault() ? CUDA_ERROR_OUT_OF_MEMORY : (cu)->name(__VA_ARGS__))

/* The one way crec checks a driver call: while status `s` is still CREC_OK, calls
 * `name` through `cu` (CREC__CU); a failure sets `s` to crec__cu_fail(fn, r,
 * "name", context), so the message names the call by its own text:
 * "CONTEXT: cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory)".
 * `context` (a string, or NULL) is evaluated only on failure. Steps chain: after
 * the first failure the later ones call nothing. */
#define CREC__CU_STEP(s, fn, context, cu, name, ...)                           \
  do {                                                                         \
    if ((s) == CREC_OK) {                                                      \
      CUresult r_ = CREC__CU(cu, name, __VA_ARGS__);                           \
      if (r_ != CUDA_SUCCESS) (s) = crec__cu_fail(fn, r_, #name, context);     \
    }                                                                          \
  } while (0)

/* CREC__CU_STEP that returns the failure from the calling function. */
#define CREC__CU_TRY(fn, context, cu, name, ...)                               \
  do {                                                                         \
    CUresult r_ = CREC__CU(cu, name, __VA_ARGS__);                             \
    if (r_ != CUDA_SUCCESS) return crec__cu_fail(fn, r_, #name, context);      \
  } while (0)

#endif
