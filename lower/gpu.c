/* gpu.launch_func, gpu.memcpy and gpu.memset become launch, memcpy and memset
 * commands. A launch passes exactly the parameters its kernel's compiled
 * signature expects: for each memref a bare pointer, an expanded descriptor or
 * a C pointer (see lw_abi), for each scalar its value. Async tokens and
 * gpu.wait order nothing: commands are ordered by their buffer hazards. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "lower_internal.h"

void crec__lw_note_command(lw *L) { L->seq++; }

crec_status crec__lw_note_write(lw *L, MlirOperation op, crec_range r) {
  if (CREC__RESERVE(L->writes, L->cap_writes, L->num_writes + 1) != CREC_OK) return crec__oom(L->fn);
  lw_write *w = &L->writes[L->num_writes++];
  w->seq = L->seq;
  w->buffer = (uint32_t)crec__index(r.buffer.id);
  w->begin = r.offset;
  w->end = r.size == CREC_WHOLE ? UINT64_MAX : r.offset + r.size;
  w->op = op;
  w->zero = false;
  return CREC_OK;
}

/* ---- scalars for dims and arguments ---- */

static crec_status scalar_node(lw *L, MlirOperation op, MlirValue v, const char *what, uint32_t *node) {
  *node = 0; /* set on failure too: GCC's -O3 cannot see that crec__lw_fail() never returns CREC_OK */
  uint32_t x = crec__lw_value_get(L, v);
  if (x != LW_NONE && LW_V_KIND(x) == LW_V_LOAD) return crec__lw_device_read_error(L, op, LW_V_INDEX(x));
  if (x == LW_NONE || LW_V_KIND(x) != LW_V_NODE)
    return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED,
                   "%s is not a host scalar (an entry argument, a constant, or arithmetic on them)", what);
  *node = LW_V_INDEX(x);
  return CREC_OK;
}

/* A widening integer cast of a bound scalar carries the same dimension: use the
 * scalar itself rather than a derived copy of it. */
static uint32_t peel_casts(const lw *L, uint32_t n) {
  static const char *const casts[] = {"arith.index_cast", "arith.index_castui", "arith.extsi", "arith.extui",
                                      "index.casts", "index.castu", NULL};
  for (;;) {
    const lw_node *node = &L->nodes[n];
    if (node->kind != LW_NODE_OP || node->num_operands != 1 || node->is_float) return n;
    bool cast = false;
    for (const char *const *c = casts; *c; c++) cast = cast || strcmp(node->opname, *c) == 0;
    const lw_node *from = &L->nodes[node->operands[0]];
    if (!cast || from->is_float || from->bits > node->bits) return n;
    n = node->operands[0];
  }
}

static crec_status dim_of(lw *L, MlirOperation op, MlirValue v, const char *what, bool zero_ok, crec_dim *out) {
  uint32_t n;
  crec_status s = scalar_node(L, op, v, what, &n);
  if (s) return s;
  uint32_t peeled = peel_casts(L, n);
  if (L->nodes[peeled].kind == LW_NODE_INPUT) n = peeled;
  int64_t c;
  if (crec__lw_node_int(L, n, &c)) {
    if (c < (zero_ok ? 0 : 1) || c > UINT32_MAX)
      return crec__lw_fail(L, op, CREC_ERR_OUT_OF_RANGE, "%s is %lld", what, (long long)c);
    *out = crec_dim_of((uint32_t)c);
    return CREC_OK;
  }
  if (L->nodes[n].is_float) return crec__lw_fail(L, op, CREC_ERR_TYPE_MISMATCH, "%s is a float", what);
  crec_scalar sc;
  if ((s = crec__lw_node_scalar(L, op, n, &sc))) return s;
  *out = crec_dim_from(sc);
  return CREC_OK;
}

/* IEEE half and bfloat16 bits of a value exactly representable in them. */
static uint16_t half_bits(double d) {
  uint16_t sign = signbit(d) ? 0x8000 : 0;
  d = fabs(d);
  if (isnan(d)) return 0x7e00;
  if (isinf(d) || d >= 65520.0) return sign | 0x7c00;
  if (d == 0) return sign;
  int e;
  double m = frexp(d, &e); /* d = m * 2^e, 0.5 <= m < 1 */
  int exp = e - 1 + 15;
  if (exp <= 0) return sign | (uint16_t)lrint(d * 16777216.0); /* subnormal: d / 2^-24 */
  return sign | (uint16_t)(exp << 10) | (uint16_t)(lrint((m * 2 - 1) * 1024) & 0x3ff);
}

static uint16_t bfloat_bits(double d) {
  float f = (float)d;
  uint32_t u;
  memcpy(&u, &f, 4);
  if (isnan(f)) return 0x7fc0;
  u += 0x7fff + ((u >> 16) & 1); /* round to nearest even */
  return (uint16_t)(u >> 16);
}

/* The little-endian bytes of a constant node as `size` bytes. */
static bool constant_bytes(const lw_node *n, uint32_t size, uint8_t *out) {
  uint64_t bits;
  if (!n->is_float) {
    bits = (uint64_t)n->ival;
    if (n->bits == 1) bits &= 1;
  } else if (n->bits == 64) {
    memcpy(&bits, &n->fval, 8);
  } else if (n->bits == 32) {
    float f = (float)n->fval;
    uint32_t u;
    memcpy(&u, &f, 4);
    bits = u;
  } else {
    bits = strstr(n->type, "bf16") ? bfloat_bits(n->fval) : half_bits(n->fval);
  }
  if (size > 8) return false;
  for (uint32_t i = 0; i < size; i++) out[i] = (uint8_t)(bits >> (8 * i));
  return true;
}

/* ---- launch arguments ---- */

typedef struct arg_list {
  crec_arg *args;
  size_t n, cap;
} arg_list;

static crec_status push(lw *L, arg_list *a, crec_arg arg) {
  if (CREC__RESERVE(a->args, a->cap, a->n + 1) != CREC_OK) return crec__oom(L->fn);
  a->args[a->n++] = arg;
  return CREC_OK;
}

static crec_status push_i64(lw *L, arg_list *a, lw_sval v, MlirOperation op) {
  if (v.is_const) return push(L, a, crec_arg_i64(v.value));
  crec_scalar sc;
  crec_status s = crec__lw_node_scalar(L, op, v.node, &sc);
  if (s) return s;
  return push(L, a, crec_arg_scalar(sc));
}

/* The expected parameter sizes of one operand under `abi` (appended to sizes). */
static uint32_t expand(MlirType t, lw_abi abi, uint32_t *sizes, uint32_t at) {
  if (mlirTypeIsAMemRef(t)) {
    if (abi != LW_ABI_DESCRIPTOR) {
      sizes[at] = 8;
      return 1;
    }
    uint32_t n = 3 + 2 * (uint32_t)mlirShapedTypeGetRank(t);
    for (uint32_t i = 0; i < n; i++) sizes[at + i] = 8;
    return n;
  }
  /* a scalar, or a TMA descriptor: a pointer to it (tma.c) */
  uint32_t bytes = crec__lw_element_bytes(t, NULL, NULL, NULL);
  sizes[at] = bytes ? bytes : crec__lw_is_tensormap(t) ? 8 : 0;
  return 1;
}

static void sizes_text(char *buf, size_t size, const uint32_t *s, uint32_t n) {
  size_t off = 0;
  buf[0] = '\0';
  for (uint32_t i = 0; i < n && off + 16 < size; i++)
    off += (size_t)snprintf(buf + off, size - off, "%s%u", i ? "," : "", s[i]);
  if (n && off + 16 >= size) snprintf(buf + off, size - off, ",...");
}

static const char *abi_name(lw_abi a) {
  return a == LW_ABI_BARE ? "bare pointers" : a == LW_ABI_DESCRIPTOR ? "memref descriptors" : "C pointers";
}

/* Decides the calling convention and checks the operands against the compiled signature. */
static crec_status check_signature(lw *L, MlirOperation op, const lw_kernel *k, const MlirType *types, uint32_t n,
                                   lw_abi *abi) {
  const lw_module *m = &L->modules[k->module];
  uint32_t *exp = crec__malloc(sizeof(uint32_t) * (n * (3 + 2 * LW_MAX_RANK) + 1));
  if (!exp) return crec__oom(L->fn);
  lw_abi candidates[2] = {m->abi, LW_ABI_UNKNOWN};
  if (m->abi == LW_ABI_UNKNOWN) {
    if (!k->params_known) {
      crec__free(exp);
      return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED,
                     "the parameters of kernel '%s' cannot be read from the %s object of @%s; say how it takes "
                     "memrefs with crec.abi = \"bare\", \"descriptor\" or \"c\" on the gpu.binary",
                     k->entry, crec_image_format_name(m->format), m->sym);
    }
    candidates[0] = LW_ABI_BARE;
    candidates[1] = LW_ABI_DESCRIPTOR;
  }
  crec_status s = CREC_OK;
  uint32_t count = 0;
  for (int c = 0; c < 2 && candidates[c] != LW_ABI_UNKNOWN; c++) {
    count = 0;
    for (uint32_t i = 0; i < n; i++) {
      if (mlirTypeIsAMemRef(types[i]) && mlirShapedTypeGetRank(types[i]) > LW_MAX_RANK) {
        crec__free(exp);
        return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "operand %u has rank above %d", i, LW_MAX_RANK);
      }
      count += expand(types[i], candidates[c], exp, count);
    }
    if (!k->params_known) {
      *abi = candidates[c];
      goto done;
    }
    bool same = count == k->num_params;
    /* PTX widens i1 parameters; the compiled signature's size wins for scalars */
    for (uint32_t i = 0; same && i < count; i++) same = exp[i] == k->param_sizes[i] || exp[i] == 1;
    if (same) {
      *abi = candidates[c];
      goto done;
    }
  }
  {
    char got[256], expected[256];
    sizes_text(got, sizeof got, exp, count);
    sizes_text(expected, sizeof expected, k->param_sizes, k->num_params);
    s = crec__lw_fail(L, op, CREC_ERR_MLIR,
                "the launch operands do not match kernel '%s' of @%s: its compiled signature takes %u parameters "
                "(bytes: %s), the %u operands pass %u as %s (bytes: %s)",
                k->entry, m->sym, k->num_params, expected, n, count, abi_name(candidates[0]), got);
  }
done:
  crec__free(exp);
  return s;
}

static crec_status memref_args(lw *L, MlirOperation op, arg_list *a, lw_memref *mr, lw_abi abi, crec_access acc) {
  crec_range r;
  bool contiguous;
  crec_status s = crec__lw_memref_range(L, op, mr, &r, &contiguous);
  if (s) return s;
  if (abi == LW_ABI_BARE && mr->offset != 0) {
    /* the kernel adds the layout offset itself: pass the aligned pointer, and
     * declare the bytes from it (a superset of those used) */
    uint64_t lead = (uint64_t)mr->offset * mr->esz;
    r.offset -= lead;
    if (r.size != CREC_WHOLE) r.size += lead;
  }
  if ((s = push(L, a, crec_arg_buffer(r, acc)))) return s;
  if (abi != LW_ABI_DESCRIPTOR) return CREC_OK;
  /* allocated and aligned pointers both point at element 0, so the offset is 0 */
  if ((s = push(L, a, crec_arg_buffer(r, acc)))) return s;
  if ((s = push(L, a, crec_arg_i64(0)))) return s;
  for (uint32_t i = 0; i < mr->rank; i++)
    if ((s = push_i64(L, a, mr->sizes[i], op))) return s;
  for (uint32_t i = 0; i < mr->rank; i++)
    if ((s = push_i64(L, a, mr->strides[i], op))) return s;
  return CREC_OK;
}

static crec_status scalar_arg(lw *L, MlirOperation op, arg_list *a, MlirValue v, uint32_t index, uint32_t psize) {
  char what[64];
  snprintf(what, sizeof what, "kernel operand %u", index);
  uint32_t n;
  crec_status s = scalar_node(L, op, v, what, &n);
  if (s) return s;
  const lw_node *node = &L->nodes[n];
  if (node->kind == LW_NODE_CONST) {
    /* an immediate of exactly the parameter's size, its bytes kept in `value` */
    crec_arg arg = crec_arg_bytes(NULL, psize);
    if (psize == 0 || !constant_bytes(node, psize, arg.value.bytes))
      return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "%s: a %u-byte constant parameter is not supported", what, psize);
    arg.type = node->is_float ? (psize == 4 ? CREC_TYPE_F32 : psize == 8 ? CREC_TYPE_F64 : CREC_TYPE_NONE)
                              : (psize == 4 ? CREC_TYPE_I32 : psize == 8 ? CREC_TYPE_I64 : CREC_TYPE_NONE);
    return push(L, a, arg);
  }
  crec_scalar sc;
  if ((s = crec__lw_node_scalar(L, op, n, &sc))) return s;
  crec_scalar_info info;
  crec_scalar_get_info(L->p, sc, &info);
  if (crec_type_size(info.type) != psize)
    return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED,
                   "%s: the kernel parameter takes %u bytes, but scalar '%s' is a %s (%zu bytes); crec scalars are "
                   "i32, i64 (and index), f32 and f64",
                   what, psize, info.name, crec_type_name(info.type), crec_type_size(info.type));
  return push(L, a, crec_arg_scalar(sc));
}

crec_status crec__lw_launch(lw *L, MlirOperation op, crec_region region) {
  uint32_t ki;
  crec_status s = crec__lw_kernel_for_launch(L, op, &ki);
  if (s) return s;
  const lw_kernel *k = &L->kernels[ki];
  int32_t sizes[13];
  intptr_t start[13];
  crec__lw_launch_segments(op, sizes, start);
  if (sizes[12]) return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "launching on an async object (a stream) is not supported");
  crec_launch l = CREC_LAUNCH_INIT;
  l.kernel = k->handle;
  /* {crec.early_start}: the kernel waits for its predecessors itself (griddepcontrol.wait),
   * so it may start as they drain (CREC_LAUNCH_EARLY_START) */
  MlirAttribute early = crec__lw_attr(op, "crec.early_start");
  if (!mlirAttributeIsNull(early)) {
    if (!mlirAttributeIsAUnit(early))
      return crec__lw_fail(L, op, CREC_ERR_MLIR, "crec.early_start is a unit attribute ({crec.early_start}), with no value");
    l.flags |= CREC_LAUNCH_EARLY_START;
  }
  if (L->modules[k->module].waits) l.flags |= CREC_LAUNCH_EARLY_START; /* its kernels wait at entry (kernels.c) */
  static const char *const names[6] = {"grid size x", "grid size y", "grid size z",
                                       "block size x", "block size y", "block size z"};
  for (int i = 0; i < 6; i++) {
    crec_dim *d = i < 3 ? &l.grid[i] : &l.block[i - 3];
    if ((s = dim_of(L, op, mlirOperationGetOperand(op, start[1 + i]), names[i], false, d))) return s;
  }
  if (sizes[10] &&
      (s = dim_of(L, op, mlirOperationGetOperand(op, start[10]), "dynamic shared memory size", true, &l.shared_bytes)))
    return s;
  uint32_t n = (uint32_t)sizes[11];
  MlirType *types = crec__calloc(n ? n : 1, sizeof *types);
  crec_access *acc = crec__calloc(n ? n : 1, sizeof *acc);
  bool *known = crec__calloc(n ? n : 1, sizeof *known);
  arg_list a = {0};
  uint32_t *unsure = NULL; /* arguments whose read is assumed */
  size_t num_unsure = 0, cap_unsure = 0;
  crec_range *descs = NULL; /* TMA descriptors passed */
  size_t num_descs = 0, cap_descs = 0;
  if (!types || !acc || !known) {
    s = crec__oom(L->fn);
    goto done;
  }
  for (uint32_t i = 0; i < n; i++) types[i] = mlirValueGetType(mlirOperationGetOperand(op, start[11] + i));
  lw_abi abi = LW_ABI_UNKNOWN;
  if ((s = check_signature(L, op, k, types, n, &abi))) goto done;
  if ((s = crec__lw_kernel_access(L, op, k, types, n, acc, known))) goto done;
  for (uint32_t i = 0; i < n; i++) {
    MlirValue v = mlirOperationGetOperand(op, start[11] + i);
    if (mlirTypeIsAMemRef(types[i])) {
      lw_memref *mr;
      if ((s = crec__lw_memref_get(L, op, v, &mr)) || (s = crec__lw_memref_live(L, op, mr))) goto done;
      size_t before = a.n;
      if ((s = memref_args(L, op, &a, mr, abi, acc[i]))) goto done;
      for (size_t j = before; j < a.n && !known[i]; j++) {
        if (a.args[j].kind != CREC_ARG_BUFFER) continue;
        if (CREC__RESERVE(unsure, cap_unsure, num_unsure + 1) != CREC_OK) {
          s = crec__oom(L->fn);
          goto done;
        }
        unsure[num_unsure++] = (uint32_t)j;
      }
    } else if (crec__lw_element_bytes(types[i], NULL, NULL, NULL) && !mlirTypeIsAVector(types[i])) {
      uint32_t psize = k->params_known && a.n < k->num_params ? k->param_sizes[a.n]
                                                               : crec__lw_element_bytes(types[i], NULL, NULL, NULL);
      if ((s = scalar_arg(L, op, &a, v, i, psize))) goto done;
    } else if (crec__lw_is_tensormap(types[i])) {
      /* the descriptor's temporary, which the kernel's TMA copies only read */
      lw_memref *mr;
      crec_range r;
      bool contiguous;
      if ((s = crec__lw_memref_get(L, op, v, &mr)) || (s = crec__lw_memref_range(L, op, mr, &r, &contiguous)) ||
          (s = push(L, &a, crec_arg_buffer(r, CREC_ACCESS_READ))))
        goto done;
      if (CREC__RESERVE(descs, cap_descs, num_descs + 1) != CREC_OK) {
        s = crec__oom(L->fn);
        goto done;
      }
      descs[num_descs++] = r;
    } else {
      s = crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED,
                        "kernel operand %u has a type crec cannot pass (memrefs, scalars and TMA descriptors only)", i);
      goto done;
    }
  }
  l.args = a.args;
  l.num_args = a.n;
  /* a TMA descriptor's tensor, which the kernel reaches through it: ordered before and after */
  for (size_t i = 0; i < num_descs && !s; i++) s = crec__lw_tensormap_use(L, op, region, descs[i]);
  if (s) goto done;
  char name[256];
  crec_command cmd;
  if ((s = crec_program_add_launch(L->p, region, crec__lw_command_name(op, name, sizeof name), &l, &cmd))) {
    s = crec__lw_fail_builder(L, op, s);
    goto done;
  }
  for (size_t i = 0; i < a.n; i++)
    if (a.args[i].kind == CREC_ARG_BUFFER && (a.args[i].access & CREC_ACCESS_WRITE) &&
        (s = crec__lw_note_write(L, op, a.args[i].range)))
      goto done;
  for (size_t i = 0; i < num_unsure; i++)
    if ((s = crec__lw_note_unsure(L, cmd, unsure[i]))) goto done;
  crec__lw_note_command(L);
  for (size_t i = 0; i < num_descs && !s; i++) s = crec__lw_tensormap_use(L, op, region, descs[i]);
done:
  crec__free(descs);
  crec__free(types);
  crec__free(acc);
  crec__free(known);
  crec__free(unsure);
  crec__free(a.args);
  return s;
}

/* ---- copies and fills ---- */

static crec_status contiguous_range(lw *L, MlirOperation op, MlirValue v, const char *what, crec_range *r,
                                    lw_memref **mr) {
  crec_status s = crec__lw_memref_get(L, op, v, mr);
  if (s || (s = crec__lw_memref_live(L, op, *mr))) return s;
  bool contiguous;
  if ((s = crec__lw_memref_range(L, op, *mr, r, &contiguous))) return s;
  if (!contiguous)
    return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "the %s is not contiguous; copies and fills need a dense byte range",
                   what);
  return CREC_OK;
}

/* linalg.copy and linalg.fill on tensors have results; on memrefs they are commands. */
static crec_status linalg_on_memrefs(lw *L, MlirOperation op) {
  if (mlirOperationGetNumResults(op) == 0) return CREC_OK;
  return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED,
                       "on tensors: crec lowers it on memrefs (bufferize first, e.g. with one-shot-bufferize)");
}

/* The element type of a memref value, printed (for messages). */
static char *element_type_text(MlirValue v) {
  MlirType t = mlirValueGetType(v);
  return crec__lw_type_string(mlirShapedTypeGetElementType(t));
}

crec_status crec__lw_memcpy(lw *L, MlirOperation op, crec_region region) {
  /* gpu.memcpy [deps] dst, src; memref.copy src, dst; linalg.copy ins(src) outs(dst) */
  intptr_t n = mlirOperationGetNumOperands(op);
  bool linalg = crec__lw_is(op, "linalg.copy");
  bool copy = linalg || crec__lw_is(op, "memref.copy");
  crec_status s;
  if (linalg && ((s = linalg_on_memrefs(L, op)))) return s;
  MlirValue dv = mlirOperationGetOperand(op, copy ? n - 1 : n - 2), sv = mlirOperationGetOperand(op, copy ? n - 2 : n - 1);
  if (linalg && (!mlirTypeIsAMemRef(mlirValueGetType(dv)) || !mlirTypeIsAMemRef(mlirValueGetType(sv))))
    return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "crec copies between memrefs");
  if (linalg && !mlirTypeEqual(mlirShapedTypeGetElementType(mlirValueGetType(dv)),
                               mlirShapedTypeGetElementType(mlirValueGetType(sv)))) {
    char *a = element_type_text(sv), *b = element_type_text(dv);
    s = crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED,
                      "a copy from %s to %s elements converts them; crec copies bytes (convert in a kernel)",
                      a ? a : "?", b ? b : "?");
    crec__free(a);
    crec__free(b);
    return s;
  }
  crec_range dst, src;
  lw_memref *md, *ms;
  s = contiguous_range(L, op, dv, "destination", &dst, &md);
  if (s || (s = contiguous_range(L, op, sv, "source", &src, &ms))) return s;
  char name[256];
  crec_command cmd;
  if ((s = crec_program_add_memcpy(L->p, region, crec__lw_command_name(op, name, sizeof name), dst, src, &cmd)))
    return crec__lw_fail_builder(L, op, s);
  if ((s = crec__lw_note_write(L, op, dst))) return s;
  crec__lw_note_command(L);
  return CREC_OK;
}

/* A fill of host memory (a host temporary: memory host code touches, or a
 * gpu.alloc host_shared): memset nodes write device memory only, so a host
 * callback fills it, in stream order like the memset would. */
typedef struct host_fill {
  uint64_t bytes;
  uint32_t value, esz;
} host_fill;

static void run_host_fill(void *user, void *const *addresses, size_t count) {
  const host_fill *f = user;
  if (count < 1) return;
  uint8_t *d = addresses[0];
  for (uint64_t at = 0; at + f->esz <= f->bytes; at += f->esz)
    for (uint32_t k = 0; k < f->esz; k++) d[at + k] = (uint8_t)(f->value >> (8 * k));
}

static crec_status fill_host(lw *L, MlirOperation op, crec_region region, crec_range dst, uint64_t bytes,
                             uint32_t value, uint32_t esz) {
  host_fill *f = crec__malloc(sizeof *f);
  if (!f) return crec__oom(L->fn);
  *f = (host_fill){bytes, value, esz};
  crec_operand o = crec_operand_of(dst, CREC_ACCESS_WRITE);
  crec_host_callback cb = CREC_HOST_CALLBACK_INIT;
  cb.fn_buffers = run_host_fill;
  cb.user = f;
  cb.user_free = crec__free;
  cb.operands = &o;
  cb.num_operands = 1;
  char name[256];
  const char *label = crec__lw_command_name(op, name, sizeof name);
  crec_command cmd;
  crec_status s = crec_program_add_host_callback(L->p, region, label ? label : "host fill", &cb, &cmd);
  if (s) {
    crec__free(f);
    return crec__lw_fail_builder(L, op, s);
  }
  return CREC_OK;
}

/* A fill of `dv` with the constant `vv`: gpu.memset, linalg.fill. */
static crec_status fill(lw *L, MlirOperation op, crec_region region, MlirValue dv, MlirValue vv) {
  crec_range dst;
  lw_memref *md;
  crec_status s = contiguous_range(L, op, dv, "destination", &dst, &md);
  if (s) return s;
  uint32_t node;
  if ((s = scalar_node(L, op, vv, "the fill value", &node))) return s;
  if (L->nodes[node].kind != LW_NODE_CONST)
    return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "the fill value must be a constant (crec fills with a fixed pattern)");
  uint8_t b[8] = {0};
  uint32_t esz = md->esz;
  if (esz > 8 || !constant_bytes(&L->nodes[node], esz, b))
    return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "a fill of %u-byte elements is not supported", esz);
  if (esz == 8) {
    /* an 8-byte pattern whose halves are equal is a 4-byte fill */
    if (memcmp(b, b + 4, 4) != 0)
      return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED,
                     "an 8-byte fill value is supported only when its two 4-byte halves are equal (like 0)");
    esz = 4;
  }
  uint32_t value = 0;
  for (uint32_t i = 0; i < esz; i++) value |= (uint32_t)b[i] << (8 * i);
  char name[256];
  crec_command cmd;
  const lw_buf *buf = &L->bufs[md->buffer];
  if (buf->host && buf->kind == CREC_BUFFER_TEMPORARY) {
    uint64_t bytes = dst.size == CREC_WHOLE ? buf->size - dst.offset : dst.size;
    if ((s = fill_host(L, op, region, dst, bytes, value, esz))) return s;
  } else if ((s = crec_program_add_memset(L->p, region, crec__lw_command_name(op, name, sizeof name), dst, value, esz,
                                          &cmd))) {
    return crec__lw_fail_builder(L, op, s);
  }
  if ((s = crec__lw_note_write(L, op, dst))) return s;
  /* a linalg convolution may follow a fill with zero bytes: it overwrites what it would add to */
  L->writes[L->num_writes - 1].zero = value == 0;
  crec__lw_note_command(L);
  return CREC_OK;
}

crec_status crec__lw_memset(lw *L, MlirOperation op, crec_region region) {
  intptr_t n = mlirOperationGetNumOperands(op);
  return fill(L, op, region, mlirOperationGetOperand(op, n - 2), mlirOperationGetOperand(op, n - 1));
}

crec_status crec__lw_fill(lw *L, MlirOperation op, crec_region region) {
  /* linalg.fill ins(value) outs(dst) */
  crec_status s = linalg_on_memrefs(L, op);
  if (s) return s;
  if (mlirOperationGetNumOperands(op) != 2 || !mlirTypeIsAMemRef(mlirValueGetType(mlirOperationGetOperand(op, 1))))
    return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "crec fills one memref with one value");
  MlirValue dv = mlirOperationGetOperand(op, 1), vv = mlirOperationGetOperand(op, 0);
  MlirType et = mlirShapedTypeGetElementType(mlirValueGetType(dv)), vt = mlirValueGetType(vv);
  if (!mlirTypeEqual(et, vt)) {
    char *a = crec__lw_type_string(vt), *b = crec__lw_type_string(et);
    s = crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED,
                      "a fill of %s elements with a %s value converts it; write the constant as %s (crec fills "
                      "with its bytes)",
                      b ? b : "?", a ? a : "?", b ? b : "?");
    crec__free(a);
    crec__free(b);
    return s;
  }
  return fill(L, op, region, dv, vv);
}
