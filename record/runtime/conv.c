/* Convolutions through cuDNN's convolution API, opened at run time. Each CUDA
 * context gets one cuDNN handle and, per convolution command, a plan: the
 * tensor, filter, convolution (cross-correlation, as XLA, PyTorch and linalg
 * mean it) and activation descriptors, and the algorithm chosen at record by
 * cuDNN's heuristics or by timing every algorithm on scratch buffers, the first
 * (or fastest) whose work area fits the command's workspace. A call sets the
 * handle's stream under the handle's lock (eager runs on several threads share
 * it). f32 convolutions run without tensor cores (CUDNN_FMA_MATH: no TF32), f16
 * and bf16 ones with them, accumulating in f32.
 *
 * cuDNN 9 marks this API deprecated in favour of its graph API; crec uses it
 * until the graph API's engines are wired in, so its declarations are read
 * with the deprecation warnings off.
 *
 * cuDNN ships in the CUDA toolkit's folder on the Debian machines and, on a
 * machine with PyTorch, in Python's nvidia-cudnn-cu13 package: libcudnn.so.9 is
 * looked for by its name, in the toolkit, then under Python's site-packages and
 * dist-packages (system, lib64, $CONDA_PREFIX, $VIRTUAL_ENV, ~/.local); CREC_CUDNN_LIBRARY names the
 * file to use instead. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#include <cudnn.h>
#include <dlfcn.h>
#include <glob.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime_internal.h"

/* The cuDNN functions crec calls: (field, symbol, return type, parameters). */
#define CREC__DNN_FUNCS(X)                                                                                       \
  X(create, "cudnnCreate", cudnnStatus_t, (cudnnHandle_t *))                                                     \
  X(destroy, "cudnnDestroy", cudnnStatus_t, (cudnnHandle_t))                                                     \
  X(set_stream, "cudnnSetStream", cudnnStatus_t, (cudnnHandle_t, cudaStream_t))                                  \
  X(error_string, "cudnnGetErrorString", const char *, (cudnnStatus_t))                                          \
  X(create_tensor, "cudnnCreateTensorDescriptor", cudnnStatus_t, (cudnnTensorDescriptor_t *))                    \
  X(destroy_tensor, "cudnnDestroyTensorDescriptor", cudnnStatus_t, (cudnnTensorDescriptor_t))                    \
  X(set_tensor, "cudnnSetTensorNdDescriptorEx", cudnnStatus_t,                                                   \
    (cudnnTensorDescriptor_t, cudnnTensorFormat_t, cudnnDataType_t, int, const int *))                           \
  X(create_filter, "cudnnCreateFilterDescriptor", cudnnStatus_t, (cudnnFilterDescriptor_t *))                    \
  X(destroy_filter, "cudnnDestroyFilterDescriptor", cudnnStatus_t, (cudnnFilterDescriptor_t))                    \
  X(set_filter, "cudnnSetFilterNdDescriptor", cudnnStatus_t,                                                     \
    (cudnnFilterDescriptor_t, cudnnDataType_t, cudnnTensorFormat_t, int, const int *))                           \
  X(create_conv, "cudnnCreateConvolutionDescriptor", cudnnStatus_t, (cudnnConvolutionDescriptor_t *))           \
  X(destroy_conv, "cudnnDestroyConvolutionDescriptor", cudnnStatus_t, (cudnnConvolutionDescriptor_t))           \
  X(set_conv, "cudnnSetConvolutionNdDescriptor", cudnnStatus_t,                                                  \
    (cudnnConvolutionDescriptor_t, int, const int *, const int *, const int *, cudnnConvolutionMode_t,           \
     cudnnDataType_t))                                                                                           \
  X(set_groups, "cudnnSetConvolutionGroupCount", cudnnStatus_t, (cudnnConvolutionDescriptor_t, int))            \
  X(set_math, "cudnnSetConvolutionMathType", cudnnStatus_t, (cudnnConvolutionDescriptor_t, cudnnMathType_t))    \
  X(create_act, "cudnnCreateActivationDescriptor", cudnnStatus_t, (cudnnActivationDescriptor_t *))              \
  X(destroy_act, "cudnnDestroyActivationDescriptor", cudnnStatus_t, (cudnnActivationDescriptor_t))              \
  X(set_act, "cudnnSetActivationDescriptor", cudnnStatus_t,                                                      \
    (cudnnActivationDescriptor_t, cudnnActivationMode_t, cudnnNanPropagation_t, double))                         \
  X(fwd_heuristics, "cudnnGetConvolutionForwardAlgorithm_v7", cudnnStatus_t,                                     \
    (cudnnHandle_t, cudnnTensorDescriptor_t, cudnnFilterDescriptor_t, cudnnConvolutionDescriptor_t,              \
     cudnnTensorDescriptor_t, int, int *, cudnnConvolutionFwdAlgoPerf_t *))                                       \
  X(fwd_find, "cudnnFindConvolutionForwardAlgorithmEx", cudnnStatus_t,                                           \
    (cudnnHandle_t, cudnnTensorDescriptor_t, const void *, cudnnFilterDescriptor_t, const void *,               \
     cudnnConvolutionDescriptor_t, cudnnTensorDescriptor_t, void *, int, int *, cudnnConvolutionFwdAlgoPerf_t *, \
     void *, size_t))                                                                                            \
  X(bwd_data_heuristics, "cudnnGetConvolutionBackwardDataAlgorithm_v7", cudnnStatus_t,                           \
    (cudnnHandle_t, cudnnFilterDescriptor_t, cudnnTensorDescriptor_t, cudnnConvolutionDescriptor_t,              \
     cudnnTensorDescriptor_t, int, int *, cudnnConvolutionBwdDataAlgoPerf_t *))                                   \
  X(bwd_data_find, "cudnnFindConvolutionBackwardDataAlgorithmEx", cudnnStatus_t,                                 \
    (cudnnHandle_t, cudnnFilterDescriptor_t, const void *, cudnnTensorDescriptor_t, const void *,               \
     cudnnConvolutionDescriptor_t, cudnnTensorDescriptor_t, void *, int, int *,                                  \
     cudnnConvolutionBwdDataAlgoPerf_t *, void *, size_t))                                                       \
  X(bwd_filter_heuristics, "cudnnGetConvolutionBackwardFilterAlgorithm_v7", cudnnStatus_t,                       \
    (cudnnHandle_t, cudnnTensorDescriptor_t, cudnnTensorDescriptor_t, cudnnConvolutionDescriptor_t,              \
     cudnnFilterDescriptor_t, int, int *, cudnnConvolutionBwdFilterAlgoPerf_t *))                                 \
  X(bwd_filter_find, "cudnnFindConvolutionBackwardFilterAlgorithmEx", cudnnStatus_t,                             \
    (cudnnHandle_t, cudnnTensorDescriptor_t, const void *, cudnnTensorDescriptor_t, const void *,               \
     cudnnConvolutionDescriptor_t, cudnnFilterDescriptor_t, void *, int, int *,                                  \
     cudnnConvolutionBwdFilterAlgoPerf_t *, void *, size_t))                                                     \
  X(forward, "cudnnConvolutionForward", cudnnStatus_t,                                                           \
    (cudnnHandle_t, const void *, cudnnTensorDescriptor_t, const void *, cudnnFilterDescriptor_t, const void *,  \
     cudnnConvolutionDescriptor_t, cudnnConvolutionFwdAlgo_t, void *, size_t, const void *,                      \
     cudnnTensorDescriptor_t, void *))                                                                           \
  X(bias_act_forward, "cudnnConvolutionBiasActivationForward", cudnnStatus_t,                                    \
    (cudnnHandle_t, const void *, cudnnTensorDescriptor_t, const void *, cudnnFilterDescriptor_t, const void *,  \
     cudnnConvolutionDescriptor_t, cudnnConvolutionFwdAlgo_t, void *, size_t, const void *,                      \
     cudnnTensorDescriptor_t, const void *, cudnnTensorDescriptor_t, const void *, cudnnActivationDescriptor_t,   \
     cudnnTensorDescriptor_t, void *))                                                                           \
  X(backward_data, "cudnnConvolutionBackwardData", cudnnStatus_t,                                                \
    (cudnnHandle_t, const void *, cudnnFilterDescriptor_t, const void *, cudnnTensorDescriptor_t, const void *,  \
     cudnnConvolutionDescriptor_t, cudnnConvolutionBwdDataAlgo_t, void *, size_t, const void *,                  \
     cudnnTensorDescriptor_t, void *))                                                                           \
  X(backward_filter, "cudnnConvolutionBackwardFilter", cudnnStatus_t,                                            \
    (cudnnHandle_t, const void *, cudnnTensorDescriptor_t, const void *, cudnnTensorDescriptor_t, const void *,  \
     cudnnConvolutionDescriptor_t, cudnnConvolutionBwdFilterAlgo_t, void *, size_t, const void *,                \
     cudnnFilterDescriptor_t, void *))                                                                           \
  X(add_tensor, "cudnnAddTensor", cudnnStatus_t,                                                                 \
    (cudnnHandle_t, const void *, cudnnTensorDescriptor_t, const void *, const void *, cudnnTensorDescriptor_t,  \
     void *))                                                                                                    \
  X(activation_forward, "cudnnActivationForward", cudnnStatus_t,                                                 \
    (cudnnHandle_t, cudnnActivationDescriptor_t, const void *, cudnnTensorDescriptor_t, const void *,            \
     const void *, cudnnTensorDescriptor_t, void *))

typedef struct crec__cudnn {
#define CREC__DNN_FIELD(field, symbol, ret, params) ret(*field) params;
  CREC__DNN_FUNCS(CREC__DNN_FIELD)
#undef CREC__DNN_FIELD
} crec__cudnn;

static crec__loader loader = CREC__LOADER_INIT;
static crec__cudnn dnn;

/* libcudnn.so.9 as the top of this file says where; NULL with the places tried in `reason`. */
static void *open_cudnn(char *reason, size_t size) {
  const char *given = getenv("CREC_CUDNN_LIBRARY");
  if (given && *given) {
    void *lib = dlopen(given, RTLD_NOW | RTLD_LOCAL);
    const char *e = lib ? NULL : dlerror();
    if (!lib) snprintf(reason, size, "CREC_CUDNN_LIBRARY=%s cannot be opened (%s)", given, e ? e : "not found");
    return lib;
  }
  char first[600];
  void *lib = crec__open_library("libcudnn.so.9", first, sizeof first);
  if (lib) return lib;
  /* Python's nvidia-cudnn-cu13 package */
  char pattern[512];
  const char *venv = getenv("VIRTUAL_ENV"), *home = getenv("HOME");
  const char *roots[] = {"/usr/local/lib/python3*/dist-packages", "/usr/local/lib/python3*/site-packages",
                         "/usr/lib/python3/dist-packages",         "/usr/lib/python3*/site-packages",
                         "/usr/lib64/python3*/site-packages",      "/usr/local/lib64/python3*/site-packages",
                         NULL,                                     NULL,
                         NULL};
  char venv_root[256], home_root[256], conda_root[256];
  const char *conda = getenv("CONDA_PREFIX");
  size_t n = 6;
  if (conda && *conda) {
    snprintf(conda_root, sizeof conda_root, "%s/lib/python3*/site-packages", conda);
    roots[n++] = conda_root;
  }
  if (venv && *venv) {
    snprintf(venv_root, sizeof venv_root, "%s/lib/python3*/site-packages", venv);
    roots[n++] = venv_root;
  }
  if (home && *home) {
    snprintf(home_root, sizeof home_root, "%s/.local/lib/python3*/site-packages", home);
    roots[n++] = home_root;
  }
  for (size_t i = 0; i < n && !lib; i++) {
    snprintf(pattern, sizeof pattern, "%s/nvidia/cudnn/lib/libcudnn.so.9", roots[i]);
    glob_t g;
    if (glob(pattern, 0, NULL, &g) == 0)
      for (size_t k = 0; k < g.gl_pathc && !lib; k++) lib = dlopen(g.gl_pathv[k], RTLD_NOW | RTLD_LOCAL);
    globfree(&g);
  }
  if (!lib)
    snprintf(reason, size, "%s; nor in Python's nvidia-cudnn-cu13 package (nvidia/cudnn/lib under site-packages "
             "and dist-packages); set CREC_CUDNN_LIBRARY to the file", first);
  return lib;
}

static void load(void) {
  char reason[800];
  void *handle = open_cudnn(reason, sizeof reason);
  if (!handle) {
    snprintf(loader.why, sizeof loader.why, "cuDNN is not available: %s", reason);
    return;
  }
  CREC__SYMBOLS(syms, crec__cudnn, CREC__DNN_FUNCS);
  loader.loaded =
      crec__loader_symbols(&loader, "cuDNN", handle, "libcudnn.so.9", syms, sizeof syms / sizeof *syms, &dnn, NULL);
}

crec_status crec__conv_library(const char *fn) { return crec__loader_check(&loader, load, NULL, fn); }

/* Calls cuDNN with the CUDA fault hook in front (test builds fail the n-th call). */
#define DNN(call) (crec__cu_fault() ? CUDNN_STATUS_ALLOC_FAILED : (call))

static crec_status dnn_fail(const char *fn, const char *label, cudnnStatus_t r, const char *call) {
  const char *text = dnn.error_string ? dnn.error_string(r) : NULL;
  return crec__error(CREC_ERR_CUDA, fn, "%s: %s failed: %s (%d)", label, call, text ? text : "no description", (int)r);
}

/* A context's cuDNN handle and the lock its calls take. */
typedef struct crec__dnn {
  cudnnHandle_t handle;
  pthread_mutex_t lock;
} crec__dnn;

/* A convolution's plan in one context. */
typedef struct crec__conv_plan {
  cudnnTensorDescriptor_t x, y, bias;
  cudnnFilterDescriptor_t w;
  cudnnConvolutionDescriptor_t conv;
  cudnnActivationDescriptor_t act;
  int algo;    /* of the kind's enum (cudnnConvolutionFwdAlgo_t, ...BwdDataAlgo_t, ...BwdFilterAlgo_t) */
  size_t work; /* bytes of work area it uses */
  bool unfused; /* a bias + ReLU that cuDNN's fused call refused for this algorithm (set at a call) */
} crec__conv_plan;

static void plan_free(crec__conv_plan *pl) {
  if (!pl) return;
  if (pl->x) dnn.destroy_tensor(pl->x);
  if (pl->y) dnn.destroy_tensor(pl->y);
  if (pl->bias) dnn.destroy_tensor(pl->bias);
  if (pl->w) dnn.destroy_filter(pl->w);
  if (pl->conv) dnn.destroy_conv(pl->conv);
  if (pl->act) dnn.destroy_act(pl->act);
  crec__free(pl);
}

void crec__conv_state_free(const crec_program *p, crec__ctx_state *st) {
  if (!st->conv && !st->dnn) return; /* nothing made (`loaded` may be written by another thread's first one now) */
  for (size_t i = 0; st->conv && i < p->num_commands; i++) plan_free(st->conv[i]);
  crec__free(st->conv);
  st->conv = NULL;
  crec__dnn *h = st->dnn;
  if (h) {
    if (h->handle) {
      dnn.destroy(h->handle);
      CREC__CUDA_LIVE(-1);
    }
    pthread_mutex_destroy(&h->lock);
    crec__free(h);
    st->dnn = NULL;
  }
}

static cudnnDataType_t data_type(crec_element e) {
  return e == CREC_ELEMENT_F16 ? CUDNN_DATA_HALF : e == CREC_ELEMENT_BF16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
}

/* Describes a plan's tensors and convolution; `step` names the call that failed. */
static cudnnStatus_t describe(const crec__conv *k, crec__conv_plan *pl, const char **step) {
  const crec_conv *d = &k->desc;
  int nd = (int)d->spatial + 2;
  int xd[5] = {(int)d->batch, (int)d->in_channels}, wd[5] = {(int)d->out_channels, (int)(d->in_channels / d->groups)};
  int yd[5] = {(int)d->batch, (int)d->out_channels}, bd[5] = {1, (int)d->out_channels, 1, 1, 1};
  int pad[3], stride[3], dil[3];
  for (uint32_t i = 0; i < d->spatial; i++) {
    xd[2 + i] = (int)d->in_size[i], wd[2 + i] = (int)d->filter_size[i], yd[2 + i] = (int)k->out_size[i];
    pad[i] = (int)d->padding[i], stride[i] = (int)d->stride[i], dil[i] = (int)d->dilation[i];
  }
  cudnnTensorFormat_t format = d->layout == CREC_CONV_NHWC ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  cudnnDataType_t t = data_type(d->type);
  cudnnStatus_t r;
  if ((r = DNN(dnn.create_tensor(&pl->x))) || (r = DNN(dnn.create_tensor(&pl->y))) ||
      (r = DNN(dnn.create_filter(&pl->w))) || (r = DNN(dnn.create_conv(&pl->conv)))) {
    *step = "creating cuDNN's descriptors";
    return r;
  }
  *step = "cudnnSetTensorNdDescriptorEx";
  if ((r = DNN(dnn.set_tensor(pl->x, format, t, nd, xd))) || (r = DNN(dnn.set_tensor(pl->y, format, t, nd, yd))))
    return r;
  *step = "cudnnSetFilterNdDescriptor";
  if ((r = DNN(dnn.set_filter(pl->w, t, format, nd, wd)))) return r;
  *step = "cudnnSetConvolutionNdDescriptor";
  if ((r = DNN(dnn.set_conv(pl->conv, (int)d->spatial, pad, stride, dil, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT))))
    return r;
  *step = "cudnnSetConvolutionGroupCount";
  if ((r = DNN(dnn.set_groups(pl->conv, (int)d->groups)))) return r;
  *step = "cudnnSetConvolutionMathType";
  if ((r = DNN(dnn.set_math(pl->conv, d->type == CREC_ELEMENT_F32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH)))) return r;
  if (d->bias.buffer.id) {
    *step = "the bias's descriptor";
    if ((r = DNN(dnn.create_tensor(&pl->bias))) || (r = DNN(dnn.set_tensor(pl->bias, CUDNN_TENSOR_NCHW, t, nd, bd))))
      return r;
  }
  if (d->activation == CREC_CONV_ACTIVATION_RELU) {
    *step = "the activation's descriptor";
    if ((r = DNN(dnn.create_act(&pl->act))) ||
        (r = DNN(dnn.set_act(pl->act, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0))))
      return r;
  }
  return CUDNN_STATUS_SUCCESS;
}

/* The algorithms' results, whichever the kind: each one's number, status and work area. */
typedef struct choice {
  int algo;
  cudnnStatus_t status;
  size_t memory;
} choice;

enum { MAX_ALGOS = 16 };

/* Asks cuDNN for its algorithms for plan `pl` of command `k`: by heuristics, or
 * timed on scratch buffers (`scratch`: x, w, y and a work area of the
 * workspace's size); the results in cuDNN's order of preference. */
static cudnnStatus_t algorithms(const crec__conv *k, const crec__conv_plan *pl, cudnnHandle_t h, void *const *scratch,
                                choice *out, int *count, const char **step) {
  const crec_conv *d = &k->desc;
  bool search = d->algorithm == CREC_CONV_SEARCH;
  size_t ws = (size_t)d->workspace_bytes;
  cudnnStatus_t r;
  int n = 0;
  if (d->kind == CREC_CONV_FORWARD) {
    cudnnConvolutionFwdAlgoPerf_t perf[MAX_ALGOS];
    *step = search ? "cudnnFindConvolutionForwardAlgorithmEx" : "cudnnGetConvolutionForwardAlgorithm_v7";
    r = search ? DNN(dnn.fwd_find(h, pl->x, scratch[0], pl->w, scratch[1], pl->conv, pl->y, scratch[2],
                                  CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, perf, scratch[3], ws))
               : DNN(dnn.fwd_heuristics(h, pl->x, pl->w, pl->conv, pl->y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, perf));
    for (int i = 0; i < n && !r; i++) out[i] = (choice){(int)perf[i].algo, perf[i].status, perf[i].memory};
  } else if (d->kind == CREC_CONV_BACKWARD_DATA) {
    cudnnConvolutionBwdDataAlgoPerf_t perf[MAX_ALGOS];
    *step = search ? "cudnnFindConvolutionBackwardDataAlgorithmEx" : "cudnnGetConvolutionBackwardDataAlgorithm_v7";
    r = search ? DNN(dnn.bwd_data_find(h, pl->w, scratch[1], pl->y, scratch[2], pl->conv, pl->x, scratch[0],
                                       CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n, perf, scratch[3], ws))
               : DNN(dnn.bwd_data_heuristics(h, pl->w, pl->y, pl->conv, pl->x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n,
                                             perf));
    for (int i = 0; i < n && !r; i++) out[i] = (choice){(int)perf[i].algo, perf[i].status, perf[i].memory};
  } else {
    cudnnConvolutionBwdFilterAlgoPerf_t perf[MAX_ALGOS];
    *step = search ? "cudnnFindConvolutionBackwardFilterAlgorithmEx" : "cudnnGetConvolutionBackwardFilterAlgorithm_v7";
    r = search ? DNN(dnn.bwd_filter_find(h, pl->x, scratch[0], pl->y, scratch[2], pl->conv, pl->w, scratch[1],
                                         CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n, perf, scratch[3], ws))
               : DNN(dnn.bwd_filter_heuristics(h, pl->x, pl->y, pl->conv, pl->w, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
                                               &n, perf));
    for (int i = 0; i < n && !r; i++) out[i] = (choice){(int)perf[i].algo, perf[i].status, perf[i].memory};
  }
  *count = r ? 0 : n;
  return r;
}

/* Scratch buffers for a search: x, w, y and the work area (freed by free_scratch). */
static crec_status alloc_scratch(const crec__cu *cu, const crec__conv *k, CUdeviceptr scratch[4], const char *label,
                                 const char *fn) {
  const crec_conv *d = &k->desc;
  uint64_t bytes[4] = {d->input.size, d->filter.size, d->output.size, d->workspace_bytes};
  crec_status s = CREC_OK;
  for (int i = 0; i < 4 && !s; i++) {
    CREC__CU_STEP(s, fn, label, cu, cuMemAlloc, &scratch[i], bytes[i] ? bytes[i] : 1);
    if (s) scratch[i] = 0;
  }
  return s;
}

static void free_scratch(const crec__cu *cu, CUdeviceptr scratch[4]) {
  for (int i = 0; i < 4; i++)
    if (scratch[i]) cu->cuMemFree(scratch[i]);
}

static crec_status make_plan(const crec_program *p, const crec__cu *cu, cudnnHandle_t h, uint32_t ci,
                             crec__conv_plan **out, const char *fn) {
  const crec__conv *k = p->commands[ci].conv;
  const crec_conv *d = &k->desc;
  char label[200];
  crec__command_label(p, ci, label, sizeof label);
  crec__conv_plan *pl = crec__calloc(1, sizeof *pl);
  if (!pl) return crec__oom(fn);
  *out = pl; /* freed with the state, whatever follows */
  const char *step = "";
  cudnnStatus_t r = describe(k, pl, &step);
  if (r) return dnn_fail(fn, label, r, step);
  CUdeviceptr scratch[4] = {0};
  crec_status s = CREC_OK;
  if (d->algorithm == CREC_CONV_SEARCH && (s = alloc_scratch(cu, k, scratch, label, fn))) {
    free_scratch(cu, scratch);
    return s;
  }
  void *ptrs[4] = {(void *)(uintptr_t)scratch[0], (void *)(uintptr_t)scratch[1], (void *)(uintptr_t)scratch[2],
                   (void *)(uintptr_t)scratch[3]};
  choice c[MAX_ALGOS];
  int n = 0;
  /* a search runs on the handle's stream, the legacy one, and waits for it */
  if (d->algorithm == CREC_CONV_SEARCH) r = DNN(dnn.set_stream(h, NULL));
  if (!r) r = algorithms(k, pl, h, ptrs, c, &n, &step);
  free_scratch(cu, scratch);
  if (r) return dnn_fail(fn, label, r, step);
  for (int i = 0; i < n; i++)
    if (c[i].status == CUDNN_STATUS_SUCCESS && c[i].memory <= d->workspace_bytes) {
      pl->algo = c[i].algo;
      pl->work = c[i].memory;
      return CREC_OK;
    }
  size_t least = SIZE_MAX;
  for (int i = 0; i < n; i++)
    if (c[i].status == CUDNN_STATUS_SUCCESS && c[i].memory < least) least = c[i].memory;
  if (least == SIZE_MAX)
    return crec__error(CREC_ERR_UNSUPPORTED, fn, "%s: cuDNN has no algorithm for this convolution (%d tried by %s)",
                       label, n, d->algorithm == CREC_CONV_SEARCH ? "search" : "heuristics");
  return crec__error(CREC_ERR_OUT_OF_RANGE, fn,
                     "%s: every algorithm cuDNN offers needs more work area than the command's workspace of %" PRIu64
                     " bytes; the least is %zu (set crec_conv.workspace_bytes to at least that)",
                     label, d->workspace_bytes, least);
}

crec_status crec__conv_prepare(const crec_program *p, const crec__cu *cu, crec__runtime *rt, crec__ctx_state *st,
                               crec__loads *loads, const char *fn) {
  size_t first = p->num_commands;
  bool hwio = false;
  for (size_t i = 0; i < p->num_commands; i++)
    if (p->commands[i].kind == CREC_COMMAND_CONV) {
      if (first == p->num_commands) first = i;
      hwio = hwio || p->commands[i].conv->desc.filter_layout == CREC_CONV_FILTER_HWIO;
    }
  if (first == p->num_commands) return CREC_OK;
  char label[200];
  crec_status s = crec__loader_check(&loader, load, crec__command_label(p, first, label, sizeof label), fn);
  if (s) return s;
  s = hwio ? crec__load_conditions(cu, rt, st, fn, loads) : CREC_OK;
  if (s) return s;
  pthread_mutex_lock(&rt->lock);
  if (!st->conv) {
    st->conv = crec__calloc(p->num_commands, sizeof *st->conv);
    if (!st->conv) s = crec__oom(fn);
  }
  if (!s && !st->dnn) {
    crec__dnn *h = crec__calloc(1, sizeof *h);
    cudnnStatus_t r = h ? DNN(dnn.create(&h->handle)) : CUDNN_STATUS_SUCCESS;
    if (!h) {
      s = crec__oom(fn);
    } else if (r) {
      s = dnn_fail(fn, crec__command_label(p, first, label, sizeof label), r, "cudnnCreate");
      crec__free(h);
    } else {
      pthread_mutex_init(&h->lock, NULL);
      CREC__CUDA_LIVE(1);
      st->dnn = h;
    }
  }
  for (size_t i = first; i < p->num_commands && !s; i++)
    if (p->commands[i].kind == CREC_COMMAND_CONV && !st->conv[i]) {
      pthread_mutex_lock(&st->dnn->lock);
      s = make_plan(p, cu, st->dnn->handle, (uint32_t)i, &st->conv[i], fn);
      pthread_mutex_unlock(&st->dnn->lock);
      if (s) {
        plan_free(st->conv[i]); /* the next record makes it again */
        st->conv[i] = NULL;
      }
    }
  pthread_mutex_unlock(&rt->lock);
  return s;
}

/* Launches crec_filter_layout between an HWIO filter and the K-first copy cuDNN takes. */
static crec_status relayout(const crec__ctx_state *st, const crec_conv *d, CUdeviceptr dst, CUdeviceptr src,
                            int to_k_first, CUstream stream, const char *label, const char *fn) {
  const crec__cu *cu = crec__driver(fn);
  if (!cu) return CREC_ERR_NO_DEVICE;
  unsigned long long k = d->out_channels, cg = d->in_channels / d->groups, rs = 1;
  for (uint32_t i = 0; i < d->spatial; i++) rs *= d->filter_size[i];
  int es = (int)crec_element_size(d->type), kcrs = d->layout == CREC_CONV_NCHW;
  void *params[] = {&dst, &src, &k, &rs, &cg, &es, &kcrs, &to_k_first};
  unsigned long long blocks = (k * rs * cg + 255) / 256;
  CUlaunchConfig cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.gridDimX = (unsigned)(blocks < 4096 ? blocks : 4096), cfg.gridDimY = 1, cfg.gridDimZ = 1;
  cfg.blockDimX = 256, cfg.blockDimY = 1, cfg.blockDimZ = 1;
  cfg.hStream = stream;
  crec_status s = CREC_OK;
  CREC__CU_STEP(s, fn, label, cu, cuLaunchKernelEx, &cfg, st->filter_layout, params, NULL);
  return s;
}

crec_status crec__conv_issue(const crec_program *p, const crec__ctx_state *st, const crec__values *v, uint32_t ci,
                             CUstream stream, const char *fn) {
  const crec__conv *k = p->commands[ci].conv;
  const crec_conv *d = &k->desc;
  crec__conv_plan *pl = st->conv[ci];
  crec__dnn *h = st->dnn;
  void *x = (void *)(uintptr_t)crec__range_addr(v, d->input), *w = (void *)(uintptr_t)crec__range_addr(v, d->filter);
  void *y = (void *)(uintptr_t)crec__range_addr(v, d->output);
  void *bias = d->bias.buffer.id ? (void *)(uintptr_t)crec__range_addr(v, d->bias) : NULL;
  void *ws = (void *)(uintptr_t)v->base[k->workspace];
  char label[200];
  crec__command_label(p, ci, label, sizeof label);
  bool hwio = d->filter_layout == CREC_CONV_FILTER_HWIO;
  CUdeviceptr given_w = (CUdeviceptr)(uintptr_t)w, copy = v->base[k->workspace] + k->filter_copy;
  if (hwio) {
    /* cuDNN reads (or writes) the K-first copy in the workspace */
    crec_status s = d->kind == CREC_CONV_BACKWARD_FILTER ? CREC_OK : relayout(st, d, copy, given_w, 1, stream, label, fn);
    if (s) return s;
    w = (void *)(uintptr_t)copy;
  }
  /* f32, f16 and bf16 convolutions all take float scales */
  const float one = 1, zero = 0;
  pthread_mutex_lock(&h->lock);
  const char *call = "cudnnSetStream";
  cudnnStatus_t r = DNN(dnn.set_stream(h->handle, (cudaStream_t)stream));
  bool fused = false;
  if (!r && d->kind == CREC_CONV_FORWARD && bias && pl->act && !pl->unfused) {
    call = "cudnnConvolutionBiasActivationForward";
    r = DNN(dnn.bias_act_forward(h->handle, &one, pl->x, x, pl->w, w, pl->conv, (cudnnConvolutionFwdAlgo_t)pl->algo, ws,
                                 pl->work, &zero, pl->y, y, pl->bias, bias, pl->act, pl->y, y));
    /* the fused call supports fewer algorithms and types than the plain one (and
     * enqueued nothing when it says so): the three calls then */
    fused = r != CUDNN_STATUS_NOT_SUPPORTED;
    if (!fused) {
      r = CUDNN_STATUS_SUCCESS;
      pl->unfused = true; /* under the handle's lock: later calls go straight to the three */
    }
  }
  if (!r && d->kind == CREC_CONV_FORWARD && !fused) {
    call = "cudnnConvolutionForward";
    r = DNN(dnn.forward(h->handle, &one, pl->x, x, pl->w, w, pl->conv, (cudnnConvolutionFwdAlgo_t)pl->algo, ws, pl->work,
                        &zero, pl->y, y));
    if (!r && bias) {
      call = "cudnnAddTensor (the bias)";
      r = DNN(dnn.add_tensor(h->handle, &one, pl->bias, bias, &one, pl->y, y));
    }
    if (!r && pl->act) {
      call = "cudnnActivationForward (the ReLU)";
      r = DNN(dnn.activation_forward(h->handle, pl->act, &one, pl->y, y, &zero, pl->y, y));
    }
  }
  if (!r && d->kind == CREC_CONV_BACKWARD_DATA) {
    call = "cudnnConvolutionBackwardData";
    r = DNN(dnn.backward_data(h->handle, &one, pl->w, w, pl->y, y, pl->conv, (cudnnConvolutionBwdDataAlgo_t)pl->algo,
                              ws, pl->work, &zero, pl->x, x));
  }
  if (!r && d->kind == CREC_CONV_BACKWARD_FILTER) {
    call = "cudnnConvolutionBackwardFilter";
    r = DNN(dnn.backward_filter(h->handle, &one, pl->x, x, pl->y, y, pl->conv,
                                (cudnnConvolutionBwdFilterAlgo_t)pl->algo, ws, pl->work, &zero, pl->w, w));
  }
  /* the handle keeps no stream a later destroy could outlive (the capture stream
   * dies with its exec), after a failure too; the first error is the one said */
  cudnnStatus_t reset = DNN(dnn.set_stream(h->handle, NULL));
  if (!r && reset) {
    call = "cudnnSetStream";
    r = reset;
  }
  pthread_mutex_unlock(&h->lock);
  if (r) return dnn_fail(fn, label, r, call);
  if (hwio && d->kind == CREC_CONV_BACKWARD_FILTER) return relayout(st, d, given_w, copy, 0, stream, label, fn);
  return CREC_OK;
}
/* cuDNN's algorithm names, by kind, in their enums' order (cudnn_ops_v9.h). */
static const char *algorithm_name(crec_conv_kind kind, int algo) {
  static const char *const fwd[] = {"IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT",
                                    "FFT", "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
  static const char *const data[] = {"ALGO_0", "ALGO_1", "FFT", "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
  static const char *const filter[] = {"ALGO_0", "ALGO_1", "FFT", "ALGO_3", "WINOGRAD", "WINOGRAD_NONFUSED", "FFT_TILING"};
  const char *const *names = kind == CREC_CONV_FORWARD ? fwd : kind == CREC_CONV_BACKWARD_DATA ? data : filter;
  int n = kind == CREC_CONV_FORWARD ? 8 : kind == CREC_CONV_BACKWARD_DATA ? 6 : 7;
  return algo >= 0 && algo < n ? names[algo] : "?";
}

void crec__conv_choice(const crec_program *p, const crec__ctx_state *st, uint32_t ci, crec__text *t) {
  const crec__conv_plan *pl = st->conv ? st->conv[ci] : NULL;
  if (!pl) return;
  const crec_conv *d = &p->commands[ci].conv->desc;
  crec__text_printf(t, "cuDNN %s algorithm %s (%d) by %s, %zu of the %" PRIu64 " workspace bytes",
                    crec_conv_kind_name(d->kind), algorithm_name(d->kind, pl->algo), pl->algo,
                    d->algorithm == CREC_CONV_SEARCH ? "search" : "heuristics", pl->work, d->workspace_bytes);
  if (d->bias.buffer.id && d->activation == CREC_CONV_ACTIVATION_RELU)
    crec__text_puts(t, pl->unfused ? ", bias and ReLU as two more calls (cuDNN's fused call refused the algorithm)"
                                   : ", bias and ReLU fused");
}
#pragma GCC diagnostic pop
