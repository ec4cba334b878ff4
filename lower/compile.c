/* Compiling gpu.module bodies to PTX with MLIR's NVVM pipeline, through the C
 * API, and the process-wide cache that makes a second lowering of the same
 * module compile nothing. The cache key is the module's printed text (with its
 * NVVM target, so the chip) plus the pipeline (so the calling convention). */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <mlir-c/Dialect/GPU.h>
#include <mlir-c/Pass.h>

#include "lower_internal.h"

/* ---- the cache ---- */

#define CACHE_MAX_ENTRIES 256
#define CACHE_MAX_BYTES (256u << 20)

typedef struct cache_entry {
  uint64_t hash;
  char *key;
  size_t key_len;
  char *ptx;
  size_t size;
  uint64_t used; /* clock of the last use, for eviction */
} cache_entry;

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static cache_entry cache[CACHE_MAX_ENTRIES];
static size_t cache_count;
static uint64_t cache_bytes, cache_clock, cache_compilations, cache_hits;

static void entry_free(cache_entry *e) {
  cache_bytes -= e->size + e->key_len;
  crec__free(e->key);
  crec__free(e->ptx);
  memset(e, 0, sizeof *e);
}

/* Copies the cached PTX for `key` into *ptx; false when absent (or out of memory). */
static bool cache_get(uint64_t hash, const char *key, size_t key_len, char **ptx, size_t *size) {
  bool hit = false;
  pthread_mutex_lock(&cache_lock);
  for (size_t i = 0; i < cache_count; i++) {
    cache_entry *e = &cache[i];
    if (e->hash != hash || e->key_len != key_len || memcmp(e->key, key, key_len) != 0) continue;
    *ptx = crec__memdup(e->ptx, e->size + 1);
    if (*ptx) {
      *size = e->size;
      e->used = ++cache_clock;
      cache_hits++;
      hit = true;
    }
    break;
  }
  pthread_mutex_unlock(&cache_lock);
  return hit;
}

/* Stores a compiled module, evicting the least recently used ones beyond the limits.
 * Failing to store (out of memory) only costs a later recompilation. */
static void cache_put(uint64_t hash, const char *key, size_t key_len, const char *ptx, size_t size) {
  char *k = crec__memdup(key, key_len);
  char *x = crec__memdup(ptx, size + 1);
  pthread_mutex_lock(&cache_lock);
  cache_compilations++;
  if (!k || !x || size + key_len > CACHE_MAX_BYTES) goto done;
  while (cache_count && (cache_count == CACHE_MAX_ENTRIES || cache_bytes + size + key_len > CACHE_MAX_BYTES)) {
    size_t lru = 0;
    for (size_t i = 1; i < cache_count; i++)
      if (cache[i].used < cache[lru].used) lru = i;
    entry_free(&cache[lru]);
    cache[lru] = cache[--cache_count];
  }
  cache_entry *e = &cache[cache_count++];
  e->hash = hash;
  e->key = k;
  e->key_len = key_len;
  e->ptx = x;
  e->size = size;
  e->used = ++cache_clock;
  cache_bytes += size + key_len;
  k = x = NULL;
done:
  pthread_mutex_unlock(&cache_lock);
  crec__free(k);
  crec__free(x);
}

void crec__lw_cache_stats(uint64_t *compilations, uint64_t *hits, uint64_t *entries, uint64_t *bytes) {
  pthread_mutex_lock(&cache_lock);
  *compilations = cache_compilations;
  *hits = cache_hits;
  *entries = cache_count;
  *bytes = cache_bytes;
  pthread_mutex_unlock(&cache_lock);
}

void crec__lw_lower_cache_clear(void) {
  pthread_mutex_lock(&cache_lock);
  for (size_t i = 0; i < cache_count; i++) entry_free(&cache[i]);
  cache_count = 0;
  cache_bytes = 0;
  pthread_mutex_unlock(&cache_lock);
}

/* ---- pipelines ---- */

crec_status crec__lw_run_pipeline(lw *L, MlirOperation op, const char *pipeline, MlirOperation at) {
  MlirPassManager pm = mlirPassManagerCreate(L->ctx);
  crec__text err = {0};
  crec_status s = CREC_OK;
  /* a real error callback: a NULL one aborts the process on a bad pipeline */
  if (mlirLogicalResultIsFailure(mlirParsePassPipeline(mlirPassManagerGetAsOpPassManager(pm),
                                                       mlirStringRefCreateFromCString(pipeline),
                                                       crec__lw_print_text, &err))) {
    crec__text_puts(&err, "");
    s = crec__error(CREC_ERR_INTERNAL, L->fn, "pass pipeline '%s' does not parse: %s", pipeline,
                    err.data && !err.failed ? err.data : "no message");
    goto done;
  }
  crec__free(L->first_error);
  L->first_error = NULL;
  if (mlirLogicalResultIsFailure(mlirPassManagerRunOnOp(pm, op)))
    s = crec__lw_fail_mlir(L, at, "the pass pipeline failed without a diagnostic");
done:
  crec__free(err.data);
  mlirPassManagerDestroy(pm);
  return s;
}

/* The chips LLVM 19's NVPTX backend knows; for another it warns on stderr and
 * writes PTX no driver loads. */
static bool llvm_knows(const char *chip) {
  static const char *const known[] = {"sm_20", "sm_21", "sm_30", "sm_32", "sm_35", "sm_37", "sm_50", "sm_52",
                                      "sm_53", "sm_60", "sm_61", "sm_62", "sm_70", "sm_72", "sm_75", "sm_80",
                                      "sm_86", "sm_87", "sm_89", "sm_90", "sm_90a", NULL};
  for (const char *const *k = known; *k; k++)
    if (strcmp(*k, chip) == 0) return true;
  return false;
}

/* gpu.all_reduce without `uniform`: MLIR 19 lowers only uniform ones. One in
 * the single block of its kernel (no branch or loop around it, so every thread
 * of the block reaches it) is uniform, and is marked so; `*refused` gets the
 * first one that is not. */
typedef struct uniform_walk {
  MlirContext ctx;
  MlirOperation refused;
} uniform_walk;

static MlirWalkResult mark_uniform(MlirOperation op, void *user) {
  uniform_walk *w = user;
  if (!crec__lw_is(op, "gpu.all_reduce") || !mlirAttributeIsNull(crec__lw_attr(op, "uniform")))
    return MlirWalkResultAdvance;
  MlirOperation parent = mlirOperationGetParentOperation(op);
  MlirRegion body = mlirOperationIsNull(parent) ? (MlirRegion){NULL} : mlirOperationGetRegion(parent, 0);
  bool top = !mlirOperationIsNull(parent) && crec__lw_is(parent, "gpu.func") &&
             mlirBlockIsNull(mlirBlockGetNextInRegion(mlirRegionGetFirstBlock(body)));
  if (!top) {
    w->refused = op;
    return MlirWalkResultInterrupt;
  }
  mlirOperationSetInherentAttributeByName(op, mlirStringRefCreateFromCString("uniform"), mlirUnitAttrGet(w->ctx));
  return MlirWalkResultAdvance;
}

/* gpu.cluster_dim_blocks, which MLIR 19's convert-gpu-to-nvvm leaves illegal:
 * collected by a walk, then each becomes the NVVM special register it reads
 * (%cluster_nctaid.x/y/z, an i32) cast to index, as newer MLIR lowers it. */
static crec_status lower_cluster_dims(lw *L, MlirOperation module, MlirOperation at) {
  MlirOperation *ops;
  size_t n;
  crec_status s = crec__lw_collect(L, module, "gpu.cluster_dim_blocks", &ops, &n);
  for (size_t i = 0; i < n && !s; i++) {
    MlirOperation op = ops[i];
    MlirAttribute da = crec__lw_attr(op, "dimension");
    char *dim = mlirAttributeIsNull(da) ? NULL : crec__lw_attr_string(da);
    char axis = !dim ? 0 : strstr(dim, "x") ? 'x' : strstr(dim, "y") ? 'y' : strstr(dim, "z") ? 'z' : 0;
    crec__free(dim);
    if (!axis) {
      s = crec__lw_fail(L, at, CREC_ERR_INTERNAL, "a gpu.cluster_dim_blocks without a dimension x, y or z");
      break;
    }
    char name[48];
    snprintf(name, sizeof name, "nvvm.read.ptx.sreg.cluster.nctaid.%c", axis);
    MlirLocation loc = mlirOperationGetLocation(op);
    MlirType i32 = mlirIntegerTypeGet(L->ctx, 32), index = mlirIndexTypeGet(L->ctx);
    MlirOperationState rs = mlirOperationStateGet(mlirStringRefCreateFromCString(name), loc);
    mlirOperationStateAddResults(&rs, 1, &i32);
    MlirOperation read = mlirOperationCreate(&rs);
    if (mlirOperationIsNull(read)) {
      s = crec__lw_fail(L, at, CREC_ERR_INTERNAL, "cannot make %s (is the NVVM dialect loaded?)", name);
      break;
    }
    MlirValue raw = mlirOperationGetResult(read, 0);
    MlirOperationState cs = mlirOperationStateGet(mlirStringRefCreateFromCString("arith.index_cast"), loc);
    mlirOperationStateAddOperands(&cs, 1, &raw);
    mlirOperationStateAddResults(&cs, 1, &index);
    MlirOperation cast = mlirOperationCreate(&cs);
    if (mlirOperationIsNull(cast)) {
      mlirOperationDestroy(read);
      s = crec__lw_fail(L, at, CREC_ERR_INTERNAL, "cannot make an arith.index_cast");
      break;
    }
    MlirBlock block = mlirOperationGetBlock(op);
    mlirBlockInsertOwnedOperationBefore(block, op, read);
    mlirBlockInsertOwnedOperationBefore(block, op, cast);
    mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(op, 0), mlirOperationGetResult(cast, 0));
    mlirOperationDestroy(op);
  }
  crec__free(ops);
  return s;
}

/* Ops that only sm_90a has (wgmma, setmaxnreg): their PTX instructions are
 * "arch-specific" ones, which a plain sm_90 target rejects. */
static MlirWalkResult find_sm90a_op(MlirOperation op, void *user) {
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  static const char *const prefixes[] = {"nvgpu.warpgroup.mma", "nvvm.wgmma.", "nvvm.setmaxregister", NULL};
  for (const char *const *p = prefixes; *p; p++)
    if (n.length >= strlen(*p) && memcmp(n.data, *p, strlen(*p)) == 0) {
      *(MlirOperation *)user = op;
      return MlirWalkResultInterrupt;
    }
  return MlirWalkResultAdvance;
}

/* A TMA copy (nvgpu.tma.async.load or .store) in the module: by the time the
 * module is LLVM, the inline PTX that convert-nvvm-to-llvm makes of it. */
static MlirWalkResult find_tma_copy(MlirOperation op, void *user) {
  static const char tma[] = "cp.async.bulk.tensor";
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  bool found = false;
  if (n.length >= 5 + sizeof tma - 1 && memcmp(n.data, "nvvm.", 5) == 0 &&
      memcmp(n.data + 5, tma, sizeof tma - 1) == 0) {
    found = true;
  } else if (crec__lw_is(op, "llvm.inline_asm")) {
    MlirAttribute a = crec__lw_attr(op, "asm_string");
    if (!mlirAttributeIsNull(a) && mlirAttributeIsAString(a)) {
      MlirStringRef text = mlirStringAttrGetValue(a);
      for (size_t i = 0; !found && i + sizeof tma - 1 <= text.length; i++)
        found = memcmp(text.data + i, tma, sizeof tma - 1) == 0;
    }
  }
  if (!found) return MlirWalkResultAdvance;
  *(bool *)user = true;
  return MlirWalkResultInterrupt;
}

/* The shared memory of a kernel, as MLIR 19 leaves it, with two faults that
 * TMA programs meet, mended on the LLVM dialect before it becomes PTX:
 *
 * - A zero-sized workgroup memref.global (upstream's way to name dynamic
 *   shared memory) and gpu.dynamic_shared_memory's base are internal
 *   zero-length globals, which LLVM 19's NVPTX backend demotes to one-byte
 *   `.shared` variables of their kernel, laid out among the static ones: the
 *   dynamic region indexed from them overruns whatever follows (an mbarrier,
 *   say). Made external declarations they are `.extern .shared ... x[]`, the
 *   start of dynamic shared memory after every static variable, as CUDA's
 *   `extern __shared__` arrays are.
 * - A TMA copy's shared side must be 128-byte aligned (1024 with a 128-byte
 *   swizzle), and a workgroup global carries its element type's alignment
 *   (or 16): the copy faults with a misaligned address. In a module with TMA
 *   copies every workgroup global is aligned to 1024 bytes, as CUTLASS aligns
 *   its shared storage. */
static crec_status mend_shared_globals(lw *L, MlirOperation module, MlirOperation at) {
  MlirOperation *globals;
  size_t n;
  crec_status s = crec__lw_collect(L, module, "llvm.mlir.global", &globals, &n);
  if (s) return s;
  bool tma = false;
  mlirOperationWalk(module, find_tma_copy, &tma, MlirWalkPreOrder);
  enum { TMA_ALIGNMENT = 1024 };
  MlirAttribute external = mlirAttributeParseGet(L->ctx, mlirStringRefCreateFromCString("#llvm.linkage<external>"));
  MlirAttribute aligned = mlirIntegerAttrGet(mlirIntegerTypeGet(L->ctx, 64), TMA_ALIGNMENT);
  if (mlirAttributeIsNull(external)) s = crec__lw_fail(L, at, CREC_ERR_INTERNAL, "cannot make #llvm.linkage<external>");
  for (size_t i = 0; i < n && !s; i++) {
    MlirAttribute space = crec__lw_attr(globals[i], "addr_space");
    MlirAttribute type = crec__lw_attr(globals[i], "global_type");
    if (mlirAttributeIsNull(space) || !mlirAttributeIsAInteger(space) || mlirIntegerAttrGetValueInt(space) != 3 ||
        mlirAttributeIsNull(type) || !mlirAttributeIsAType(type))
      continue;
    if (tma) {
      MlirAttribute have = crec__lw_attr(globals[i], "alignment");
      if (mlirAttributeIsNull(have) || !mlirAttributeIsAInteger(have) || mlirIntegerAttrGetValueInt(have) < TMA_ALIGNMENT)
        mlirOperationSetInherentAttributeByName(globals[i], mlirStringRefCreateFromCString("alignment"), aligned);
    }
    char *text = crec__lw_type_string(mlirTypeAttrGetValue(type));
    bool zero = text && strncmp(text, "!llvm.array<0 x ", 16) == 0;
    crec__free(text);
    if (!zero) continue;
    mlirOperationSetInherentAttributeByName(globals[i], mlirStringRefCreateFromCString("linkage"), external);
    mlirOperationRemoveAttributeByName(globals[i], mlirStringRefCreateFromCString("value"));
    mlirOperationRemoveAttributeByName(globals[i], mlirStringRefCreateFromCString("dso_local"));
  }
  crec__free(globals);
  return s;
}

crec_status crec__lw_module_chip(lw *L, MlirOperation gpu_module, char chip[32]) {
  snprintf(chip, 32, "%s", L->chip);
  MlirOperation needs = {NULL};
  mlirOperationWalk(gpu_module, find_sm90a_op, &needs, MlirWalkPreOrder);
  if (mlirOperationIsNull(needs)) return CREC_OK;
  if (strcmp(L->chip, "sm_90") == 0 || strcmp(L->chip, "sm_90a") == 0) {
    snprintf(chip, 32, "sm_90a");
    return CREC_OK;
  }
  return crec__lw_fail(L, needs, CREC_ERR_UNSUPPORTED,
                       "it compiles to wgmma or setmaxnreg instructions, which only sm_90a has, but the target chip "
                       "is %s (lower for sm_90, the chip of an H100 or H200, and crec compiles this module for sm_90a)",
                       L->chip);
}

bool crec__lw_chip_has_pdl(const lw *L) {
  int major = 0;
  return sscanf(L->chip, "sm_%d", &major) == 1 && major >= 90;
}

/* Before the first op of every kernel of `module`: griddepcontrol.wait, so that a
 * launch of it may start while the kernels before it drain (CREC_LAUNCH_EARLY_START):
 * nothing of the kernel runs before they finish and their writes are visible. */
typedef struct wait_walk {
  MlirContext ctx;
  bool failed;
} wait_walk;

static MlirWalkResult add_wait(MlirOperation op, void *user) {
  wait_walk *w = user;
  if (!crec__lw_is(op, "gpu.func") || mlirAttributeIsNull(crec__lw_attr(op, "gpu.kernel"))) return MlirWalkResultAdvance;
  MlirBlock entry = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, 0));
  if (mlirBlockIsNull(entry)) return MlirWalkResultSkip;
  if (crec__lw_prepend_asm(w->ctx, entry, mlirOperationGetLocation(op), "griddepcontrol.wait;", "~{memory}", 0, NULL))
    return MlirWalkResultSkip;
  w->failed = true;
  return MlirWalkResultInterrupt;
}

crec_status crec__lw_compile_module(lw *L, MlirOperation gpu_module, bool bare, bool wait, char **ptx, size_t *size) {
  *ptx = NULL;
  *size = 0;
  if (!llvm_knows(L->chip))
    return crec__lw_fail(L, gpu_module, CREC_ERR_UNSUPPORTED,
                   "LLVM 19 cannot compile for %s (it knows chips up to sm_90a); lower with chip sm_90: newer "
                   "GPUs run its PTX through the driver",
                   L->chip);
  char chip[32];
  crec_status cs = crec__lw_module_chip(L, gpu_module, chip);
  if (cs) return cs;
  /* What MLIR 19's gpu-lower-to-nvvm-pipeline runs on device code, in its
   * order where it matters: nvgpu ops (mma.sync, mbarriers, TMA, wgmma) to
   * NVVM first, then n-D vector transfers to loops of 1-D ones, then the NVVM
   * ops that are PTX written inline (elect.sync, mbarrier waits) to LLVM. */
  char pipeline[640];
  snprintf(pipeline, sizeof pipeline,
           "builtin.module(gpu.module(convert-nvgpu-to-nvvm,convert-vector-to-scf,expand-strided-metadata,"
           "lower-affine,convert-scf-to-cf,convert-nvvm-to-llvm,"
           "convert-gpu-to-nvvm{use-bare-ptr-memref-call-conv=%s},convert-index-to-llvm,"
           "reconcile-unrealized-casts))",
           bare ? "true" : "false");
  /* between the two, mend_shared_globals */
  static const char to_binary[] = "builtin.module(gpu-module-to-binary{format=isa})";
  /* LLVM 19 writes the lowest PTX version a chip takes (7.8 for sm_90), which
   * lacks sm_90's TMA and mbarrier transaction counts (8.0; sm_90a implies it):
   * every driver that runs sm_90 reads PTX 8.0. A kernel that takes a TMA
   * descriptor acquires it through the tensor-map proxy, which is PTX 8.3. */
  char target[128];
  snprintf(target, sizeof target, "[#nvvm.target<chip = \"%s\"%s>]", chip,
           strncmp(chip, "sm_90", 5) != 0          ? ""
           : crec__lw_takes_tensormap(gpu_module) ? ", features = \"+ptx83\""
                                                   : ", features = \"+ptx80\"");
  MlirAttribute targets = mlirAttributeParseGet(L->ctx, mlirStringRefCreateFromCString(target));
  if (mlirAttributeIsNull(targets))
    return crec__lw_fail(L, gpu_module, CREC_ERR_INTERNAL, "cannot make the NVVM target attribute %s", target);
  /* compile a copy in a module of its own: the user's module stays as parsed */
  MlirModule m = mlirModuleCreateEmpty(mlirOperationGetLocation(gpu_module));
  MlirOperation clone = mlirOperationClone(gpu_module);
  mlirOperationSetInherentAttributeByName(clone, mlirStringRefCreateFromCString("targets"), targets);
  mlirBlockAppendOwnedOperation(mlirModuleGetBody(m), clone);
  crec_status cl = lower_cluster_dims(L, clone, gpu_module);
  if (!cl && wait) {
    wait_walk ww = {L->ctx, false};
    mlirOperationWalk(clone, add_wait, &ww, MlirWalkPreOrder);
    if (ww.failed) cl = crec__lw_fail(L, gpu_module, CREC_ERR_INTERNAL, "cannot make a kernel's griddepcontrol.wait");
  }
  if (!cl) cl = crec__lw_lower_asserts(L, clone, gpu_module);
  if (!cl) cl = crec__lw_tensormap_params(L, clone, gpu_module);
  if (cl) {
    mlirModuleDestroy(m);
    return cl;
  }
  uniform_walk uw = {L->ctx, {NULL}};
  mlirOperationWalk(clone, mark_uniform, &uw, MlirWalkPreOrder);
  if (!mlirOperationIsNull(uw.refused)) {
    /* at the user's op: the clone's has the same location */
    crec_status s = crec__lw_fail(L, uw.refused, CREC_ERR_UNSUPPORTED,
                                  "a gpu.all_reduce that is not `uniform`, inside a branch or loop of its kernel: "
                                  "MLIR 19 lowers only uniform ones (mark it uniform when every thread of the "
                                  "block reaches it)");
    mlirModuleDestroy(m);
    return s;
  }

  crec__text key = {0};
  mlirOperationPrint(mlirModuleGetOperation(m), crec__lw_print_text, &key);
  crec__text_printf(&key, "\n%s\nshared globals mended\n%s", pipeline, to_binary);
  crec_status s = CREC_OK;
  if (key.failed) {
    s = crec__oom(L->fn);
    goto done;
  }
  uint64_t hash = crec__hash(key.data, key.len, 0);
  if (cache_get(hash, key.data, key.len, ptx, size)) goto done;

  if ((s = crec__lw_run_pipeline(L, mlirModuleGetOperation(m), pipeline, gpu_module)) ||
      (s = mend_shared_globals(L, mlirModuleGetOperation(m), gpu_module)) ||
      (s = crec__lw_run_pipeline(L, mlirModuleGetOperation(m), to_binary, gpu_module)))
    goto done;
  MlirOperation bin = mlirBlockGetFirstOperation(mlirModuleGetBody(m));
  MlirAttribute objects = mlirOperationIsNull(bin) ? mlirAttributeGetNull() : crec__lw_attr(bin, "objects");
  if (!crec__lw_is(bin, "gpu.binary") || mlirAttributeIsNull(objects) || mlirArrayAttrGetNumElements(objects) < 1 ||
      !mlirAttributeIsAGPUObjectAttr(mlirArrayAttrGetElement(objects, 0))) {
    s = crec__lw_fail(L, gpu_module, CREC_ERR_INTERNAL, "gpu-module-to-binary did not produce a gpu.binary object");
    goto done;
  }
  MlirStringRef obj = mlirGPUObjectAttrGetObject(mlirArrayAttrGetElement(objects, 0));
  size_t n = obj.length;
  while (n && obj.data[n - 1] == '\0') n--; /* the object carries the PTX's terminating NUL */
  *ptx = crec__malloc(n + 1);
  if (!*ptx) {
    s = crec__oom(L->fn);
    goto done;
  }
  memcpy(*ptx, obj.data, n);
  (*ptx)[n] = '\0';
  *size = n;
  cache_put(hash, key.data, key.len, *ptx, n);
done:
  crec__free(key.data);
  mlirModuleDestroy(m);
  return s;
}
