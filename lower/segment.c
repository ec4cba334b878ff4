/* Host segments: the host code of the entry function (loads and stores of host
 * memory, loops and branches with no device work, vector ops, calls to MLIR's
 * runner utilities such as printMemrefF32). Ahead of the walk, each maximal run
 * of such ops at the top of the entry moves into a function of its own,
 * `__crec_host_<n>`, that takes the memrefs the run touches; a call to it takes
 * the run's place (after its last op). Constants and views the run uses from
 * outside are copied into the function. The allocations it touches become host
 * temporaries (page-locked, mapped: kernels reach them through unified
 * addressing); an entry argument it touches gets a host temporary copy
 * ("<arg>.host"), copied in before each segment and back after one that
 * writes. The walk makes each call a host callback over those buffers,
 * ordered by the same hazards as every command, and compiles the function with
 * the MLIR execution engine (LLVM ORC), the runner utilities resolved from the
 * MLIR runtime libraries the system ships, so that it prints what mlir-runner
 * prints. */
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mlir-c/ExecutionEngine.h>

#include "lower_internal.h"

#define SEG_PREFIX "__crec_host_"
/* The most memrefs one segment takes (its call builds their descriptors on the stack). */
#define SEG_MAX_ARGS 64

typedef enum seg_kind { K_NEUTRAL = 0, K_HOST = 1, K_CLOSE = 2 } seg_kind;

/* ---- what the device runs ---- */

static bool device_op(MlirOperation op) {
  return crec__lw_is(op, "gpu.launch_func") || crec__lw_is(op, "gpu.launch") || crec__lw_is(op, "gpu.memcpy") ||
         crec__lw_is(op, "gpu.memset") || crec__lw_op_in(op, "linalg.") || crec__lw_is(op, "memref.copy") ||
         crec__lw_op_in(op, "crec.") || crec__lw_is(op, "nvgpu.tma.create.descriptor");
}

typedef struct any_walk {
  bool (*pred)(MlirOperation);
  bool found;
} any_walk;

static MlirWalkResult find_any(MlirOperation op, void *user) {
  any_walk *w = user;
  if (!w->pred(op)) return MlirWalkResultAdvance;
  w->found = true;
  return MlirWalkResultInterrupt;
}

/* Whether `op` or an op nested in it satisfies `pred`. */
static bool any_op(MlirOperation op, bool (*pred)(MlirOperation)) {
  any_walk w = {pred, false};
  mlirOperationWalk(op, find_any, &w, MlirWalkPreOrder);
  return w.found;
}

/* The symbol a func.call calls (empty when it names none). */
static MlirStringRef callee_of(MlirOperation op) {
  MlirAttribute callee = crec__lw_attr(op, "callee");
  if (mlirAttributeIsNull(callee) || !mlirAttributeIsAFlatSymbolRef(callee)) return mlirStringRefCreate("", 0);
  return mlirFlatSymbolRefAttrGetValue(callee);
}

static bool calls_declaration(MlirModule module, MlirOperation op) {
  MlirStringRef name = callee_of(op);
  if (!name.length) return false;
  MlirOperation f = crec__lw_lookup_symbol(mlirModuleGetBody(module), name.data, name.length);
  return !mlirOperationIsNull(f) && mlirBlockIsNull(mlirRegionGetFirstBlock(mlirOperationGetRegion(f, 0)));
}

static bool is_any(MlirOperation op, const char *const *names) {
  for (const char *const *n = names; *n; n++)
    if (crec__lw_is(op, *n)) return true;
  return false;
}

/* A view: the same memory as its memref operand. */
static bool is_view(MlirOperation op) {
  static const char *const names[] = {"memref.cast", "memref.subview", "memref.reinterpret_cast",
                                      "memref.expand_shape", "memref.collapse_shape", "memref.view", NULL};
  return is_any(op, names);
}

/* Reads memory or its metadata, and nothing else. */
static bool reads_only(MlirOperation op) {
  static const char *const names[] = {"memref.load", "memref.dim", "memref.assume_alignment",
                                      "memref.extract_strided_metadata", NULL};
  return is_any(op, names);
}

/* Writes memory, calls or prints: what viewing or reading alone cannot do. */
static bool effect_op(MlirOperation op) {
  if (is_view(op) || reads_only(op)) return false;
  if (crec__lw_is(op, "func.call") || crec__lw_is(op, "vector.print")) return true;
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); i++) {
    MlirType t = mlirValueGetType(mlirOperationGetOperand(op, i));
    if (mlirTypeIsAMemRef(t) || mlirTypeIsAUnrankedMemRef(t)) return true;
  }
  return false;
}

static bool observable(MlirOperation op) { return any_op(op, effect_op); }

/* First pass: what an op is by itself. Loads and scalar arithmetic are decided
 * by their users (decided_by_users). */
static seg_kind own_kind(MlirModule module, MlirOperation op) {
  if (any_op(op, device_op)) return K_CLOSE;
  if (crec__lw_is(op, "memref.dealloc") || crec__lw_is(op, "gpu.dealloc") || crec__lw_is(op, "func.return"))
    return K_CLOSE;
  if (crec__lw_is(op, "memref.store") || crec__lw_op_in(op, "vector.") || crec__lw_op_in(op, "affine."))
    return K_HOST;
  if (crec__lw_is(op, "func.call")) return calls_declaration(module, op) ? K_HOST : K_CLOSE;
  /* loops and branches with no device work that touch memory, call or print run
   * on the host (an empty scf.if stays a device conditional), and so do those
   * that yield values: device control flow yields none */
  if (mlirOperationGetNumRegions(op) > 0 && crec__lw_op_in(op, "scf.") &&
      (observable(op) || mlirOperationGetNumResults(op) > 0))
    return K_HOST;
  return K_NEUTRAL;
}

static bool scalar_op(MlirOperation op) {
  return (crec__lw_op_in(op, "arith.") || crec__lw_op_in(op, "index.") || crec__lw_op_in(op, "math.")) &&
         mlirOperationGetNumRegions(op) == 0 && mlirOperationGetNumResults(op) == 1;
}

/* Constants, and arithmetic over constants only: copied into each run that uses
 * them rather than moved into one. */
static bool from_constants(MlirOperation op) {
  if (crec__lw_is(op, "arith.constant")) return true;
  if (!scalar_op(op)) return false;
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); i++) {
    MlirValue v = mlirOperationGetOperand(op, i);
    if (!mlirValueIsAOpResult(v) || !from_constants(mlirOpResultGetOwner(v))) return false;
  }
  return true;
}

static bool decided_by_users(MlirOperation op) {
  return (crec__lw_is(op, "memref.load") || scalar_op(op)) && !from_constants(op);
}

/* The op of the entry's block that holds `op` (itself at the top), or null. */
static MlirOperation top_of(MlirOperation entry, MlirOperation op) {
  MlirOperation none = {NULL};
  while (!mlirOperationIsNull(op)) {
    MlirOperation parent = mlirOperationGetParentOperation(op);
    if (mlirOperationIsNull(parent)) return none;
    if (mlirOperationEqual(parent, entry)) return op;
    op = parent;
  }
  return none;
}

/* The top-level op that defines `v` (null for an argument of the entry). */
static MlirOperation top_def(MlirOperation entry, MlirValue v) {
  MlirOperation def = mlirValueIsAOpResult(v) ? mlirOpResultGetOwner(v)
                                              : mlirBlockGetParentOperation(mlirBlockArgumentGetOwner(v));
  if (mlirOperationEqual(def, entry)) {
    MlirOperation none = {NULL};
    return none;
  }
  return top_of(entry, def);
}

static uint32_t map_op_get(const lw_map *m, MlirOperation op) { return crec__lw_map_get(m, &op.ptr, sizeof op.ptr); }
static crec_status map_op_put(lw *L, lw_map *m, MlirOperation op, uint32_t v) {
  return crec__lw_map_put(m, &op.ptr, sizeof op.ptr, v) ? crec__oom(L->fn) : CREC_OK;
}

/* ---- moving a run into a function ---- */

typedef struct seg_build {
  lw *L;
  lw_map in_run;   /* top-level ops of the run */
  lw_map mapped;   /* outside value -> index into inside[] */
  MlirValue *inside;
  size_t num_inside, cap_inside;
  MlirValue *passed; /* outside memrefs the function takes, in argument order */
  size_t num_passed, cap_passed;
  MlirBlock block;   /* the function's body */
  MlirOperation ret; /* its func.return */
  MlirOperation anchor; /* the op of the entry the call goes before */
  crec_status status;
} seg_build;

static bool in_run(const seg_build *b, MlirOperation top) {
  return !mlirOperationIsNull(top) && map_op_get(&b->in_run, top) != LW_NONE;
}

/* Constants, views, dims and pure scalar arithmetic: copied into a function. */
static bool cloneable(MlirOperation op) {
  return crec__lw_is(op, "arith.constant") || crec__lw_is(op, "memref.dim") || is_view(op) || scalar_op(op);
}

static crec_status map_value(seg_build *b, MlirValue outside, MlirValue inside) {
  lw *L = b->L;
  if (CREC__RESERVE(b->inside, b->cap_inside, b->num_inside + 1) != CREC_OK ||
      crec__lw_map_put(&b->mapped, &outside.ptr, sizeof outside.ptr, (uint32_t)b->num_inside) != CREC_OK)
    return crec__oom(L->fn);
  b->inside[b->num_inside++] = inside;
  return CREC_OK;
}

/* Where the memory a function argument stands for comes from: an allocation
 * the host may own, or an error. */
static crec_status mark_root(seg_build *b, MlirOperation user, MlirValue v) {
  lw *L = b->L;
  char call[160] = "";
  if (crec__lw_is(user, "func.call")) {
    MlirStringRef callee = callee_of(user);
    snprintf(call, sizeof call, " (the call to @%.*s)", (int)callee.length, callee.data);
  }
  /* an argument of the entry: the host code works on a copy (crec__lw_segment_call) */
  if (!mlirValueIsAOpResult(v)) return CREC_OK;
  MlirOperation def = mlirOpResultGetOwner(v);
  if (crec__lw_is(def, "memref.alloc")) return map_op_put(L, &L->host_allocs, def, 1);
  if (crec__lw_is(def, "gpu.alloc") && !mlirAttributeIsNull(crec__lw_attr(def, "hostShared"))) return CREC_OK;
  char where[1100], what[64];
  crec__lw_op_location(L, def, where, sizeof where);
  if (crec__lw_is(def, "gpu.alloc"))
    return crec__lw_fail(L, user, CREC_ERR_UNSUPPORTED,
                         "host code%s touches device memory (the gpu.alloc at %s): copy it into a memref.alloc with "
                         "gpu.memcpy first, or allocate it with gpu.alloc host_shared",
                         call, where);
  return crec__lw_fail(L, user, CREC_ERR_UNSUPPORTED,
                       "host code%s touches memory from '%s' at %s; host code reads and writes memref.alloc and "
                       "gpu.alloc host_shared memory",
                       call, crec__lw_op_name(def, what, sizeof what), where);
}

/* The value inside the function standing for `v`, defined outside the run at
 * `user`: a copy of a constant or view, or a new argument for a memref. */
static crec_status resolve(seg_build *b, MlirOperation user, MlirValue v, MlirValue *out) {
  lw *L = b->L;
  uint32_t k = crec__lw_map_get(&b->mapped, &v.ptr, sizeof v.ptr);
  if (k != LW_NONE) {
    *out = b->inside[k];
    return CREC_OK;
  }
  crec_status s;
  if (mlirValueIsAOpResult(v) && cloneable(mlirOpResultGetOwner(v))) {
    MlirOperation def = mlirOpResultGetOwner(v);
    MlirOperation copy = mlirOperationClone(def);
    for (intptr_t i = 0; i < mlirOperationGetNumOperands(def); i++) {
      MlirValue in;
      if ((s = resolve(b, user, mlirOperationGetOperand(def, i), &in))) {
        mlirOperationDestroy(copy);
        return s;
      }
      mlirOperationSetOperand(copy, i, in);
    }
    mlirBlockInsertOwnedOperationBefore(b->block, b->ret, copy);
    for (intptr_t i = 0; i < mlirOperationGetNumResults(def); i++)
      if ((s = map_value(b, mlirOperationGetResult(def, i), mlirOperationGetResult(copy, i)))) return s;
    *out = mlirOperationGetResult(copy, mlirOpResultGetResultNumber(v));
    return CREC_OK;
  }
  MlirType t = mlirValueGetType(v);
  if (!mlirTypeIsAMemRef(t)) {
    char *ts = crec__lw_type_string(t);
    s = crec__lw_fail(L, user, CREC_ERR_UNSUPPORTED,
                      "host code (a run of host ops, compiled as one host node) uses a %s value computed outside "
                      "it from the entry's arguments or from device memory; host code takes constants and memrefs "
                      "so far",
                      ts ? ts : "scalar");
    crec__free(ts);
    return s;
  }
  if ((s = mark_root(b, user, v))) return s;
  if (CREC__RESERVE(b->passed, b->cap_passed, b->num_passed + 1) != CREC_OK) return crec__oom(L->fn);
  if (b->num_passed >= SEG_MAX_ARGS)
    return crec__lw_fail(L, user, CREC_ERR_TOO_LARGE, "host code uses more than %d memrefs", SEG_MAX_ARGS);
  b->passed[b->num_passed++] = v;
  MlirValue arg = mlirBlockAddArgument(b->block, t, mlirValueIsAOpResult(v) ? mlirOperationGetLocation(mlirOpResultGetOwner(v))
                                                                             : mlirOperationGetLocation(user));
  if ((s = map_value(b, v, arg))) return s;
  *out = arg;
  return CREC_OK;
}

/* Refuses a value made in the run and used after it: host code gives the
 * device commands nothing back but memory. */
static MlirWalkResult check_escapes(MlirOperation op, void *user) {
  seg_build *b = user;
  MlirOperation entry = b->L->entry;
  for (intptr_t i = 0; i < mlirOperationGetNumResults(op); i++)
    for (MlirOpOperand u = mlirValueGetFirstUse(mlirOperationGetResult(op, i)); !mlirOpOperandIsNull(u);
         u = mlirOpOperandGetNextUse(u)) {
      MlirOperation owner = mlirOpOperandGetOwner(u);
      if (in_run(b, top_of(entry, owner))) continue;
      char where[1100];
      crec__lw_op_location(b->L, owner, where, sizeof where);
      b->status = crec__lw_fail(b->L, op, CREC_ERR_UNSUPPORTED,
                                "a value computed by host code is used at %s, outside it; host code runs as a host "
                                "node and hands device commands nothing but memory (store the value instead)",
                                where);
      return MlirWalkResultInterrupt;
    }
  return MlirWalkResultAdvance;
}

/* Replaces the operands of a moved op that come from outside the run. */
static MlirWalkResult remap(MlirOperation op, void *user) {
  seg_build *b = user;
  MlirOperation entry = b->L->entry;
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); i++) {
    MlirValue v = mlirOperationGetOperand(op, i);
    if (in_run(b, top_def(entry, v))) continue;
    MlirValue in;
    if ((b->status = resolve(b, op, v, &in))) return MlirWalkResultInterrupt;
    mlirOperationSetOperand(op, i, in);
  }
  return MlirWalkResultAdvance;
}

static crec_status make_call_and_function(seg_build *b, MlirOperation *run, size_t n, uint32_t index) {
  lw *L = b->L;
  MlirContext ctx = L->ctx;
  MlirLocation loc = mlirOperationGetLocation(run[0]);
  char name[48];
  snprintf(name, sizeof name, SEG_PREFIX "%u", index);
  for (size_t i = 0; i < n; i++) {
    mlirOperationWalk(run[i], check_escapes, b, MlirWalkPreOrder);
    if (b->status) return b->status;
  }
  /* the function's body: its return first, so that copies and moved ops go before it */
  b->block = mlirBlockCreate(0, NULL, NULL);
  MlirOperationState rs = mlirOperationStateGet(mlirStringRefCreateFromCString("func.return"), loc);
  b->ret = mlirOperationCreate(&rs);
  mlirBlockAppendOwnedOperation(b->block, b->ret);
  MlirRegion body = mlirRegionCreate();
  mlirRegionAppendOwnedBlock(body, b->block);
  MlirBlock entry_block = mlirOperationGetBlock(run[n - 1]);
  /* point the run's operands at the function's values (while the run is still in
   * the entry, where top_def() sees what is inside it), then move it */
  for (size_t i = 0; i < n && !b->status; i++) mlirOperationWalk(run[i], remap, b, MlirWalkPreOrder);
  crec_status s = b->status;
  /* moved even on a failure, so that destroying the body takes the run with the
   * copies its operands may point at */
  for (size_t i = 0; i < n; i++) mlirOperationMoveBefore(run[i], b->ret);
  if (s) {
    mlirRegionDestroy(body);
    return s;
  }
  MlirType *types = crec__calloc(b->num_passed ? b->num_passed : 1, sizeof *types);
  if (!types) {
    mlirRegionDestroy(body);
    return crec__oom(L->fn);
  }
  for (size_t i = 0; i < b->num_passed; i++) types[i] = mlirValueGetType(b->passed[i]);
  MlirType ftype = mlirFunctionTypeGet(ctx, (intptr_t)b->num_passed, types, 0, NULL);
  crec__free(types);
  MlirNamedAttribute attrs[3] = {
      mlirNamedAttributeGet(mlirIdentifierGet(ctx, mlirStringRefCreateFromCString("sym_name")),
                            mlirStringAttrGet(ctx, mlirStringRefCreateFromCString(name))),
      mlirNamedAttributeGet(mlirIdentifierGet(ctx, mlirStringRefCreateFromCString("function_type")),
                            mlirTypeAttrGet(ftype)),
      mlirNamedAttributeGet(mlirIdentifierGet(ctx, mlirStringRefCreateFromCString("sym_visibility")),
                            mlirStringAttrGet(ctx, mlirStringRefCreateFromCString("private")))};
  MlirOperationState fs = mlirOperationStateGet(mlirStringRefCreateFromCString("func.func"), loc);
  mlirOperationStateAddAttributes(&fs, 3, attrs);
  mlirOperationStateAddOwnedRegions(&fs, 1, &body);
  MlirOperation func = mlirOperationCreate(&fs);
  mlirBlockInsertOwnedOperationBefore(mlirModuleGetBody(L->module), L->entry, func);
  /* the call, where the run ended (the moved ops are gone from the entry, so
   * insert it before the op that followed the run's last op) */
  MlirNamedAttribute callee = mlirNamedAttributeGet(
      mlirIdentifierGet(ctx, mlirStringRefCreateFromCString("callee")),
      mlirFlatSymbolRefAttrGet(ctx, mlirStringRefCreateFromCString(name)));
  MlirOperationState cs = mlirOperationStateGet(mlirStringRefCreateFromCString("func.call"), loc);
  mlirOperationStateAddOperands(&cs, (intptr_t)b->num_passed, b->passed);
  mlirOperationStateAddAttributes(&cs, 1, &callee);
  MlirOperation call = mlirOperationCreate(&cs);
  if (!mlirOperationIsNull(b->anchor)) mlirBlockInsertOwnedOperationBefore(entry_block, b->anchor, call);
  else mlirBlockAppendOwnedOperation(entry_block, call);
  return CREC_OK;
}

/* Whether memory `v` (or a view of it) is used by an op at the top of the entry
 * that is host code. */
static bool used_by_host(const lw *L, const lw_map *pos, const seg_kind *kinds, MlirValue v, int depth) {
  for (MlirOpOperand u = mlirValueGetFirstUse(v); !mlirOpOperandIsNull(u); u = mlirOpOperandGetNextUse(u)) {
    MlirOperation user = mlirOpOperandGetOwner(u);
    if (is_view(user) && mlirOperationGetNumResults(user) == 1) {
      if (depth < 16 && used_by_host(L, pos, kinds, mlirOperationGetResult(user, 0), depth + 1)) return true;
      continue;
    }
    MlirOperation top = top_of(L->entry, user);
    uint32_t at = mlirOperationIsNull(top) ? LW_NONE : map_op_get(pos, top);
    if (at != LW_NONE && kinds[at] == K_HOST) return true;
  }
  return false;
}

/* A linalg op on memory host code uses (a memref.alloc that host code fills,
 * reads or prints, through views too) is host code itself: upstream's sm90 GEMM
 * computes its reference product with linalg.matmul on the host. */
static bool linalg_on_host_memory(const lw *L, const lw_map *pos, const seg_kind *kinds, MlirOperation op) {
  if (!crec__lw_op_in(op, "linalg.")) return false;
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); i++) {
    MlirValue v = mlirOperationGetOperand(op, i);
    if (!mlirTypeIsAMemRef(mlirValueGetType(v))) continue;
    for (int d = 0; d < 16 && mlirValueIsAOpResult(v) && is_view(mlirOpResultGetOwner(v)); d++)
      v = mlirOperationGetOperand(mlirOpResultGetOwner(v), 0);
    if (mlirValueIsAOpResult(v) && crec__lw_is(mlirOpResultGetOwner(v), "memref.alloc") &&
        used_by_host(L, pos, kinds, v, 0))
      return true;
  }
  return false;
}

crec_status crec__lw_segments_extract(lw *L) {
  MlirBlock block = mlirRegionGetFirstBlock(mlirOperationGetRegion(L->entry, 0));
  if (mlirBlockIsNull(block)) return CREC_OK;
  size_t n = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(block); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op))
    n++;
  MlirOperation *ops = crec__calloc(n ? n : 1, sizeof *ops);
  seg_kind *kinds = crec__calloc(n ? n : 1, sizeof *kinds);
  lw_map pos = {0};
  crec_status s = CREC_OK;
  if (!ops || !kinds) {
    s = crec__oom(L->fn);
    goto done;
  }
  size_t i = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(block); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op), i++) {
    ops[i] = op;
    kinds[i] = own_kind(L->module, op);
    if ((s = map_op_put(L, &pos, op, (uint32_t)i))) goto done;
  }
  for (size_t k = 0; k < n; k++)
    if (kinds[k] == K_CLOSE && linalg_on_host_memory(L, &pos, kinds, ops[k])) kinds[k] = K_HOST;
  /* loads and arithmetic whose every user is host code are host code (users come later) */
  bool any = false;
  for (size_t k = n; k-- > 0;) {
    if (kinds[k] == K_NEUTRAL && decided_by_users(ops[k])) {
      bool all = true, some = false;
      for (intptr_t r = 0; r < mlirOperationGetNumResults(ops[k]) && all; r++)
        for (MlirOpOperand u = mlirValueGetFirstUse(mlirOperationGetResult(ops[k], r)); !mlirOpOperandIsNull(u) && all;
             u = mlirOpOperandGetNextUse(u)) {
          MlirOperation top = top_of(L->entry, mlirOpOperandGetOwner(u));
          uint32_t at = mlirOperationIsNull(top) ? LW_NONE : map_op_get(&pos, top);
          some = true;
          all = at != LW_NONE && kinds[at] == K_HOST;
        }
      if (all && some) kinds[k] = K_HOST;
    }
    any = any || kinds[k] == K_HOST;
  }
  if (!any) goto done;
  uint32_t index = 0;
  for (size_t k = 0; k < n && !s;) {
    if (kinds[k] != K_HOST) {
      k++;
      continue;
    }
    /* a run: host ops up to the next op that closes it (neutral ops stay where they are) */
    size_t end = k;
    while (end < n && kinds[end] != K_CLOSE) end++;
    MlirOperation *run = crec__calloc(end - k, sizeof *run);
    if (!run) {
      s = crec__oom(L->fn);
      break;
    }
    size_t m = 0, last = k;
    seg_build b = {0};
    b.L = L;
    for (size_t q = k; q < end && !s; q++)
      if (kinds[q] == K_HOST) {
        run[m++] = ops[q];
        last = q;
        s = map_op_put(L, &b.in_run, ops[q], 1);
      }
    /* a run that touches no memory and calls nothing has no effect: it stays, and
     * the walk lowers it as before (host arithmetic, or an error naming it) */
    bool effect = false;
    for (size_t q = 0; q < m && !effect; q++) effect = observable(run[q]);
    if (!effect) {
      crec__free(run);
      crec__lw_map_free(&b.in_run);
      k = end;
      continue;
    }
    /* the call goes where the run's last op was: before the op after it */
    b.anchor = last + 1 < n ? ops[last + 1] : (MlirOperation){NULL};
    if (!s) s = make_call_and_function(&b, run, m, index++);
    crec__free(run);
    crec__lw_map_free(&b.in_run);
    crec__lw_map_free(&b.mapped);
    crec__free(b.inside);
    crec__free(b.passed);
    k = end;
  }
done:
  crec__free(ops);
  crec__free(kinds);
  crec__lw_map_free(&pos);
  return s;
}

/* ---- a call of a segment: a host callback ---- */

bool crec__lw_is_segment_call(MlirOperation op) {
  if (!crec__lw_is(op, "func.call")) return false;
  MlirStringRef name = callee_of(op);
  return name.length > strlen(SEG_PREFIX) && memcmp(name.data, SEG_PREFIX, strlen(SEG_PREFIX)) == 0;
}

/* How the function uses memref `v` (an argument, or a view of one). */
static crec_access value_access(MlirValue v) {
  crec_access a = 0;
  for (MlirOpOperand u = mlirValueGetFirstUse(v); !mlirOpOperandIsNull(u); u = mlirOpOperandGetNextUse(u)) {
    MlirOperation op = mlirOpOperandGetOwner(u);
    intptr_t at = mlirOpOperandGetOperandNumber(u);
    if (crec__lw_is(op, "memref.load") || crec__lw_is(op, "vector.load") || crec__lw_is(op, "vector.transfer_read") ||
        crec__lw_is(op, "affine.load") || crec__lw_is(op, "vector.maskedload") || crec__lw_is(op, "vector.gather"))
      a |= CREC_ACCESS_READ;
    else if (crec__lw_is(op, "memref.dim") || crec__lw_is(op, "memref.extract_strided_metadata"))
      continue;
    else if (crec__lw_is(op, "memref.store") || crec__lw_is(op, "affine.store") || crec__lw_is(op, "vector.store") ||
             crec__lw_is(op, "vector.transfer_write") || crec__lw_is(op, "vector.maskedstore") ||
             crec__lw_is(op, "vector.scatter"))
      a |= mlirTypeIsAMemRef(mlirValueGetType(v)) && at > 0 ? CREC_ACCESS_WRITE : CREC_ACCESS_READ_WRITE;
    else if (crec__lw_is(op, "memref.copy"))
      a |= at == 0 ? CREC_ACCESS_READ : CREC_ACCESS_WRITE;
    else if (is_view(op))
      a |= value_access(mlirOperationGetResult(op, 0));
    else if (crec__lw_is(op, "func.call")) {
      MlirStringRef name = callee_of(op);
      /* the runner utilities' printers only read */
      a |= name.length >= 5 && memcmp(name.data, "print", 5) == 0 ? CREC_ACCESS_READ : CREC_ACCESS_READ_WRITE;
    } else {
      a |= CREC_ACCESS_READ_WRITE;
    }
  }
  return a;
}

/* One memref the segment takes: where its descriptor's pointer is in the buffer
 * and its (static) layout. */
typedef struct seg_arg {
  uint64_t base; /* byte offset of the aligned pointer in the buffer */
  int64_t offset;
  uint32_t rank;
  int64_t sizes[LW_MAX_RANK], strides[LW_MAX_RANK];
} seg_arg;

typedef void (*seg_packed)(void **args);
typedef struct seg {
  MlirExecutionEngine engine;
  seg_packed fn;
  size_t num_args;
  seg_arg args[];
} seg;

static void seg_free(void *user) {
  seg *g = user;
  if (!g) return;
  if (!mlirExecutionEngineIsNull(g->engine)) mlirExecutionEngineDestroy(g->engine);
  crec__free(g);
}

/* The host callback: each memref as MLIR's expanded descriptor (allocated and
 * aligned pointers, offset, sizes, strides), one pointer per slot, as the
 * engine's packed wrapper takes them. */
static void seg_run(void *user, void *const *addresses, size_t count) {
  const seg *g = user;
  void *ptrs[SEG_MAX_ARGS * (3 + 2 * LW_MAX_RANK)];
  union {
    void *p;
    int64_t i;
  } vals[SEG_MAX_ARGS * (3 + 2 * LW_MAX_RANK)];
  size_t k = 0;
  for (size_t i = 0; i < g->num_args && i < count; i++) {
    const seg_arg *a = &g->args[i];
    void *aligned = (char *)addresses[i] + a->base;
    vals[k].p = aligned;
    vals[k + 1].p = aligned;
    vals[k + 2].i = a->offset;
    k += 3;
    for (uint32_t d = 0; d < a->rank; d++) vals[k++].i = a->sizes[d];
    for (uint32_t d = 0; d < a->rank; d++) vals[k++].i = a->strides[d];
  }
  for (size_t j = 0; j < k; j++) ptrs[j] = &vals[j];
  g->fn(ptrs);
  /* what it printed reaches the output in program order with what comes next */
  fflush(stdout);
}

/* dl_iterate_phdr: the path of the loaded libMLIR.so, into `user`. */
static int find_libmlir(struct dl_phdr_info *info, size_t size, void *user) {
  (void)size;
  const char *base = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
  if (!base || strncmp(base + 1, "libMLIR.so", 10) != 0) return 0;
  snprintf(user, 1024, "%s", info->dlpi_name);
  return 1;
}

/* Where the MLIR runtime libraries are: CREC_MLIR_RUNTIME_DIR when set, else the
 * folder of the libMLIR this process loaded (a system with only the runtime
 * package, or libraries unpacked elsewhere and found through LD_LIBRARY_PATH,
 * has them there), else the library folder of the MLIR crec was built with.
 * `suffix` gets what follows ".so" in the loaded libMLIR's name (".19.1"): a
 * runtime package ships only the versioned names. Returns where the folder
 * came from, for errors. */
static const char *runtime_dir(char *dir, size_t size, char *suffix, size_t suffix_size) {
  suffix[0] = '\0';
  const char *env = getenv("CREC_MLIR_RUNTIME_DIR");
  char loaded_buf[1024] = "";
  dl_iterate_phdr(find_libmlir, loaded_buf);
  const char *loaded = loaded_buf[0] ? loaded_buf : NULL;
  const char *so = loaded ? strstr(loaded, ".so.") : NULL;
  if (so) snprintf(suffix, suffix_size, "%s", so + 3);
  const char *slash = loaded && loaded[0] == '/' ? strrchr(loaded, '/') : NULL;
  if (env && env[0]) {
    snprintf(dir, size, "%s", env);
    return "the folder CREC_MLIR_RUNTIME_DIR names";
  }
  if (slash) {
    snprintf(dir, size, "%.*s", (int)(slash - loaded), loaded);
    return "beside the libMLIR this process loaded; CREC_MLIR_RUNTIME_DIR names another folder";
  }
  snprintf(dir, size, "%s", CREC_MLIR_LIBDIR);
  return "the MLIR crec was built with; CREC_MLIR_RUNTIME_DIR names another folder";
}

/* Opens DIR/NAME, else DIR/NAME+SUFFIX; `path` gets the one opened. Where one
 * of them is there but does not load (a library it needs is missing), `why`
 * gets dlerror's reason. */
static void *open_runtime_lib(const char *dir, const char *name, const char *suffix, char *path, size_t size,
                              char *why, size_t why_size) {
  for (int versioned = 0; versioned < (suffix[0] ? 2 : 1); versioned++) {
    snprintf(path, size, "%s/%s%s", dir, name, versioned ? suffix : "");
    void *h = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
    if (h) return h;
    const char *e = dlerror();
    if (e && access(path, F_OK) == 0) snprintf(why, why_size, "; %s", e);
  }
  return NULL;
}

typedef struct decl_walk {
  MlirModule from;
  MlirBlock into;
  lw_map seen;
  bool failed;
} decl_walk;

/* Copies the declarations the function calls into the module it is compiled in. */
static MlirWalkResult copy_decls(MlirOperation op, void *user) {
  decl_walk *w = user;
  if (!crec__lw_is(op, "func.call")) return MlirWalkResultAdvance;
  MlirStringRef name = callee_of(op);
  if (crec__lw_map_get(&w->seen, name.data, name.length) != LW_NONE) return MlirWalkResultAdvance;
  if (crec__lw_map_put(&w->seen, name.data, name.length, 1)) {
    w->failed = true;
    return MlirWalkResultInterrupt;
  }
  MlirOperation decl = crec__lw_lookup_symbol(mlirModuleGetBody(w->from), name.data, name.length);
  if (!mlirOperationIsNull(decl)) mlirBlockAppendOwnedOperation(w->into, mlirOperationClone(decl));
  return MlirWalkResultAdvance;
}

typedef struct callee_walk {
  lw *L;
  void *libs[2];
  const char *dir, *from;
  char why[512]; /* why a library that is there did not load, or "" */
  crec_status status;
} callee_walk;

/* Refuses a call whose callee neither the runner utilities nor the process
 * define, at the call (the engine would only say that a lookup failed). */
static MlirWalkResult check_callee(MlirOperation op, void *user) {
  callee_walk *w = user;
  if (crec__lw_is(op, "vector.print") && !w->libs[0]) {
    /* it becomes calls to printI64, printNewline and the rest */
    w->status = crec__lw_fail(w->L, op, CREC_ERR_UNSUPPORTED,
                              "vector.print prints through MLIR's runner utilities, and there is no "
                              "libmlir_c_runner_utils.so in %s (%s)%s",
                              w->dir, w->from, w->why);
    return MlirWalkResultInterrupt;
  }
  if (!crec__lw_is(op, "func.call")) return MlirWalkResultAdvance;
  MlirStringRef name = callee_of(op);
  MlirOperation decl = crec__lw_lookup_symbol(mlirModuleGetBody(w->L->module), name.data, name.length);
  bool ciface = !mlirOperationIsNull(decl) && !mlirAttributeIsNull(crec__lw_attr(decl, "llvm.emit_c_interface"));
  char sym[300];
  snprintf(sym, sizeof sym, "%s%.*s", ciface ? "_mlir_ciface_" : "", (int)name.length, name.data);
  bool found = dlsym(RTLD_DEFAULT, sym) != NULL;
  for (int i = 0; i < 2 && !found; i++) found = w->libs[i] && dlsym(w->libs[i], sym);
  if (found) return MlirWalkResultAdvance;
  w->status = crec__lw_fail(w->L, op, CREC_ERR_UNSUPPORTED,
                            "a call to @%.*s, which the module only declares, and which neither MLIR's runner "
                            "utilities (libmlir_c_runner_utils.so and libmlir_runner_utils.so in %s: %s) nor this "
                            "process define as '%s'%s",
                            (int)name.length, name.data, w->dir, w->from, sym, w->why);
  return MlirWalkResultInterrupt;
}

static crec_status compile(lw *L, MlirOperation call, MlirOperation func, MlirStringRef name, seg *g) {
  static const char pipeline[] =
      "builtin.module(convert-linalg-to-loops,convert-vector-to-scf,lower-affine,convert-scf-to-cf,"
      "expand-strided-metadata,lower-affine,convert-vector-to-llvm,finalize-memref-to-llvm,convert-math-to-llvm,"
      "convert-arith-to-llvm,convert-index-to-llvm,convert-func-to-llvm,convert-cf-to-llvm,"
      "reconcile-unrealized-casts)";
  MlirModule m = mlirModuleCreateEmpty(mlirOperationGetLocation(func));
  MlirOperation copy = mlirOperationClone(func);
  /* public, so that the engine makes its packed wrapper */
  mlirOperationRemoveAttributeByName(copy, mlirStringRefCreateFromCString("sym_visibility"));
  mlirBlockAppendOwnedOperation(mlirModuleGetBody(m), copy);
  decl_walk w = {L->module, mlirModuleGetBody(m), {0}, false};
  mlirOperationWalk(copy, copy_decls, &w, MlirWalkPreOrder);
  crec__lw_map_free(&w.seen);
  crec_status s = CREC_OK;
  void *dep = NULL;
  if (w.failed) {
    s = crec__oom(L->fn);
    goto done;
  }
  char dir[1024], suffix[32], lib[2][1100];
  const char *from = runtime_dir(dir, sizeof dir, suffix, sizeof suffix);
  MlirStringRef libs[2];
  int num_libs = 0;
  static const char *const names[2] = {"libmlir_c_runner_utils.so", "libmlir_runner_utils.so"};
  callee_walk cw = {L, {NULL, NULL}, dir, from, "", CREC_OK};
  /* what both need, from the same folder (its RUNPATH, $ORIGIN/../lib, misses
   * a folder of links); open until the engine has loaded them too */
  char dep_path[1100], dep_why[8];
  dep = open_runtime_lib(dir, "libmlir_float16_utils.so", suffix, dep_path, sizeof dep_path, dep_why, sizeof dep_why);
  for (int i = 0; i < 2; i++) {
    cw.libs[i] = open_runtime_lib(dir, names[i], suffix, lib[num_libs], sizeof lib[num_libs], cw.why, sizeof cw.why);
    if (!cw.libs[i]) continue;
    libs[num_libs] = mlirStringRefCreateFromCString(lib[num_libs]);
    num_libs++;
  }
  mlirOperationWalk(func, check_callee, &cw, MlirWalkPreOrder);
  for (int i = 0; i < 2; i++)
    if (cw.libs[i]) dlclose(cw.libs[i]);
  if ((s = cw.status)) goto done;
  crec__free(L->first_error);
  L->first_error = NULL;
  if ((s = crec__lw_run_pipeline(L, mlirModuleGetOperation(m), pipeline, call))) goto done;
  g->engine = mlirExecutionEngineCreate(m, 2, num_libs, libs, false);
  if (mlirExecutionEngineIsNull(g->engine)) {
    s = crec__lw_fail(L, call, CREC_ERR_MLIR, "the LLVM ORC JIT could not compile the host code%s%s", L->first_error ? ": " : "",
                      L->first_error ? L->first_error : "");
    goto done;
  }
  g->fn = (seg_packed)mlirExecutionEngineLookupPacked(g->engine, name);
  if (!g->fn)
    s = crec__lw_fail(L, call, CREC_ERR_INTERNAL, "the LLVM ORC JIT compiled the host code but has no '%.*s' in it",
                      (int)name.length, name.data);
done:
  if (dep) dlclose(dep);
  mlirModuleDestroy(m);
  return s;
}

/* The host temporary "<arg>.host" host code works on for argument buffer `bi`
 * (made on first use; every segment copies the argument in, and back when it
 * writes): its index in L->bufs. */
static crec_status arg_staging(lw *L, MlirOperation op, uint32_t bi, uint32_t *out) {
  uint32_t k = crec__lw_map_get(&L->arg_staging, &bi, sizeof bi);
  if (k != LW_NONE) {
    *out = k;
    return CREC_OK;
  }
  const lw_buf *b = &L->bufs[bi];
  if (b->dynamic)
    return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED,
                         "host code touches '%s', a dynamic-size argument: host code works on a copy of an argument, "
                         "which needs a static size",
                         b->name);
  char name[300];
  snprintf(name, sizeof name, "%s.host", b->name);
  crec_buffer h;
  crec_status s = crec_program_add_host_temporary(L->p, name, b->size, &h);
  if (s) return crec__lw_fail_builder(L, op, s);
  uint64_t size = b->size; /* L->bufs may move */
  if ((s = crec__lw_buf_add(L, h, CREC_BUFFER_TEMPORARY, false, size, true, name, out))) return s;
  return crec__lw_map_put(&L->arg_staging, &bi, sizeof bi, *out) ? crec__oom(L->fn) : CREC_OK;
}

/* The copies around a segment for the arguments it touches: in (before), or
 * back (after) for those it writes. */
static crec_status stage_args(lw *L, MlirOperation op, crec_region region, const uint32_t *args, const uint32_t *staged,
                              const crec_operand *ops, size_t n, bool back) {
  for (size_t i = 0; i < n; i++) {
    if (staged[i] == LW_NONE || (back && !(ops[i].access & CREC_ACCESS_WRITE))) continue;
    crec_range arg = crec_range_of(L->bufs[args[i]].handle, 0, CREC_WHOLE);
    crec_range host = crec_range_of(L->bufs[staged[i]].handle, 0, CREC_WHOLE);
    char name[340];
    snprintf(name, sizeof name, "%s.%s", L->bufs[staged[i]].name, back ? "out" : "in");
    crec_command c;
    crec_status s = crec_program_add_memcpy(L->p, region, name, back ? arg : host, back ? host : arg, &c);
    if (s) return crec__lw_fail_builder(L, op, s);
    crec__lw_note_command(L);
    if (back && (s = crec__lw_note_write(L, op, arg))) return s;
  }
  return CREC_OK;
}

/* Whether `v` is the function's argument `arg`, or a view of it. */
static bool derives_from(MlirValue v, MlirValue arg) {
  for (int depth = 0; depth < 64; depth++) {
    if (mlirValueEqual(v, arg)) return true;
    if (!mlirValueIsAOpResult(v) || !is_view(mlirOpResultGetOwner(v))) return false;
    v = mlirOperationGetOperand(mlirOpResultGetOwner(v), 0);
  }
  return false;
}

typedef struct first_touch {
  MlirValue arg;
  int seen; /* 0: not yet; 1: first a store; 2: first something else */
} first_touch;

static MlirWalkResult find_first_touch(MlirOperation op, void *user) {
  first_touch *t = user;
  /* a view touches nothing yet, and metadata is no byte of the buffer */
  if (is_view(op) || crec__lw_is(op, "memref.dim") || crec__lw_is(op, "memref.extract_strided_metadata"))
    return MlirWalkResultAdvance;
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); i++) {
    if (!derives_from(mlirOperationGetOperand(op, i), t->arg)) continue;
    bool store = (crec__lw_is(op, "memref.store") || crec__lw_is(op, "affine.store") || crec__lw_is(op, "vector.store") ||
                  crec__lw_is(op, "vector.transfer_write")) && i == 1;
    t->seen = store ? 1 : 2;
    return MlirWalkResultInterrupt;
  }
  return MlirWalkResultAdvance;
}

/* Whether the function stores into argument `arg` before anything else reads
 * it, in the order of its text (a loop that fills a buffer, then prints it):
 * its read then reads what it wrote itself, not what was there before. */
static bool stores_first(MlirOperation func, MlirValue arg) {
  first_touch t = {arg, 0};
  mlirOperationWalk(func, find_first_touch, &t, MlirWalkPreOrder);
  return t.seen == 1;
}

crec_status crec__lw_segment_call(lw *L, MlirOperation op, crec_region region) {
  MlirStringRef name = callee_of(op);
  MlirOperation func = crec__lw_lookup_symbol(mlirModuleGetBody(L->module), name.data, name.length);
  if (mlirOperationIsNull(func))
    return crec__lw_fail(L, op, CREC_ERR_INTERNAL, "the host code's function @%.*s is missing", (int)name.length,
                         name.data);
  MlirBlock fblock = mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0));
  size_t n = (size_t)mlirOperationGetNumOperands(op);
  seg *g = crec__calloc(1, sizeof *g + (n ? n : 1) * sizeof(seg_arg));
  crec_operand *ops = crec__calloc(n ? n : 1, sizeof *ops);
  /* per operand: its buffer, and the staging copy of an argument (LW_NONE: none) */
  uint32_t *args = crec__calloc(2 * (n ? n : 1), sizeof *args), *staged = args ? args + (n ? n : 1) : NULL;
  crec_status s = CREC_OK;
  if (!g || !ops || !args) {
    s = crec__oom(L->fn);
    goto fail;
  }
  g->num_args = n;
  for (size_t i = 0; i < n; i++) {
    lw_memref *m;
    if ((s = crec__lw_memref_get(L, op, mlirOperationGetOperand(op, i), &m)) || (s = crec__lw_memref_live(L, op, m)))
      goto fail;
    args[i] = m->buffer;
    staged[i] = LW_NONE;
    if (L->bufs[m->buffer].kind == CREC_BUFFER_ARGUMENT && (s = arg_staging(L, op, m->buffer, &staged[i]))) goto fail;
    const lw_buf *b = &L->bufs[staged[i] != LW_NONE ? staged[i] : m->buffer];
    if (!b->host || b->kind != CREC_BUFFER_TEMPORARY) {
      s = crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "host code touches '%s', which is not host memory", b->name);
      goto fail;
    }
    seg_arg *a = &g->args[i];
    a->base = m->base;
    a->offset = m->offset;
    a->rank = m->rank;
    for (uint32_t d = 0; d < m->rank; d++) {
      if (!m->sizes[d].is_const || !m->strides[d].is_const) {
        s = crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "host code takes memrefs of static sizes and strides so far ('%s')",
                          b->name);
        goto fail;
      }
      a->sizes[d] = m->sizes[d].value;
      a->strides[d] = m->strides[d].value;
    }
    crec_access acc = value_access(mlirBlockGetArgument(fblock, (intptr_t)i));
    ops[i].range = crec_range_of(b->handle, 0, CREC_WHOLE);
    ops[i].access = acc ? acc : CREC_ACCESS_READ;
  }
  if ((s = compile(L, op, func, name, g))) goto fail;
  if ((s = stage_args(L, op, region, args, staged, ops, n, false))) goto fail;
  crec_host_callback cb = CREC_HOST_CALLBACK_INIT;
  cb.fn_buffers = seg_run;
  cb.user = g;
  cb.user_free = seg_free;
  cb.operands = ops;
  cb.num_operands = n;
  char label[256];
  if (!crec__lw_command_name(op, label, sizeof label))
    snprintf(label, sizeof label, "host.%.*s", (int)(name.length - strlen(SEG_PREFIX)), name.data + strlen(SEG_PREFIX));
  crec_command cmd;
  if ((s = crec_program_add_host_callback(L->p, region, label, &cb, &cmd))) {
    s = crec__lw_fail_builder(L, op, s);
    goto fail;
  }
  g = NULL; /* the program's now */
  for (size_t i = 0; i < n; i++)
    if ((ops[i].access & CREC_ACCESS_WRITE) && (s = crec__lw_note_write(L, op, ops[i].range))) break;
  /* the read of a buffer it stores into first is of its own bytes: no undefined read to warn about */
  for (size_t i = 0; i < n && !s; i++)
    if (ops[i].access == CREC_ACCESS_READ_WRITE && stores_first(func, mlirBlockGetArgument(fblock, (intptr_t)i)))
      s = crec__lw_note_unsure(L, cmd, (uint32_t)i);
  crec__lw_note_command(L);
  if (!s) s = stage_args(L, op, region, args, staged, ops, n, true);
  crec__free(ops);
  crec__free(args);
  return s;
fail:
  seg_free(g);
  crec__free(ops);
  crec__free(args);
  return s;
}
