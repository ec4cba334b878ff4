/* Imported graphs (capture.h): a CUDA graph made by other code becomes an exec.
 * The analysis walks the captured graph's nodes (and those of the same work's
 * other captures, in the same order), reads each kernel's parameter bytes
 * through its layout (cuFuncGetParamInfo) or its `extra` buffer, and hands them
 * to the classifier (classify.c): relocations into arguments, memory the work
 * owns, constants, noise, and values correlated with an argument's address in a
 * way no relocation explains, which send that argument through a copy. The
 * exec is then recorded as any program's (crec__record), over a program that
 * holds only the arguments: its graph is a clone of the captured one plus the
 * copy nodes, its nodes those with relocations (NODE_IMPORTED), so replays,
 * bind as you go and stats work unchanged. Each replay's rewriting is
 * replay/import.c's. */
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "classify.h"
#include "exec_internal.h"

/* ---- capture ---- */

crec_status crec_capture_begin(crec_stream stream) {
  static const char fn[] = "crec_capture_begin";
  if (!stream)
    return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'stream' is NULL (the legacy stream cannot be captured)");
  const crec__cu *cu = crec__driver(fn);
  if (!cu) return CREC_ERR_NO_DEVICE;
  CREC__CU_TRY(fn, NULL, cu, cuStreamBeginCapture, stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
  return CREC_OK;
}

crec_status crec_capture_end(crec_stream stream, crec_graph *out) {
  static const char fn[] = "crec_capture_end";
  if (!out) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'out' is NULL");
  *out = NULL;
  if (!stream) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'stream' is NULL");
  const crec__cu *cu = crec__driver(fn);
  if (!cu) return CREC_ERR_NO_DEVICE;
  CUgraph g = NULL;
  CREC__CU_TRY(fn, "the capture was invalidated (a synchronizing or uncapturable call inside it?)", cu,
               cuStreamEndCapture, stream, &g);
  CREC__CUDA_LIVE(1);
  *out = g;
  return CREC_OK;
}

void crec_graph_destroy(crec_graph graph) {
  if (!graph) return;
  const crec__cu *cu = crec__driver(NULL);
  if (!cu) return;
  if (cu->cuGraphDestroy(graph) == CUDA_SUCCESS) CREC__CUDA_LIVE(-1);
}

/* ---- analysis ---- */

typedef struct analysis {
  const crec__cu *cu;
  const char *fn;
  CUcontext ctx;                /* the exec's: every captured kernel must be of it */
  const crec_graph_argument *args;
  size_t num_args;
  int captures;                 /* 1 to 3: the graphs given */
  crec__classify_in cin;        /* the arguments' bases in each capture, for the classifier */
  crec__import *im;
  size_t cap_nodes;
  /* the current node: its relocations, and what a finding's message names */
  crec__reloc *relocs;
  size_t num_relocs, cap_relocs;
  const char *node_what;        /* "kernel 'name'", "memcpy", ... */
  uint32_t node_index;
  uint32_t param;               /* the kernel parameter being read, PARAM_EXTRA or PARAM_NONE */
  uint32_t param_offset;        /* its offset in the node's block */
  bool host_table;              /* reading a copy's host source: pointers found mean a table */
  /* the captures differ in structure (node counts, kinds, kernels, shapes):
   * nothing is paired from there on, and every argument is copied */
  bool blind;
  crec_status failed;           /* out of memory in a finding's callback */
  /* inside child graphs: "3." or "3.1." before a node's position, for messages;
   * the top-level child graph node, and the positions below it (exec_internal.h) */
  char prefix[CREC__IMPORT_LABEL];
  uint8_t depth;
  uint32_t top, path[CREC__IMPORT_DEPTH];
  CUgraphNode top_original;
} analysis;

static const char *arg_name(const analysis *a, size_t i, char *buf, size_t size) {
  if (a->args[i].name) return a->args[i].name;
  snprintf(buf, size, "arg%zu", i);
  return buf;
}

/* Whether `addr` is device memory the driver knows (no call fails on other values). */
static bool is_device_memory(void *user, uint64_t addr) {
  const analysis *a = user;
  CUpointer_attribute attrs[1] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE};
  unsigned int type = 0;
  void *data[1] = {&type};
  if (a->cu->cuPointerGetAttributes(1, attrs, data, (CUdeviceptr)addr) != CUDA_SUCCESS) return false;
  return type == CU_MEMORYTYPE_DEVICE || type == CU_MEMORYTYPE_UNIFIED;
}

/* Whether `addr` is host memory the driver knows (page-locked or registered),
 * which crec may read. */
static bool is_host_memory(const analysis *a, const void *addr) {
  CUpointer_attribute attrs[1] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE};
  unsigned int type = 0;
  void *data[1] = {&type};
  if (!addr || a->cu->cuPointerGetAttributes(1, attrs, data, (CUdeviceptr)(uintptr_t)addr) != CUDA_SUCCESS)
    return false;
  return type == CU_MEMORYTYPE_HOST;
}

/* Argument `i` goes through a copy; the first reason given stays. */
static void copy_argument(analysis *a, size_t i, const char *why) {
  crec__import_arg *ia = &a->im->args[i];
  if (ia->why || a->failed) return;
  if (!(ia->why = crec__strdup(why))) a->failed = crec__oom(a->fn);
}

static void copy_every_argument(analysis *a, const char *why) {
  for (size_t i = 0; i < a->num_args; i++) copy_argument(a, i, why);
}

/* The captures are not the same work: from here on nothing is paired, and every
 * argument goes through a copy, named by `why`. */
static void go_blind(analysis *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void go_blind(analysis *a, const char *fmt, ...) {
  char why[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  char full[520];
  snprintf(full, sizeof full, "the captures are not the same work (%s), so nothing in them can be followed", why);
  copy_every_argument(a, full);
  a->blind = true;
}

static void add_reloc(analysis *a, uint32_t offset, size_t arg, uint64_t delta) {
  if (a->failed) return;
  if (a->num_relocs == a->cap_relocs) {
    size_t cap = a->cap_relocs ? 2 * a->cap_relocs : 8;
    crec__reloc *r = crec__realloc(a->relocs, cap * sizeof *r);
    if (!r) {
      a->failed = crec__oom(a->fn);
      return;
    }
    a->relocs = r;
    a->cap_relocs = cap;
  }
  a->relocs[a->num_relocs++] = (crec__reloc){offset, (uint32_t)arg, delta};
}

/* Notes the bytes of finding `f` that differ between the captures (of
 * f->size at f->offset of the current node), replayed as the first capture had them. */
static void add_noise(analysis *a, const crec__finding *f) {
  crec__import *im = a->im;
  uint32_t offset = f->offset, size = f->size;
  for (uint32_t b = 0; b < size; b++) {
    bool differs = false;
    for (int k = 1; k < a->captures; k++) differs |= (f->value[k] >> (8 * b) & 0xff) != (f->value[0] >> (8 * b) & 0xff);
    im->noise_bytes += differs;
  }
  if (a->failed || im->num_noise == CREC__IMPORT_NOISE_LISTED) return;
  crec__import_noise *n = &im->noise[im->num_noise++];
  if (snprintf(n->label, sizeof n->label, "%s%" PRIu32, a->prefix, a->node_index) >= (int)sizeof n->label)
    n->label[sizeof n->label - 2] = '~'; /* cut short, and says so */
  n->param = a->param;
  n->offset = offset;
  n->size = size;
}

/* What analysis.param holds besides a kernel parameter's index: the kernel's
 * `extra` buffer (as crec__import_noise.param says it), or no parameter (a
 * copy's or fill's address, the host memory a copy reads). */
#define PARAM_EXTRA UINT32_MAX
#define PARAM_NONE (UINT32_MAX - 1)

/* "node 3 (kernel 'k'), parameter 1, byte 16", for a finding at `offset`. */
static void finding_place(const analysis *a, uint32_t offset, char *buf, size_t size) {
  int n = snprintf(buf, size, "node %s%" PRIu32 " (%s)", a->prefix, a->node_index, a->node_what);
  if (n < 0 || (size_t)n >= size) return;
  if (a->host_table) snprintf(buf + n, size - (size_t)n, ", byte %" PRIu32 " of the host memory it copies", offset);
  else if (a->param == PARAM_EXTRA) snprintf(buf + n, size - (size_t)n, ", byte %" PRIu32 " of its 'extra' buffer", offset);
  else if (a->param != PARAM_NONE)
    snprintf(buf + n, size - (size_t)n, ", parameter %" PRIu32 ", byte %" PRIu32, a->param, offset - a->param_offset);
}

static void on_finding(void *user, const crec__finding *f) {
  analysis *a = user;
  char place[200], why[400];
  switch (f->kind) {
    case CREC__FOUND_RELOC:
      if (!a->host_table) {
        add_reloc(a, f->offset, f->arg, f->delta);
        return;
      }
      finding_place(a, f->offset, place, sizeof place);
      snprintf(why, sizeof why, "%s holds its address: the work reads it through a table crec does not rewrite",
               place);
      copy_argument(a, f->arg, why);
      return;
    case CREC__FOUND_OWN:
      return;
    case CREC__FOUND_NOISE:
      if (!a->host_table) add_noise(a, f);
      return;
    case CREC__FOUND_CORRELATED:
      if (a->host_table) return; /* host data, most likely: only moving pointers mean a table */
      finding_place(a, f->offset, place, sizeof place);
      snprintf(why, sizeof why,
               "%s changes with its address (0x%" PRIx64 ", 0x%" PRIx64 ", 0x%" PRIx64 " in the captures) in a way "
               "crec cannot rewrite",
               place, f->value[0], f->value[1], f->value[2]);
      copy_argument(a, f->arg, why);
      return;
  }
}

/* Parameter layouts found so far, for the process. A driver before
 * cuFuncGetParamCount (CUDA 13.0's included) has no parameter count, so the
 * first index cuFuncGetParamInfo refuses ends a kernel's list there
 * (CUDA_ERROR_INVALID_VALUE: the one failing call an import makes, once per
 * kernel and process). A handle can be reused after its module is unloaded: an
 * entry counts only while the kernel's name and last parameter still match. */
typedef struct layout {
  CUfunction f;
  CUmodule module;
  char *name;
  uint32_t count;
  size_t *offsets, *sizes;
} layout;
static pthread_mutex_t layouts_lock = PTHREAD_MUTEX_INITIALIZER;
static layout *layouts;
static size_t num_layouts, cap_layouts;

static const char *func_name(const crec__cu *cu, CUfunction f) {
  const char *name = NULL;
  if (!cu->cuFuncGetName || cu->cuFuncGetName(&name, f) != CUDA_SUCCESS) return NULL;
  return name;
}

static CUmodule func_module(const crec__cu *cu, CUfunction f) {
  CUmodule m = NULL;
  if (!cu->cuFuncGetModule || cu->cuFuncGetModule(&m, f) != CUDA_SUCCESS) return NULL;
  return m;
}

/* Whether cached layout `l` is still that of `f`: the same name, in the same
 * module, with the same last parameter. */
static bool layout_holds(const crec__cu *cu, const layout *l, CUfunction f) {
  const char *name = func_name(cu, f);
  if (l->f != f || !name || !l->name || strcmp(name, l->name) != 0 || func_module(cu, f) != l->module) return false;
  if (!l->count) return true;
  size_t off, size;
  return cu->cuFuncGetParamInfo(f, l->count - 1, &off, &size) == CUDA_SUCCESS && off == l->offsets[l->count - 1] &&
         size == l->sizes[l->count - 1];
}

/* Probes the layout of `f` into `l` (owned arrays): with cuFuncGetParamCount
 * (drivers newer than CUDA 13.0), that many parameters; without it, parameters
 * until the driver says there is none (CUDA_ERROR_INVALID_VALUE). Any other
 * failure is an error. */
static crec_status probe_layout(analysis *a, CUfunction f, const char *where, layout *l) {
  size_t cap = 0, known = SIZE_MAX;
  if (a->cu->cuFuncGetParamCount) {
    CUresult r = a->cu->cuFuncGetParamCount(f, &known);
    if (r != CUDA_SUCCESS) return crec__cu_fail(a->fn, r, "cuFuncGetParamCount", where);
  }
  while (l->count < known) {
    size_t off, size;
    CUresult r = a->cu->cuFuncGetParamInfo(f, l->count, &off, &size);
    if (r == CUDA_ERROR_INVALID_VALUE && known == SIZE_MAX) break;
    if (r != CUDA_SUCCESS) {
      char at[160];
      snprintf(at, sizeof at, "%s: its parameter %" PRIu32, where, l->count);
      return crec__cu_fail(a->fn, r, "cuFuncGetParamInfo", at);
    }
    if (l->count == cap) {
      cap = cap ? 2 * cap : 8;
      size_t *o = crec__realloc(l->offsets, cap * sizeof *o);
      if (o) l->offsets = o;
      size_t *z = o ? crec__realloc(l->sizes, cap * sizeof *z) : NULL;
      if (!z) return crec__oom(a->fn);
      l->sizes = z;
    }
    l->offsets[l->count] = off;
    l->sizes[l->count] = size;
    l->count++;
  }
  const char *name = func_name(a->cu, f);
  l->f = f;
  l->module = func_module(a->cu, f);
  l->name = name ? crec__strdup(name) : NULL;
  return name && !l->name ? crec__oom(a->fn) : CREC_OK;
}

static void layout_clear(layout *l) {
  crec__free(l->name);
  crec__free(l->offsets);
  crec__free(l->sizes);
  memset(l, 0, sizeof *l); /* an empty entry matches no handle but NULL */
}

/* The parameter layout of kernel `f`: `*out` a copy the caller frees with
 * crec__free (offsets, then sizes). */
static crec_status param_layout(analysis *a, CUfunction f, const char *where, layout *out) {
  memset(out, 0, sizeof *out);
  if (!a->cu->cuFuncGetParamInfo)
    return crec__error(CREC_ERR_UNSUPPORTED, a->fn,
                       "%s: this driver has no cuFuncGetParamInfo (CUDA 12.4) to read the kernel's parameters with",
                       where);
  pthread_mutex_lock(&layouts_lock);
  crec_status s = CREC_OK;
  layout *l = NULL;
  for (size_t i = 0; i < num_layouts && !l; i++)
    if (layouts[i].f == f) l = &layouts[i];
  if (l && !layout_holds(a->cu, l, f)) {
    /* another kernel at a reused handle: probe again in place */
    layout_clear(l);
    s = probe_layout(a, f, where, l);
  } else if (!l) {
    if (num_layouts == cap_layouts) {
      size_t cap = cap_layouts ? 2 * cap_layouts : 32;
      layout *v = crec__realloc(layouts, cap * sizeof *v);
      if (!v) s = crec__oom(a->fn);
      else layouts = v, cap_layouts = cap;
    }
    if (!s) {
      l = &layouts[num_layouts];
      memset(l, 0, sizeof *l);
      if (!(s = probe_layout(a, f, where, l))) num_layouts++;
    }
  }
  if (s && l) layout_clear(l);
  if (!s && l->count) {
    out->count = l->count;
    out->offsets = crec__memdup(l->offsets, l->count * sizeof *out->offsets);
    out->sizes = crec__memdup(l->sizes, l->count * sizeof *out->sizes);
    if (!out->offsets || !out->sizes) s = crec__oom(a->fn);
  }
  pthread_mutex_unlock(&layouts_lock);
  return s;
}

/* The parameter bytes of a kernel node into `block` (sized by the layout). */
static void read_params(void **params, const size_t *offsets, const size_t *sizes, uint32_t count, uint8_t *block) {
  for (uint32_t k = 0; k < count; k++) memcpy(block + offsets[k], params[k], sizes[k]);
}

/* The buffer of a launch that passes its parameters as one (`extra`):
 * CU_LAUNCH_PARAM_BUFFER_POINTER and _SIZE, or false. */
static bool extra_buffer(void **extra, const uint8_t **data, size_t *size) {
  *data = NULL;
  *size = 0;
  for (size_t k = 0; extra && extra[k] != CU_LAUNCH_PARAM_END && k < 64; k += 2) {
    if (extra[k] == CU_LAUNCH_PARAM_BUFFER_POINTER) *data = extra[k + 1];
    else if (extra[k] == CU_LAUNCH_PARAM_BUFFER_SIZE && extra[k + 1]) *size = *(const size_t *)extra[k + 1];
  }
  return *data && *size;
}

static bool same_shape(const CUDA_KERNEL_NODE_PARAMS *x, const CUDA_KERNEL_NODE_PARAMS *y) {
  return x->gridDimX == y->gridDimX && x->gridDimY == y->gridDimY && x->gridDimZ == y->gridDimZ &&
         x->blockDimX == y->blockDimX && x->blockDimY == y->blockDimY && x->blockDimZ == y->blockDimZ &&
         x->sharedMemBytes == y->sharedMemBytes;
}

/* The parameter bytes of the kernel nodes `n[k]` (one per capture) into
 * `in->block` (the first's, kept) and `blocks[k]` (the others', freed by the
 * caller), with the spans to read in `*lay` (for an `extra` buffer, one span). */
static crec_status kernel_blocks(analysis *a, CUgraphNode *const n, CUDA_KERNEL_NODE_PARAMS *kp, const char *where,
                                 crec__import_node *in, uint8_t *blocks[CREC__CAPTURES], layout *lay) {
  const uint8_t *ex[CREC__CAPTURES] = {NULL};
  size_t ex_size[CREC__CAPTURES] = {0};
  bool extra = kp[0].extra != NULL;
  memset(lay, 0, sizeof *lay);
  if (extra) {
    for (int k = 0; k < a->captures; k++)
      if (!extra_buffer(kp[k].extra, &ex[k], &ex_size[k]))
        return crec__error(CREC_ERR_UNSUPPORTED, a->fn,
                           "%s passes its parameters as 'extra' without CU_LAUNCH_PARAM_BUFFER_POINTER and _SIZE",
                           where);
    for (int k = 1; k < a->captures; k++)
      if (ex_size[k] != ex_size[0]) {
        go_blind(a, "%s passes %zu bytes of parameters in one capture, %zu in another", where, ex_size[0], ex_size[k]);
        return CREC_OK;
      }
    lay->count = 1;
    lay->offsets = crec__calloc(1, sizeof *lay->offsets);
    lay->sizes = crec__malloc(sizeof *lay->sizes);
    if (!lay->offsets || !lay->sizes) return crec__oom(a->fn);
    lay->sizes[0] = ex_size[0];
  } else {
    crec_status s = param_layout(a, kp[0].func, where, lay);
    if (s) return s;
  }
  size_t total = lay->count ? lay->offsets[lay->count - 1] + lay->sizes[lay->count - 1] : 0;
  in->block = crec__calloc(total ? total : 1, 1);
  in->ptrs = crec__calloc(lay->count ? lay->count : 1, sizeof *in->ptrs);
  if (!in->block || !in->ptrs) return crec__oom(a->fn);
  blocks[0] = in->block;
  for (int k = 1; k < a->captures; k++)
    if (!(blocks[k] = crec__calloc(total ? total : 1, 1))) return crec__oom(a->fn);
  for (int k = 0; k < a->captures; k++) {
    if (extra) {
      memcpy(blocks[k], ex[k], total);
    } else {
      if (lay->count && !kp[k].kernelParams)
        return crec__error(CREC_ERR_UNSUPPORTED, a->fn, "%s: the driver gave no parameter pointers to read", where);
      read_params(kp[k].kernelParams, lay->offsets, lay->sizes, lay->count, blocks[k]);
    }
  }
  in->block_size = (uint32_t)total;
  in->num_params = extra ? 0 : lay->count;
  for (uint32_t k = 0; k < lay->count && !extra; k++) in->ptrs[k] = in->block + lay->offsets[k];
  if (extra) in->extra_size = total; /* crec__import_apply() passes `block` as the buffer */
  return CREC_OK;
}

static crec_status kernel_node(analysis *a, CUgraphNode *const n, crec__import_node *in) {
  char where[200];
  snprintf(where, sizeof where, "node %s%" PRIu32 " (kernel)", a->prefix, a->node_index);
  CUDA_KERNEL_NODE_PARAMS kp[CREC__CAPTURES];
  memset(kp, 0, sizeof kp);
  for (int k = 0; k < a->captures; k++) CREC__CU_TRY(a->fn, where, a->cu, cuGraphKernelNodeGetParams, n[k], &kp[k]);
  if (kp[0].ctx && kp[0].ctx != a->ctx)
    return crec__error(CREC_ERR_UNSUPPORTED, a->fn,
                       "%s was captured in another CUDA context than the one of the import's device "
                       "(crec_record_options.device)",
                       where);
  for (int k = 0; k < a->captures; k++)
    if (!kp[k].func && kp[k].kern) CREC__CU_TRY(a->fn, where, a->cu, cuKernelGetFunction, &kp[k].func, kp[k].kern);
  const char *name = func_name(a->cu, kp[0].func);
  char what[96];
  snprintf(what, sizeof what, "kernel '%.80s'", name ? name : "?");
  a->node_what = what;
  snprintf(where, sizeof where, "node %s%" PRIu32 " (%s)", a->prefix, a->node_index, what);
  for (int k = 1; k < a->captures && !a->blind; k++) {
    if (kp[k].func != kp[0].func) go_blind(a, "%s runs another kernel in capture %d", where, k + 1);
    else if (!same_shape(&kp[0], &kp[k])) go_blind(a, "%s is launched with other dimensions in capture %d", where, k + 1);
    else if ((kp[k].extra != NULL) != (kp[0].extra != NULL))
      go_blind(a, "%s passes its parameters another way in capture %d", where, k + 1);
  }
  if (a->blind) return CREC_OK;
  uint8_t *blocks[CREC__CAPTURES] = {NULL};
  layout lay;
  crec_status s = kernel_blocks(a, n, kp, where, in, blocks, &lay);
  for (uint32_t k = 0; !s && !a->blind && k < lay.count; k++) {
    a->param = kp[0].extra ? PARAM_EXTRA : k;
    a->param_offset = (uint32_t)lay.offsets[k];
    crec__classify_span(&a->cin, (const uint8_t *const *)blocks, lay.offsets[k], lay.offsets[k] + lay.sizes[k],
                        on_finding, a);
  }
  for (int k = 1; k < CREC__CAPTURES; k++) crec__free(blocks[k]);
  crec__free(lay.offsets);
  crec__free(lay.sizes);
  in->kp = kp[0];
  in->kp.kern = NULL;
  in->kp.kernelParams = in->extra_size ? NULL : in->ptrs;
  in->kp.extra = NULL;
  return s ? s : a->failed;
}

/* Host memory a copy reads, when the driver knows it (page-locked): a word in
 * it that points into an argument and moves with it in every capture means a
 * table of pointers the work reads on the device, and that argument goes
 * through a copy. Read in windows the classifier takes, overlapping by a word;
 * the first 16 MiB at most (tables are small; larger copies are data). */
static void scan_host_source(analysis *a, const CUDA_MEMCPY3D *c) {
  enum { WINDOW = 32768, MOST = 16 << 20 };
  const uint8_t *src[CREC__CAPTURES] = {NULL};
  size_t bytes = c[0].WidthInBytes < MOST ? c[0].WidthInBytes : MOST;
  for (int k = 0; k < a->captures; k++) {
    if (!is_host_memory(a, c[k].srcHost)) return; /* pageable or gone: crec does not read it */
    src[k] = (const uint8_t *)c[k].srcHost + c[k].srcXInBytes;
  }
  a->host_table = true;
  a->param = PARAM_NONE;
  for (size_t o = 0; o < bytes; o += WINDOW - 8)
    crec__classify_span(&a->cin, src, o, o + WINDOW < bytes ? o + WINDOW : bytes, on_finding, a);
  a->host_table = false;
}

/* One end of a copy (`end`: 0 source, 1 destination): a device address is
 * classified; host memory and arrays stay as the first capture had them. */
static void copy_end(analysis *a, int end, const CUmemorytype *t, const uint64_t *v) {
  if (t[0] != CU_MEMORYTYPE_DEVICE && t[0] != CU_MEMORYTYPE_UNIFIED) return;
  crec__finding f;
  if (!crec__classify_address(&a->cin, v, &f)) return;
  a->param = PARAM_NONE;
  a->node_what = end ? "memcpy, its destination" : "memcpy, its source";
  f.offset = (uint32_t)end; /* a relocation's place: 0 the source, 1 the destination */
  on_finding(a, &f);
}

static crec_status memcpy_node(analysis *a, CUgraphNode *const n, crec__import_node *in) {
  char where[128];
  snprintf(where, sizeof where, "node %s%" PRIu32 " (memcpy)", a->prefix, a->node_index);
  a->node_what = "memcpy";
  CUDA_MEMCPY3D c[CREC__CAPTURES];
  memset(c, 0, sizeof c);
  for (int k = 0; k < a->captures; k++) CREC__CU_TRY(a->fn, where, a->cu, cuGraphMemcpyNodeGetParams, n[k], &c[k]);
  in->copy = c[0];
  bool one_d = c[0].Height <= 1 && c[0].Depth <= 1;
  for (int k = 1; k < a->captures && !a->blind; k++)
    if (c[k].WidthInBytes != c[0].WidthInBytes || c[k].Height != c[0].Height || c[k].Depth != c[0].Depth ||
        c[k].srcXInBytes != c[0].srcXInBytes || c[k].dstXInBytes != c[0].dstXInBytes ||
        c[k].srcMemoryType != c[0].srcMemoryType || c[k].dstMemoryType != c[0].dstMemoryType)
      go_blind(a, "%s copies another extent, offset or kind of memory in capture %d", where, k + 1);
  if (a->blind) return CREC_OK;
  uint64_t src[CREC__CAPTURES], dst[CREC__CAPTURES];
  CUmemorytype st[CREC__CAPTURES], dt[CREC__CAPTURES];
  for (int k = 0; k < a->captures; k++) {
    src[k] = c[k].srcDevice, dst[k] = c[k].dstDevice;
    st[k] = c[k].srcMemoryType, dt[k] = c[k].dstMemoryType;
  }
  if (c[0].srcMemoryType == CU_MEMORYTYPE_HOST && one_d) scan_host_source(a, c);
  size_t before = a->num_relocs;
  copy_end(a, 0, st, src);
  copy_end(a, 1, dt, dst);
  if (!one_d && a->num_relocs > before) {
    /* the driver updates only 1-D copies in an executable graph: such a copy
     * of an argument stays as captured, and the argument goes through a copy */
    char why[200];
    snprintf(why, sizeof why, "%s copies %zu x %zu x %zu of it, and the driver updates only 1-D copies", where,
             (size_t)c[0].WidthInBytes, (size_t)c[0].Height, (size_t)c[0].Depth);
    for (size_t r = before; r < a->num_relocs; r++) copy_argument(a, a->relocs[r].buffer, why);
    a->num_relocs = before;
  }
  return a->failed;
}

static crec_status memset_node(analysis *a, CUgraphNode *const n, crec__import_node *in) {
  char where[128];
  snprintf(where, sizeof where, "node %s%" PRIu32 " (memset)", a->prefix, a->node_index);
  a->node_what = "memset";
  CUDA_MEMSET_NODE_PARAMS m[CREC__CAPTURES];
  memset(m, 0, sizeof m);
  for (int k = 0; k < a->captures; k++) CREC__CU_TRY(a->fn, where, a->cu, cuGraphMemsetNodeGetParams, n[k], &m[k]);
  for (int k = 1; k < a->captures && !a->blind; k++)
    if (m[k].value != m[0].value || m[k].elementSize != m[0].elementSize || m[k].width != m[0].width ||
        m[k].height != m[0].height || m[k].pitch != m[0].pitch)
      go_blind(a, "%s fills another value or shape in capture %d", where, k + 1);
  if (a->blind) return CREC_OK;
  in->set = m[0];
  uint64_t v[CREC__CAPTURES];
  for (int k = 0; k < a->captures; k++) v[k] = m[k].dst;
  crec__finding f;
  if (crec__classify_address(&a->cin, v, &f)) {
    a->param = PARAM_NONE;
    f.offset = 0;
    if (f.kind == CREC__FOUND_RELOC && m[0].height > 1) {
      char why[200];
      snprintf(why, sizeof why, "%s fills %zu rows of it, and crec rebinds 1-D fills only", where, (size_t)m[0].height);
      copy_argument(a, f.arg, why);
    } else {
      on_finding(a, &f);
    }
  }
  return a->failed;
}

/* The nodes of graph `g`, in the driver's order. */
static crec_status graph_nodes(analysis *a, CUgraph g, const char *which, CUgraphNode **out, size_t *count) {
  *out = NULL;
  *count = 0;
  size_t n = 0;
  CREC__CU_TRY(a->fn, which, a->cu, cuGraphGetNodes, g, NULL, &n);
  *out = crec__malloc((n ? n : 1) * sizeof **out);
  if (!*out) return crec__oom(a->fn);
  crec_status s = CREC_OK;
  CREC__CU_STEP(s, a->fn, which, a->cu, cuGraphGetNodes, g, *out, &n);
  *count = n;
  return s;
}

static crec_status child_graph(analysis *a, uint32_t index, CUgraphNode *const n);

/* A node whose insides crec cannot read: it is cloned as captured, and every
 * argument goes through a copy. */
static void opaque_node(analysis *a, uint32_t index, const char *what) {
  char why[300];
  snprintf(why, sizeof why, "node %s%" PRIu32 " is %s, which crec cannot look into, so any argument may reach it",
           a->prefix, index, what);
  copy_every_argument(a, why);
}

static crec_status analyse_node(analysis *a, uint32_t index, CUgraphNode *const n) {
  char where[128];
  snprintf(where, sizeof where, "node %s%" PRIu32, a->prefix, index);
  CUgraphNodeType t[CREC__CAPTURES];
  for (int k = 0; k < a->captures; k++) CREC__CU_TRY(a->fn, where, a->cu, cuGraphNodeGetType, n[k], &t[k]);
  for (int k = 1; k < a->captures && !a->blind; k++)
    if (t[k] != t[0])
      go_blind(a, "node %s%" PRIu32 " is a %s node in the first capture and a %s node in capture %d", a->prefix,
               index, crec__graph_node_type_name(t[0]), crec__graph_node_type_name(t[k]), k + 1);
  switch (t[0]) {
    case CU_GRAPH_NODE_TYPE_KERNEL:
    case CU_GRAPH_NODE_TYPE_MEMCPY:
    case CU_GRAPH_NODE_TYPE_MEMSET:
      if (a->blind) return CREC_OK;
      break;
    case CU_GRAPH_NODE_TYPE_EMPTY:
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
    case CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL:
    case CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT:
      return CREC_OK; /* no addresses: cloned as they are */
    case CU_GRAPH_NODE_TYPE_HOST:
      opaque_node(a, index, "a host node (crec cannot see which memory its function reads)");
      return a->failed;
    case CU_GRAPH_NODE_TYPE_GRAPH:
      return child_graph(a, index, n);
    case CU_GRAPH_NODE_TYPE_CONDITIONAL:
      /* measured on driver 580 (CUDA 13.0): cuGraphClone of a graph holding one
       * fails with CUDA_ERROR_NOT_SUPPORTED, and no call returns its bodies
       * (cuGraphNodeGetParams does from 13.2 drivers) */
      return crec__error(CREC_ERR_UNSUPPORTED, a->fn,
                         "node %s%" PRIu32 " is a conditional node: CUDA 13.0 neither clones a graph that holds one "
                         "(cuGraphClone: CUDA_ERROR_NOT_SUPPORTED) nor returns its bodies (no cuGraphNodeGetParams), "
                         "so crec can neither rebind nor copy around it; record such work with crec's own "
                         "conditional commands",
                         a->prefix, index);
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
    case CU_GRAPH_NODE_TYPE_MEM_FREE:
      return crec__error(CREC_ERR_UNSUPPORTED, a->fn,
                         "node %s%" PRIu32 " is a %s node (memory allocated during the capture): an import cannot "
                         "clone graph-owned memory; allocate it before capturing",
                         a->prefix, index, crec__graph_node_type_name(t[0]));
    default:
      opaque_node(a, index, "a node of a kind crec does not read");
      return a->failed;
  }
  crec__import_node in;
  memset(&in, 0, sizeof in);
  in.type = t[0];
  in.original = n[0];
  if (snprintf(in.label, sizeof in.label, "%s%" PRIu32, a->prefix, index) >= (int)sizeof in.label)
    return crec__error(CREC_ERR_INTERNAL, a->fn, "node %s%" PRIu32 ": its label outgrew its buffer", a->prefix, index);
  if (a->depth) {
    in.index = a->top;
    in.top_original = a->top_original;
    in.depth = a->depth;
    memcpy(in.path, a->path, (a->depth - 1u) * sizeof *in.path);
    in.path[a->depth - 1] = index;
  } else {
    in.index = index;
  }
  a->num_relocs = 0;
  a->node_index = index;
  crec_status s = t[0] == CU_GRAPH_NODE_TYPE_KERNEL   ? kernel_node(a, n, &in)
                  : t[0] == CU_GRAPH_NODE_TYPE_MEMCPY ? memcpy_node(a, n, &in)
                                                      : memset_node(a, n, &in);
  if (!s && a->num_relocs && !a->blind) {
    crec__import *im = a->im;
    if (im->num_nodes == a->cap_nodes) {
      size_t cap = a->cap_nodes ? 2 * a->cap_nodes : 16;
      crec__import_node *v = crec__realloc(im->nodes, cap * sizeof *v);
      if (!v) s = crec__oom(a->fn);
      else {
        im->nodes = v;
        a->cap_nodes = cap;
      }
    }
    if (!s && !(in.relocs = crec__memdup(a->relocs, a->num_relocs * sizeof *a->relocs))) s = crec__oom(a->fn);
    if (!s) {
      in.num_relocs = a->num_relocs;
      im->nodes[im->num_nodes++] = in;
      return CREC_OK;
    }
  }
  crec__free(in.block);
  crec__free(in.ptrs);
  return s;
}

void crec__import_free(crec__import *im) {
  if (!im) return;
  for (size_t i = 0; i < im->num_nodes; i++) {
    crec__free(im->nodes[i].block);
    crec__free(im->nodes[i].ptrs);
    crec__free(im->nodes[i].relocs);
  }
  for (size_t i = 0; im->args && i < im->num_args; i++) crec__free(im->args[i].why);
  crec__free(im->args);
  crec__free(im->nodes);
  crec__free(im->children);
  crec__free(im->sizes);
  pthread_mutex_destroy(&im->lock);
  crec__free(im);
}

/* The edges of `g`: `*m` of them, from `(*from)[q]` to `(*to)[q]` with `(*data)[q]`
 * (the caller frees the three arrays, also on an error). The data is asked for
 * even where it is not used: without it the query fails (CUDA_ERROR_LOSSY_QUERY)
 * on a graph with edges of another type, the programmatic ones of kernels that
 * use PDL. */
crec_status crec__graph_edges(const crec__cu *cu, CUgraph g, const char *fn, const char *what, CUgraphNode **from,
                              CUgraphNode **to, CUgraphEdgeData **data, size_t *m) {
  *from = *to = NULL, *data = NULL, *m = 0;
  CREC__CU_TRY(fn, what, cu, cuGraphGetEdges, g, NULL, NULL, NULL, m);
  *from = crec__malloc((*m ? *m : 1) * sizeof **from), *to = crec__malloc((*m ? *m : 1) * sizeof **to);
  *data = crec__malloc((*m ? *m : 1) * sizeof **data);
  if (!*from || !*to || !*data) return crec__oom(fn);
  /* (arrays for no edges are refused: CUDA_ERROR_INVALID_VALUE on driver 580) */
  if (*m) CREC__CU_TRY(fn, what, cu, cuGraphGetEdges, g, *from, *to, *data, m);
  return CREC_OK;
}

/* Counts the edges of `g`, and those of them that are programmatic (a kernel
 * that uses PDL lets the next start before it ends), into the import. The clone
 * the exec launches keeps them as they are. */
static crec_status count_edges(analysis *a, CUgraph g, const char *which) {
  CUgraphNode *from, *to;
  CUgraphEdgeData *data;
  size_t m;
  crec_status s = crec__graph_edges(a->cu, g, a->fn, which, &from, &to, &data, &m);
  for (size_t q = 0; q < m && !s; q++) a->im->num_programmatic += data[q].type == CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC;
  if (!s) a->im->num_edges += m;
  crec__free(from);
  crec__free(to);
  crec__free(data);
  return s;
}

/* The nodes of `g[0]` (and of the same work's other captures), at the
 * analysis's depth: the graph itself, or a child graph's. */
static crec_status analyse_graph(analysis *a, CUgraph *const g) {
  CUgraphNode *v[CREC__CAPTURES] = {NULL};
  size_t c[CREC__CAPTURES] = {0};
  const char *which = a->depth ? "a child graph" : "the graph";
  crec_status s = CREC_OK;
  for (int k = 0; k < (a->blind ? 1 : a->captures) && !s; k++) s = graph_nodes(a, g[k], which, &v[k], &c[k]);
  for (int k = 1; k < a->captures && !s && !a->blind; k++)
    if (c[k] != c[0])
      go_blind(a, "%s%.*s has %zu nodes in the first capture and %zu in capture %d",
               a->depth ? "the child graph of node " : "the graph", a->depth ? (int)strlen(a->prefix) - 1 : 0,
               a->prefix, c[0], c[k], k + 1);
  if (!s) a->im->num_graph_nodes += c[0];
  if (!s) s = count_edges(a, g[0], which);
  int captures = a->blind ? 1 : a->captures;
  for (size_t i = 0; i < c[0] && !s; i++) {
    CUgraphNode n[CREC__CAPTURES] = {NULL};
    for (int k = 0; k < captures; k++) n[k] = v[k][i];
    int saved = a->captures;
    a->captures = captures;
    s = analyse_node(a, (uint32_t)i, n);
    a->captures = saved;
  }
  for (int k = 0; k < CREC__CAPTURES; k++) crec__free(v[k]);
  return s ? s : a->failed;
}

/* A child graph node: its nodes are analysed as the graph's are; at replay the
 * exec sets the changed ones in its own copy of the child graph and updates
 * the node from it (cuGraphExecChildGraphNodeSetParams). */
static crec_status child_graph(analysis *a, uint32_t index, CUgraphNode *const n) {
  char where[128];
  snprintf(where, sizeof where, "node %s%" PRIu32 " (child graph)", a->prefix, index);
  if (a->depth == CREC__IMPORT_DEPTH) {
    char why[200];
    snprintf(why, sizeof why, "%s is nested %d child graphs deep, and crec reads %d levels", where,
             CREC__IMPORT_DEPTH + 1, CREC__IMPORT_DEPTH);
    copy_every_argument(a, why);
    return a->failed;
  }
  CUgraph g[CREC__CAPTURES] = {NULL};
  int captures = a->blind ? 1 : a->captures; /* once blind, the first capture's walk finds what cannot be imported */
  for (int k = 0; k < captures; k++) CREC__CU_TRY(a->fn, where, a->cu, cuGraphChildGraphNodeGetGraph, n[k], &g[k]);
  analysis saved = *a;
  if (a->depth == 0) {
    a->top = index;
    a->top_original = n[0];
  } else {
    a->path[a->depth - 1] = index;
  }
  a->depth++;
  crec_status s = CREC_OK;
  if (snprintf(a->prefix, sizeof a->prefix, "%s%" PRIu32 ".", saved.prefix, index) >= (int)sizeof a->prefix)
    s = crec__error(CREC_ERR_INTERNAL, a->fn, "%s: its label outgrew its buffer", where);
  if (!s) s = analyse_graph(a, g);
  memcpy(a->prefix, saved.prefix, sizeof a->prefix);
  a->depth = saved.depth;
  a->top = saved.top;
  a->top_original = saved.top_original;
  memcpy(a->path, saved.path, sizeof a->path);
  return s;
}

/* Drops the relocations of copied arguments (their uses read the capture's own
 * buffer, which the copy fills), then nodes left with none. */
static void drop_copied(crec__import *im) {
  size_t kept = 0;
  for (size_t i = 0; i < im->num_nodes; i++) {
    crec__import_node *in = &im->nodes[i];
    size_t r = 0;
    for (size_t k = 0; k < in->num_relocs; k++)
      if (!im->args[in->relocs[k].buffer].why) in->relocs[r++] = in->relocs[k];
    in->num_relocs = r;
    if (!r) {
      crec__free(in->block);
      crec__free(in->ptrs);
      crec__free(in->relocs);
      continue;
    }
    im->nodes[kept++] = *in;
  }
  im->num_nodes = kept;
}

/* A 1-D copy of argument `i` between the capture's own buffer and its binding:
 * `back` false, before the work (binding to buffer), true after it. */
static crec_status add_copy_node(analysis *a, size_t i, bool back, size_t *cap) {
  crec__import *im = a->im;
  if (im->num_nodes == *cap) {
    size_t c = *cap ? 2 * *cap : 8;
    crec__import_node *v = crec__realloc(im->nodes, c * sizeof *v);
    if (!v) return crec__oom(a->fn);
    im->nodes = v;
    *cap = c;
  }
  crec__import_node *in = &im->nodes[im->num_nodes];
  memset(in, 0, sizeof *in);
  in->type = CU_GRAPH_NODE_TYPE_MEMCPY;
  in->added = back ? CREC__IMPORT_COPY_BACK : CREC__IMPORT_COPY_IN;
  char nb[32];
  snprintf(in->label, sizeof in->label, "%s %.40s", back ? "copy back" : "copy in", arg_name(a, i, nb, sizeof nb));
  in->index = UINT32_MAX;
  CUDA_MEMCPY3D *c = &in->copy;
  c->srcMemoryType = c->dstMemoryType = CU_MEMORYTYPE_DEVICE;
  c->srcDevice = c->dstDevice = (CUdeviceptr)(uintptr_t)a->args[i].base;
  c->WidthInBytes = a->args[i].size;
  c->Height = c->Depth = 1;
  if (!(in->relocs = crec__malloc(sizeof *in->relocs))) return crec__oom(a->fn);
  in->relocs[0] = (crec__reloc){back ? 1u : 0u, (uint32_t)i, 0};
  in->num_relocs = 1;
  im->num_nodes++;
  return CREC_OK;
}

/* After the walk: which arguments go through a copy, and their copy nodes. */
static crec_status settle_routes(analysis *a, const crec_access *access) {
  crec__import *im = a->im;
  if (a->blind) {
    /* nothing paired is kept: the first capture replays as it was */
    for (size_t i = 0; i < im->num_nodes; i++) {
      crec__free(im->nodes[i].block);
      crec__free(im->nodes[i].ptrs);
      crec__free(im->nodes[i].relocs);
    }
    im->num_nodes = 0;
    im->num_noise = 0;
    im->noise_bytes = 0;
  }
  for (size_t i = 0; i < im->num_nodes; i++)
    for (size_t k = 0; k < im->nodes[i].num_relocs; k++) im->args[im->nodes[i].relocs[k].buffer].relocations++;
  for (size_t i = 0; i < a->num_args; i++)
    if (!im->args[i].relocations)
      copy_argument(a, i,
                    "no node's parameters or copies point into it: the work reaches it by a route crec does not "
                    "read (a pointer kept in device memory), or does not use it");
  if (a->failed) return a->failed;
  drop_copied(im);
  size_t cap = im->num_nodes;
  for (size_t i = 0; i < a->num_args; i++) {
    crec__import_arg *ia = &im->args[i];
    if (!ia->why) continue;
    ia->relocations = 0;
    ia->copied_back = !access || (access[i] & CREC_ACCESS_WRITE);
    crec_status s = add_copy_node(a, i, false, &cap);
    if (!s && ia->copied_back) s = add_copy_node(a, i, true, &cap);
    if (s) return s;
    im->num_copied++;
  }
  return CREC_OK;
}

static crec_status analyse(analysis *a, CUgraph *const g, const crec_access *access) {
  crec_status s = analyse_graph(a, g);
  if (!s) s = settle_routes(a, access);
  crec__free(a->relocs);
  a->relocs = NULL;
  return s;
}

/* The arguments of an import, checked: bases, sizes, overlaps, the later
 * captures' bases (`later[k]` NULL: no such capture). */
static crec_status check_arguments(const crec_graph_argument *args, size_t n, void *const *const later[2],
                                   const char *fn) {
  static const char *const nth[2] = {"second", "third"};
  if (!n) return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "no arguments (nothing to rebind)");
  if (!args) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'arguments' is NULL");
  for (size_t i = 0; i < n; i++) {
    const crec_graph_argument *g = &args[i];
    if (!g->base) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument %zu: base is NULL", i);
    if (!g->size) return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "argument %zu: size is 0", i);
    for (int k = 0; k < 2; k++) {
      if (!later[k]) continue;
      if (!later[k][i]) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument %zu: its %s base is NULL", i, nth[k]);
      if (later[k][i] == g->base || (k == 1 && later[0] && later[1][i] == later[0][i]))
        return crec__error(CREC_ERR_INVALID_ARGUMENT, fn,
                           "argument %zu: the %s capture's base is an earlier capture's (%p): nothing could tell its "
                           "pointers from numbers",
                           i, nth[k], later[k][i]);
    }
    for (size_t j = 0; j < i; j++) {
      uintptr_t a = (uintptr_t)g->base, b = (uintptr_t)args[j].base;
      if (a < b + args[j].size && b < a + g->size)
        return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "arguments %zu and %zu overlap", j, i);
    }
  }
  return CREC_OK;
}

/* The import as this version reads it: fields a caller built against 0.1
 * (a smaller struct_size) does not have are NULL. */
static crec_status check_import(const crec_graph_import *in, crec_graph_import *got, const char *fn) {
  if (!in) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'in' is NULL");
  const size_t v1 = offsetof(crec_graph_import, third);
  if (in->struct_size < v1)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn,
                       "argument 'in': struct_size %zu is smaller than %zu (use CREC_GRAPH_IMPORT_INIT)",
                       in->struct_size, v1);
  memset(got, 0, sizeof *got);
  memcpy(got, in, in->struct_size < sizeof *got ? in->struct_size : sizeof *got);
  if (!got->graph) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'in->graph' is NULL");
  if (got->second && !got->second_bases)
    return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'in->second_bases' is NULL, but 'in->second' is given");
  if (got->third && !got->third_bases)
    return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'in->third_bases' is NULL, but 'in->third' is given");
  if (got->third && !got->second)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "argument 'in': 'third' is given without 'second'");
  for (size_t i = 0; got->access && i < got->num_arguments; i++)
    if (got->access[i] & ~CREC_ACCESS_READ_WRITE || !got->access[i])
      return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "argument 'in->access': entry %zu is %d, not a crec_access", i,
                         (int)got->access[i]);
  void *const *const later[2] = {got->second ? got->second_bases : NULL, got->third ? got->third_bases : NULL};
  return check_arguments(got->arguments, got->num_arguments, later, fn);
}

/* The classifier's view of the import's arguments, with `bases` for storage
 * (captures x arguments). */
static void classifier_of(analysis *a, const crec_graph_import *in, uint64_t *bases) {
  size_t n = in->num_arguments;
  void *const *given[CREC__CAPTURES] = {NULL, in->second ? in->second_bases : NULL, in->third ? in->third_bases : NULL};
  a->captures = 1 + (in->second != NULL) + (in->third != NULL);
  a->cin.captures = a->captures;
  a->cin.num_args = n;
  for (int k = 0; k < a->captures; k++) {
    for (size_t i = 0; i < n; i++)
      bases[k * n + i] = (uint64_t)(uintptr_t)(k ? given[k][i] : in->arguments[i].base);
    a->cin.base[k] = bases + k * n;
  }
  a->cin.size = bases + CREC__CAPTURES * n;
  for (size_t i = 0; i < n; i++) bases[CREC__CAPTURES * n + i] = in->arguments[i].size;
  a->cin.granule = crec__classify_granule(&a->cin);
  a->cin.is_device = is_device_memory;
  a->cin.user = a;
}

crec_status crec_import_graph(const crec_graph_import *given, const crec_record_options *options, crec_exec **out) {
  static const char fn[] = "crec_import_graph";
  if (!out) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'out' is NULL");
  *out = NULL;
  crec_graph_import in;
  crec_status s = check_import(given, &in, fn);
  if (s) return s;
  const crec__cu *cu = crec__driver(fn);
  if (!cu) return CREC_ERR_NO_DEVICE;
  int device = options && options->struct_size > offsetof(crec_record_options, device) ? options->device : 0;
  CUcontext ctx;
  if ((s = crec__use_device(cu, device, fn, &ctx))) return s;
  size_t n = in.num_arguments;
  crec__import *im = crec__calloc(1, sizeof *im);
  uint64_t *sizes = crec__malloc(n * sizeof *sizes);
  crec_binding *bs = crec__malloc(n * sizeof *bs);
  uint64_t *bases = crec__malloc((CREC__CAPTURES + 1) * n * sizeof *bases);
  crec__import_arg *args = crec__calloc(n, sizeof *args);
  crec_program *p = NULL;
  if (!im || !sizes || !bs || !bases || !args) {
    crec__free(im);
    crec__free(sizes);
    crec__free(bs);
    crec__free(bases);
    crec__free(args);
    return crec__oom(fn);
  }
  pthread_mutex_init(&im->lock, NULL);
  im->source = in.graph;
  im->sizes = sizes;
  im->args = args;
  im->num_args = n;
  analysis a = {.cu = cu, .fn = fn, .ctx = ctx, .args = in.arguments, .num_args = n, .im = im};
  classifier_of(&a, &in, bases);
  bool pushed = false;
  if (!(s = crec__enter(cu, ctx, &pushed, fn))) {
    CUgraph g[CREC__CAPTURES] = {in.graph, in.second, in.third};
    s = analyse(&a, g, in.access);
    crec__leave(cu, pushed);
  }
  crec__free(bases);
  if (!s) s = crec_program_create(&p);
  /* any alignment: the captured work took these addresses, and takes what it is given */
  crec_argument_options ao = CREC_ARGUMENT_OPTIONS_INIT;
  ao.alignment = 1;
  for (size_t i = 0; i < n && !s; i++) {
    char name[32];
    crec_buffer buf;
    sizes[i] = in.arguments[i].size;
    bs[i] = (crec_binding){in.arguments[i].base, in.arguments[i].size};
    s = crec_program_add_argument(p, arg_name(&a, i, name, sizeof name), sizes[i], &ao, &buf);
    if (s) s = crec__rethrow(s, fn);
  }
  if (s) {
    crec__import_free(im);
  } else {
    crec_bindings b = CREC_BINDINGS_INIT;
    b.buffers = bs;
    b.num_buffers = n;
    s = crec__record(p, &b, options, im, fn, out); /* takes `im`, on failure too */
  }
  crec_program_destroy(p); /* the exec keeps it */
  crec__free(bs);
  return s;
}

crec_status crec_capture_import(crec_capture_fn fn_issue, void *user, crec_stream stream,
                                const crec_graph_argument *arguments, size_t num_arguments, void *const *second_bases,
                                const crec_record_options *options, crec_exec **out) {
  static const char fn[] = "crec_capture_import";
  if (!out) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'out' is NULL");
  *out = NULL;
  if (!fn_issue) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'fn' is NULL");
  void *const *const later[2] = {second_bases, NULL};
  crec_status s = check_arguments(arguments, num_arguments, later, fn);
  if (s) return s;
  void **bases = crec__malloc((num_arguments ? num_arguments : 1) * sizeof *bases);
  if (!bases) return crec__oom(fn);
  for (size_t i = 0; i < num_arguments; i++) bases[i] = arguments[i].base;
  crec_graph g[2] = {NULL, NULL};
  for (int k = 0; k < (second_bases ? 2 : 1) && !s; k++) {
    if ((s = crec_capture_begin(stream))) break;
    crec_status issued = fn_issue(user, stream, k ? second_bases : bases);
    /* its message, before the end of the capture can replace it (and not formatted into itself) */
    char why[512];
    snprintf(why, sizeof why, "%s", issued ? crec_last_error() : "");
    /* the capture ends whatever fn did, so the stream is usable again */
    s = crec_capture_end(stream, &g[k]);
    if (issued) s = crec__error(issued, fn, "the work failed while captured (capture %d): %s", k + 1, why);
  }
  if (!s) {
    crec_graph_import in = CREC_GRAPH_IMPORT_INIT;
    in.graph = g[0];
    in.arguments = arguments;
    in.num_arguments = num_arguments;
    in.second = g[1];
    in.second_bases = second_bases;
    s = crec_import_graph(&in, options, out);
  }
  crec_graph_destroy(g[0]);
  crec_graph_destroy(g[1]);
  crec__free(bases);
  return s;
}

/* ---- the exec ---- */

/* Finds imported node `in` inside a child graph of the exec's template graph:
 * its top-level child graph node (registered in im->children), then its
 * position in each child graph (a clone keeps the order of its nodes). */
static crec_status find_in_child(crec_exec *e, crec__import_node *in, const char *where, CUgraphNode *out,
                                 const char *fn) {
  crec__import *im = e->import;
  crec_status s = CREC_OK;
  size_t c = 0;
  while (c < im->num_children && im->children[c].index != in->index) c++;
  if (c == im->num_children) {
    crec__import_child *ch = &im->children[im->num_children];
    memset(ch, 0, sizeof *ch);
    ch->index = in->index;
    CREC__CU_TRY(fn, where, e->cu, cuGraphNodeFindInClone, &ch->node, in->top_original, e->graph);
    CREC__CU_TRY(fn, where, e->cu, cuGraphChildGraphNodeGetGraph, ch->node, &ch->graph);
    im->num_children++;
  }
  in->child = (uint32_t)c;
  CUgraph g = im->children[c].graph;
  for (uint8_t d = 0; d < in->depth && !s; d++) {
    size_t n = 0;
    CREC__CU_TRY(fn, where, e->cu, cuGraphGetNodes, g, NULL, &n);
    CUgraphNode *v = crec__malloc((n ? n : 1) * sizeof *v);
    if (!v) return crec__oom(fn);
    CREC__CU_STEP(s, fn, where, e->cu, cuGraphGetNodes, g, v, &n);
    if (!s && in->path[d] >= n)
      s = crec__error(CREC_ERR_INTERNAL, fn, "%s: the exec's copy of its child graph has %zu nodes", where, n);
    CUgraphNode x = s ? NULL : v[in->path[d]];
    crec__free(v);
    if (s) return s;
    if (d + 1u < in->depth) CREC__CU_STEP(s, fn, where, e->cu, cuGraphChildGraphNodeGetGraph, x, &g);
    else *out = x;
  }
  /* a clone's order is the original's in practice, not by contract: check what is there */
  CUgraphNodeType t;
  CREC__CU_STEP(s, fn, where, e->cu, cuGraphNodeGetType, *out, &t);
  if (!s && t != in->type)
    s = crec__error(CREC_ERR_INTERNAL, fn, "%s: the exec's copy of its child graph holds a %s node there", where,
                    crec__graph_node_type_name(t));
  if (!s && t == CU_GRAPH_NODE_TYPE_KERNEL) {
    CUDA_KERNEL_NODE_PARAMS k;
    memset(&k, 0, sizeof k);
    CREC__CU_STEP(s, fn, where, e->cu, cuGraphKernelNodeGetParams, *out, &k);
    CUfunction f = k.func;
    if (!s && !f && k.kern) CREC__CU_STEP(s, fn, where, e->cu, cuKernelGetFunction, &f, k.kern);
    if (!s && f != in->kp.func)
      s = crec__error(CREC_ERR_INTERNAL, fn, "%s: the exec's copy of its child graph runs another kernel there", where);
  }
  return s;
}

/* The nodes of the exec's template graph with no edge into them (`roots`) and
 * with none out of them (`sinks`), before any copy node is added: one array
 * of the graph's nodes, roots first, then sinks (a node alone is both). */
static crec_status graph_ends(crec_exec *e, CUgraphNode **out, size_t *num_roots, size_t *num_sinks,
                              const char *fn) {
  *out = NULL;
  *num_roots = *num_sinks = 0;
  size_t n = 0, m = 0;
  CREC__CU_TRY(fn, "the imported graph's nodes", e->cu, cuGraphGetNodes, e->graph, NULL, &n);
  CUgraphNode *from, *to;
  CUgraphEdgeData *data;
  crec_status s = crec__graph_edges(e->cu, e->graph, fn, "the imported graph's edges", &from, &to, &data, &m);
  CUgraphNode *nodes = crec__malloc((n ? n : 1) * sizeof *nodes), *ends = crec__malloc((2 * n + 1) * sizeof *ends);
  if (!s && (!nodes || !ends)) s = crec__oom(fn);
  CREC__CU_STEP(s, fn, "the imported graph's nodes", e->cu, cuGraphGetNodes, e->graph, nodes, &n);
  size_t r = 0, k = n;
  for (size_t i = 0; i < n && !s; i++) {
    bool has_in = false, has_out = false;
    for (size_t q = 0; q < m; q++) has_in |= to[q] == nodes[i], has_out |= from[q] == nodes[i];
    if (!has_in) ends[r++] = nodes[i];
    if (!has_out) ends[k++] = nodes[i];
  }
  if (!s) memmove(ends + r, ends + n, (k - n) * sizeof *ends);
  crec__free(nodes);
  crec__free(from);
  crec__free(to);
  crec__free(data);
  if (s) {
    crec__free(ends);
    return s;
  }
  *out = ends;
  *num_roots = r;
  *num_sinks = k - n;
  return CREC_OK;
}

/* Adds the copy nodes of the arguments an import copies: each copy in before
 * every node of the captured graph, each copy back after every one. */
static crec_status add_copy_nodes(crec_exec *e, const char *fn) {
  crec__import *im = e->import;
  if (!im->num_copied) return CREC_OK;
  CUgraphNode *ends = NULL;
  size_t num_roots = 0, num_sinks = 0;
  crec_status s = graph_ends(e, &ends, &num_roots, &num_sinks, fn);
  const CUgraphNode *roots = ends, *sinks = ends ? ends + num_roots : NULL;
  for (size_t i = 0; i < im->num_nodes && !s; i++) {
    crec__import_node *in = &im->nodes[i];
    if (!in->added) continue;
    char where[96];
    snprintf(where, sizeof where, "the imported graph's %s", in->label);
    bool back = in->added == CREC__IMPORT_COPY_BACK;
    CUgraphNode node = NULL;
    CREC__CU_STEP(s, fn, where, e->cu, cuGraphAddMemcpyNode, &node, e->graph, back ? sinks : NULL,
                  back ? num_sinks : 0, &in->copy, e->ctx);
    for (size_t r = 0; r < num_roots && !s && !back; r++)
      CREC__CU_STEP(s, fn, where, e->cu, cuGraphAddDependencies, e->graph, &node, &roots[r], NULL, 1);
    e->nodes[i].node = node;
  }
  crec__free(ends);
  return s;
}

crec_status crec__import_build(crec_exec *e, const char *fn) {
  crec__import *im = e->import;
  crec_status s = CREC_OK;
  CREC__CU_STEP(s, fn, "the imported graph", e->cu, cuGraphClone, &e->graph, im->source);
  if (s) {
    e->graph = NULL;
    return s;
  }
  CREC__CUDA_LIVE(1);
  e->nodes = crec__calloc(im->num_nodes ? im->num_nodes : 1, sizeof *e->nodes);
  im->children = crec__calloc(im->num_nodes ? im->num_nodes : 1, sizeof *im->children);
  if (!e->nodes || !im->children) return crec__oom(fn);
  e->cap_nodes = im->num_nodes;
  for (size_t i = 0; i < im->num_nodes && !s; i++) {
    crec__import_node *in = &im->nodes[i];
    crec__node *n = &e->nodes[i];
    char where[96];
    snprintf(where, sizeof where, "node %s of the imported graph", in->label);
    if (in->added) n->node = NULL; /* add_copy_nodes() */
    else if (in->depth) s = find_in_child(e, in, where, &n->node, fn);
    else CREC__CU_STEP(s, fn, where, e->cu, cuGraphNodeFindInClone, &n->node, in->original, e->graph);
    n->kind = NODE_IMPORTED;
    n->ext = in;
    n->func = in->kp.func;
    e->num_nodes++;
  }
  if (!s) s = add_copy_nodes(e, fn);
  /* the source is the caller's: the exec holds its clone */
  im->source = NULL;
  /* node by node always: a whole-graph update would cost every node of the
   * captured graph, which e->num_nodes (the relocated ones) does not count */
  e->whole_update_broken = true;
  e->stats.copied_arguments = im->num_copied;
  return s;
}

crec_status crec_exec_import_counts(const crec_exec *exec, size_t *nodes, size_t *relocated, size_t *relocations) {
  static const char fn[] = "crec_exec_import_counts";
  if (!exec || !nodes || !relocated || !relocations)
    return crec__error(CREC_ERR_NULL_POINTER, fn, "an argument is NULL");
  if (!exec->import) return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "the exec was recorded, not imported");
  *nodes = exec->import->num_graph_nodes;
  *relocated = exec->import->num_nodes;
  *relocations = 0;
  for (size_t i = 0; i < exec->import->num_nodes; i++) *relocations += exec->import->nodes[i].num_relocs;
  return CREC_OK;
}

crec_status crec_exec_import_edges(const crec_exec *exec, size_t *edges, size_t *programmatic) {
  static const char fn[] = "crec_exec_import_edges";
  if (!exec || !edges || !programmatic) return crec__error(CREC_ERR_NULL_POINTER, fn, "an argument is NULL");
  if (!exec->import) return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "the exec was recorded, not imported");
  *edges = exec->import->num_edges;
  *programmatic = exec->import->num_programmatic;
  return CREC_OK;
}

crec_status crec_exec_import_route(const crec_exec *exec, size_t index, crec_import_route *out) {
  static const char fn[] = "crec_exec_import_route";
  if (!exec) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'exec' is NULL");
  if (!out) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'out' is NULL");
  if (!exec->import) return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "the exec was recorded, not imported");
  if (index >= exec->import->num_args)
    return crec__error(CREC_ERR_OUT_OF_RANGE, fn, "argument 'index': %zu, but the import has %zu arguments", index,
                       exec->import->num_args);
  const crec__import_arg *ia = &exec->import->args[index];
  crec_import_route r = CREC_IMPORT_ROUTE_INIT;
  r.copied = ia->why != NULL;
  r.copied_back = ia->why && ia->copied_back;
  r.relocations = ia->relocations;
  r.why = ia->why ? ia->why : "";
  return crec__give_struct(out, &r, sizeof r, offsetof(crec_import_route, why) + sizeof r.why, fn, "argument 'out'",
                           "CREC_IMPORT_ROUTE_INIT");
}

/* One relocated node of an import, as text or JSON. */
static void dump_node(const crec_exec *exec, const crec__import_node *in, bool json, bool first, crec__text *t) {
  const crec_program *p = exec->program;
  const char *name = NULL;
  bool kernel = in->type == CU_GRAPH_NODE_TYPE_KERNEL;
  const char *type = in->added ? "memcpy" : crec__graph_node_type_name(in->type);
  if (kernel && exec->cu->cuFuncGetName && exec->cu->cuFuncGetName(&name, in->kp.func) != CUDA_SUCCESS) name = NULL;
  if (json) {
    if (in->added) crec__text_printf(t, "%s{\"node\":null,\"path\":", first ? "" : ",");
    else crec__text_printf(t, "%s{\"node\":%" PRIu32 ",\"path\":", first ? "" : ",", in->index);
    crec__text_json_string(t, in->label);
    crec__text_printf(t, ",\"type\":\"%s\"", type);
    if (kernel) {
      crec__text_puts(t, ",\"kernel\":");
      if (name) crec__text_json_string(t, name);
      else crec__text_puts(t, "null");
      crec__text_printf(t, ",\"parameters\":%" PRIu32 ",\"parameter_bytes\":%" PRIu32, in->num_params,
                        in->block_size);
      if (in->extra_size) crec__text_puts(t, ",\"extra\":true");
    }
    crec__text_puts(t, ",\"relocations\":[");
  } else {
    crec__text_printf(t, "  node %s %s", in->label, type);
    if (name) crec__text_printf(t, " '%s'", name);
    if (kernel)
      crec__text_printf(t, " (%" PRIu32 " %s, %" PRIu32 " bytes)", in->num_params,
                        in->extra_size ? "parameters in one 'extra' buffer" : "parameters", in->block_size);
    crec__text_puts(t, ":");
  }
  for (size_t k = 0; k < in->num_relocs; k++) {
    const crec__reloc *r = &in->relocs[k];
    const char *arg = p->buffers[r->buffer].name;
    const char *end = in->type == CU_GRAPH_NODE_TYPE_MEMSET || r->offset ? "dst" : "src";
    if (json) {
      crec__text_puts(t, k ? ",{" : "{");
      if (kernel) crec__text_printf(t, "\"byte\":%" PRIu32, r->offset);
      else crec__text_printf(t, "\"end\":\"%s\"", end);
      crec__text_puts(t, ",\"argument\":");
      crec__text_json_string(t, arg);
      crec__text_printf(t, ",\"offset\":%" PRIu64 "}", r->delta);
    } else if (kernel) {
      crec__text_printf(t, "%s +%" PRIu32 " -> %s+%" PRIu64, k ? "," : "", r->offset, arg, r->delta);
    } else {
      crec__text_printf(t, "%s %s -> %s+%" PRIu64, k ? "," : "", end, arg, r->delta);
    }
  }
  crec__text_puts(t, json ? "]}" : "\n");
}

/* Per argument, the way it went; then the bytes replayed as captured. */
static void dump_routes(const crec_exec *exec, bool json, crec__text *t) {
  const crec__import *im = exec->import;
  const crec_program *p = exec->program;
  if (json) crec__text_puts(t, ",\"routes\":[");
  for (size_t i = 0; i < im->num_args; i++) {
    const crec__import_arg *ia = &im->args[i];
    const char *name = p->buffers[p->arguments[i]].name;
    if (json) {
      crec__text_puts(t, i ? ",{\"argument\":" : "{\"argument\":");
      crec__text_json_string(t, name);
      if (ia->why) {
        crec__text_printf(t, ",\"route\":\"copied\",\"back\":%s,\"why\":", ia->copied_back ? "true" : "false");
        crec__text_json_string(t, ia->why);
        crec__text_puts(t, "}");
      } else {
        crec__text_printf(t, ",\"route\":\"rebound\",\"relocations\":%zu}", ia->relocations);
      }
    } else if (ia->why) {
      crec__text_printf(t, "  argument '%s': copied in%s at each launch: %s\n", name,
                        ia->copied_back ? " and back" : "", ia->why);
    } else {
      crec__text_printf(t, "  argument '%s': rebound (%zu word%s)\n", name, ia->relocations,
                        ia->relocations == 1 ? "" : "s");
    }
  }
  if (json) crec__text_printf(t, "],\"as_captured\":{\"bytes\":%" PRIu64 ",\"places\":[", im->noise_bytes);
  else if (im->noise_bytes)
    crec__text_printf(t, "  replayed as captured: %" PRIu64 " byte%s in %s%zu place%s\n", im->noise_bytes,
                      im->noise_bytes == 1 ? "" : "s", im->num_noise == CREC__IMPORT_NOISE_LISTED ? "at least " : "",
                      im->num_noise, im->num_noise == 1 ? "" : "s");
  for (size_t i = 0; i < im->num_noise; i++) {
    const crec__import_noise *n = &im->noise[i];
    if (json) {
      crec__text_puts(t, i ? ",{\"node\":" : "{\"node\":");
      crec__text_json_string(t, n->label);
      if (n->param == PARAM_EXTRA) crec__text_puts(t, ",\"parameter\":null");
      else crec__text_printf(t, ",\"parameter\":%" PRIu32, n->param);
      crec__text_printf(t, ",\"byte\":%" PRIu32 ",\"size\":%" PRIu32 "}", n->offset, n->size);
    } else if (n->param == PARAM_EXTRA) {
      crec__text_printf(t, "    node %s 'extra' buffer, byte %" PRIu32 " (%" PRIu32 " byte%s)\n", n->label, n->offset,
                        n->size, n->size == 1 ? "" : "s");
    } else {
      crec__text_printf(t, "    node %s block byte %" PRIu32 " (parameter %" PRIu32 ", %" PRIu32 " byte%s)\n", n->label,
                        n->offset, n->param, n->size, n->size == 1 ? "" : "s");
    }
  }
  if (json) crec__text_puts(t, "]}");
}

/* What an import rewrites, as text or JSON, into `t`. */
static void dump_import(const crec_exec *exec, bool json, crec__text *t) {
  const crec__import *im = exec->import;
  const crec_program *p = exec->program;
  if (json) {
    crec__text_printf(t,
                      "{\"nodes\":%zu,\"edges\":%zu,\"programmatic_edges\":%zu,\"relocated\":%zu,\"copied\":%zu,"
                      "\"arguments\":[",
                      im->num_graph_nodes, im->num_edges, im->num_programmatic, im->num_nodes, im->num_copied);
    for (size_t i = 0; i < p->num_arguments; i++) {
      if (i) crec__text_puts(t, ",");
      crec__text_json_string(t, p->buffers[p->arguments[i]].name);
    }
    crec__text_puts(t, "],\"relocated_nodes\":[");
  } else {
    crec__text_printf(t, "imported graph: %zu nodes, %zu rewritten at replays, %zu arguments (%zu copied)\n",
                      im->num_graph_nodes, im->num_nodes, p->num_arguments, im->num_copied);
    if (im->num_programmatic)
      crec__text_printf(t, "programmatic (PDL) edges: %zu of %zu, kept as captured\n", im->num_programmatic,
                        im->num_edges);
  }
  for (size_t i = 0; i < im->num_nodes; i++) dump_node(exec, &im->nodes[i], json, i == 0, t);
  if (json) crec__text_puts(t, "]");
  dump_routes(exec, json, t);
  if (json) crec__text_puts(t, "}\n");
}

crec_status crec_exec_dump_import_string(const crec_exec *exec, int json, char **out, size_t *size) {
  static const char fn[] = "crec_exec_dump_import_string";
  if (!exec || !out) return crec__error(CREC_ERR_NULL_POINTER, fn, "an argument is NULL");
  *out = NULL;
  if (size) *size = 0;
  if (!exec->import) return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "the exec was recorded, not imported");
  crec__text t = {0};
  dump_import(exec, json != 0, &t);
  if (t.failed || !t.data) {
    crec__free(t.data);
    return crec__oom(fn);
  }
  *out = t.data;
  if (size) *size = t.len;
  return CREC_OK;
}

crec_status crec_exec_dump_import(const crec_exec *exec, FILE *f) {
  static const char fn[] = "crec_exec_dump_import";
  if (!exec || !f) return crec__error(CREC_ERR_NULL_POINTER, fn, "an argument is NULL");
  if (!exec->import) return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "the exec was recorded, not imported");
  crec__text t = {0};
  dump_import(exec, false, &t);
  crec_status s = t.failed ? crec__oom(fn) : CREC_OK;
  if (!s && t.len && fwrite(t.data, 1, t.len, f) != t.len)
    s = crec__error(CREC_ERR_IO, fn, "writing the dump failed");
  crec__free(t.data);
  return s;
}
