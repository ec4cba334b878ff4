/* Imported graphs (capture.h): a CUDA graph made by other code becomes an exec.
 * The analysis walks the captured graph's nodes (and a second capture's, in the
 * same order), reads each kernel's parameter bytes through its layout
 * (cuFuncGetParamInfo), and classifies every aligned 8-byte word and every copy
 * or fill address: a relocation into an argument, or a constant. The exec is
 * then recorded as any program's (crec__record), over a program that holds only
 * the arguments: its graph is a clone of the captured one, its nodes those with
 * relocations (NODE_IMPORTED), so replays, bind as you go and stats work
 * unchanged. */
#include <inttypes.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>

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
  void *const *second;          /* NULL: one capture */
  crec__import *im;
  size_t cap_nodes;
  /* the current node's relocations */
  crec__reloc *relocs;
  size_t num_relocs, cap_relocs;
  /* inside child graphs: "3." or "3.1." before a node's position, for messages;
   * the top-level child graph node, and the positions below it (exec_internal.h) */
  char prefix[CREC__IMPORT_LABEL];
  uint8_t depth;
  uint32_t top, path[CREC__IMPORT_DEPTH];
  CUgraphNode top_original;
} analysis;

static const char *type_name(CUgraphNodeType t) {
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

static const char *arg_name(const analysis *a, size_t i, char *buf, size_t size) {
  if (a->args[i].name) return a->args[i].name;
  snprintf(buf, size, "arg%zu", i);
  return buf;
}

/* The argument whose range holds `addr` in capture `which` (0 first, 1 second), or
 * -1; an address one past an argument's end (an end pointer, as in [begin, end))
 * counts as that argument's when no argument holds it. */
static long find_arg(const analysis *a, uint64_t addr, int which) {
  long end = -1;
  for (size_t i = 0; i < a->num_args; i++) {
    uint64_t base = (uint64_t)(uintptr_t)(which ? a->second[i] : a->args[i].base);
    if (addr >= base && addr - base < a->args[i].size) return (long)i;
    if (addr >= base && addr - base == a->args[i].size) end = (long)i;
  }
  return end;
}

/* Whether `addr` is device memory the driver knows (no call fails on other values). */
static bool is_device_memory(const analysis *a, uint64_t addr) {
  CUpointer_attribute attrs[1] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE};
  unsigned int type = 0;
  void *data[1] = {&type};
  if (a->cu->cuPointerGetAttributes(1, attrs, data, (CUdeviceptr)addr) != CUDA_SUCCESS) return false;
  return type == CU_MEMORYTYPE_DEVICE || type == CU_MEMORYTYPE_UNIFIED;
}

static crec_status add_reloc(analysis *a, uint32_t offset, size_t arg, uint64_t delta) {
  if (a->num_relocs == a->cap_relocs) {
    size_t cap = a->cap_relocs ? 2 * a->cap_relocs : 8;
    crec__reloc *r = crec__realloc(a->relocs, cap * sizeof *r);
    if (!r) return crec__oom(a->fn);
    a->relocs = r;
    a->cap_relocs = cap;
  }
  a->relocs[a->num_relocs++] = (crec__reloc){offset, (uint32_t)arg, delta};
  return CREC_OK;
}

/* Classifies one word: `w1` as in the first capture, `w2` in the second (when
 * there is one); `where` names it for errors ("parameter 2, byte 8"). */
static crec_status classify(analysis *a, uint32_t node, const char *what, uint32_t offset, uint64_t w1, uint64_t w2,
                            const char *where) {
  char nb[32];
  long i = find_arg(a, w1, 0);
  if (!a->second) return i < 0 ? CREC_OK : add_reloc(a, offset, (size_t)i, w1 - (uint64_t)(uintptr_t)a->args[i].base);
  if (i >= 0) {
    uint64_t delta = w1 - (uint64_t)(uintptr_t)a->args[i].base;
    if (w2 == (uint64_t)(uintptr_t)a->second[i] + delta) return add_reloc(a, offset, (size_t)i, delta);
    if (w2 == w1) return CREC_OK; /* a number that falls inside the argument, not a pointer to it */
    return crec__error(CREC_ERR_INVALID_PROGRAM, a->fn,
                       "node %s%" PRIu32 " (%s), %s: 0x%" PRIx64 " points %" PRIu64 " bytes into argument '%s' in the "
                       "first capture, but the second has 0x%" PRIx64 ", not the same place in its '%s'",
                       a->prefix, node, what, where, w1, delta, arg_name(a, (size_t)i, nb, sizeof nb), w2,
                       arg_name(a, (size_t)i, nb, sizeof nb));
  }
  if (w1 == w2) return CREC_OK;
  long j = find_arg(a, w2, 1);
  if (j >= 0)
    return crec__error(CREC_ERR_INVALID_PROGRAM, a->fn,
                       "node %s%" PRIu32 " (%s), %s: 0x%" PRIx64 " points into argument '%s' in the second capture only "
                       "(the first has 0x%" PRIx64 ")",
                       a->prefix, node, what, where, w2, arg_name(a, (size_t)j, nb, sizeof nb), w1);
  /* memory the work allocated for itself in each capture: the first capture's stays */
  if (is_device_memory(a, w1) && is_device_memory(a, w2)) return CREC_OK;
  return crec__error(CREC_ERR_INVALID_PROGRAM, a->fn,
                     "node %s%" PRIu32 " (%s), %s: 0x%" PRIx64 " in the first capture and 0x%" PRIx64 " in the second: "
                     "it changes for a reason other than an argument (a value the work computes on the host, "
                     "which a replay cannot follow)",
                     a->prefix, node, what, where, w1, w2);
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
static crec_status probe_layout(analysis *a, CUfunction f, uint32_t node, layout *l) {
  size_t cap = 0, known = SIZE_MAX;
  if (a->cu->cuFuncGetParamCount) {
    CUresult r = a->cu->cuFuncGetParamCount(f, &known);
    if (r != CUDA_SUCCESS) {
      char where[128];
      snprintf(where, sizeof where, "node %s%" PRIu32 " (kernel)", a->prefix, node);
      return crec__cu_fail(a->fn, r, "cuFuncGetParamCount", where);
    }
  }
  while (l->count < known) {
    size_t off, size;
    CUresult r = a->cu->cuFuncGetParamInfo(f, l->count, &off, &size);
    if (r == CUDA_ERROR_INVALID_VALUE && known == SIZE_MAX) break;
    if (r != CUDA_SUCCESS) {
      char where[128];
      snprintf(where, sizeof where, "node %s%" PRIu32 " (kernel): its parameter %" PRIu32, a->prefix, node, l->count);
      return crec__cu_fail(a->fn, r, "cuFuncGetParamInfo", where);
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

/* The parameter layout of kernel `f` (node `node`): `*out` a copy the caller
 * frees with crec__free (offsets, then sizes). */
static crec_status param_layout(analysis *a, CUfunction f, uint32_t node, layout *out) {
  memset(out, 0, sizeof *out);
  if (!a->cu->cuFuncGetParamInfo)
    return crec__error(CREC_ERR_UNSUPPORTED, a->fn,
                       "node %s%" PRIu32 " (kernel): this driver has no cuFuncGetParamInfo (CUDA 12.4) to read the "
                       "kernel's parameters with",
                       a->prefix, node);
  pthread_mutex_lock(&layouts_lock);
  crec_status s = CREC_OK;
  layout *l = NULL;
  for (size_t i = 0; i < num_layouts && !l; i++)
    if (layouts[i].f == f) l = &layouts[i];
  if (l && !layout_holds(a->cu, l, f)) {
    /* another kernel at a reused handle: probe again in place */
    crec__free(l->name);
    crec__free(l->offsets);
    crec__free(l->sizes);
    memset(l, 0, sizeof *l);
    s = probe_layout(a, f, node, l);
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
      if (!(s = probe_layout(a, f, node, l))) num_layouts++;
    }
  }
  if (s && l) {
    crec__free(l->name);
    crec__free(l->offsets);
    crec__free(l->sizes);
    memset(l, 0, sizeof *l); /* an empty entry matches no handle but NULL */
  }
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

static crec_status kernel_node(analysis *a, uint32_t index, CUgraphNode n1, CUgraphNode n2, crec__import_node *in) {
  crec_status s = CREC_OK;
  char where[128];
  snprintf(where, sizeof where, "node %s%" PRIu32 " (kernel)", a->prefix, index);
  CUDA_KERNEL_NODE_PARAMS k1, k2;
  memset(&k1, 0, sizeof k1);
  memset(&k2, 0, sizeof k2);
  CREC__CU_TRY(a->fn, where, a->cu, cuGraphKernelNodeGetParams, n1, &k1);
  if (n2) CREC__CU_TRY(a->fn, where, a->cu, cuGraphKernelNodeGetParams, n2, &k2);
  if (k1.extra)
    return crec__error(CREC_ERR_UNSUPPORTED, a->fn,
                       "%s passes its parameters as one buffer ('extra'), which an import does not read yet", where);
  if (k1.ctx && k1.ctx != a->ctx)
    return crec__error(CREC_ERR_UNSUPPORTED, a->fn,
                       "%s was captured in another CUDA context than the one of the import's device "
                       "(crec_record_options.device)",
                       where);
  CUfunction f = k1.func;
  if (!f && k1.kern) CREC__CU_TRY(a->fn, where, a->cu, cuKernelGetFunction, &f, k1.kern);
  if (n2 && (k1.func != k2.func || k1.kern != k2.kern))
    return crec__error(CREC_ERR_INVALID_PROGRAM, a->fn, "%s runs another kernel in the second capture", where);
  if (n2 && (k1.gridDimX != k2.gridDimX || k1.gridDimY != k2.gridDimY || k1.gridDimZ != k2.gridDimZ ||
             k1.blockDimX != k2.blockDimX || k1.blockDimY != k2.blockDimY || k1.blockDimZ != k2.blockDimZ ||
             k1.sharedMemBytes != k2.sharedMemBytes))
    return crec__error(CREC_ERR_INVALID_PROGRAM, a->fn,
                       "%s is launched with other dimensions in the second capture (a replay cannot change them)",
                       where);
  layout lay;
  s = param_layout(a, f, index, &lay);
  size_t *offsets = lay.offsets, *sizes = lay.sizes;
  uint32_t count = lay.count;
  if (s) goto done;
  size_t total = count ? offsets[count - 1] + sizes[count - 1] : 0;
  in->block = crec__calloc(total ? total : 1, 1);
  in->ptrs = crec__calloc(count ? count : 1, sizeof *in->ptrs);
  uint8_t *second = n2 ? crec__calloc(total ? total : 1, 1) : NULL;
  if (!in->block || !in->ptrs || (n2 && !second)) {
    crec__free(second);
    s = crec__oom(a->fn);
    goto done;
  }
  if (count && (!k1.kernelParams || (n2 && !k2.kernelParams))) {
    crec__free(second);
    s = crec__error(CREC_ERR_UNSUPPORTED, a->fn, "%s: the driver gave no parameter pointers to read", where);
    goto done;
  }
  read_params(k1.kernelParams, offsets, sizes, count, in->block);
  if (n2) read_params(k2.kernelParams, offsets, sizes, count, second);
  for (uint32_t k = 0; k < count && !s; k++) {
    in->ptrs[k] = in->block + offsets[k];
    /* every aligned 8-byte word of the parameter (pointers inside structs count) */
    for (size_t w = (offsets[k] + 7) & ~(size_t)7; w + 8 <= offsets[k] + sizes[k] && !s; w += 8) {
      uint64_t w1, w2 = 0;
      memcpy(&w1, in->block + w, 8);
      if (second) memcpy(&w2, second + w, 8);
      char at[64];
      snprintf(at, sizeof at, "parameter %" PRIu32 ", byte %zu", k, w - offsets[k]);
      s = classify(a, index, "kernel", (uint32_t)w, w1, w2, at);
    }
    /* bytes outside its aligned words (a small parameter, an int; a struct's
     * ends) that differ between the captures: no replay can follow them */
    size_t lo = offsets[k], hi = offsets[k] + sizes[k];
    size_t w0 = (lo + 7) & ~(size_t)7, w1 = w0 + 8 <= hi ? w0 + ((hi - w0) & ~(size_t)7) : w0;
    for (size_t b = lo; b < hi && !s && second; b++) {
      if (b >= w0 && b < w1) continue;
      if (in->block[b] != second[b])
        s = crec__error(CREC_ERR_INVALID_PROGRAM, a->fn,
                        "node %s%" PRIu32 " (kernel), parameter %" PRIu32 " (%zu bytes) differs between the captures at "
                        "byte %zu: it changes for a reason other than an argument",
                        a->prefix, index, k, sizes[k], b - lo);
    }
  }
  crec__free(second);
  in->block_size = (uint32_t)total;
  in->num_params = count;
  in->kp = k1;
  in->kp.func = f;
  in->kp.kern = NULL;
  in->kp.kernelParams = in->ptrs;
done:
  crec__free(offsets);
  crec__free(sizes);
  return s;
}

/* One end of a copy: a device address is classified; host memory and arrays
 * stay, and must be the same in both captures. */
static crec_status copy_end(analysis *a, uint32_t index, int end, CUmemorytype t1, CUdeviceptr d1, const void *h1,
                            CUarray arr1, CUmemorytype t2, CUdeviceptr d2, const void *h2, CUarray arr2) {
  const char *name = end ? "destination" : "source";
  if (a->second && t1 != t2)
    return crec__error(CREC_ERR_INVALID_PROGRAM, a->fn,
                       "node %s%" PRIu32 " (memcpy): its %s is another kind of memory in the second capture", a->prefix, index, name);
  if (t1 == CU_MEMORYTYPE_DEVICE || t1 == CU_MEMORYTYPE_UNIFIED) {
    char at[32];
    snprintf(at, sizeof at, "its %s", name);
    return classify(a, index, "memcpy", (uint32_t)end, (uint64_t)d1, (uint64_t)d2, at);
  }
  if (a->second && (h1 != h2 || arr1 != arr2))
    return crec__error(CREC_ERR_UNSUPPORTED, a->fn,
                       "node %s%" PRIu32 " (memcpy): its %s is host memory (or an array) at another address in the second "
                       "capture; an import rebinds device arguments only",
                       a->prefix, index, name);
  return CREC_OK;
}

static crec_status memcpy_node(analysis *a, uint32_t index, CUgraphNode n1, CUgraphNode n2, crec__import_node *in) {
  char where[128];
  snprintf(where, sizeof where, "node %s%" PRIu32 " (memcpy)", a->prefix, index);
  CUDA_MEMCPY3D c1, c2;
  memset(&c1, 0, sizeof c1);
  memset(&c2, 0, sizeof c2);
  CREC__CU_TRY(a->fn, where, a->cu, cuGraphMemcpyNodeGetParams, n1, &c1);
  if (n2) CREC__CU_TRY(a->fn, where, a->cu, cuGraphMemcpyNodeGetParams, n2, &c2);
  in->copy = c1;
  if (c1.Height > 1 || c1.Depth > 1)
    return crec__error(CREC_ERR_UNSUPPORTED, a->fn,
                       "%s copies %zu x %zu x %zu: the driver updates only 1-D copies in an executable graph", where,
                       (size_t)c1.WidthInBytes, (size_t)c1.Height, (size_t)c1.Depth);
  if (n2 && (c1.WidthInBytes != c2.WidthInBytes || c1.srcXInBytes != c2.srcXInBytes ||
             c1.dstXInBytes != c2.dstXInBytes))
    return crec__error(CREC_ERR_INVALID_PROGRAM, a->fn,
                       "%s copies another extent or offset in the second capture (a replay cannot change it)", where);
  crec_status s = copy_end(a, index, 0, c1.srcMemoryType, c1.srcDevice, c1.srcHost, c1.srcArray, c2.srcMemoryType,
                           c2.srcDevice, c2.srcHost, c2.srcArray);
  if (!s)
    s = copy_end(a, index, 1, c1.dstMemoryType, c1.dstDevice, c1.dstHost, c1.dstArray, c2.dstMemoryType, c2.dstDevice,
                 c2.dstHost, c2.dstArray);
  return s;
}

static crec_status memset_node(analysis *a, uint32_t index, CUgraphNode n1, CUgraphNode n2, crec__import_node *in) {
  char where[128];
  snprintf(where, sizeof where, "node %s%" PRIu32 " (memset)", a->prefix, index);
  CUDA_MEMSET_NODE_PARAMS m1, m2;
  memset(&m1, 0, sizeof m1);
  memset(&m2, 0, sizeof m2);
  CREC__CU_TRY(a->fn, where, a->cu, cuGraphMemsetNodeGetParams, n1, &m1);
  if (n2) CREC__CU_TRY(a->fn, where, a->cu, cuGraphMemsetNodeGetParams, n2, &m2);
  if (n2 && (m1.value != m2.value || m1.elementSize != m2.elementSize || m1.width != m2.width ||
             m1.height != m2.height || m1.pitch != m2.pitch))
    return crec__error(CREC_ERR_INVALID_PROGRAM, a->fn,
                       "%s fills another value or shape in the second capture (a replay cannot change it)", where);
  if (m1.height > 1)
    return crec__error(CREC_ERR_UNSUPPORTED, a->fn,
                       "%s fills %zu rows: crec rebinds 1-D fills only (the driver refuses some 2-D updates)", where,
                       (size_t)m1.height);
  in->set = m1;
  return classify(a, index, "memset", 0, (uint64_t)m1.dst, (uint64_t)m2.dst, "its destination");
}

/* The nodes of graph `g`, in the driver's order. */
static crec_status graph_nodes(analysis *a, CUgraph g, const char *which, CUgraphNode **out, size_t *count) {
  *out = NULL;
  size_t n = 0;
  CREC__CU_TRY(a->fn, which, a->cu, cuGraphGetNodes, g, NULL, &n);
  *out = crec__malloc((n ? n : 1) * sizeof **out);
  if (!*out) return crec__oom(a->fn);
  crec_status s = CREC_OK;
  CREC__CU_STEP(s, a->fn, which, a->cu, cuGraphGetNodes, g, *out, &n);
  *count = n;
  return s;
}

static crec_status child_graph(analysis *a, uint32_t index, CUgraphNode n1, CUgraphNode n2);

static crec_status analyse_node(analysis *a, uint32_t index, CUgraphNode n1, CUgraphNode n2) {
  char where[128];
  snprintf(where, sizeof where, "node %s%" PRIu32, a->prefix, index);
  CUgraphNodeType t1, t2 = CU_GRAPH_NODE_TYPE_EMPTY;
  CREC__CU_TRY(a->fn, where, a->cu, cuGraphNodeGetType, n1, &t1);
  if (n2) CREC__CU_TRY(a->fn, where, a->cu, cuGraphNodeGetType, n2, &t2);
  if (n2 && t1 != t2)
    return crec__error(CREC_ERR_INVALID_PROGRAM, a->fn,
                       "node %s%" PRIu32 " is a %s node in the first capture and a %s node in the second: the two are "
                       "not the same work",
                       a->prefix, index, type_name(t1), type_name(t2));
  switch (t1) {
    case CU_GRAPH_NODE_TYPE_KERNEL:
    case CU_GRAPH_NODE_TYPE_MEMCPY:
    case CU_GRAPH_NODE_TYPE_MEMSET:
      break;
    case CU_GRAPH_NODE_TYPE_EMPTY:
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
    case CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL:
    case CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT:
      return CREC_OK; /* no addresses: cloned as they are */
    case CU_GRAPH_NODE_TYPE_HOST:
      return crec__error(CREC_ERR_UNSUPPORTED, a->fn,
                         "node %s%" PRIu32 " is a host node: crec cannot see which memory its function reads, so it "
                         "cannot rebind it",
                         a->prefix, index);
    case CU_GRAPH_NODE_TYPE_GRAPH:
      return child_graph(a, index, n1, n2);
    case CU_GRAPH_NODE_TYPE_CONDITIONAL:
      return crec__error(CREC_ERR_UNSUPPORTED, a->fn,
                         "node %s%" PRIu32 " is a conditional node: crec does not read conditional bodies (CUDA "
                         "13.0, which it is built against, has no call that returns a conditional node's body "
                         "graphs, no cuGraphNodeGetParams), so it cannot see the addresses they use; record such "
                         "work with crec's own conditional commands",
                         a->prefix, index);
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
    case CU_GRAPH_NODE_TYPE_MEM_FREE:
      return crec__error(CREC_ERR_UNSUPPORTED, a->fn,
                         "node %s%" PRIu32 " is a %s node (memory allocated during the capture): an import cannot "
                         "rebind graph-owned memory; allocate it before capturing",
                         a->prefix, index, type_name(t1));
    default:
      return crec__error(CREC_ERR_UNSUPPORTED, a->fn,
                         "node %s%" PRIu32 " is a %s node, which an import does not look into yet", a->prefix, index,
                         type_name(t1));
  }
  crec__import_node in;
  memset(&in, 0, sizeof in);
  in.type = t1;
  in.original = n1;
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
  crec_status s = t1 == CU_GRAPH_NODE_TYPE_KERNEL   ? kernel_node(a, index, n1, n2, &in)
                  : t1 == CU_GRAPH_NODE_TYPE_MEMCPY ? memcpy_node(a, index, n1, n2, &in)
                                                    : memset_node(a, index, n1, n2, &in);
  if (!s && a->num_relocs) {
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
  crec__free(im->nodes);
  crec__free(im->children);
  crec__free(im->sizes);
  crec__free(im);
}

/* The nodes of `g1` (and of `g2`, the same work captured again, or NULL), at the
 * analysis's depth: the graph itself, or a child graph's. */
static crec_status analyse_graph(analysis *a, CUgraph g1, CUgraph g2) {
  CUgraphNode *v1 = NULL, *v2 = NULL;
  size_t c1 = 0, c2 = 0;
  const char *which = a->depth ? "a child graph" : "the graph";
  crec_status s = graph_nodes(a, g1, which, &v1, &c1);
  if (!s && g2) s = graph_nodes(a, g2, a->depth ? "a child graph of the second" : "the second graph", &v2, &c2);
  if (!s && g2 && c1 != c2)
    s = crec__error(CREC_ERR_INVALID_PROGRAM, a->fn,
                    "%s%.*s has %zu nodes in the first capture and %zu in the second: the two are not the same work",
                    a->depth ? "the child graph of node " : "the graph", a->depth ? (int)strlen(a->prefix) - 1 : 0,
                    a->prefix, c1, c2);
  a->im->num_graph_nodes += c1;
  for (size_t i = 0; i < c1 && !s; i++) s = analyse_node(a, (uint32_t)i, v1[i], g2 ? v2[i] : NULL);
  crec__free(v1);
  crec__free(v2);
  return s;
}

/* A child graph node: its nodes are analysed as the graph's are; at replay the
 * exec sets the changed ones in its own copy of the child graph and updates
 * the node from it (cuGraphExecChildGraphNodeSetParams). */
static crec_status child_graph(analysis *a, uint32_t index, CUgraphNode n1, CUgraphNode n2) {
  char where[128];
  snprintf(where, sizeof where, "node %s%" PRIu32 " (child graph)", a->prefix, index);
  if (a->depth == CREC__IMPORT_DEPTH)
    return crec__error(CREC_ERR_UNSUPPORTED, a->fn, "%s is nested %d child graphs deep: an import reads %d levels",
                       where, CREC__IMPORT_DEPTH + 1, CREC__IMPORT_DEPTH);
  CUgraph g1 = NULL, g2 = NULL;
  CREC__CU_TRY(a->fn, where, a->cu, cuGraphChildGraphNodeGetGraph, n1, &g1);
  if (n2) CREC__CU_TRY(a->fn, where, a->cu, cuGraphChildGraphNodeGetGraph, n2, &g2);
  analysis saved = *a;
  if (a->depth == 0) {
    a->top = index;
    a->top_original = n1;
  } else {
    a->path[a->depth - 1] = index;
  }
  a->depth++;
  crec_status s = CREC_OK;
  if (snprintf(a->prefix, sizeof a->prefix, "%s%" PRIu32 ".", saved.prefix, index) >= (int)sizeof a->prefix)
    s = crec__error(CREC_ERR_INTERNAL, a->fn, "%s: its label outgrew its buffer", where);
  if (!s) s = analyse_graph(a, g1, g2);
  memcpy(a->prefix, saved.prefix, sizeof a->prefix);
  a->depth = saved.depth;
  a->top = saved.top;
  a->top_original = saved.top_original;
  memcpy(a->path, saved.path, sizeof a->path);
  return s;
}

static crec_status analyse(analysis *a, CUgraph g1, CUgraph g2) {
  crec_status s = analyse_graph(a, g1, g2);
  crec__free(a->relocs);
  a->relocs = NULL;
  return s;
}

/* The arguments of an import, checked: bases, sizes, overlaps, second bases
 * (`second` NULL: one capture). */
static crec_status check_arguments(const crec_graph_argument *args, size_t n, void *const *second, const char *fn) {
  if (!n) return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "no arguments (nothing to rebind)");
  if (!args) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'arguments' is NULL");
  for (size_t i = 0; i < n; i++) {
    const crec_graph_argument *g = &args[i];
    if (!g->base) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument %zu: base is NULL", i);
    if (!g->size) return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "argument %zu: size is 0", i);
    if (second && second[i] == g->base)
      return crec__error(CREC_ERR_INVALID_ARGUMENT, fn,
                         "argument %zu: the second capture's base is the first's (%p): nothing could tell its "
                         "pointers from numbers",
                         i, g->base);
    if (second && !second[i])
      return crec__error(CREC_ERR_NULL_POINTER, fn, "argument %zu: its second base is NULL", i);
    for (size_t j = 0; j < i; j++) {
      uintptr_t a = (uintptr_t)g->base, b = (uintptr_t)args[j].base;
      if (a < b + args[j].size && b < a + g->size)
        return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "arguments %zu and %zu overlap", j, i);
    }
  }
  return CREC_OK;
}

static crec_status check_import(const crec_graph_import *in, const char *fn) {
  if (!in) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'in' is NULL");
  if (in->struct_size < sizeof *in)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn,
                       "argument 'in': struct_size %zu is smaller than %zu (use CREC_GRAPH_IMPORT_INIT)",
                       in->struct_size, sizeof *in);
  if (!in->graph) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'in->graph' is NULL");
  if (in->second && !in->second_bases)
    return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'in->second_bases' is NULL, but 'in->second' is given");
  return check_arguments(in->arguments, in->num_arguments, in->second ? in->second_bases : NULL, fn);
}

crec_status crec_import_graph(const crec_graph_import *in, const crec_record_options *options, crec_exec **out) {
  static const char fn[] = "crec_import_graph";
  if (!out) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'out' is NULL");
  *out = NULL;
  crec_status s = check_import(in, fn);
  if (s) return s;
  const crec__cu *cu = crec__driver(fn);
  if (!cu) return CREC_ERR_NO_DEVICE;
  int device = options && options->struct_size > offsetof(crec_record_options, device) ? options->device : 0;
  CUcontext ctx;
  if ((s = crec__use_device(cu, device, fn, &ctx))) return s;
  crec__import *im = crec__calloc(1, sizeof *im);
  uint64_t *sizes = crec__malloc(in->num_arguments * sizeof *sizes);
  crec_binding *bs = crec__malloc(in->num_arguments * sizeof *bs);
  crec_program *p = NULL;
  if (!im || !sizes || !bs) {
    crec__free(im);
    crec__free(sizes);
    crec__free(bs);
    return crec__oom(fn);
  }
  im->source = in->graph;
  im->sizes = sizes;
  analysis a = {.cu = cu,
                .fn = fn,
                .ctx = ctx,
                .args = in->arguments,
                .num_args = in->num_arguments,
                .second = in->second ? in->second_bases : NULL,
                .im = im};
  bool pushed = false;
  if (!(s = crec__enter(cu, ctx, &pushed, fn))) {
    s = analyse(&a, in->graph, in->second);
    crec__leave(cu, pushed);
  }
  size_t relocs = 0;
  for (size_t i = 0; i < im->num_nodes; i++) relocs += im->nodes[i].num_relocs;
  if (!s && !relocs)
    s = crec__error(CREC_ERR_INVALID_PROGRAM, fn,
                    "nothing in the graph's %zu nodes points into any of the %zu arguments: a replay would rebind "
                    "nothing (were they captured with these addresses?)",
                    im->num_graph_nodes, in->num_arguments);
  if (!s) s = crec_program_create(&p);
  /* any alignment: the captured work took these addresses, and takes what it is given */
  crec_argument_options ao = CREC_ARGUMENT_OPTIONS_INIT;
  ao.alignment = 1;
  for (size_t i = 0; i < in->num_arguments && !s; i++) {
    char name[32];
    crec_buffer buf;
    sizes[i] = in->arguments[i].size;
    bs[i] = (crec_binding){in->arguments[i].base, in->arguments[i].size};
    s = crec_program_add_argument(p, arg_name(&a, i, name, sizeof name), sizes[i], &ao, &buf);
    if (s) s = crec__rethrow(s, fn);
  }
  if (s) {
    crec__import_free(im);
  } else {
    crec_bindings b = CREC_BINDINGS_INIT;
    b.buffers = bs;
    b.num_buffers = in->num_arguments;
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
  crec_status s = check_arguments(arguments, num_arguments, second_bases, fn);
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
                    type_name(t));
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
    if (in->depth) s = find_in_child(e, in, where, &n->node, fn);
    else CREC__CU_STEP(s, fn, where, e->cu, cuGraphNodeFindInClone, &n->node, in->original, e->graph);
    n->kind = NODE_IMPORTED;
    n->ext = in;
    n->func = in->kp.func;
    e->num_nodes++;
  }
  /* the source is the caller's: the exec holds its clone */
  im->source = NULL;
  /* node by node always: a whole-graph update would cost every node of the
   * captured graph, which e->num_nodes (the relocated ones) does not count */
  e->whole_update_broken = true;
  return s;
}

void crec__import_prepare(crec__import_node *in, const crec__values *v) {
  for (size_t k = 0; k < in->num_relocs; k++) {
    const crec__reloc *r = &in->relocs[k];
    uint64_t addr = (uint64_t)v->base[r->buffer] + r->delta;
    if (in->type == CU_GRAPH_NODE_TYPE_KERNEL) memcpy(in->block + r->offset, &addr, 8);
    else if (in->type == CU_GRAPH_NODE_TYPE_MEMSET) in->set.dst = (CUdeviceptr)addr;
    else if (r->offset == 0) in->copy.srcDevice = (CUdeviceptr)addr;
    else in->copy.dstDevice = (CUdeviceptr)addr;
  }
}

/* "node N (kind) of the imported graph", for a failed update's message. */
static const char *import_label(const crec__import_node *in, char *buf, size_t size) {
  if (snprintf(buf, size, "node %s (%s) of the imported graph", in->label, type_name(in->type)) >= (int)size)
    buf[size - 1] = 0; /* cut short: still names the node */
  return buf;
}

crec_status crec__import_apply(crec_exec *e, const crec__node *n, CUgraphExec exec, const char *fn) {
  crec__import_node *in = n->ext;
  crec_status s = CREC_OK;
  /* inside a child graph: set in the template's copy, the exec follows at the flush */
  if (in->depth) {
    e->import->children[in->child].pending = true;
    exec = NULL;
  }
  char label[CREC__IMPORT_LABEL + 48];
  /* formatted only when a call fails (as replay.c's NODE_LABEL): this runs for every rewritten node of every replay */
#define IMPORT_LABEL import_label(in, label, sizeof label)
  const crec__cu *cu = e->cu;
  if (in->type == CU_GRAPH_NODE_TYPE_KERNEL) {
    if (exec) CREC__CU_STEP(s, fn, IMPORT_LABEL, cu, cuGraphExecKernelNodeSetParams, exec, n->node, &in->kp);
    else CREC__CU_STEP(s, fn, IMPORT_LABEL, cu, cuGraphKernelNodeSetParams, n->node, &in->kp);
  } else if (in->type == CU_GRAPH_NODE_TYPE_MEMSET) {
    if (exec) CREC__CU_STEP(s, fn, IMPORT_LABEL, cu, cuGraphExecMemsetNodeSetParams, exec, n->node, &in->set, e->ctx);
    else CREC__CU_STEP(s, fn, IMPORT_LABEL, cu, cuGraphMemsetNodeSetParams, n->node, &in->set);
  } else {
    if (exec) CREC__CU_STEP(s, fn, IMPORT_LABEL, cu, cuGraphExecMemcpyNodeSetParams, exec, n->node, &in->copy, e->ctx);
    else CREC__CU_STEP(s, fn, IMPORT_LABEL, cu, cuGraphMemcpyNodeSetParams, n->node, &in->copy);
  }
#undef IMPORT_LABEL
  return s;
}

crec_status crec__import_flush(crec_exec *e, const char *fn) {
  crec__import *im = e->import;
  crec_status s = CREC_OK;
  for (size_t c = 0; c < im->num_children && !s; c++) {
    crec__import_child *ch = &im->children[c];
    if (!ch->pending) continue;
    char where[64];
    snprintf(where, sizeof where, "child graph node %" PRIu32 " of the imported graph", ch->index);
    CREC__CU_STEP(s, fn, where, e->cu, cuGraphExecChildGraphNodeSetParams, e->exec, ch->node, ch->graph);
    if (!s) ch->pending = false;
  }
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

/* What an import rewrites, as text or JSON, into `t`. */
static void dump_import(const crec_exec *exec, bool json, crec__text *t) {
  const crec__import *im = exec->import;
  const crec_program *p = exec->program;
  if (json) {
    crec__text_printf(t, "{\"nodes\":%zu,\"relocated\":%zu,\"arguments\":[", im->num_graph_nodes, im->num_nodes);
    for (size_t i = 0; i < p->num_arguments; i++) {
      if (i) crec__text_puts(t, ",");
      crec__text_json_string(t, p->buffers[p->arguments[i]].name);
    }
    crec__text_puts(t, "],\"relocated_nodes\":[");
  } else {
    crec__text_printf(t, "imported graph: %zu nodes, %zu rewritten at replays, %zu arguments\n", im->num_graph_nodes,
                      im->num_nodes, p->num_arguments);
  }
  for (size_t i = 0; i < im->num_nodes; i++) {
    const crec__import_node *in = &im->nodes[i];
    const char *name = NULL;
    bool kernel = in->type == CU_GRAPH_NODE_TYPE_KERNEL;
    if (kernel && exec->cu->cuFuncGetName && exec->cu->cuFuncGetName(&name, in->kp.func) != CUDA_SUCCESS) name = NULL;
    if (json) {
      crec__text_printf(t, "%s{\"node\":%" PRIu32 ",\"path\":\"%s\",\"type\":\"%s\"", i ? "," : "", in->index,
                        in->label, type_name(in->type));
      if (kernel) {
        crec__text_puts(t, ",\"kernel\":");
        if (name) crec__text_json_string(t, name);
        else crec__text_puts(t, "null");
        crec__text_printf(t, ",\"parameters\":%" PRIu32 ",\"parameter_bytes\":%" PRIu32, in->num_params,
                          in->block_size);
      }
      crec__text_puts(t, ",\"relocations\":[");
    } else {
      crec__text_printf(t, "  node %s %s", in->label, type_name(in->type));
      if (name) crec__text_printf(t, " '%s'", name);
      if (kernel) crec__text_printf(t, " (%" PRIu32 " parameters, %" PRIu32 " bytes)", in->num_params, in->block_size);
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
  if (json) crec__text_puts(t, "]}\n");
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
