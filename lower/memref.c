/* Memory of the entry: memref.alloc / gpu.alloc (temporaries), memref.get_global
 * (constants), and views — memref.subview, memref.view, memref.reinterpret_cast,
 * memref.cast — which become byte ranges of the underlying buffer. A view is an
 * lw_memref: the buffer, the aligned pointer's byte offset in it, the layout
 * offset, sizes and strides (constants, or host nodes for dynamic arguments). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "lower_internal.h"

static const int64_t DYN = INT64_MIN; /* ShapedType::kDynamic */

/* Sizes, strides and offsets come from the text. Every product and sum of them
 * is checked against EXTENT_MAX, far above any GPU's memory and far enough below
 * INT64_MAX that one more addition of two checked values cannot overflow. */
#define EXTENT_MAX ((int64_t)1 << 60)

static bool mul_ok(int64_t a, int64_t b, int64_t *out) {
  return !__builtin_mul_overflow(a, b, out) && *out <= EXTENT_MAX && *out >= -EXTENT_MAX;
}

static bool add_ok(int64_t a, int64_t b, int64_t *out) {
  return !__builtin_add_overflow(a, b, out) && *out <= EXTENT_MAX && *out >= -EXTENT_MAX;
}

static crec_status too_large(lw *L, MlirOperation op) {
  return crec__lw_fail(L, op, CREC_ERR_OUT_OF_RANGE, "the memref's sizes, strides or offset exceed 2^60 elements or bytes");
}

crec_status crec__lw_buf_add(lw *L, crec_buffer handle, crec_buffer_kind kind, bool dynamic, uint64_t size, bool host,
                       const char *name, uint32_t *out) {
  if (CREC__RESERVE(L->bufs, L->cap_bufs, L->num_bufs + 1) != CREC_OK) return crec__oom(L->fn);
  lw_buf *b = &L->bufs[L->num_bufs];
  memset(b, 0, sizeof *b);
  b->name = crec__strdup(name);
  if (!b->name) return crec__oom(L->fn);
  b->handle = handle;
  b->kind = kind;
  b->dynamic = dynamic;
  b->size = size;
  b->host = host;
  *out = (uint32_t)L->num_bufs++;
  return CREC_OK;
}

crec_status crec__lw_memref_new(lw *L, const lw_memref *m, uint32_t *out) {
  if (CREC__RESERVE(L->memrefs, L->cap_memrefs, L->num_memrefs + 1) != CREC_OK) return crec__oom(L->fn);
  L->memrefs[L->num_memrefs] = *m;
  *out = (uint32_t)L->num_memrefs++;
  return CREC_OK;
}

static lw_sval cval(int64_t v) {
  lw_sval s = {true, v, 0};
  return s;
}
static lw_sval nval(uint32_t n) {
  lw_sval s = {false, 0, n};
  return s;
}

/* Row-major and gap-free: unit dims aside, each stride is the product of the sizes inside it. */
static bool dense_of(const lw_memref *m) {
  int64_t expected = 1;
  for (uint32_t i = m->rank; i-- > 0;) {
    if (!m->sizes[i].is_const || !m->strides[i].is_const) return false;
    if (m->sizes[i].value == 1) continue;
    if (m->strides[i].value != expected) return false;
    if (!mul_ok(expected, m->sizes[i].value, &expected)) return false;
  }
  return true;
}

/* The node of a * b (index), folding constants. */
static crec_status mul(lw *L, MlirOperation op, lw_sval a, lw_sval b, lw_sval *out) {
  if (a.is_const && b.is_const) {
    int64_t v;
    if (!mul_ok(a.value, b.value, &v)) return too_large(L, op);
    *out = cval(v);
    return CREC_OK;
  }
  if (a.is_const && a.value == 1) {
    *out = b;
    return CREC_OK;
  }
  if (b.is_const && b.value == 1) {
    *out = a;
    return CREC_OK;
  }
  uint32_t ops[2], n;
  MlirType index = mlirIndexTypeGet(L->ctx);
  crec_status s;
  if (a.is_const) {
    if ((s = crec__lw_node_const_int(L, index, a.value, &ops[0]))) return s;
  } else {
    ops[0] = a.node;
  }
  if (b.is_const) {
    if ((s = crec__lw_node_const_int(L, index, b.value, &ops[1]))) return s;
  } else {
    ops[1] = b.node;
  }
  if ((s = crec__lw_node_synth(L, "arith.muli", "", "index", ops, 2, &n))) return s;
  *out = nval(n);
  return CREC_OK;
}

/* Row-major strides for the sizes of `m`. */
static crec_status identity_strides(lw *L, MlirOperation op, lw_memref *m) {
  lw_sval acc = cval(1);
  for (uint32_t i = m->rank; i-- > 0;) {
    m->strides[i] = acc;
    crec_status s = mul(L, op, acc, m->sizes[i], &acc);
    if (s) return s;
  }
  return CREC_OK;
}

crec_status crec__lw_buf_size_scalar(lw *L, MlirOperation user, uint32_t buffer, crec_scalar *out) {
  lw_buf *b = &L->bufs[buffer];
  if (!b->size_scalar.id) {
    char name[512];
    snprintf(name, sizeof name, "%s.bytes", b->name);
    crec_status s = crec_program_add_size_scalar(L->p, name, b->handle, &b->size_scalar);
    if (s) return crec__lw_fail_builder(L, user, s);
    if (crec__lw_map_put(&L->scalar_names, name, strlen(name), 1) != CREC_OK) return crec__oom(L->fn);
  }
  *out = b->size_scalar;
  return CREC_OK;
}

crec_status crec__lw_memref_of_buffer(lw *L, MlirOperation op, uint32_t buffer, MlirType t, uint32_t *out) {
  lw_memref m;
  memset(&m, 0, sizeof m);
  m.buffer = buffer;
  m.esz = crec__lw_memref_element_bytes(mlirShapedTypeGetElementType(t));
  m.rank = (uint32_t)mlirShapedTypeGetRank(t);
  int dyn = -1;
  int64_t static_elems = 1;
  for (uint32_t i = 0; i < m.rank; i++) {
    if (mlirShapedTypeIsDynamicDim(t, i)) {
      dyn = (int)i;
    } else {
      m.sizes[i] = cval(mlirShapedTypeGetDimSize(t, i));
      static_elems *= m.sizes[i].value;
    }
  }
  crec_status s;
  if (dyn >= 0) {
    /* the dynamic dim is the bound size divided by the bytes of the static rest */
    crec_scalar bytes;
    if ((s = crec__lw_buf_size_scalar(L, op, buffer, &bytes))) return s;
    MlirType i64 = mlirIntegerTypeGet(L->ctx, 64);
    uint32_t in, divisor, q, n;
    if ((s = crec__lw_node_input(L, i64, bytes, CREC_TYPE_I64, L->bufs[buffer].name, &in))) return s;
    if ((s = crec__lw_node_const_int(L, i64, (int64_t)m.esz * static_elems, &divisor))) return s;
    uint32_t ops[2] = {in, divisor};
    if ((s = crec__lw_node_synth(L, "arith.divui", "", "i64", ops, 2, &q))) return s;
    if ((s = crec__lw_node_synth(L, "arith.index_cast", "", "index", &q, 1, &n))) return s;
    if (!L->nodes[n].derived.id) {
      char label[600];
      snprintf(label, sizeof label, "dim(%s, %d)", L->bufs[buffer].name, dyn);
      char *copy = crec__strdup(label);
      if (!copy) return crec__oom(L->fn);
      crec__free(L->nodes[n].label);
      L->nodes[n].label = copy;
    }
    m.sizes[dyn] = nval(n);
  }
  int64_t strides[LW_MAX_RANK], offset = 0;
  MlirAttribute layout = mlirMemRefTypeGetLayout(t);
  if (mlirAttributeIsNull(layout) || mlirAttributeIsAAffineMap(layout)) {
    /* identity layout (a non-identity affine map was refused by the caller) */
    if ((s = identity_strides(L, op, &m))) return s;
  } else {
    if (mlirLogicalResultIsFailure(mlirMemRefTypeGetStridesAndOffset(t, strides, &offset)) ||
        mlirShapedTypeIsDynamicStrideOrOffset(offset))
      return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "the memref layout must have static strides and offset");
    for (uint32_t i = 0; i < m.rank; i++) {
      if (mlirShapedTypeIsDynamicStrideOrOffset(strides[i]))
        return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "the memref layout must have static strides and offset");
      m.strides[i] = cval(strides[i]);
    }
    m.offset = offset;
  }
  m.dense = dyn >= 0 ? (mlirAttributeIsNull(layout) || mlirAttributeIsAAffineMap(layout)) : dense_of(&m);
  return crec__lw_memref_new(L, &m, out);
}

crec_status crec__lw_memref_get(lw *L, MlirOperation user, MlirValue v, lw_memref **out) {
  uint32_t x = crec__lw_value_get(L, v);
  if (x == LW_NONE || LW_V_KIND(x) != LW_V_MEMREF)
    return crec__lw_fail(L, user, CREC_ERR_UNSUPPORTED,
                   "a memref operand does not come from an entry argument, memref.alloc, gpu.alloc, "
                   "memref.get_global or a view of them");
  *out = &L->memrefs[LW_V_INDEX(x)];
  return CREC_OK;
}

crec_status crec__lw_memref_live(lw *L, MlirOperation user, const lw_memref *m) {
  const lw_buf *b = &L->bufs[m->buffer];
  if (mlirOperationIsNull(b->dealloc)) return CREC_OK;
  char where[1100];
  crec__lw_op_location(L, b->dealloc, where, sizeof where);
  return crec__lw_fail(L, user, CREC_ERR_MLIR, "uses '%s' after it was deallocated at %s", b->name, where);
}

crec_status crec__lw_memref_range(lw *L, MlirOperation user, const lw_memref *m, crec_range *out, bool *contiguous) {
  const lw_buf *b = &L->bufs[m->buffer];
  int64_t start;
  if (!mul_ok(m->offset, (int64_t)m->esz, &start) || !add_ok((int64_t)m->base, start, &start))
    return too_large(L, user);
  if (start < 0)
    return crec__lw_fail(L, user, CREC_ERR_OUT_OF_RANGE, "the memref starts %lld bytes before buffer '%s'", (long long)start,
                   b->name);
  bool known = true;
  int64_t span = 1;
  for (uint32_t i = 0; i < m->rank; i++) {
    if (!m->sizes[i].is_const || !m->strides[i].is_const) {
      known = false;
      break;
    }
    if (m->sizes[i].value == 0)
      return crec__lw_fail(L, user, CREC_ERR_UNSUPPORTED, "the memref has no elements (dim %u is 0)", i);
    int64_t step;
    if (!mul_ok(m->sizes[i].value - 1, m->strides[i].value, &step) || !add_ok(span, step, &span))
      return too_large(L, user);
  }
  if (known && !mul_ok(span, (int64_t)m->esz, &span)) return too_large(L, user);
  *out = crec_range_of(b->handle, (uint64_t)start, known ? (uint64_t)span : CREC_WHOLE);
  *contiguous = m->dense;
  return CREC_OK;
}

/* ---- allocations whose sizes are known at lowering ---- */

/* The value of an index `v` the text fixes: a constant, or memref.dim of a
 * static dimension at a constant index (what inlined helpers compute their
 * allocations' sizes from). */
static bool known_index(MlirValue v, int64_t *out) {
  if (!mlirValueIsAOpResult(v)) return false;
  MlirOperation d = mlirOpResultGetOwner(v);
  if (crec__lw_is(d, "arith.constant") || crec__lw_is(d, "index.constant")) {
    MlirAttribute a = crec__lw_attr(d, "value");
    if (mlirAttributeIsNull(a) || !mlirAttributeIsAInteger(a)) return false;
    *out = mlirIntegerAttrGetValueInt(a);
    return true;
  }
  if (crec__lw_is(d, "memref.dim")) {
    MlirType t = mlirValueGetType(mlirOperationGetOperand(d, 0));
    int64_t i;
    if (!mlirTypeIsAMemRef(t) || !known_index(mlirOperationGetOperand(d, 1), &i) || i < 0 ||
        i >= mlirShapedTypeGetRank(t) || mlirShapedTypeIsDynamicDim(t, (intptr_t)i))
      return false;
    *out = mlirShapedTypeGetDimSize(t, (intptr_t)i);
    return true;
  }
  return false;
}

/* The static type of a dynamic allocation whose every size is known; a null
 * type when one is not (or the layout is not the identity). */
static MlirType known_alloc_type(MlirOperation op) {
  MlirType t = mlirValueGetType(mlirOperationGetResult(op, 0)), none = {NULL};
  MlirAttribute layout = mlirMemRefTypeGetLayout(t);
  if (!mlirTypeIsAMemRef(t) || mlirShapedTypeHasStaticShape(t) ||
      (!mlirAttributeIsNull(layout) && !(mlirAttributeIsAAffineMap(layout) &&
                                         mlirAffineMapIsIdentity(mlirAffineMapAttrGetValue(layout)))))
    return none;
  intptr_t rank = mlirShapedTypeGetRank(t), next = 0;
  if (rank > LW_MAX_RANK) return none;
  int64_t shape[LW_MAX_RANK];
  for (intptr_t i = 0; i < rank; i++) {
    if (!mlirShapedTypeIsDynamicDim(t, i)) {
      shape[i] = mlirShapedTypeGetDimSize(t, i);
      continue;
    }
    /* the dynamic sizes are the first index operands (gpu.alloc's async
     * dependencies, tokens, come before them) */
    while (next < mlirOperationGetNumOperands(op) && !mlirTypeIsAIndex(mlirValueGetType(mlirOperationGetOperand(op, next))))
      next++;
    if (next >= mlirOperationGetNumOperands(op) || !known_index(mlirOperationGetOperand(op, next++), &shape[i]) ||
        shape[i] <= 0)
      return none;
  }
  return mlirMemRefTypeGet(mlirShapedTypeGetElementType(t), rank, shape, mlirAttributeGetNull(),
                           mlirMemRefTypeGetMemorySpace(t));
}

static MlirWalkResult find_known_alloc(MlirOperation op, void *user) {
  if (!crec__lw_is(op, "memref.alloc") && !crec__lw_is(op, "gpu.alloc")) return MlirWalkResultAdvance;
  if (mlirTypeIsNull(known_alloc_type(op))) return MlirWalkResultAdvance;
  *(MlirOperation *)user = op;
  return MlirWalkResultInterrupt;
}

/* Replaces `op`, an allocation of dynamic type whose sizes are known, by a
 * static allocation and a memref.cast back to the type the program uses, as
 * MLIR's canonicalizer does (its alloc-of-constant-sizes pattern). */
static crec_status make_alloc_static(lw *L, MlirOperation op, MlirType st) {
  bool gpu = crec__lw_is(op, "gpu.alloc");
  bool async = gpu && mlirOperationGetNumResults(op) > 1;
  MlirLocation loc = mlirOperationGetLocation(op);
  /* built with the op's own location, its attributes (crec.name, alignment,
   * host_shared) and no operands: sizes are in the type, and crec orders by
   * bytes, not by gpu.alloc's async dependencies */
  MlirOperationState as = mlirOperationStateGet(mlirIdentifierStr(mlirOperationGetName(op)), loc);
  MlirType types[2] = {st, async ? mlirValueGetType(mlirOperationGetResult(op, 1)) : st};
  mlirOperationStateAddResults(&as, async ? 2 : 1, types);
  int32_t none[3] = {0, 0, 0};
  MlirNamedAttribute attrs[16];
  intptr_t n = 0;
  attrs[n++] = mlirNamedAttributeGet(mlirIdentifierGet(L->ctx, mlirStringRefCreateFromCString("operandSegmentSizes")),
                                     mlirDenseI32ArrayGet(L->ctx, gpu ? 3 : 2, none));
  static const char *const kept[] = {"alignment", "hostShared", NULL};
  for (const char *const *k = kept; *k; k++) {
    MlirAttribute a = crec__lw_attr(op, *k);
    if (!mlirAttributeIsNull(a))
      attrs[n++] = mlirNamedAttributeGet(mlirIdentifierGet(L->ctx, mlirStringRefCreateFromCString(*k)), a);
  }
  for (intptr_t i = 0; i < mlirOperationGetNumDiscardableAttributes(op) && n < 16; i++)
    attrs[n++] = mlirOperationGetDiscardableAttribute(op, i);
  mlirOperationStateAddAttributes(&as, n, attrs);
  MlirOperation alloc = mlirOperationCreate(&as);
  if (mlirOperationIsNull(alloc))
    return crec__lw_fail(L, op, CREC_ERR_INTERNAL, "cannot make a static allocation of this one's known sizes");
  MlirBlock block = mlirOperationGetBlock(op);
  mlirBlockInsertOwnedOperationBefore(block, op, alloc);
  MlirValue old = mlirOperationGetResult(op, 0), fresh = mlirOperationGetResult(alloc, 0);
  MlirType dyn = mlirValueGetType(old);
  MlirOperationState cs = mlirOperationStateGet(mlirStringRefCreateFromCString("memref.cast"), loc);
  mlirOperationStateAddOperands(&cs, 1, &fresh);
  mlirOperationStateAddResults(&cs, 1, &dyn);
  MlirOperation cast = mlirOperationCreate(&cs);
  mlirBlockInsertOwnedOperationBefore(block, op, cast);
  mlirValueReplaceAllUsesOfWith(old, mlirOperationGetResult(cast, 0));
  if (async) mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(op, 1), mlirOperationGetResult(alloc, 1));
  mlirOperationDestroy(op);
  return CREC_OK;
}

crec_status crec__lw_static_allocs(lw *L) {
  for (;;) {
    MlirOperation op = {NULL};
    mlirOperationWalk(L->entry, find_known_alloc, &op, MlirWalkPreOrder);
    if (mlirOperationIsNull(op)) return CREC_OK;
    crec_status s = make_alloc_static(L, op, known_alloc_type(op));
    if (s) return s;
  }
}

/* ---- ops ---- */

bool crec__lw_is_memref_op(MlirOperation op) {
  static const char *const names[] = {"memref.alloc", "memref.alloca", "memref.dealloc", "memref.get_global",
                                      "memref.subview", "memref.view", "memref.reinterpret_cast", "memref.cast",
                                      "memref.dim", "memref.assume_alignment", "memref.store", "gpu.alloc",
                                      "gpu.dealloc", NULL};
  for (const char *const *n = names; *n; n++)
    if (crec__lw_is(op, *n)) return true;
  return false;
}

/* Whether the static part of a memref type stays within EXTENT_MAX: its
 * elements' bytes, and its strided layout's span (offset + sum of (size - 1) *
 * stride, times the element size), computed in the order entry.c and alloc_op
 * compute them, so that their unchecked arithmetic on these numbers is exact. */
static bool extent_ok(MlirType t, uint32_t esz) {
  intptr_t rank = mlirShapedTypeGetRank(t);
  int64_t elems = 1, span = 1, v;
  for (intptr_t i = 0; i < rank; i++)
    if (!mlirShapedTypeIsDynamicDim(t, i) && !mul_ok(elems, mlirShapedTypeGetDimSize(t, i), &elems)) return false;
  if (!mul_ok(elems, esz, &v)) return false;
  MlirAttribute layout = mlirMemRefTypeGetLayout(t);
  int64_t strides[LW_MAX_RANK], offset = 0;
  if (mlirAttributeIsNull(layout) || mlirAttributeIsAAffineMap(layout) ||
      mlirLogicalResultIsFailure(mlirMemRefTypeGetStridesAndOffset(t, strides, &offset)))
    return true;
  for (intptr_t i = 0; i < rank; i++) {
    if (mlirShapedTypeIsDynamicStrideOrOffset(strides[i])) continue;
    if (!mul_ok(strides[i], 1, &v)) return false;
    if (mlirShapedTypeIsDynamicDim(t, i)) continue;
    if (!mul_ok(mlirShapedTypeGetDimSize(t, i) - 1, strides[i], &v) || !add_ok(span, v, &span)) return false;
  }
  if (mlirShapedTypeIsDynamicStrideOrOffset(offset)) return true;
  return add_ok(offset, span, &v) && mul_ok(v, esz, &v);
}

bool crec__lw_memref_type_ok(MlirType t) {
  if (!mlirTypeIsAMemRef(t) || mlirShapedTypeGetRank(t) > LW_MAX_RANK) return false;
  uint32_t esz = crec__lw_memref_element_bytes(mlirShapedTypeGetElementType(t));
  if (!esz) return false;
  MlirAttribute layout = mlirMemRefTypeGetLayout(t);
  if (!mlirAttributeIsNull(layout) && mlirAttributeIsAAffineMap(layout)) {
    MlirAffineMap map = mlirAffineMapAttrGetValue(layout);
    if (!mlirAffineMapIsIdentity(map)) return false;
  }
  return extent_ok(t, esz);
}

static const char bad_result_type[] = "unsupported result memref type (crec needs int, index or float elements, an "
                                      "identity or strided layout, and sizes, strides and offset within 2^60 bytes)";

static crec_status set_memref(lw *L, MlirValue v, uint32_t index) {
  return crec__lw_value_set(L, v, LW_V_PACK(LW_V_MEMREF, index));
}

/* Makes `m` the memref of `op`'s first result (a view of another memref). */
static crec_status result_memref(lw *L, MlirOperation op, const lw_memref *m) {
  uint32_t idx;
  crec_status s = crec__lw_memref_new(L, m, &idx);
  return s ? s : set_memref(L, mlirOperationGetResult(op, 0), idx);
}

static crec_status alloc_op(lw *L, MlirOperation op) {
  MlirValue res = mlirOperationGetResult(op, 0);
  MlirType t = mlirValueGetType(res);
  bool gpu = crec__lw_is(op, "gpu.alloc");
  /* host memory: what host code touches (segment.c), and gpu.alloc host_shared */
  bool host = gpu ? !mlirAttributeIsNull(crec__lw_attr(op, "hostShared"))
                  : crec__lw_map_get(&L->host_allocs, &op.ptr, sizeof op.ptr) != LW_NONE;
  if (!crec__lw_memref_type_ok(t))
    return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED,
                   "temporaries need a memref of int, index or float elements with an identity or strided layout, "
                   "and sizes, strides and offset within 2^60 bytes");
  if (!mlirShapedTypeHasStaticShape(t))
    return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "a temporary needs a static shape (crec places temporaries at record)");
  lw_memref probe;
  memset(&probe, 0, sizeof probe);
  probe.esz = crec__lw_memref_element_bytes(mlirShapedTypeGetElementType(t));
  probe.rank = (uint32_t)mlirShapedTypeGetRank(t);
  int64_t strides[LW_MAX_RANK], offset = 0, span = 1;
  MlirAttribute layout = mlirMemRefTypeGetLayout(t);
  bool strided = !mlirAttributeIsNull(layout) && !mlirAttributeIsAAffineMap(layout);
  if (strided && (mlirLogicalResultIsFailure(mlirMemRefTypeGetStridesAndOffset(t, strides, &offset)) ||
                  mlirShapedTypeIsDynamicStrideOrOffset(offset)))
    return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "the memref layout must have static strides and offset");
  int64_t elems = 1;
  for (uint32_t i = 0; i < probe.rank; i++) {
    if (strided && mlirShapedTypeIsDynamicStrideOrOffset(strides[i]))
      return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "the memref layout must have static strides and offset");
    int64_t d = mlirShapedTypeGetDimSize(t, i);
    elems *= d; /* crec__lw_memref_type_ok() checked these products and sums */
    if (strided) span += (d - 1) * strides[i];
  }
  uint64_t bytes = (uint64_t)(strided ? offset + span : elems) * probe.esz;
  if (bytes == 0) return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "a temporary of 0 bytes");
  char name[256];
  if (!crec__lw_command_name(op, name, sizeof name)) snprintf(name, sizeof name, "tmp%u", L->num_temps);
  L->num_temps++;
  crec_buffer h;
  crec_status s = host ? crec_program_add_host_temporary(L->p, name, bytes, &h)
                        : crec_program_add_temporary(L->p, name, bytes, &h);
  if (s) return crec__lw_fail_builder(L, op, s);
  uint32_t buf, m;
  if ((s = crec__lw_buf_add(L, h, CREC_BUFFER_TEMPORARY, false, bytes, host, name, &buf))) return s;
  if ((s = crec__lw_memref_of_buffer(L, op, buf, t, &m))) return s;
  if (gpu && mlirOperationGetNumResults(op) > 1 &&
      (s = crec__lw_value_set(L, mlirOperationGetResult(op, 1), LW_V_PACK(LW_V_TOKEN, 0))))
    return s;
  return set_memref(L, res, m);
}

static crec_status dealloc_op(lw *L, MlirOperation op) {
  bool gpu = crec__lw_is(op, "gpu.dealloc");
  MlirValue v = mlirOperationGetOperand(op, mlirOperationGetNumOperands(op) - 1);
  lw_memref *m;
  crec_status s = crec__lw_memref_get(L, op, v, &m);
  if (s || (s = crec__lw_memref_live(L, op, m))) return s;
  lw_buf *b = &L->bufs[m->buffer];
  if (b->kind != CREC_BUFFER_TEMPORARY)
    return crec__lw_fail(L, op, CREC_ERR_MLIR, "'%s' is a%s %s buffer, not an allocation of the entry", b->name,
                   b->kind == CREC_BUFFER_ARGUMENT ? "n" : "", crec_buffer_kind_name(b->kind));
  b->dealloc = op;
  if (gpu && mlirOperationGetNumResults(op) > 0)
    return crec__lw_value_set(L, mlirOperationGetResult(op, 0), LW_V_PACK(LW_V_TOKEN, 0));
  return CREC_OK;
}

/* Copies a global's initial value into `data` (row-major, natural element sizes). */
static crec_status global_bytes(lw *L, MlirOperation global, MlirAttribute init, MlirType t, uint8_t *data,
                                uint64_t bytes, uint32_t esz) {
  MlirType et = mlirShapedTypeGetElementType(t);
  int64_t n = (int64_t)(bytes / esz);
  if (!mlirAttributeIsADenseElements(init))
    return crec__lw_fail(L, global, CREC_ERR_UNSUPPORTED, "the initial value must be a dense elements attribute");
  bool i1 = mlirTypeIsAInteger(et) && mlirIntegerTypeGetWidth(et) == 1;
  if (mlirDenseElementsAttrIsSplat(init)) {
    uint8_t one[8] = {0};
    if (i1) {
      one[0] = (uint8_t)mlirDenseElementsAttrGetBoolSplatValue(init);
    } else {
      const void *raw = mlirDenseElementsAttrGetRawData(init);
      memcpy(one, raw, esz);
    }
    for (int64_t i = 0; i < n; i++) memcpy(data + (uint64_t)i * esz, one, esz);
    return CREC_OK;
  }
  if (i1) {
    for (int64_t i = 0; i < n; i++) data[i] = (uint8_t)mlirDenseElementsAttrGetBoolValue(init, i);
    return CREC_OK;
  }
  memcpy(data, mlirDenseElementsAttrGetRawData(init), bytes);
  return CREC_OK;
}

static crec_status get_global_op(lw *L, MlirOperation op) {
  MlirAttribute ref = crec__lw_attr(op, "name");
  MlirValue res = mlirOperationGetResult(op, 0);
  MlirStringRef sym = mlirSymbolRefAttrGetRootReference(ref);
  uint32_t buf = crec__lw_map_get(&L->globals, sym.data, sym.length);
  crec_status s;
  if (buf == LW_NONE) {
    MlirOperation g = crec__lw_lookup_symbol(mlirModuleGetBody(L->module), sym.data, sym.length);
    if (mlirOperationIsNull(g) || !crec__lw_is(g, "memref.global"))
      return crec__lw_fail(L, op, CREC_ERR_NOT_FOUND, "memref.global @%.*s is not in the module", (int)sym.length, sym.data);
    MlirType t = mlirTypeAttrGetValue(crec__lw_attr(g, "type"));
    MlirAttribute init = crec__lw_attr(g, "initial_value");
    if (mlirAttributeIsNull(crec__lw_attr(g, "constant")))
      return crec__lw_fail(L, g, CREC_ERR_UNSUPPORTED,
                     "only constant globals are supported (a mutable global would be shared by every execution)");
    if (mlirAttributeIsNull(init) || mlirAttributeIsAUnit(init))
      return crec__lw_fail(L, g, CREC_ERR_UNSUPPORTED, "the constant global has no initial value");
    if (!crec__lw_memref_type_ok(t) || !mlirShapedTypeHasStaticShape(t) ||
        mlirTypeIsAComplex(mlirShapedTypeGetElementType(t)))
      return crec__lw_fail(L, g, CREC_ERR_UNSUPPORTED,
                     "a constant global needs a static memref of int, index or float elements, within 2^60 bytes");
    uint32_t esz = crec__lw_element_bytes(mlirShapedTypeGetElementType(t), NULL, NULL, NULL);
    uint64_t elems = 1;
    for (intptr_t i = 0; i < mlirShapedTypeGetRank(t); i++) elems *= (uint64_t)mlirShapedTypeGetDimSize(t, i);
    uint64_t bytes = elems * esz;
    if (!bytes) return crec__lw_fail(L, g, CREC_ERR_UNSUPPORTED, "a constant of 0 bytes");
    uint8_t *data = crec__calloc(1, (size_t)bytes);
    if (!data) return crec__oom(L->fn);
    char name[512];
    snprintf(name, sizeof name, "%.*s", (int)sym.length, sym.data);
    crec_buffer h;
    if ((s = global_bytes(L, g, init, t, data, bytes, esz)) ||
        (s = crec_program_add_constant(L->p, name, data, bytes, &h))) {
      crec__free(data);
      return s == CREC_ERR_MLIR || s == CREC_ERR_UNSUPPORTED ? s : crec__lw_fail_builder(L, op, s);
    }
    crec__free(data);
    if ((s = crec__lw_buf_add(L, h, CREC_BUFFER_CONSTANT, false, bytes, false, name, &buf))) return s;
    if (crec__lw_map_put(&L->globals, sym.data, sym.length, buf) != CREC_OK) return crec__oom(L->fn);
  }
  uint32_t m;
  if ((s = crec__lw_memref_of_buffer(L, op, buf, mlirValueGetType(res), &m))) return s;
  return set_memref(L, res, m);
}

/* A mixed static/dynamic list (static_offsets etc.): the i-th value as an sval. */
static crec_status mixed(lw *L, MlirOperation op, const char *attr, intptr_t i, intptr_t *next_dynamic, lw_sval *out,
                         bool *is_dynamic) {
  MlirAttribute a = crec__lw_attr(op, attr);
  int64_t v = mlirDenseI64ArrayGetElement(a, i);
  *is_dynamic = false;
  if (v != DYN) {
    *out = cval(v);
    return CREC_OK;
  }
  uint32_t x = crec__lw_value_get(L, mlirOperationGetOperand(op, (*next_dynamic)++));
  if (x != LW_NONE && LW_V_KIND(x) == LW_V_LOAD) return crec__lw_device_read_error(L, op, LW_V_INDEX(x));
  if (x == LW_NONE || LW_V_KIND(x) != LW_V_NODE)
    return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "a dynamic %s operand is not a host scalar", attr);
  int64_t c;
  if (crec__lw_node_int(L, LW_V_INDEX(x), &c)) *out = cval(c);
  else {
    *out = nval(LW_V_INDEX(x));
    *is_dynamic = true;
  }
  return CREC_OK;
}

static crec_status subview_op(lw *L, MlirOperation op) {
  lw_memref *srcp;
  crec_status s = crec__lw_memref_get(L, op, mlirOperationGetOperand(op, 0), &srcp);
  if (s) return s;
  lw_memref src = *srcp, m = src;
  MlirType rt = mlirValueGetType(mlirOperationGetResult(op, 0));
  intptr_t next = 1;
  lw_sval offs[LW_MAX_RANK], sizes[LW_MAX_RANK], steps[LW_MAX_RANK];
  bool dyn;
  for (uint32_t i = 0; i < src.rank; i++) {
    if ((s = mixed(L, op, "static_offsets", i, &next, &offs[i], &dyn))) return s;
    if (dyn) return crec__lw_fail(L, op, CREC_ERR_MLIR, "offset %u is dynamic where a static one is needed (a byte range)", i);
  }
  for (uint32_t i = 0; i < src.rank; i++)
    if ((s = mixed(L, op, "static_sizes", i, &next, &sizes[i], &dyn))) return s;
  for (uint32_t i = 0; i < src.rank; i++) {
    if ((s = mixed(L, op, "static_strides", i, &next, &steps[i], &dyn))) return s;
    if (dyn) return crec__lw_fail(L, op, CREC_ERR_MLIR, "stride %u is dynamic where a static one is needed", i);
  }
  int64_t offset = src.offset;
  for (uint32_t i = 0; i < src.rank; i++) {
    if (offs[i].value == 0) continue;
    if (!src.strides[i].is_const)
      return crec__lw_fail(L, op, CREC_ERR_MLIR,
                     "offset %u moves along a dynamic stride: the byte offset is dynamic where a static one is needed", i);
    int64_t step;
    if (!mul_ok(offs[i].value, src.strides[i].value, &step) || !add_ok(offset, step, &offset))
      return too_large(L, op);
  }
  /* rank reduction drops unit dims (which ones does not change any address) */
  uint32_t rrank = (uint32_t)mlirShapedTypeGetRank(rt), drop = src.rank - rrank, j = 0;
  for (uint32_t i = 0; i < src.rank; i++) {
    if (drop && sizes[i].is_const && sizes[i].value == 1) {
      drop--;
      continue;
    }
    if (j >= LW_MAX_RANK) break;
    m.sizes[j] = sizes[i];
    if ((s = mul(L, op, src.strides[i], steps[i], &m.strides[j]))) return s;
    j++;
  }
  m.rank = j;
  m.offset = offset;
  m.dense = dense_of(&m);
  return result_memref(L, op, &m);
}

static crec_status view_op(lw *L, MlirOperation op) {
  lw_memref *srcp;
  crec_status s = crec__lw_memref_get(L, op, mlirOperationGetOperand(op, 0), &srcp);
  if (s) return s;
  lw_memref src = *srcp, m;
  memset(&m, 0, sizeof m);
  uint32_t x = crec__lw_value_get(L, mlirOperationGetOperand(op, 1));
  int64_t shift;
  if (x == LW_NONE || LW_V_KIND(x) != LW_V_NODE || !crec__lw_node_int(L, LW_V_INDEX(x), &shift))
    return crec__lw_fail(L, op, CREC_ERR_MLIR, "the byte shift is dynamic where a static one is needed (a byte range)");
  MlirType rt = mlirValueGetType(mlirOperationGetResult(op, 0));
  if (!crec__lw_memref_type_ok(rt)) return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "%s", bad_result_type);
  m.buffer = src.buffer;
  int64_t base;
  if (!mul_ok(src.offset, (int64_t)src.esz, &base) || !add_ok((int64_t)src.base, base, &base) ||
      !add_ok(base, shift, &base))
    return too_large(L, op);
  m.base = (uint64_t)base;
  m.esz = crec__lw_memref_element_bytes(mlirShapedTypeGetElementType(rt));
  m.rank = (uint32_t)mlirShapedTypeGetRank(rt);
  intptr_t next = 2;
  for (uint32_t i = 0; i < m.rank; i++) {
    if (!mlirShapedTypeIsDynamicDim(rt, i)) {
      m.sizes[i] = cval(mlirShapedTypeGetDimSize(rt, i));
      continue;
    }
    uint32_t y = crec__lw_value_get(L, mlirOperationGetOperand(op, next++));
    if (y == LW_NONE || LW_V_KIND(y) != LW_V_NODE)
      return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "a dynamic size is not a host scalar");
    int64_t c;
    m.sizes[i] = crec__lw_node_int(L, LW_V_INDEX(y), &c) ? cval(c) : nval(LW_V_INDEX(y));
  }
  if ((s = identity_strides(L, op, &m))) return s;
  m.dense = true;
  return result_memref(L, op, &m);
}

static crec_status reinterpret_op(lw *L, MlirOperation op) {
  lw_memref *srcp;
  crec_status s = crec__lw_memref_get(L, op, mlirOperationGetOperand(op, 0), &srcp);
  if (s) return s;
  lw_memref m = *srcp;
  MlirType rt = mlirValueGetType(mlirOperationGetResult(op, 0));
  if (!crec__lw_memref_type_ok(rt)) return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "%s", bad_result_type);
  m.rank = (uint32_t)mlirShapedTypeGetRank(rt);
  intptr_t next = 1;
  lw_sval off;
  bool dyn;
  if ((s = mixed(L, op, "static_offsets", 0, &next, &off, &dyn))) return s;
  if (dyn) return crec__lw_fail(L, op, CREC_ERR_MLIR, "the offset is dynamic where a static one is needed (a byte range)");
  for (uint32_t i = 0; i < m.rank; i++)
    if ((s = mixed(L, op, "static_sizes", i, &next, &m.sizes[i], &dyn))) return s;
  for (uint32_t i = 0; i < m.rank; i++)
    if ((s = mixed(L, op, "static_strides", i, &next, &m.strides[i], &dyn))) return s;
  m.offset = off.value; /* the new offset counts from the source's aligned pointer */
  m.dense = dense_of(&m);
  return result_memref(L, op, &m);
}

static crec_status dim_op(lw *L, MlirOperation op) {
  lw_memref *m;
  crec_status s = crec__lw_memref_get(L, op, mlirOperationGetOperand(op, 0), &m);
  if (s) return s;
  uint32_t x = crec__lw_value_get(L, mlirOperationGetOperand(op, 1));
  int64_t d;
  if (x == LW_NONE || LW_V_KIND(x) != LW_V_NODE || !crec__lw_node_int(L, LW_V_INDEX(x), &d))
    return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "the dimension index must be a constant");
  if (d < 0 || (uint64_t)d >= m->rank)
    return crec__lw_fail(L, op, CREC_ERR_OUT_OF_RANGE, "dimension %lld of a rank-%u memref", (long long)d, m->rank);
  lw_sval v = m->sizes[d];
  uint32_t n = v.node;
  if (v.is_const && (s = crec__lw_node_const_int(L, mlirIndexTypeGet(L->ctx), v.value, &n))) return s;
  return crec__lw_value_set(L, mlirOperationGetResult(op, 0), LW_V_PACK(LW_V_NODE, n));
}

/* memref.cast: the same bytes; what the result type makes static becomes known. */
static crec_status cast_op(lw *L, MlirOperation op) {
  lw_memref *srcp;
  crec_status s = crec__lw_memref_get(L, op, mlirOperationGetOperand(op, 0), &srcp);
  if (s) return s;
  lw_memref m = *srcp;
  MlirType rt = mlirValueGetType(mlirOperationGetResult(op, 0));
  /* to an unranked memref (for gpu.host_register, printMemref*): the same memref,
   * its rank hidden from the type only; a cast back to a rank must give it that rank */
  if (mlirTypeIsAUnrankedMemRef(rt)) return result_memref(L, op, &m);
  if (!crec__lw_memref_type_ok(rt) || (uint32_t)mlirShapedTypeGetRank(rt) != m.rank)
    return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "%s", bad_result_type);
  for (uint32_t i = 0; i < m.rank; i++)
    if (!mlirShapedTypeIsDynamicDim(rt, i)) m.sizes[i] = cval(mlirShapedTypeGetDimSize(rt, i));
  MlirAttribute layout = mlirMemRefTypeGetLayout(rt);
  int64_t strides[LW_MAX_RANK], offset = 0;
  if (!mlirAttributeIsNull(layout) && !mlirAttributeIsAAffineMap(layout) &&
      mlirLogicalResultIsSuccess(mlirMemRefTypeGetStridesAndOffset(rt, strides, &offset))) {
    for (uint32_t i = 0; i < m.rank; i++)
      if (!mlirShapedTypeIsDynamicStrideOrOffset(strides[i])) m.strides[i] = cval(strides[i]);
  } else if (m.dense && (s = identity_strides(L, op, &m))) {
    return s;
  }
  bool all_const = true;
  for (uint32_t i = 0; i < m.rank; i++) all_const = all_const && m.sizes[i].is_const && m.strides[i].is_const;
  if (all_const) m.dense = dense_of(&m);
  return result_memref(L, op, &m);
}

crec_status crec__lw_memref_op(lw *L, MlirOperation op) {
  if (mlirOperationGetNumResults(op) >= 1 && crec__lw_value_get(L, mlirOperationGetResult(op, 0)) != LW_NONE)
    return CREC_OK; /* evaluated ahead of the walk */
  if (crec__lw_is(op, "memref.alloc") || crec__lw_is(op, "gpu.alloc")) return alloc_op(L, op);
  if (crec__lw_is(op, "memref.alloca"))
    return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "stack allocations live on the host; use memref.alloc for device temporaries");
  if (crec__lw_is(op, "memref.dealloc") || crec__lw_is(op, "gpu.dealloc")) return dealloc_op(L, op);
  if (crec__lw_is(op, "memref.get_global")) return get_global_op(L, op);
  if (crec__lw_is(op, "memref.subview")) return subview_op(L, op);
  if (crec__lw_is(op, "memref.view")) return view_op(L, op);
  if (crec__lw_is(op, "memref.reinterpret_cast")) return reinterpret_op(L, op);
  if (crec__lw_is(op, "memref.dim")) return dim_op(L, op);
  if (crec__lw_is(op, "memref.assume_alignment")) return CREC_OK;
  if (crec__lw_is(op, "memref.cast")) return cast_op(L, op);
  if (crec__lw_is(op, "memref.store"))
    return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED,
                   "the entry runs on the host and cannot store to device memory; use a kernel, gpu.memcpy or gpu.memset");
  return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "unsupported memref op");
}
