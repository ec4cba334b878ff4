/* Library commands from MLIR (library.h). linalg.matmul and linalg.batch_matmul
 * on memrefs and "crec.gemm" become GEMMs; "crec.fft" becomes an FFT (XLA's Fft,
 * through cuFFT); "crec.cholesky" a Cholesky factorization (XLA's Cholesky, in
 * place, through cuSOLVER); the linalg convolutions whose tensors lie in memory as
 * cuDNN's do (right after a zero fill of their output: linalg accumulates, cuDNN
 * overwrites) and "crec.conv" (XLA's convolution's names) a convolution; "crec.all_reduce", "crec.all_gather", "crec.reduce_scatter",
 * "crec.all_to_all" and "crec.collective_permute" become collectives over
 * communicator slots named by their ops, "crec.collective_done" finishes an
 * async start; "crec.custom_call" becomes a custom command for a
 * handler registered at run time.
 *
 * The crec.* ops are unregistered generic ops, so MLIR checks nothing about
 * them: every operand and attribute is checked here, and an attribute crec does
 * not know is an error rather than silently ignored (a misspelt transpose_a
 * would otherwise compute another product). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "lower_internal.h"

#include "crec/feed.h"

/* ---- attributes ---- */

static bool named(MlirStringRef s, const char *name) { return s.length == strlen(name) && memcmp(s.data, name, s.length) == 0; }

/* Fails on an attribute of a crec.* op that is not in `known` (crec.name is always allowed). */
static crec_status check_attributes(lw *L, MlirOperation op, const char *const *known) {
  intptr_t n = mlirOperationGetNumDiscardableAttributes(op);
  for (intptr_t i = 0; i < n; i++) {
    MlirStringRef name = mlirIdentifierStr(mlirOperationGetDiscardableAttribute(op, i).name);
    bool ok = named(name, "crec.name");
    for (const char *const *k = known; !ok && *k; k++) ok = named(name, *k);
    if (ok) continue;
    char list[512];
    size_t off = 0;
    list[0] = '\0';
    for (const char *const *k = known; *k && off < sizeof list; k++)
      off += (size_t)snprintf(list + off, sizeof list - off, "%s, ", *k);
    return crec__lw_fail(L, op, CREC_ERR_MLIR, "unknown attribute '%.*s' (it takes %screc.name)", (int)name.length, name.data,
                   list);
  }
  return CREC_OK;
}

/* The op has no results and no regions (crec.* ops only act on their operands). */
static crec_status no_results(lw *L, MlirOperation op) {
  if (mlirOperationGetNumResults(op) || mlirOperationGetNumRegions(op))
    return crec__lw_fail(L, op, CREC_ERR_MLIR, "takes no results or regions: it writes into its memref operands");
  return CREC_OK;
}

/* A unit attribute (`transpose_a` alone) or a bool; absent is false. */
static crec_status flag_attr(lw *L, MlirOperation op, const char *name, bool *out) {
  MlirAttribute a = crec__lw_attr(op, name);
  *out = false;
  if (mlirAttributeIsNull(a)) return CREC_OK;
  if (mlirAttributeIsAUnit(a)) *out = true;
  else if (mlirAttributeIsABool(a)) *out = mlirBoolAttrGetValue(a);
  else return crec__lw_fail(L, op, CREC_ERR_MLIR, "%s must be a unit attribute (written '%s' alone) or a bool", name, name);
  return CREC_OK;
}

/* A float (or integer) attribute; `fallback` when absent. */
static crec_status float_attr(lw *L, MlirOperation op, const char *name, double fallback, double *out) {
  MlirAttribute a = crec__lw_attr(op, name);
  *out = fallback;
  if (mlirAttributeIsNull(a)) return CREC_OK;
  if (mlirAttributeIsAFloat(a)) *out = mlirFloatAttrGetValueDouble(a);
  else if (mlirAttributeIsAInteger(a)) *out = (double)mlirIntegerAttrGetValueInt(a);
  else return crec__lw_fail(L, op, CREC_ERR_MLIR, "%s must be a number, like '%s = 2.0 : f64'", name, name);
  return CREC_OK;
}

/* An integer attribute; *present tells whether it is there. */
static crec_status int_attr(lw *L, MlirOperation op, const char *name, int64_t *out, bool *present) {
  MlirAttribute a = crec__lw_attr(op, name);
  *out = 0;
  *present = !mlirAttributeIsNull(a);
  if (!*present) return CREC_OK;
  if (!mlirAttributeIsAInteger(a))
    return crec__lw_fail(L, op, CREC_ERR_MLIR, "%s must be an integer, like '%s = 4 : i64'", name, name);
  *out = mlirIntegerAttrGetValueInt(a);
  return CREC_OK;
}

/* A non-empty string attribute copied into `buf`; *present tells whether it is there. */
static crec_status string_attr(lw *L, MlirOperation op, const char *name, char *buf, size_t size, bool *present) {
  MlirAttribute a = crec__lw_attr(op, name);
  buf[0] = '\0';
  *present = !mlirAttributeIsNull(a);
  if (!*present) return CREC_OK;
  if (!mlirAttributeIsAString(a)) return crec__lw_fail(L, op, CREC_ERR_MLIR, "%s must be a string", name);
  MlirStringRef s = mlirStringAttrGetValue(a);
  if (s.length == 0 || s.length >= size || memchr(s.data, '\0', s.length))
    return crec__lw_fail(L, op, CREC_ERR_MLIR, "%s must be a non-empty string of fewer than %zu bytes", name, size);
  memcpy(buf, s.data, s.length);
  buf[s.length] = '\0';
  return CREC_OK;
}

/* Prints a type into `buf` ("?" when it does not fit). */
static const char *type_text(MlirType t, char *buf, size_t size) {
  char *s = crec__lw_type_string(t);
  snprintf(buf, size, "%s", s && strlen(s) < size ? s : "?");
  crec__free(s);
  return buf;
}

/* ---- memref operands ---- */

/* Operand `i` as a memref of the front end; `what` names it in messages. */
static crec_status memref_operand(lw *L, MlirOperation op, intptr_t i, const char *what, lw_memref **m, MlirType *et) {
  MlirValue v = mlirOperationGetOperand(op, i);
  MlirType t = mlirValueGetType(v);
  if (!mlirTypeIsAMemRef(t)) {
    char ts[128];
    return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "%s has type %s; it must be a memref%s", what, type_text(t, ts, sizeof ts),
                   mlirTypeIsATensor(t) ? " (crec lowers library ops on memrefs: bufferize tensors first)" : "");
  }
  crec_status s = crec__lw_memref_get(L, op, v, m);
  if (s || (s = crec__lw_memref_live(L, op, *m))) return s;
  *et = mlirShapedTypeGetElementType(t);
  return CREC_OK;
}

static void strides_text(const lw_memref *m, char *buf, size_t size) {
  size_t off = (size_t)snprintf(buf, size, "[");
  for (uint32_t i = 0; i < m->rank && off < size; i++)
    off += (size_t)snprintf(buf + off, size - off, "%s%lld", i ? ", " : "", (long long)m->strides[i].value);
  if (off < size) snprintf(buf + off, size - off, "]");
}

/* ---- GEMM ---- */

/* A GEMM operand: one matrix (rank 2) or a batch of them (rank 3). */
typedef struct lw_matrix {
  crec_matrix m;
  uint64_t batch;
  uint32_t rank;
  crec_element type;
  MlirType et;
} lw_matrix;

static bool gemm_element(MlirType et, crec_element *out) {
  if (mlirTypeIsAF32(et)) *out = CREC_ELEMENT_F32;
  else if (mlirTypeIsAF16(et)) *out = CREC_ELEMENT_F16;
  else if (mlirTypeIsABF16(et)) *out = CREC_ELEMENT_BF16;
  else return false;
  return true;
}

/* Reads operand `i` as a row-major matrix: unit innermost stride, the row stride
 * as ld, the batch stride as is (0 when packed). */
static crec_status matrix_operand(lw *L, MlirOperation op, intptr_t i, const char *what, lw_matrix *out) {
  lw_memref *m;
  crec_status s = memref_operand(L, op, i, what, &m, &out->et);
  if (s) return s;
  char ts[128];
  if (!gemm_element(out->et, &out->type))
    return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "%s has %s elements; a GEMM takes f32, f16 or bf16", what,
                   type_text(out->et, ts, sizeof ts));
  if (m->rank != 2 && m->rank != 3)
    return crec__lw_fail(L, op, CREC_ERR_MLIR, "%s has rank %u; a GEMM operand is a matrix (rank 2) or a batch of matrices "
                   "(rank 3)", what, m->rank);
  for (uint32_t d = 0; d < m->rank; d++)
    if (!m->sizes[d].is_const || !m->strides[d].is_const)
      return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "%s has a dynamic %s; a GEMM needs static shapes and strides", what,
                     m->sizes[d].is_const ? "stride" : "size");
  uint32_t r = m->rank;
  int64_t rows = m->sizes[r - 2].value, cols = m->sizes[r - 1].value, batch = r == 3 ? m->sizes[0].value : 1;
  int64_t ld = rows > 1 ? m->strides[r - 2].value : cols, bstride = 0;
  const char *bad = NULL;
  if (cols > 1 && m->strides[r - 1].value != 1) bad = "its innermost stride must be 1 (row-major)";
  else if (rows > 1 && ld < cols) bad = "its row stride must be at least its number of columns (rows may not overlap "
                                        "or run backwards)";
  else if (batch > 1 && m->strides[0].value <= 0) bad = "its batch stride must be positive";
  if (bad) {
    char st[160];
    strides_text(m, st, sizeof st);
    return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "non-identity layout: %s has strides %s; %s", what, st, bad);
  }
  if (batch > 1 && m->strides[0].value != rows * ld) bstride = m->strides[0].value;
  crec_range range;
  bool contiguous;
  if ((s = crec__lw_memref_range(L, op, m, &range, &contiguous))) return s;
  out->m = crec_matrix_of(range, (uint64_t)rows, (uint64_t)cols);
  if (ld != cols) out->m.ld = (uint64_t)ld;
  out->m.batch_stride = (uint64_t)bstride;
  out->batch = (uint64_t)batch;
  out->rank = r;
  return CREC_OK;
}

static crec_status add_gemm(lw *L, MlirOperation op, crec_region region, const crec_gemm *g) {
  char name[256];
  crec_command cmd;
  crec_status s = crec_program_add_gemm(L->p, region, crec__lw_command_name(op, name, sizeof name), g, &cmd);
  if (s) return crec__lw_fail_builder(L, op, s);
  if ((s = crec__lw_note_write(L, op, g->d.range))) return s;
  crec__lw_note_command(L);
  return CREC_OK;
}

/* linalg.matmul ins(A: MxK, B: KxN) outs(C: MxN): C += A·B (batch_matmul: per batch). */
static crec_status linalg_matmul(lw *L, MlirOperation op, crec_region region) {
  bool batched = crec__lw_is(op, "linalg.batch_matmul");
  if (mlirOperationGetNumResults(op) > 0)
    return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "linalg on tensors is not lowered: crec lowers it on memrefs "
                   "(bufferize first)");
  if (mlirOperationGetNumOperands(op) != 3)
    return crec__lw_fail(L, op, CREC_ERR_MLIR, "expected ins(A, B) outs(C)");
  lw_matrix a, b, c;
  crec_status s;
  if ((s = matrix_operand(L, op, 0, "A", &a)) || (s = matrix_operand(L, op, 1, "B", &b)) ||
      (s = matrix_operand(L, op, 2, "C", &c)))
    return s;
  uint32_t rank = batched ? 3 : 2;
  if (a.rank != rank || b.rank != rank || c.rank != rank)
    return crec__lw_fail(L, op, CREC_ERR_MLIR, "expected operands of rank %u", rank);
  /* one type, or f32 products of f16 or bf16 inputs */
  bool widened = c.type == CREC_ELEMENT_F32 && (a.type == CREC_ELEMENT_F16 || a.type == CREC_ELEMENT_BF16);
  if (a.type != b.type || (a.type != c.type && !widened)) {
    char ta[64], tb[64], tc[64];
    return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "mixed element types (A %s, B %s, C %s): crec's GEMM reads A "
                   "and B of one type, and writes C of that type, or f32 from f16 or bf16",
                   type_text(a.et, ta, sizeof ta), type_text(b.et, tb, sizeof tb), type_text(c.et, tc, sizeof tc));
  }
  crec_gemm g = CREC_GEMM_INIT;
  g.type = a.type;
  g.output_type = c.type;
  g.batch = batched ? a.batch : 1;
  g.a = a.m;
  g.b = b.m;
  g.d = c.m;
  /* linalg accumulates into its output: C is D, with beta 1 */
  g.beta = 1.0;
  return add_gemm(L, op, region, &g);
}

/* "crec.gemm"(%a, %b, %d[, %c][, %bias]) {transpose_a, transpose_b, alpha, beta, has_c, epilogue, workspace_bytes} */
static crec_status crec_gemm_op(lw *L, MlirOperation op, crec_region region) {
  static const char *const known[] = {"transpose_a", "transpose_b", "alpha", "beta", "has_c", "epilogue",
                                      "workspace_bytes", NULL};
  crec_status s;
  if ((s = check_attributes(L, op, known)) || (s = no_results(L, op))) return s;
  crec_gemm g = CREC_GEMM_INIT;
  bool ta, tb, has_c, present;
  int64_t ws;
  char epi[32];
  if ((s = flag_attr(L, op, "transpose_a", &ta)) || (s = flag_attr(L, op, "transpose_b", &tb)) ||
      (s = flag_attr(L, op, "has_c", &has_c)) || (s = float_attr(L, op, "alpha", 1.0, &g.alpha)) ||
      (s = float_attr(L, op, "beta", 0.0, &g.beta)) || (s = int_attr(L, op, "workspace_bytes", &ws, &present)) ||
      (s = string_attr(L, op, "epilogue", epi, sizeof epi, &present)))
    return s;
  if (ws < 0) return crec__lw_fail(L, op, CREC_ERR_MLIR, "workspace_bytes is %lld; it must be 0 (the default) or more", (long long)ws);
  g.workspace_bytes = (uint64_t)ws;
  g.transpose_a = ta;
  g.transpose_b = tb;
  static const char *const epilogues[] = {"none", "bias", "relu", "bias_relu"};
  if (present) {
    int e = 0;
    while (e < 4 && strcmp(epi, epilogues[e]) != 0) e++;
    if (e == 4)
      return crec__lw_fail(L, op, CREC_ERR_MLIR, "unknown epilogue '%s' (none, bias, relu or bias_relu)", epi);
    g.epilogue = (crec_gemm_epilogue)e;
  }
  bool has_bias = g.epilogue == CREC_GEMM_EPILOGUE_BIAS || g.epilogue == CREC_GEMM_EPILOGUE_BIAS_RELU;
  intptr_t want = 3 + has_c + has_bias, n = mlirOperationGetNumOperands(op);
  if (n != want)
    return crec__lw_fail(L, op, CREC_ERR_MLIR, "takes %d operands with these attributes (a, b, d%s%s), but has %d", (int)want,
                   has_c ? ", c (has_c)" : "", has_bias ? ", bias (the epilogue)" : "", (int)n);
  lw_matrix m[4];
  static const char *const names[4] = {"'a'", "'b'", "'d'", "'c'"};
  for (int i = 0; i < 3 + has_c; i++)
    if ((s = matrix_operand(L, op, i, names[i], &m[i]))) return s;
  for (int i = 1; i < 3 + has_c; i++) {
    if (m[i].type != m[0].type) {
      char t0[64], ti[64];
      return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "mixed element types ('a' %s, %s %s): crec's GEMM reads and writes "
                     "one element type", type_text(m[0].et, t0, sizeof t0), names[i], type_text(m[i].et, ti, sizeof ti));
    }
    if (m[i].rank != m[0].rank)
      return crec__lw_fail(L, op, CREC_ERR_INVALID_ARGUMENT, "shape mismatch: %s has rank %u but 'a' rank %u (a batched GEMM "
                     "takes every matrix operand as a batch, rank 3)", names[i], m[i].rank, m[0].rank);
    if (m[i].batch != m[0].batch)
      return crec__lw_fail(L, op, CREC_ERR_INVALID_ARGUMENT, "shape mismatch: %s holds a batch of %llu matrices but 'a' %llu",
                     names[i], (unsigned long long)m[i].batch, (unsigned long long)m[0].batch);
  }
  g.type = m[0].type;
  g.batch = m[0].batch;
  g.a = m[0].m;
  g.b = m[1].m;
  g.d = m[2].m;
  if (has_c) g.c = m[3].m;
  if (has_bias) {
    lw_memref *bm;
    MlirType et;
    if ((s = memref_operand(L, op, want - 1, "the bias", &bm, &et))) return s;
    if (!mlirTypeEqual(et, m[0].et)) {
      char t0[64], tb2[64];
      return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "mixed element types ('a' %s, bias %s): crec's GEMM reads and "
                     "writes one element type", type_text(m[0].et, t0, sizeof t0), type_text(et, tb2, sizeof tb2));
    }
    bool contiguous;
    if ((s = crec__lw_memref_range(L, op, bm, &g.bias, &contiguous))) return s;
    uint64_t cols = g.d.cols;
    if (bm->rank != 1 || !bm->sizes[0].is_const || !contiguous)
      return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "the bias must be a dense memref of rank 1 and static size (one "
                     "element per column of d)");
    if ((uint64_t)bm->sizes[0].value != cols)
      return crec__lw_fail(L, op, CREC_ERR_INVALID_ARGUMENT, "shape mismatch: the bias has %lld elements but d has %llu "
                     "columns", (long long)bm->sizes[0].value, (unsigned long long)cols);
  }
  return add_gemm(L, op, region, &g);
}

/* Checks that memref `m` (`what` in messages) has a static shape and is dense,
 * for `needs` ("an FFT"); its range, and *count (may be NULL) its elements. */
static crec_status dense_static(lw *L, MlirOperation op, const char *what, const char *needs, const lw_memref *m,
                                crec_range *range, uint64_t *count) {
  for (uint32_t d = 0; d < m->rank; d++)
    if (!m->sizes[d].is_const || !m->strides[d].is_const)
      return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "%s has a dynamic %s (dimension %u); %s needs static shapes",
                           what, m->sizes[d].is_const ? "stride" : "size", d, needs);
  bool contiguous;
  crec_status s = crec__lw_memref_range(L, op, m, range, &contiguous);
  if (s) return s;
  if (!contiguous) {
    char st[160];
    strides_text(m, st, sizeof st);
    return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "non-identity layout: %s has strides %s; %s reads and writes "
                         "dense row-major memrefs (an identity layout, or a view without gaps)", what, st, needs);
  }
  if (count) {
    *count = 1;
    for (uint32_t d = 0; d < m->rank; d++) *count *= (uint64_t)m->sizes[d].value;
  }
  return CREC_OK;
}

/* ---- FFT ---- */

/* XLA's fft_type names, in crec_fft_type order (XLA's FftType numbers them the same: FFT 0 to IRFFT 3). */
static const char *const fft_types[] = {"FFT", "IFFT", "RFFT", "IRFFT"};

/* An integer attribute's value, whatever its signedness; false when `a` is not an
 * integer of 2 to 64 bits or an index (a bool is not a number here), or is an
 * unsigned one above INT64_MAX. MLIR is only asked for what the type can give. */
static bool integer_value(MlirAttribute a, int64_t *out) {
  if (mlirAttributeIsNull(a) || !mlirAttributeIsAInteger(a)) return false;
  MlirType t = mlirAttributeGetType(a);
  if (mlirTypeIsAIndex(t)) {
    *out = mlirIntegerAttrGetValueInt(a);
    return true;
  }
  if (!mlirTypeIsAInteger(t) || mlirIntegerTypeGetWidth(t) < 2 || mlirIntegerTypeGetWidth(t) > 64) return false;
  if (mlirIntegerTypeIsUnsigned(t)) {
    uint64_t u = mlirIntegerAttrGetValueUInt(a);
    if (u > (uint64_t)INT64_MAX) return false;
    *out = (int64_t)u;
  } else {
    *out = mlirIntegerTypeIsSigned(t) ? mlirIntegerAttrGetValueSInt(a) : mlirIntegerAttrGetValueInt(a);
  }
  return true;
}

/* fft_type = "FFT" | "IFFT" | "RFFT" | "IRFFT" (required), or XLA's FftType number 0 to 3. */
static crec_status fft_type_attr(lw *L, MlirOperation op, crec_fft_type *out) {
  MlirAttribute a = crec__lw_attr(op, "fft_type");
  if (mlirAttributeIsNull(a))
    return crec__lw_fail(L, op, CREC_ERR_MLIR,
                         "needs fft_type = \"FFT\", \"IFFT\", \"RFFT\" or \"IRFFT\" (XLA's names)");
  if (mlirAttributeIsAString(a)) {
    MlirStringRef v = mlirStringAttrGetValue(a);
    for (int t = 0; t < 4; t++)
      if (named(v, fft_types[t])) {
        *out = (crec_fft_type)t;
        return CREC_OK;
      }
    return crec__lw_fail(L, op, CREC_ERR_MLIR, "unknown fft_type '%.*s' (FFT, IFFT, RFFT or IRFFT, as XLA names them)",
                         v.length > 64 ? 64 : (int)v.length, v.data);
  }
  int64_t v;
  if (integer_value(a, &v)) {
    if (v >= 0 && v <= 3) {
      *out = (crec_fft_type)v;
      return CREC_OK;
    }
    return crec__lw_fail(L, op, CREC_ERR_MLIR, "fft_type is %lld; as a number it is XLA's FftType: 0 (FFT), 1 (IFFT), "
                         "2 (RFFT) or 3 (IRFFT)", (long long)v);
  }
  return crec__lw_fail(L, op, CREC_ERR_MLIR, "fft_type must be a string, \"FFT\", \"IFFT\", \"RFFT\" or \"IRFFT\" (or "
                       "XLA's FftType number, 0 to 3 : i64)");
}

/* fft_length (required): 1 to 3 positive lengths, as [8, 16], array<i64: 8, 16>
 * (or array<i32: ...>) or MHLO's dense<[8, 16]> : tensor<2xi64> (or i32). */
static crec_status fft_length_attr(lw *L, MlirOperation op, uint64_t length[3], uint32_t *rank) {
  static const char form[] = "fft_length must be a list of 1 to 3 integers, like [8, 16] or array<i64: 8, 16>";
  MlirAttribute a = crec__lw_attr(op, "fft_length");
  if (mlirAttributeIsNull(a))
    return crec__lw_fail(L, op, CREC_ERR_MLIR, "needs fft_length, the lengths it transforms (the trailing dimensions "
                         "of the real side), like fft_length = [8, 16]");
  enum { LIST, I64S, I32S, DENSE } kind;
  intptr_t n;
  int dense_bits = 0;
  if (mlirAttributeIsAArray(a)) {
    kind = LIST;
    n = mlirArrayAttrGetNumElements(a);
  } else if (mlirAttributeIsADenseI64Array(a) || mlirAttributeIsADenseI32Array(a)) {
    kind = mlirAttributeIsADenseI64Array(a) ? I64S : I32S;
    n = mlirDenseArrayGetNumElements(a);
  } else if (mlirAttributeIsADenseIntElements(a)) {
    MlirType t = mlirAttributeGetType(a), et = mlirShapedTypeGetElementType(t);
    if (mlirShapedTypeGetRank(t) != 1 || !mlirTypeIsAInteger(et) || !mlirIntegerTypeIsSignless(et) ||
        (mlirIntegerTypeGetWidth(et) != 64 && mlirIntegerTypeGetWidth(et) != 32))
      return crec__lw_fail(L, op, CREC_ERR_MLIR, "%s (a dense one is a tensor of rank 1 of i64 or i32)", form);
    kind = DENSE;
    dense_bits = (int)mlirIntegerTypeGetWidth(et);
    n = (intptr_t)mlirElementsAttrGetNumElements(a);
  } else {
    return crec__lw_fail(L, op, CREC_ERR_MLIR, "%s", form);
  }
  if (n < 1 || n > 3)
    return crec__lw_fail(L, op, CREC_ERR_MLIR, "fft_length has %lld lengths; an FFT transforms 1 to 3 dimensions",
                         (long long)n);
  for (intptr_t i = 0; i < n; i++) {
    int64_t v = 0;
    if (kind == LIST) {
      if (!integer_value(mlirArrayAttrGetElement(a, i), &v))
        return crec__lw_fail(L, op, CREC_ERR_MLIR, "fft_length[%d] is not an integer; %s", (int)i, form);
    } else if (kind == I64S) {
      v = mlirDenseI64ArrayGetElement(a, i);
    } else if (kind == I32S) {
      v = mlirDenseI32ArrayGetElement(a, i);
    } else {
      v = dense_bits == 64 ? mlirDenseElementsAttrGetInt64Value(a, i) : mlirDenseElementsAttrGetInt32Value(a, i);
    }
    if (v < 1)
      return crec__lw_fail(L, op, CREC_ERR_MLIR, "fft_length[%d] is %lld; every length must be positive", (int)i,
                           (long long)v);
    length[i] = (uint64_t)v;
  }
  *rank = (uint32_t)n;
  return CREC_OK;
}

/* Dimensions [from, to) of `m` as "4x8x16" ("none" when there are none). */
static const char *dims_text(const lw_memref *m, uint32_t from, uint32_t to, char *buf, size_t size) {
  size_t off = 0;
  buf[0] = '\0';
  for (uint32_t d = from; d < to && off < size; d++)
    off += (size_t)snprintf(buf + off, size - off, "%s%lld", d > from ? "x" : "", (long long)m->sizes[d].value);
  if (from >= to) snprintf(buf, size, "none");
  return buf;
}

static const char *lengths_text(const uint64_t *v, uint32_t n, const char *sep, char *buf, size_t size) {
  size_t off = 0;
  buf[0] = '\0';
  for (uint32_t d = 0; d < n && off < size; d++)
    off += (size_t)snprintf(buf + off, size - off, "%s%llu", d ? sep : "", (unsigned long long)v[d]);
  return buf;
}

/* One side of an FFT: a dense memref of static shape, complex or real. */
typedef struct lw_fft_side {
  lw_memref *m;
  MlirType et;
  crec_element precision; /* of its reals: F32 or F64 */
  crec_range range;
} lw_fft_side;

/* Reads operand `i` (`what` in messages) as the side of `type` that is complex
 * (or real, for an RFFT's input and an IRFFT's output). */
static crec_status fft_operand(lw *L, MlirOperation op, intptr_t i, const char *what, crec_fft_type type, bool is_input,
                               lw_fft_side *out) {
  crec_status s = memref_operand(L, op, i, what, &out->m, &out->et);
  if (s) return s;
  bool want_real = is_input ? type == CREC_FFT_REAL_FORWARD : type == CREC_FFT_REAL_INVERSE;
  bool is_complex = mlirTypeIsAComplex(out->et);
  MlirType real = is_complex ? mlirComplexTypeGetElementType(out->et) : out->et;
  char ts[128];
  if (!mlirTypeIsAF32(real) && !mlirTypeIsAF64(real))
    return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "%s has %s elements; an FFT takes complex<f32> or complex<f64> "
                         "(and f32 or f64 on the real side of an RFFT or IRFFT)", what,
                         type_text(out->et, ts, sizeof ts));
  if (is_complex == want_real) {
    const char *name = fft_types[type];
    return crec__lw_fail(L, op, CREC_ERR_MLIR, "%s has %s elements, but the %s of an %s is %s%s", what,
                         type_text(out->et, ts, sizeof ts), is_input ? "input" : "output", name,
                         want_real ? "real (f32 or f64)" : "complex (complex<f32> or complex<f64>)",
                         type == CREC_FFT_FORWARD && !is_complex ? ": a real input is an RFFT's"
                         : type == CREC_FFT_INVERSE && !is_complex ? ": a real output is an IRFFT's"
                                                                   : "");
  }
  out->precision = mlirTypeIsAF32(real) ? CREC_ELEMENT_F32 : CREC_ELEMENT_F64;
  return dense_static(L, op, what, "an FFT", out->m, &out->range, NULL);
}

/* Checks that the trailing dimensions of side `x` are the transform's: fft_length on
 * the real side, with fft_length[-1]/2 + 1 last on the complex side of a real transform. */
static crec_status fft_shape(lw *L, MlirOperation op, const char *what, const lw_fft_side *x, bool complex_side,
                             crec_fft_type type, const uint64_t *length, uint32_t rank) {
  const lw_memref *m = x->m;
  bool real_type = type == CREC_FFT_REAL_FORWARD || type == CREC_FFT_REAL_INVERSE;
  uint64_t want[3];
  for (uint32_t d = 0; d < rank; d++) want[d] = length[d];
  if (real_type && complex_side) want[rank - 1] = length[rank - 1] / 2 + 1;
  bool ok = m->rank >= rank;
  for (uint32_t d = 0; ok && d < rank; d++) ok = (uint64_t)m->sizes[m->rank - rank + d].value == want[d];
  if (ok) return CREC_OK;
  char have[128], lens[64], wants[64];
  return crec__lw_fail(L, op, CREC_ERR_INVALID_ARGUMENT, "shape mismatch: %s is %s, but an %s with fft_length [%s] "
                       "needs %s as its trailing dimensions (%s)", what, dims_text(m, 0, m->rank, have, sizeof have),
                       fft_types[type], lengths_text(length, rank, ", ", lens, sizeof lens),
                       lengths_text(want, rank, "x", wants, sizeof wants),
                       !real_type ? "both sides of a complex transform are fft_length"
                       : complex_side ? "the complex side keeps fft_length[-1]/2 + 1 elements of its last dimension"
                                      : "the real side's trailing dimensions are fft_length");
}

/* "crec.fft"(%in, %out) {fft_type = "FFT", fft_length = [8, 16], workspace_bytes}: XLA's Fft
 * over the trailing dimensions, a batch of the leading ones; the inverses normalized. */
static crec_status crec_fft_op(lw *L, MlirOperation op, crec_region region) {
  static const char *const known[] = {"fft_type", "fft_length", "workspace_bytes", NULL};
  crec_status s;
  if ((s = check_attributes(L, op, known)) || (s = no_results(L, op))) return s;
  if (mlirOperationGetNumOperands(op) != 2)
    return crec__lw_fail(L, op, CREC_ERR_MLIR, "takes two memref operands, the input and the output, but has %d",
                         (int)mlirOperationGetNumOperands(op));
  crec_fft f = CREC_FFT_INIT;
  int64_t ws;
  bool present;
  if ((s = fft_type_attr(L, op, &f.type)) || (s = fft_length_attr(L, op, f.length, &f.rank)) ||
      (s = int_attr(L, op, "workspace_bytes", &ws, &present)))
    return s;
  if (ws < 0)
    return crec__lw_fail(L, op, CREC_ERR_MLIR, "workspace_bytes is %lld; it must be 0 (the default) or more", (long long)ws);
  f.workspace_bytes = (uint64_t)ws;
  lw_fft_side in, out;
  if ((s = fft_operand(L, op, 0, "the input", f.type, true, &in)) ||
      (s = fft_operand(L, op, 1, "the output", f.type, false, &out)))
    return s;
  if (in.precision != out.precision) {
    char ti[64], to[64];
    return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "mixed precision (the input %s, the output %s): an FFT reads and "
                         "writes one precision, f32 or f64", type_text(in.et, ti, sizeof ti),
                         type_text(out.et, to, sizeof to));
  }
  if ((s = fft_shape(L, op, "the input", &in, f.type != CREC_FFT_REAL_FORWARD, f.type, f.length, f.rank)) ||
      (s = fft_shape(L, op, "the output", &out, f.type != CREC_FFT_REAL_INVERSE, f.type, f.length, f.rank)))
    return s;
  /* the leading dimensions are the batch, the same on both sides */
  uint32_t lead = in.m->rank - f.rank;
  bool same = out.m->rank == in.m->rank;
  for (uint32_t d = 0; same && d < lead; d++) same = in.m->sizes[d].value == out.m->sizes[d].value;
  if (!same) {
    char a[128], b[128];
    return crec__lw_fail(L, op, CREC_ERR_INVALID_ARGUMENT, "shape mismatch: the input's batch dimensions (before the "
                         "%u it transforms) are %s but the output's %s; they must be the same", f.rank,
                         dims_text(in.m, 0, lead, a, sizeof a), dims_text(out.m, 0, out.m->rank - f.rank, b, sizeof b));
  }
  f.batch = 1;
  for (uint32_t d = 0; d < lead; d++) f.batch *= (uint64_t)in.m->sizes[d].value;
  f.precision = in.precision;
  f.input = in.range;
  f.output = out.range;
  /* XLA's inverses are normalized; cuFFT's are not */
  if (f.type == CREC_FFT_INVERSE || f.type == CREC_FFT_REAL_INVERSE) {
    double n = 1;
    for (uint32_t d = 0; d < f.rank; d++) n *= (double)f.length[d];
    f.scale = 1.0 / n;
  }
  char name[256];
  crec_command cmd;
  if ((s = crec_program_add_fft(L->p, region, crec__lw_command_name(op, name, sizeof name), &f, &cmd)))
    return crec__lw_fail_builder(L, op, s);
  if ((s = crec__lw_note_write(L, op, f.output))) return s;
  crec__lw_note_command(L);
  return CREC_OK;
}

/* ---- Cholesky ---- */

/* lower = true | false, a bool; absent: true (the lower triangle gets L). */
static crec_status lower_attr(lw *L, MlirOperation op, bool *out) {
  MlirAttribute a = crec__lw_attr(op, "lower");
  *out = true;
  if (mlirAttributeIsNull(a)) return CREC_OK;
  if (mlirAttributeIsABool(a)) {
    *out = mlirBoolAttrGetValue(a);
    return CREC_OK;
  }
  return crec__lw_fail(L, op, CREC_ERR_MLIR, "lower must be a bool: lower = true (the lower triangle gets L, the "
                       "default) or lower = false (the upper triangle gets U)");
}

/* The matrices, operand 0: f32 or f64, rank 2 or more, the last two dimensions
 * equal (n), the leading ones a batch. */
static crec_status cholesky_matrices(lw *L, MlirOperation op, crec_cholesky *d, lw_memref **out) {
  lw_memref *m = NULL;
  MlirType et;
  uint64_t count = 0;
  char ts[128], dims[128];
  crec_status s = memref_operand(L, op, 0, "'a'", &m, &et);
  if (s) return s;
  if (!mlirTypeIsAF32(et) && !mlirTypeIsAF64(et))
    return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "'a' has %s elements; a Cholesky factorization takes f32 or f64",
                         type_text(et, ts, sizeof ts));
  if ((s = dense_static(L, op, "'a'", "a Cholesky factorization", m, &d->a, &count))) return s;
  if (m->rank < 2)
    return crec__lw_fail(L, op, CREC_ERR_INVALID_ARGUMENT, "shape mismatch: 'a' has rank %u (%s), but a Cholesky "
                         "factorization takes square matrices: rank 2 or more, the last two dimensions n x n and the "
                         "ones before them a batch", m->rank, m->rank ? dims_text(m, 0, m->rank, dims, sizeof dims)
                                                                      : "a scalar");
  int64_t rows = m->sizes[m->rank - 2].value, cols = m->sizes[m->rank - 1].value;
  if (rows != cols)
    return crec__lw_fail(L, op, CREC_ERR_INVALID_ARGUMENT, "shape mismatch: 'a' is %s, but its last two dimensions "
                         "must be equal (n x n matrices); %lldx%lld is not square",
                         dims_text(m, 0, m->rank, dims, sizeof dims), (long long)rows, (long long)cols);
  d->type = mlirTypeIsAF32(et) ? CREC_ELEMENT_F32 : CREC_ELEMENT_F64;
  d->n = (uint64_t)cols;
  d->batch = count / (d->n * d->n);
  *out = m;
  return CREC_OK;
}

/* The info operand, operand 1: i32, one per matrix, in any static shape. */
static crec_status cholesky_info(lw *L, MlirOperation op, crec_cholesky *d, const lw_memref *a) {
  lw_memref *m = NULL;
  MlirType et;
  uint64_t count = 0;
  char ts[128];
  crec_status s = memref_operand(L, op, 1, "'info'", &m, &et);
  if (s) return s;
  if (!mlirTypeIsAInteger(et) || mlirIntegerTypeGetWidth(et) != 32 || !mlirIntegerTypeIsSignless(et))
    return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "'info' has %s elements; it takes i32, one per matrix",
                         type_text(et, ts, sizeof ts));
  if ((s = dense_static(L, op, "'info'", "a Cholesky factorization", m, &d->info, &count))) return s;
  if (count != d->batch) {
    char have[128], dims[128];
    return crec__lw_fail(L, op, CREC_ERR_INVALID_ARGUMENT, "shape mismatch: 'info' holds %llu i32 (%s), but 'a' is "
                         "%llu matrices of %llux%llu (%s): it takes one i32 per matrix", (unsigned long long)count,
                         m->rank ? dims_text(m, 0, m->rank, have, sizeof have) : "a scalar",
                         (unsigned long long)d->batch, (unsigned long long)d->n, (unsigned long long)d->n,
                         dims_text(a, 0, a->rank, dims, sizeof dims));
  }
  return CREC_OK;
}

/* Without an info operand: a temporary "<name>.info" of one i32 per matrix (with a
 * number appended when that name is taken). */
static crec_status cholesky_info_temporary(lw *L, MlirOperation op, const char *name, crec_cholesky *d) {
  char temp[320];
  crec_buffer h;
  snprintf(temp, sizeof temp, "%s.info", name);
  for (unsigned i = 2; crec_program_find_buffer(L->p, temp, &h) == CREC_OK; i++)
    snprintf(temp, sizeof temp, "%s.info%u", name, i);
  uint64_t bytes = d->batch * 4;
  crec_status s = crec_program_add_temporary(L->p, temp, bytes, &h);
  if (s) return crec__lw_fail_builder(L, op, s);
  uint32_t buf;
  if ((s = crec__lw_buf_add(L, h, CREC_BUFFER_TEMPORARY, false, bytes, false, temp, &buf))) return s;
  d->info = crec_range_of(h, 0, bytes);
  return CREC_OK;
}

/* "crec.cholesky"(%a[, %info]) {lower = true, workspace_bytes}: XLA's Cholesky of the
 * n x n matrices in the last two dimensions, a batch of the leading ones, in place. */
static crec_status crec_cholesky_op(lw *L, MlirOperation op, crec_region region) {
  static const char *const known[] = {"lower", "workspace_bytes", NULL};
  crec_status s;
  if ((s = check_attributes(L, op, known)) || (s = no_results(L, op))) return s;
  intptr_t n = mlirOperationGetNumOperands(op);
  if (n != 1 && n != 2)
    return crec__lw_fail(L, op, CREC_ERR_MLIR, "takes one or two memref operands, the matrices 'a' and optionally "
                         "'info', but has %d", (int)n);
  crec_cholesky d = CREC_CHOLESKY_INIT;
  bool lower, present;
  int64_t ws;
  if ((s = lower_attr(L, op, &lower)) || (s = int_attr(L, op, "workspace_bytes", &ws, &present))) return s;
  if (ws < 0)
    return crec__lw_fail(L, op, CREC_ERR_MLIR, "workspace_bytes is %lld; it must be 0 (the default) or more", (long long)ws);
  d.workspace_bytes = (uint64_t)ws;
  d.upper = !lower;
  lw_memref *a = NULL; /* set on success (GCC's -O3 cannot see that crec__lw_fail() never returns CREC_OK) */
  if ((s = cholesky_matrices(L, op, &d, &a))) return s;
  char name[256];
  const char *cname = crec__lw_command_name(op, name, sizeof name);
  if (n == 2) s = cholesky_info(L, op, &d, a);
  else s = cholesky_info_temporary(L, op, cname ? cname : "cholesky", &d);
  if (s) return s;
  crec_command cmd;
  if ((s = crec_program_add_cholesky(L->p, region, cname, &d, &cmd))) return crec__lw_fail_builder(L, op, s);
  if ((s = crec__lw_note_write(L, op, d.a)) || (s = crec__lw_note_write(L, op, d.info))) return s;
  crec__lw_note_command(L);
  return CREC_OK;
}

/* ---- convolutions ---- */

/* A convolution's tensor: a dense memref of static shape, f32, f16 or bf16. */
typedef struct lw_conv_tensor {
  lw_memref *m;
  MlirType et;
  crec_element type;
  crec_range range;
} lw_conv_tensor;

/* Reads operand `i` (`what` in messages) as a convolution's tensor. */
static crec_status conv_tensor(lw *L, MlirOperation op, intptr_t i, const char *what, lw_conv_tensor *out) {
  crec_status s = memref_operand(L, op, i, what, &out->m, &out->et);
  if (s) return s;
  char ts[128];
  if (!gemm_element(out->et, &out->type))
    return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "%s has %s elements; a convolution takes f32, f16 or bf16", what,
                         type_text(out->et, ts, sizeof ts));
  return dense_static(L, op, what, "a convolution", out->m, &out->range, NULL);
}

/* Fails unless the `n` tensors have one element type. */
static crec_status conv_same_type(lw *L, MlirOperation op, const lw_conv_tensor *t, const char *const *names, int n) {
  for (int i = 1; i < n; i++)
    if (!mlirTypeEqual(t[i].et, t[0].et)) {
      char a[64], b[64];
      return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "mixed element types (%s %s, %s %s): crec's convolution reads "
                           "and writes one element type", names[0], type_text(t[0].et, a, sizeof a), names[i],
                           type_text(t[i].et, b, sizeof b));
    }
  return CREC_OK;
}

/* An attribute of `n` integers, one per spatial dimension, into lo[] (and hi[], the
 * same): [1, 2], array<i64: 1, 2> (or i32), dense<[1, 2]> : tensor<2xi64> (or i32, or
 * a splat dense<1>). With `pairs`, [[lo, hi], ...] and dense<...> : tensor<nx2xi64>
 * too. Absent: *present is false and lo, hi are untouched. */
static crec_status int_list_attr(lw *L, MlirOperation op, const char *name, uint32_t n, bool pairs,
                                 const char *example, int64_t *lo, int64_t *hi, bool *present) {
  MlirAttribute a = crec__lw_attr(op, name);
  *present = !mlirAttributeIsNull(a);
  if (!*present) return CREC_OK;
  char form[320];
  snprintf(form, sizeof form, "%s must be a list of %u integers (one per spatial dimension), like %s", name, n,
           example);
  intptr_t count;
  if (mlirAttributeIsAArray(a)) {
    count = mlirArrayAttrGetNumElements(a);
    if (count != (intptr_t)n)
      return crec__lw_fail(L, op, CREC_ERR_MLIR, "%s has %lld entries, but the convolution has %u spatial dimensions; %s",
                           name, (long long)count, n, form);
    for (intptr_t i = 0; i < count; i++) {
      MlirAttribute e = mlirArrayAttrGetElement(a, i);
      if (pairs && mlirAttributeIsAArray(e)) {
        if (mlirArrayAttrGetNumElements(e) != 2 || !integer_value(mlirArrayAttrGetElement(e, 0), &lo[i]) ||
            !integer_value(mlirArrayAttrGetElement(e, 1), &hi[i]))
          return crec__lw_fail(L, op, CREC_ERR_MLIR, "%s[%d] is not a pair [lo, hi] of integers; %s", name, (int)i, form);
        continue;
      }
      if (!integer_value(e, &lo[i]))
        return crec__lw_fail(L, op, CREC_ERR_MLIR, "%s[%d] is not an integer; %s", name, (int)i, form);
      hi[i] = lo[i];
    }
    return CREC_OK;
  }
  if (mlirAttributeIsADenseI64Array(a) || mlirAttributeIsADenseI32Array(a)) {
    bool wide = mlirAttributeIsADenseI64Array(a);
    count = mlirDenseArrayGetNumElements(a);
    if (count != (intptr_t)n)
      return crec__lw_fail(L, op, CREC_ERR_MLIR, "%s has %lld entries, but the convolution has %u spatial dimensions; %s",
                           name, (long long)count, n, form);
    for (intptr_t i = 0; i < count; i++)
      lo[i] = hi[i] = wide ? mlirDenseI64ArrayGetElement(a, i) : mlirDenseI32ArrayGetElement(a, i);
    return CREC_OK;
  }
  if (mlirAttributeIsADenseIntElements(a)) {
    MlirType t = mlirAttributeGetType(a), et = mlirShapedTypeGetElementType(t);
    intptr_t rank = mlirShapedTypeGetRank(t);
    bool paired = pairs && rank == 2 && mlirShapedTypeGetDimSize(t, 1) == 2;
    if ((rank != 1 && !paired) || !mlirTypeIsAInteger(et) ||
        (mlirIntegerTypeGetWidth(et) != 64 && mlirIntegerTypeGetWidth(et) != 32))
      return crec__lw_fail(L, op, CREC_ERR_MLIR, "%s (a dense one is a tensor of rank 1%s of i64 or i32)", form,
                           pairs ? ", or of Nx2 [lo, hi] pairs," : "");
    bool wide = mlirIntegerTypeGetWidth(et) == 64;
    count = (intptr_t)mlirShapedTypeGetDimSize(t, 0);
    if (count != (intptr_t)n)
      return crec__lw_fail(L, op, CREC_ERR_MLIR, "%s has %lld entries, but the convolution has %u spatial dimensions; %s",
                           name, (long long)count, n, form);
    for (intptr_t i = 0; i < count; i++) {
      intptr_t at = paired ? 2 * i : i;
      lo[i] = wide ? mlirDenseElementsAttrGetInt64Value(a, at) : mlirDenseElementsAttrGetInt32Value(a, at);
      hi[i] = !paired ? lo[i] : wide ? mlirDenseElementsAttrGetInt64Value(a, at + 1)
                                     : mlirDenseElementsAttrGetInt32Value(a, at + 1);
    }
    return CREC_OK;
  }
  return crec__lw_fail(L, op, CREC_ERR_MLIR, "%s", form);
}

/* A list of positive integers per spatial dimension into out[] (absent: 1 each). */
static crec_status positive_list(lw *L, MlirOperation op, const char *name, uint32_t n, const char *example,
                                 uint64_t *out) {
  int64_t lo[3] = {1, 1, 1}, hi[3];
  bool present;
  crec_status s = int_list_attr(L, op, name, n, false, example, lo, hi, &present);
  if (s) return s;
  for (uint32_t i = 0; i < n; i++) {
    if (lo[i] < 1 || lo[i] > INT32_MAX)
      return crec__lw_fail(L, op, CREC_ERR_MLIR, "%s[%u] is %lld; it must be 1 or more (and below 2^31)", name, i,
                           (long long)lo[i]);
    out[i] = (uint64_t)lo[i];
  }
  return CREC_OK;
}

/* Checks that the output's spatial sizes `have` (n of them) are what the convolution
 * `d` gives (when it gives any: otherwise the builder says why), `why` saying what
 * differs from linalg or XLA. */
static crec_status conv_output_shape(lw *L, MlirOperation op, const crec_conv *d, uint32_t first, uint32_t n,
                                     const uint64_t *have, const char *why) {
  uint64_t want[3];
  if (!crec_conv_output_size(d, want)) return CREC_OK;
  bool ok = true;
  for (uint32_t i = 0; i < n; i++) ok = ok && have[i] == want[first + i];
  if (ok) return CREC_OK;
  char hs[64], ws[64], in[64], f[64], st[64], dl[64], pd[64];
  return crec__lw_fail(L, op, CREC_ERR_INVALID_ARGUMENT, "shape mismatch: the output's spatial sizes are %s, but an "
                       "input of %s with a filter of %s, strides [%s], padding [%s] and dilations [%s] gives %s "
                       "((in + 2·padding - dilation·(filter - 1) - 1) / stride + 1)%s",
                       lengths_text(have, n, "x", hs, sizeof hs), lengths_text(d->in_size + first, n, "x", in, sizeof in),
                       lengths_text(d->filter_size + first, n, "x", f, sizeof f),
                       lengths_text(d->stride + first, n, ", ", st, sizeof st),
                       lengths_text(d->padding + first, n, ", ", pd, sizeof pd),
                       lengths_text(d->dilation + first, n, ", ", dl, sizeof dl),
                       lengths_text(want + first, n, "x", ws, sizeof ws), why);
}

/* Adds convolution `d` for `op` and notes the tensor its kind writes. */
static crec_status add_conv(lw *L, MlirOperation op, crec_region region, const crec_conv *d) {
  char name[256];
  crec_command cmd;
  crec_status s = crec_program_add_conv(L->p, region, crec__lw_command_name(op, name, sizeof name), d, &cmd);
  if (s) return crec__lw_fail_builder(L, op, s);
  crec_range written = d->kind == CREC_CONV_FORWARD ? d->output : d->kind == CREC_CONV_BACKWARD_DATA ? d->input
                                                                                                       : d->filter;
  if ((s = crec__lw_note_write(L, op, written))) return s;
  crec__lw_note_command(L);
  return CREC_OK;
}

/* The linalg convolutions that map onto cuDNN's tensors as they lie in memory. */
typedef enum lw_conv_family {
  LW_CONV_PLAIN,      /* N, C and F dims: input nchw / nhwc, filter fchw / fhwc / hwcf */
  LW_CONV_BARE,       /* spatial dims only (linalg.conv_2d): N = C = K = 1 */
  LW_CONV_DEPTHWISE,  /* filter chw / hwc: groups = C, one output channel each */
  LW_CONV_MULTIPLIER, /* filter hwcm, output nhwcm: groups = C, M output channels each (channel c·M + m) */
  LW_CONV_GROUPED_GF, /* ngchw input and output, filter gfchw: cuDNN's grouped layout */
  LW_CONV_GROUPED_FG  /* filter fgchw: cuDNN's only when there is one group or one filter per group */
} lw_conv_family;

static const struct lw_linalg_conv {
  const char *op;
  uint32_t spatial; /* 1 lowers as 2 with a leading spatial dimension of 1 */
  crec_conv_layout layout;
  crec_conv_filter_layout filter;
  lw_conv_family family;
} linalg_convs[] = {
    {"linalg.conv_1d", 1, CREC_CONV_NCHW, CREC_CONV_FILTER_K_FIRST, LW_CONV_BARE},
    {"linalg.conv_2d", 2, CREC_CONV_NCHW, CREC_CONV_FILTER_K_FIRST, LW_CONV_BARE},
    {"linalg.conv_3d", 3, CREC_CONV_NCHW, CREC_CONV_FILTER_K_FIRST, LW_CONV_BARE},
    {"linalg.conv_1d_nwc_wcf", 1, CREC_CONV_NHWC, CREC_CONV_FILTER_HWIO, LW_CONV_PLAIN},
    {"linalg.conv_1d_ncw_fcw", 1, CREC_CONV_NCHW, CREC_CONV_FILTER_K_FIRST, LW_CONV_PLAIN},
    {"linalg.conv_2d_nhwc_hwcf", 2, CREC_CONV_NHWC, CREC_CONV_FILTER_HWIO, LW_CONV_PLAIN},
    {"linalg.conv_2d_nhwc_fhwc", 2, CREC_CONV_NHWC, CREC_CONV_FILTER_K_FIRST, LW_CONV_PLAIN},
    {"linalg.conv_2d_nchw_fchw", 2, CREC_CONV_NCHW, CREC_CONV_FILTER_K_FIRST, LW_CONV_PLAIN},
    {"linalg.conv_2d_ngchw_gfchw", 2, CREC_CONV_NCHW, CREC_CONV_FILTER_K_FIRST, LW_CONV_GROUPED_GF},
    {"linalg.conv_2d_ngchw_fgchw", 2, CREC_CONV_NCHW, CREC_CONV_FILTER_K_FIRST, LW_CONV_GROUPED_FG},
    {"linalg.conv_3d_ndhwc_dhwcf", 3, CREC_CONV_NHWC, CREC_CONV_FILTER_HWIO, LW_CONV_PLAIN},
    {"linalg.conv_3d_ncdhw_fcdhw", 3, CREC_CONV_NCHW, CREC_CONV_FILTER_K_FIRST, LW_CONV_PLAIN},
    {"linalg.depthwise_conv_1d_nwc_wc", 1, CREC_CONV_NHWC, CREC_CONV_FILTER_HWIO, LW_CONV_DEPTHWISE},
    {"linalg.depthwise_conv_1d_ncw_cw", 1, CREC_CONV_NCHW, CREC_CONV_FILTER_K_FIRST, LW_CONV_DEPTHWISE},
    {"linalg.depthwise_conv_1d_nwc_wcm", 1, CREC_CONV_NHWC, CREC_CONV_FILTER_HWIO, LW_CONV_MULTIPLIER},
    {"linalg.depthwise_conv_2d_nhwc_hwc", 2, CREC_CONV_NHWC, CREC_CONV_FILTER_HWIO, LW_CONV_DEPTHWISE},
    {"linalg.depthwise_conv_2d_nchw_chw", 2, CREC_CONV_NCHW, CREC_CONV_FILTER_K_FIRST, LW_CONV_DEPTHWISE},
    {"linalg.depthwise_conv_2d_nhwc_hwcm", 2, CREC_CONV_NHWC, CREC_CONV_FILTER_HWIO, LW_CONV_MULTIPLIER},
    {"linalg.depthwise_conv_3d_ndhwc_dhwc", 3, CREC_CONV_NHWC, CREC_CONV_FILTER_HWIO, LW_CONV_DEPTHWISE},
    {"linalg.depthwise_conv_3d_ncdhw_cdhw", 3, CREC_CONV_NCHW, CREC_CONV_FILTER_K_FIRST, LW_CONV_DEPTHWISE},
    {"linalg.depthwise_conv_3d_ndhwc_dhwcm", 3, CREC_CONV_NHWC, CREC_CONV_FILTER_HWIO, LW_CONV_MULTIPLIER},
};
#define NUM_LINALG_CONVS (sizeof linalg_convs / sizeof *linalg_convs)

static const struct lw_linalg_conv *linalg_conv_of(MlirOperation op) {
  for (size_t i = 0; i < NUM_LINALG_CONVS; i++)
    if (crec__lw_is(op, linalg_convs[i].op)) return &linalg_convs[i];
  return NULL;
}

/* Checks that the output range `out` of linalg convolution `op` holds zeros whenever
 * it runs: the last command before it that writes any of its bytes is a fill with
 * zero bytes of all of them (linalg.fill, gpu.memset), in its block or a block around
 * it, with no loop between (a loop's next iteration would add to the last one's). */
static crec_status conv_zero_filled(lw *L, MlirOperation op, crec_range out) {
  static const char why[] = "linalg's convolutions accumulate into their output (out += conv) but cuDNN's overwrite "
                            "it (out = conv), so crec lowers one only right after a zero fill of its whole output";
  static const char fix[] = "zero it just before (linalg.fill or gpu.memset of 0 over the whole output) or write "
                            "\"crec.conv\", which overwrites";
  crec_buffer_info info;
  memset(&info, 0, sizeof info);
  const char *bname = crec_buffer_get_info(L->p, out.buffer, &info) == CREC_OK && info.name ? info.name : "?";
  uint32_t b = (uint32_t)crec__index(out.buffer.id);
  uint64_t begin = out.offset, end = out.offset + out.size;
  const lw_write *w = NULL;
  for (size_t i = L->num_writes; i-- > 0 && !w;) {
    const lw_write *c = &L->writes[i];
    if (c->buffer == b && c->begin < end && c->end > begin) w = c;
  }
  if (!w) return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "%s: nothing writes '%s' before it; %s", why, bname, fix);
  char at[1100], wname[128];
  crec__lw_op_location(L, w->op, at, sizeof at);
  crec__lw_op_name(w->op, wname, sizeof wname);
  if (!w->zero)
    return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "%s: the last write of '%s' before it is '%s' at %s, not a fill "
                         "with zero; %s", why, bname, wname, at, fix);
  if (w->begin > begin || w->end < end)
    return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "%s: the zero fill at %s writes bytes [%llu, %llu) of '%s', not "
                         "all of the output's [%llu, %llu); %s", why, at, (unsigned long long)w->begin,
                         (unsigned long long)w->end, bname, (unsigned long long)begin, (unsigned long long)end, fix);
  /* the fill runs before each run of the convolution */
  MlirBlock fill_block = mlirOperationGetBlock(w->op);
  for (MlirBlock blk = mlirOperationGetBlock(op); !mlirBlockEqual(blk, fill_block);) {
    MlirOperation parent = mlirBlockGetParentOperation(blk);
    if (mlirOperationIsNull(parent) || mlirOperationEqual(parent, L->entry))
      return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "%s: the zero fill at %s is inside a branch or loop that does "
                           "not hold this op, so it may not run before it; %s", why, at, fix);
    if (crec__lw_is(parent, "scf.for") || crec__lw_is(parent, "scf.while")) {
      char lat[1100], lname[64];
      crec__lw_op_location(L, parent, lat, sizeof lat);
      return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "%s: it runs in a loop ('%s' at %s) that the zero fill at %s "
                           "comes before, so each iteration after the first would add to the last one's; %s", why,
                           crec__lw_op_name(parent, lname, sizeof lname), lat, at, fix);
    }
    blk = mlirOperationGetBlock(parent);
  }
  return CREC_OK;
}

/* linalg.conv_* and linalg.depthwise_conv_* ins(input, filter) outs(output) on
 * memrefs: out += conv(input, filter), no padding, strides and dilations
 * attributes (default 1). Lowered to a forward convolution right after a zero fill. */
static crec_status linalg_conv(lw *L, MlirOperation op, crec_region region, const struct lw_linalg_conv *k) {
  if (mlirOperationGetNumResults(op) > 0)
    return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "linalg on tensors is not lowered: crec lowers it on memrefs "
                         "(bufferize first)");
  if (mlirOperationGetNumOperands(op) != 3)
    return crec__lw_fail(L, op, CREC_ERR_MLIR, "expected ins(input, filter) outs(output)");
  static const char *const names[3] = {"the input", "the filter", "the output"};
  lw_conv_tensor t[3];
  crec_status s;
  for (int i = 0; i < 3; i++)
    if ((s = conv_tensor(L, op, i, names[i], &t[i]))) return s;
  if ((s = conv_same_type(L, op, t, names, 3))) return s;
  const uint32_t n = k->spatial;
  const lw_memref *x = t[0].m, *w = t[1].m, *y = t[2].m;
  bool nchw = k->layout == CREC_CONV_NCHW;
  /* each tensor's first spatial dimension, and the rank linalg gives it */
  uint32_t xs = 0, ws = 0, ys = 0, xr = n + 2, wr = n + 2, yr = n + 2;
  switch (k->family) {
  case LW_CONV_BARE: xr = wr = yr = n; break;
  case LW_CONV_PLAIN: xs = ys = nchw ? 2 : 1; ws = k->filter == CREC_CONV_FILTER_HWIO ? 0 : nchw ? 2 : 1; break;
  case LW_CONV_DEPTHWISE: xs = ys = nchw ? 2 : 1; ws = nchw ? 1 : 0; wr = n + 1; break;
  case LW_CONV_MULTIPLIER: xs = ys = 1; yr = n + 3; break;
  case LW_CONV_GROUPED_GF:
  case LW_CONV_GROUPED_FG: xs = ys = ws = 3; xr = wr = yr = n + 3; break;
  }
  if (x->rank != xr || w->rank != wr || y->rank != yr)
    return crec__lw_fail(L, op, CREC_ERR_MLIR, "expected an input of rank %u, a filter of rank %u and an output of "
                         "rank %u, but they have %u, %u and %u", xr, wr, yr, x->rank, w->rank, y->rank);
#define DIM(m, i) ((uint64_t)(m)->sizes[i].value)
  uint64_t batch = 1, c = 1, kk = 1, groups = 1;
  switch (k->family) {
  case LW_CONV_BARE: break;
  case LW_CONV_PLAIN:
    batch = DIM(x, 0);
    c = DIM(x, nchw ? 1 : n + 1);
    kk = DIM(y, nchw ? 1 : n + 1);
    break;
  case LW_CONV_DEPTHWISE:
    batch = DIM(x, 0);
    c = kk = groups = DIM(x, nchw ? 1 : n + 1);
    break;
  case LW_CONV_MULTIPLIER:
    /* output channel c·M + m is filter [.., c, m]: HWIO with K = C·M */
    batch = DIM(x, 0);
    c = groups = DIM(x, n + 1);
    kk = c * DIM(y, n + 2);
    break;
  case LW_CONV_GROUPED_FG:
    if (DIM(w, 0) > 1 && DIM(w, 1) > 1) {
      char dims[128];
      return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "the filter is %s, F x G x C x H x W: linalg's fgchw keeps "
                           "the filters of one group apart (filter f of group g at [f][g]), while cuDNN's grouped "
                           "filter holds each group's filters together (G x F x C x H x W, linalg.conv_2d_ngchw_gfchw); "
                           "store the filter as gfchw, or write \"crec.conv\" with feature_group_count",
                           dims_text(w, 0, w->rank, dims, sizeof dims));
    }
    /* with one group or one filter per group the two layouts are the same bytes */
    __attribute__((fallthrough));
  case LW_CONV_GROUPED_GF:
    batch = DIM(x, 0);
    groups = DIM(x, 1);
    c = groups * DIM(x, 2);
    kk = groups * DIM(y, 2);
    break;
  }
  crec_conv d = CREC_CONV_INIT;
  d.type = t[0].type;
  d.layout = k->layout;
  d.filter_layout = k->filter;
  d.spatial = n == 1 ? 2 : n;
  uint32_t first = n == 1 ? 1 : 0; /* a 1-D convolution is a 2-D one over 1 x W */
  if (first) d.in_size[0] = d.filter_size[0] = d.stride[0] = d.dilation[0] = 1;
  uint64_t strides[3], dilations[3], have[3];
  if ((s = positive_list(L, op, "strides", n, "dense<1> : tensor<2xi64>", strides)) ||
      (s = positive_list(L, op, "dilations", n, "dense<1> : tensor<2xi64>", dilations)))
    return s;
  for (uint32_t i = 0; i < n; i++) {
    d.in_size[first + i] = DIM(x, xs + i);
    d.filter_size[first + i] = DIM(w, ws + i);
    d.stride[first + i] = strides[i];
    d.dilation[first + i] = dilations[i];
    have[i] = DIM(y, ys + i);
  }
#undef DIM
  d.batch = batch;
  d.in_channels = c;
  d.out_channels = kk;
  d.groups = groups;
  d.input = t[0].range;
  d.filter = t[1].range;
  d.output = t[2].range;
  if ((s = conv_output_shape(L, op, &d, first, n, have, ": cuDNN convolves the whole input, linalg only the part "
                             "the output needs")) ||
      (s = conv_zero_filled(L, op, d.output)))
    return s;
  return add_conv(L, op, region, &d);
}

/* One of `names` (count of them) as the value of string attribute `name`, or
 * `fallback` when absent. */
static crec_status choice_attr(lw *L, MlirOperation op, const char *name, const char *const *names, int count,
                               int fallback, const char *list, int *out) {
  char v[64];
  bool present;
  crec_status s = string_attr(L, op, name, v, sizeof v, &present);
  *out = fallback;
  if (s || !present) return s;
  for (int i = 0; i < count; i++)
    if (strcmp(v, names[i]) == 0) {
      *out = i;
      return CREC_OK;
    }
  return crec__lw_fail(L, op, CREC_ERR_MLIR, "unknown %s '%s' (%s)", name, v, list);
}

/* "crec.conv"(%input, %filter, %output[, %bias]) {kind, layout, filter_layout,
 * window_strides, padding, rhs_dilation, feature_group_count, activation,
 * algorithm, workspace_bytes}: a convolution command, XLA's names where it has them. */
static crec_status crec_conv_op(lw *L, MlirOperation op, crec_region region) {
  static const char *const known[] = {"kind", "layout", "filter_layout", "window_strides", "padding", "rhs_dilation",
                                      "feature_group_count", "activation", "algorithm", "workspace_bytes", NULL};
  static const char *const kinds[] = {"forward", "backward_data", "backward_filter"};
  static const char *const layouts[] = {"NCHW", "NHWC"};
  static const char *const filter_layouts[] = {"K_FIRST", "HWIO"};
  static const char *const activations[] = {"none", "relu"};
  static const char *const algorithms[] = {"heuristics", "search"};
  crec_status s;
  if ((s = check_attributes(L, op, known)) || (s = no_results(L, op))) return s;
  intptr_t nops = mlirOperationGetNumOperands(op);
  if (nops != 3 && nops != 4)
    return crec__lw_fail(L, op, CREC_ERR_MLIR, "takes three or four memref operands, the input, the filter, the output "
                         "and optionally the bias, but has %d", (int)nops);
  crec_conv d = CREC_CONV_INIT;
  int kind, layout, filter_layout, activation, algorithm;
  int64_t ws, groups;
  bool present, has_groups;
  if ((s = choice_attr(L, op, "kind", kinds, 3, 0, "forward, backward_data or backward_filter", &kind)) ||
      (s = choice_attr(L, op, "layout", layouts, 2, 0, "NCHW or NHWC", &layout)) ||
      (s = choice_attr(L, op, "filter_layout", filter_layouts, 2, 0, "K_FIRST or HWIO", &filter_layout)) ||
      (s = choice_attr(L, op, "activation", activations, 2, 0, "none or relu", &activation)) ||
      (s = choice_attr(L, op, "algorithm", algorithms, 2, 0, "heuristics or search", &algorithm)) ||
      (s = int_attr(L, op, "workspace_bytes", &ws, &present)) ||
      (s = int_attr(L, op, "feature_group_count", &groups, &has_groups)))
    return s;
  if (ws < 0)
    return crec__lw_fail(L, op, CREC_ERR_MLIR, "workspace_bytes is %lld; it must be 0 (the default) or more", (long long)ws);
  if (has_groups && (groups < 1 || groups > INT32_MAX))
    return crec__lw_fail(L, op, CREC_ERR_MLIR, "feature_group_count is %lld; it must be 1 (the default) or more",
                         (long long)groups);
  d.kind = (crec_conv_kind)kind;
  d.layout = (crec_conv_layout)layout;
  d.filter_layout = (crec_conv_filter_layout)filter_layout;
  d.activation = (crec_conv_activation)activation;
  d.algorithm = (crec_conv_algorithm)algorithm;
  d.workspace_bytes = (uint64_t)ws;
  d.groups = has_groups ? (uint64_t)groups : 1;
  static const char *const names[4] = {"the input", "the filter", "the output", "the bias"};
  lw_conv_tensor t[4];
  for (int i = 0; i < nops; i++)
    if ((s = conv_tensor(L, op, i, names[i], &t[i]))) return s;
  if ((s = conv_same_type(L, op, t, names, (int)nops))) return s;
  const lw_memref *x = t[0].m, *w = t[1].m, *y = t[2].m;
  char dims[128], dims2[128];
  if (x->rank != 4 && x->rank != 5)
    return crec__lw_fail(L, op, CREC_ERR_INVALID_ARGUMENT, "shape mismatch: the input has rank %u (%s), but a "
                         "convolution takes tensors of rank 4 (2 spatial dimensions) or 5 (3)", x->rank,
                         x->rank ? dims_text(x, 0, x->rank, dims, sizeof dims) : "a scalar");
  for (int i = 1; i < 3; i++)
    if (t[i].m->rank != x->rank)
      return crec__lw_fail(L, op, CREC_ERR_INVALID_ARGUMENT, "shape mismatch: %s has rank %u but the input %u: every "
                           "tensor of a %u-D convolution has rank %u", names[i], t[i].m->rank, x->rank, x->rank - 2,
                           x->rank);
  if (nops == 4 && t[3].m->rank != 1)
    return crec__lw_fail(L, op, CREC_ERR_INVALID_ARGUMENT, "shape mismatch: the bias has rank %u; it is a memref of "
                         "rank 1, one element per output channel", t[3].m->rank);
  const uint32_t n = x->rank - 2;
  d.spatial = n;
  d.type = t[0].type;
  bool nchw = d.layout == CREC_CONV_NCHW, hwio = d.filter_layout == CREC_CONV_FILTER_HWIO;
  /* the first spatial dimension and the channel dimension of each tensor */
  uint32_t xs = nchw ? 2 : 1, xc = nchw ? 1 : n + 1;
  uint32_t ws_ = hwio ? 0 : nchw ? 2 : 1, wc = hwio ? n : nchw ? 1 : n + 1, wk = hwio ? n + 1 : 0;
#define DIM(m, i) ((uint64_t)(m)->sizes[i].value)
  d.batch = DIM(x, 0);
  d.in_channels = DIM(x, xc);
  d.out_channels = DIM(w, wk);
  uint64_t have[3];
  for (uint32_t i = 0; i < n; i++) {
    d.in_size[i] = DIM(x, xs + i);
    d.filter_size[i] = DIM(w, ws_ + i);
    have[i] = DIM(y, xs + i);
  }
  if (DIM(y, 0) != d.batch)
    return crec__lw_fail(L, op, CREC_ERR_INVALID_ARGUMENT, "shape mismatch: the output is %s, a batch of %llu, but the "
                         "input %s, a batch of %llu", dims_text(y, 0, y->rank, dims, sizeof dims),
                         (unsigned long long)DIM(y, 0), dims_text(x, 0, x->rank, dims2, sizeof dims2),
                         (unsigned long long)d.batch);
  if (DIM(y, xc) != d.out_channels)
    return crec__lw_fail(L, op, CREC_ERR_INVALID_ARGUMENT, "shape mismatch: the output (%s, %s) has %llu channels, "
                         "but the filter (%s, %s) makes %llu", dims_text(y, 0, y->rank, dims, sizeof dims),
                         layouts[layout], (unsigned long long)DIM(y, xc), dims_text(w, 0, w->rank, dims2, sizeof dims2),
                         hwio ? "HWIO: spatial, C/groups, K" : nchw ? "K_FIRST: K, C/groups, spatial"
                                                                : "K_FIRST: K, spatial, C/groups",
                         (unsigned long long)d.out_channels);
  if (DIM(w, wc) * d.groups != d.in_channels)
    return crec__lw_fail(L, op, CREC_ERR_INVALID_ARGUMENT, "shape mismatch: the filter (%s, %s) takes %llu input "
                         "channels per group, but the input (%s, %s) has %llu channels in %llu group%s",
                         dims_text(w, 0, w->rank, dims, sizeof dims),
                         hwio ? "HWIO: spatial, C/groups, K" : nchw ? "K_FIRST: K, C/groups, spatial"
                                                                : "K_FIRST: K, spatial, C/groups",
                         (unsigned long long)DIM(w, wc), dims_text(x, 0, x->rank, dims2, sizeof dims2), layouts[layout],
                         (unsigned long long)d.in_channels, (unsigned long long)d.groups, d.groups == 1 ? "" : "s");
#undef DIM
  int64_t lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
  if ((s = positive_list(L, op, "window_strides", n, "[1, 1] or array<i64: 1, 1>", d.stride)) ||
      (s = positive_list(L, op, "rhs_dilation", n, "[1, 1] or array<i64: 1, 1>", d.dilation)) ||
      (s = int_list_attr(L, op, "padding", n, true, "[1, 1] (each side) or XLA's [[1, 1], [1, 1]]", lo, hi,
                         &present)))
    return s;
  for (uint32_t i = 0; i < n; i++) {
    if (lo[i] < 0 || hi[i] < 0 || lo[i] > INT32_MAX || hi[i] > INT32_MAX)
      return crec__lw_fail(L, op, CREC_ERR_MLIR, "padding of spatial dimension %u is [%lld, %lld]; it must be 0 or more "
                           "(and below 2^31)", i, (long long)lo[i], (long long)hi[i]);
    if (lo[i] != hi[i])
      return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "padding of spatial dimension %u is [%lld, %lld]: cuDNN pads "
                           "both sides of a dimension alike (symmetric padding, lo == hi); copy the input into a "
                           "larger zeroed memref for other padding", i, (long long)lo[i], (long long)hi[i]);
    d.padding[i] = (uint64_t)lo[i];
  }
  d.input = t[0].range;
  d.filter = t[1].range;
  d.output = t[2].range;
  if (nops == 4) d.bias = t[3].range;
  if ((s = conv_output_shape(L, op, &d, 0, n, have, ""))) return s;
  return add_conv(L, op, region, &d);
}

/* ---- collectives ---- */

static const struct {
  const char *op;
  crec_collective_kind kind;
} collectives[] = {{"crec.all_reduce", CREC_COLLECTIVE_ALL_REDUCE},
                   {"crec.all_gather", CREC_COLLECTIVE_ALL_GATHER},
                   {"crec.reduce_scatter", CREC_COLLECTIVE_REDUCE_SCATTER},
                   {"crec.all_to_all", CREC_COLLECTIVE_ALL_TO_ALL},
                   {"crec.collective_permute", CREC_COLLECTIVE_PERMUTE},
                   {"crec.replica_id", CREC_COLLECTIVE_REPLICA_ID},
                   {"crec.partition_id", CREC_COLLECTIVE_PARTITION_ID}};
#define NUM_COLLECTIVES (sizeof collectives / sizeof *collectives)

/* The communicator slot the op names (communicator = "world" by default),
 * made where it first appears, with num_ranks ranks. */
static crec_status communicator(lw *L, MlirOperation op, crec_comm_slot *out) {
  char name[256];
  bool present, has_ranks;
  int64_t ranks;
  crec_status s;
  if ((s = string_attr(L, op, "communicator", name, sizeof name, &present)) ||
      (s = int_attr(L, op, "num_ranks", &ranks, &has_ranks)))
    return s;
  if (!present) strcpy(name, "world");
  uint32_t i = crec__lw_map_get(&L->comm_keys, name, strlen(name));
  if (i != LW_NONE) {
    const lw_comm *c = &L->comms[i];
    if (has_ranks && ranks != c->size) {
      char where[1100];
      crec__lw_op_location(L, c->first, where, sizeof where);
      return crec__lw_fail(L, op, CREC_ERR_MLIR, "num_ranks is %lld, but communicator '%s' has %d ranks (num_ranks at %s)",
                     (long long)ranks, name, c->size, where);
    }
    *out = c->handle;
    return CREC_OK;
  }
  if (!has_ranks)
    return crec__lw_fail(L, op, CREC_ERR_MLIR, "communicator '%s' appears here first: give its size with num_ranks = N : i64",
                   name);
  if (ranks < 1 || ranks > 65536)
    return crec__lw_fail(L, op, CREC_ERR_MLIR, "num_ranks is %lld; a communicator has 1 to 65536 ranks", (long long)ranks);
  if (CREC__RESERVE(L->comms, L->cap_comms, L->num_comms + 1) != CREC_OK) return crec__oom(L->fn);
  lw_comm *c = &L->comms[L->num_comms];
  memset(c, 0, sizeof *c);
  if ((s = crec_program_add_communicator(L->p, name, (int)ranks, &c->handle))) return crec__lw_fail_builder(L, op, s);
  c->name = crec__strdup(name);
  if (!c->name) return crec__oom(L->fn);
  c->size = (int)ranks;
  c->first = op;
  L->num_comms++;
  if (crec__lw_map_put(&L->comm_keys, name, strlen(name), (uint32_t)(L->num_comms - 1)) != CREC_OK) return crec__oom(L->fn);
  *out = c->handle;
  return CREC_OK;
}

/* A table of ranks: dense<[[..], ..]> : tensor<RxCxi64> (or i32), flattened row
 * after row into *out (owned by the caller; NULL when absent or empty). `cols`
 * 0 takes any width. */
static crec_status rank_table(lw *L, MlirOperation op, const char *name, int64_t want_cols, const char *example,
                              int32_t **out, size_t *rows, size_t *cols, bool *present) {
  MlirAttribute a = crec__lw_attr(op, name);
  *out = NULL;
  *rows = *cols = 0;
  *present = !mlirAttributeIsNull(a);
  if (!*present) return CREC_OK;
  bool ints = mlirAttributeIsADenseIntElements(a);
  MlirType t = ints ? mlirAttributeGetType(a) : mlirIndexTypeGet(L->ctx);
  MlirType et = ints ? mlirShapedTypeGetElementType(t) : t;
  if (!ints || mlirShapedTypeGetRank(t) != 2 || !mlirTypeIsAInteger(et) ||
      (mlirIntegerTypeGetWidth(et) != 64 && mlirIntegerTypeGetWidth(et) != 32) ||
      (want_cols && mlirShapedTypeGetDimSize(t, 1) != want_cols && mlirShapedTypeGetDimSize(t, 0) != 0))
    return crec__lw_fail(L, op, CREC_ERR_MLIR, "%s must be a table of ranks like %s", name, example);
  bool wide = mlirIntegerTypeGetWidth(et) == 64;
  size_t r = (size_t)mlirShapedTypeGetDimSize(t, 0), c = (size_t)mlirShapedTypeGetDimSize(t, 1), n = r * c;
  if (n == 0) return CREC_OK;
  int32_t *v = crec__calloc(n, sizeof *v);
  if (!v) return crec__oom(L->fn);
  for (size_t i = 0; i < n; i++) {
    int64_t x = wide ? mlirDenseElementsAttrGetInt64Value(a, (intptr_t)i) : mlirDenseElementsAttrGetInt32Value(a, (intptr_t)i);
    if (x < INT32_MIN || x > INT32_MAX) {
      crec__free(v);
      return crec__lw_fail(L, op, CREC_ERR_MLIR, "%s: rank %lld (row %zu) does not fit 32 bits", name, (long long)x, i / c);
    }
    v[i] = (int32_t)x;
  }
  *out = v;
  *rows = r;
  *cols = c;
  return CREC_OK;
}

/* The op's replica_groups into `d` (`*table` owned: the rows of ranks, or NULL).
 * No groups, or an empty table (XLA's dense<> : tensor<0x0xi64>): none. */
static crec_status replica_groups(lw *L, MlirOperation op, crec_collective *d, int32_t **table) {
  size_t rows, cols;
  bool present;
  crec_status s = rank_table(L, op, "replica_groups", 0, "dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>", table, &rows,
                             &cols, &present);
  if (s) return s;
  d->groups = *table;
  d->num_groups = rows;
  d->group_size = cols;
  return CREC_OK;
}

/* Adds collective `d` for `op` as `*cmd` and notes its write; frees `table` (its groups or pairs). */
static crec_status add_collective(lw *L, MlirOperation op, crec_region region, const crec_collective *d,
                                  int32_t *table, crec_command *cmd) {
  char name[256];
  crec_status s = crec_program_add_collective(L->p, region, crec__lw_command_name(op, name, sizeof name), d, cmd);
  crec__free(table);
  if (s) return crec__lw_fail_builder(L, op, s);
  if ((s = crec__lw_note_write(L, op, d->recv))) return s;
  crec__lw_note_command(L);
  return CREC_OK;
}

/* crec.replica_id and crec.partition_id: one memref<1xi32> operand written with
 * this rank's replica or partition; replica_groups, when given, is the device
 * assignment (a row per replica, a column per partition). */
static crec_status collective_id(lw *L, MlirOperation op, crec_region region, crec_collective_kind kind) {
  static const char *const known[] = {"communicator", "num_ranks", "replica_groups", NULL};
  crec_status s;
  if ((s = check_attributes(L, op, known)) || (s = no_results(L, op))) return s;
  if (mlirOperationGetNumOperands(op) != 1)
    return crec__lw_fail(L, op, CREC_ERR_MLIR, "takes one memref<1xi32> operand, which it writes, but has %d",
                         (int)mlirOperationGetNumOperands(op));
  lw_memref *mr;
  MlirType er;
  if ((s = memref_operand(L, op, 0, "recv", &mr, &er))) return s;
  crec_collective d = CREC_COLLECTIVE_INIT;
  d.kind = kind;
  d.type = crec__lw_element_of(er);
  bool contiguous;
  if ((s = crec__lw_memref_range(L, op, mr, &d.recv, &contiguous))) return s;
  if ((s = communicator(L, op, &d.communicator))) return s;
  int32_t *table = NULL;
  if ((s = replica_groups(L, op, &d, &table))) return s;
  crec_command cmd;
  return add_collective(L, op, region, &d, table, &cmd);
}

static crec_status collective(lw *L, MlirOperation op, crec_region region, crec_collective_kind kind) {
  if (kind == CREC_COLLECTIVE_REPLICA_ID || kind == CREC_COLLECTIVE_PARTITION_ID)
    return collective_id(L, op, region, kind);
  bool reduces = kind == CREC_COLLECTIVE_ALL_REDUCE || kind == CREC_COLLECTIVE_REDUCE_SCATTER;
  bool permute = kind == CREC_COLLECTIVE_PERMUTE;
  const char *known[8];
  size_t k = 0;
  known[k++] = "communicator";
  known[k++] = "num_ranks";
  if (reduces) known[k++] = "reduction";
  known[k++] = permute ? "source_target_pairs" : "replica_groups";
  known[k++] = "async_id";
  known[k] = NULL;
  crec_status s;
  if ((s = check_attributes(L, op, known)) || (s = no_results(L, op))) return s;
  if (mlirOperationGetNumOperands(op) != 2)
    return crec__lw_fail(L, op, CREC_ERR_MLIR, "takes two memref operands, send and recv, but has %d",
                   (int)mlirOperationGetNumOperands(op));
  lw_memref *ms, *mr;
  MlirType es, er;
  if ((s = memref_operand(L, op, 0, "send", &ms, &es)) || (s = memref_operand(L, op, 1, "recv", &mr, &er))) return s;
  if (!mlirTypeEqual(es, er)) {
    char ts[64], tr[64];
    return crec__lw_fail(L, op, CREC_ERR_MLIR, "send has %s elements but recv %s", type_text(es, ts, sizeof ts),
                   type_text(er, tr, sizeof tr));
  }
  crec_collective d = CREC_COLLECTIVE_INIT;
  d.kind = kind;
  d.type = crec__lw_element_of(es);
  bool contiguous;
  if ((s = crec__lw_memref_range(L, op, ms, &d.send, &contiguous))) return s;
  if (!contiguous) return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "send is not a dense memref; collectives move dense byte ranges");
  if ((s = crec__lw_memref_range(L, op, mr, &d.recv, &contiguous))) return s;
  if (!contiguous) return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "recv is not a dense memref; collectives move dense byte ranges");
  char text[256];
  bool present;
  if (reduces) {
    static const char *const reductions[] = {"sum", "prod", "min", "max"};
    if ((s = string_attr(L, op, "reduction", text, sizeof text, &present))) return s;
    if (!present)
      return crec__lw_fail(L, op, CREC_ERR_MLIR, "needs a reduction: reduction = \"sum\", \"prod\", \"min\" or \"max\"");
    int r = 0;
    while (r < 4 && strcmp(text, reductions[r]) != 0) r++;
    if (r == 4) return crec__lw_fail(L, op, CREC_ERR_MLIR, "unknown reduction '%s' (sum, prod, min or max)", text);
    d.reduction = (crec_reduction)r;
  }
  if ((s = communicator(L, op, &d.communicator))) return s;
  char async_id[256];
  bool is_async;
  if ((s = string_attr(L, op, "async_id", async_id, sizeof async_id, &is_async))) return s;
  uint32_t ai = is_async ? crec__lw_map_get(&L->async_keys, async_id, strlen(async_id)) : LW_NONE;
  if (ai != LW_NONE && !L->asyncs[ai].done) {
    char where[1100];
    crec__lw_op_location(L, L->asyncs[ai].start_op, where, sizeof where);
    return crec__lw_fail(L, op, CREC_ERR_MLIR, "async_id '%s' is still in flight (started at %s, not yet done)", async_id,
                   where);
  }
  d.async = is_async;
  int32_t *table = NULL;
  size_t rows, cols;
  if (permute) {
    if ((s = rank_table(L, op, "source_target_pairs", 2, "dense<[[0, 1], [1, 0]]> : tensor<2x2xi64>", &table, &rows,
                        &cols, &present)))
      return s;
    if (!present)
      return crec__lw_fail(L, op, CREC_ERR_MLIR, "needs source_target_pairs = dense<[[source, target], ...]> : tensor<Px2xi64>");
    d.pairs = table;
    d.num_pairs = rows;
  } else if ((s = replica_groups(L, op, &d, &table))) {
    return s;
  }
  crec_command cmd;
  if ((s = add_collective(L, op, region, &d, table, &cmd))) return s;
  if (!is_async) return CREC_OK;
  if (ai == LW_NONE) {
    if (CREC__RESERVE(L->asyncs, L->cap_asyncs, L->num_asyncs + 1) != CREC_OK) return crec__oom(L->fn);
    lw_async *a = &L->asyncs[L->num_asyncs];
    memset(a, 0, sizeof *a);
    if (!(a->id = crec__strdup(async_id))) return crec__oom(L->fn);
    ai = (uint32_t)L->num_asyncs++;
    if (crec__lw_map_put(&L->async_keys, async_id, strlen(async_id), ai) != CREC_OK) return crec__oom(L->fn);
  }
  /* an id may start again once its previous collective is done */
  L->asyncs[ai].start_op = op;
  L->asyncs[ai].start = cmd;
  L->asyncs[ai].done = false;
  return CREC_OK;
}

/* "crec.collective_done"() {async_id = "name"}: the results of that start are visible after it. */
static crec_status collective_done(lw *L, MlirOperation op, crec_region region) {
  static const char *const known[] = {"async_id", NULL};
  crec_status s;
  if ((s = check_attributes(L, op, known)) || (s = no_results(L, op))) return s;
  if (mlirOperationGetNumOperands(op))
    return crec__lw_fail(L, op, CREC_ERR_MLIR, "takes no operands: \"crec.collective_done\"() {async_id = \"name\"} : () -> ()");
  char id[256];
  bool present;
  if ((s = string_attr(L, op, "async_id", id, sizeof id, &present))) return s;
  if (!present) return crec__lw_fail(L, op, CREC_ERR_MLIR, "needs the async_id of the collective it finishes");
  uint32_t ai = crec__lw_map_get(&L->async_keys, id, strlen(id));
  if (ai == LW_NONE || L->asyncs[ai].done) {
    if (ai == LW_NONE)
      return crec__lw_fail(L, op, CREC_ERR_MLIR, "no collective with async_id '%s' was started before it", id);
    char where[1100];
    crec__lw_op_location(L, L->asyncs[ai].start_op, where, sizeof where);
    return crec__lw_fail(L, op, CREC_ERR_MLIR, "the collective with async_id '%s' (started at %s) is already done", id, where);
  }
  char name[256];
  crec_command cmd;
  if ((s = crec_program_add_collective_done(L->p, region, crec__lw_command_name(op, name, sizeof name), L->asyncs[ai].start,
                                            &cmd)))
    return crec__lw_fail_builder(L, op, s);
  L->asyncs[ai].done = true;
  /* recv is complete only here: a condition loaded between start and done is overwritten */
  crec_collective d = CREC_COLLECTIVE_INIT;
  if ((s = crec_command_get_collective(L->p, cmd, &d, NULL))) return crec__lw_fail_builder(L, op, s);
  if ((s = crec__lw_note_write(L, op, d.recv))) return s;
  crec__lw_note_command(L);
  return CREC_OK;
}

/* ---- custom calls ---- */

/* The kernels a crec.custom_call lists (kernels = [@module::@kernel, ...]): their
 * indices into L->kernels in `out` (room for *n), or just resolved when out is NULL. */
static crec_status custom_kernels(lw *L, MlirOperation op, uint32_t *out, size_t *n) {
  MlirAttribute a = crec__lw_attr(op, "kernels");
  if (n) *n = 0;
  if (mlirAttributeIsNull(a)) return CREC_OK;
  if (!mlirAttributeIsAArray(a))
    return crec__lw_fail(L, op, CREC_ERR_MLIR, "kernels must be an array of kernel references, like [@module::@kernel]");
  intptr_t count = mlirArrayAttrGetNumElements(a);
  for (intptr_t i = 0; i < count; i++) {
    uint32_t k;
    crec_status s = crec__lw_kernel_for_ref(L, op, mlirArrayAttrGetElement(a, i), &k);
    if (s) return s;
    if (out) out[i] = k;
  }
  if (n) *n = (size_t)count;
  return CREC_OK;
}

crec_status crec__lw_custom_call_kernels(lw *L, MlirOperation op) { return custom_kernels(L, op, NULL, NULL); }

/* The attributes crec reads itself; the others go to the handler. */
static bool custom_reserved(MlirStringRef name) {
  return named(name, "target") || named(name, "holes") || named(name, "access") || named(name, "kernels") ||
         named(name, "crec.name");
}

/* The handler's attributes: the op's other attributes as a printed dictionary,
 * with its terminating NUL ("{}" when there are none). */
static crec_status custom_attributes(lw *L, MlirOperation op, char **out) {
  intptr_t n = mlirOperationGetNumDiscardableAttributes(op), k = 0;
  MlirNamedAttribute *rest = crec__calloc(n ? (size_t)n : 1, sizeof *rest);
  if (!rest) return crec__oom(L->fn);
  for (intptr_t i = 0; i < n; i++) {
    MlirNamedAttribute a = mlirOperationGetDiscardableAttribute(op, i);
    if (!custom_reserved(mlirIdentifierStr(a.name))) rest[k++] = a;
  }
  /* a dictionary sorts by name: the text does not depend on how the op was written */
  *out = crec__lw_attr_string(mlirDictionaryAttrGet(L->ctx, k, rest));
  crec__free(rest);
  return *out ? CREC_OK : crec__oom(L->fn);
}

/* "crec.custom_call"(%ops...) {target = "name", holes = array<i64: ...>, access = ["r", "w", ...],
 * kernels = [@m::@k], ...attributes for the handler} */
static crec_status custom_call(lw *L, MlirOperation op, crec_region region) {
  crec_status s = no_results(L, op);
  if (s) return s;
  char target[256];
  bool present;
  if ((s = string_attr(L, op, "target", target, sizeof target, &present))) return s;
  if (!present) return crec__lw_fail(L, op, CREC_ERR_MLIR, "needs target = \"name\": the handler registered under that name runs it");
  size_t n = (size_t)mlirOperationGetNumOperands(op), nh = 0;
  MlirAttribute holes = crec__lw_attr(op, "holes"), access = crec__lw_attr(op, "access");
  if (!mlirAttributeIsNull(holes)) {
    if (!mlirAttributeIsADenseI64Array(holes))
      return crec__lw_fail(L, op, CREC_ERR_MLIR, "holes must be an array of operand slots, like array<i64: 1, 3>");
    nh = (size_t)mlirDenseArrayGetNumElements(holes);
  }
  if (!mlirAttributeIsNull(access)) {
    if (!mlirAttributeIsAArray(access) || (size_t)mlirArrayAttrGetNumElements(access) != n)
      return crec__lw_fail(L, op, CREC_ERR_MLIR, "access must be an array of one \"r\", \"w\" or \"rw\" per operand (%zu), "
                     "holes not counted", n);
  }
  size_t total = n + nh, nk = 0;
  uint32_t *kernel_index = NULL;
  crec_kernel *kernels = NULL;
  crec_operand *ops = crec__calloc(total ? total : 1, sizeof *ops);
  bool *is_hole = crec__calloc(total ? total : 1, sizeof *is_hole);
  char *attributes = NULL;
  MlirAttribute kattr = crec__lw_attr(op, "kernels");
  size_t kcap = !mlirAttributeIsNull(kattr) && mlirAttributeIsAArray(kattr) ? (size_t)mlirArrayAttrGetNumElements(kattr) : 0;
  kernel_index = crec__calloc(kcap ? kcap : 1, sizeof *kernel_index);
  kernels = crec__calloc(kcap ? kcap : 1, sizeof *kernels);
  if (!ops || !is_hole || !kernel_index || !kernels) {
    s = crec__oom(L->fn);
    goto done;
  }
  for (size_t i = 0; i < nh; i++) {
    int64_t h = mlirDenseI64ArrayGetElement(holes, (intptr_t)i);
    if (h < 0 || (uint64_t)h >= total) {
      s = crec__lw_fail(L, op, CREC_ERR_MLIR, "holes: slot %lld is not one of the %zu operand slots (%zu operands and %zu holes)",
                  (long long)h, total, n, nh);
      goto done;
    }
    if (is_hole[h]) {
      s = crec__lw_fail(L, op, CREC_ERR_MLIR, "holes: slot %lld is listed twice", (long long)h);
      goto done;
    }
    is_hole[h] = true;
  }
  for (size_t slot = 0, j = 0; slot < total; slot++) {
    if (is_hole[slot]) {
      ops[slot] = crec_operand_hole();
      continue;
    }
    crec_access acc = CREC_ACCESS_READ_WRITE;
    if (!mlirAttributeIsNull(access)) {
      MlirAttribute e = mlirArrayAttrGetElement(access, (intptr_t)j);
      MlirStringRef v = mlirAttributeIsAString(e) ? mlirStringAttrGetValue(e) : mlirStringRefCreate("", 0);
      acc = named(v, "r") ? CREC_ACCESS_READ : named(v, "w") ? CREC_ACCESS_WRITE
            : named(v, "rw") ? CREC_ACCESS_READ_WRITE : (crec_access)0;
      if (!acc) {
        s = crec__lw_fail(L, op, CREC_ERR_MLIR, "access entry %zu is not \"r\", \"w\" or \"rw\"", j);
        goto done;
      }
    }
    char what[64];
    snprintf(what, sizeof what, "operand %zu", j);
    lw_memref *m;
    MlirType et;
    crec_range r;
    bool contiguous;
    if ((s = memref_operand(L, op, (intptr_t)j, what, &m, &et)) || (s = crec__lw_memref_range(L, op, m, &r, &contiguous)))
      goto done;
    ops[slot] = crec_operand_of(r, acc);
    j++;
  }
  if ((s = custom_kernels(L, op, kernel_index, &nk))) goto done;
  for (size_t i = 0; i < nk; i++) kernels[i] = L->kernels[kernel_index[i]].handle;
  if ((s = custom_attributes(L, op, &attributes))) goto done;
  crec_custom cu = CREC_CUSTOM_INIT;
  cu.target = target;
  cu.operands = ops;
  cu.num_operands = total;
  cu.kernels = kernels;
  cu.num_kernels = nk;
  cu.attributes = attributes;
  cu.attributes_size = strlen(attributes) + 1;
  char name[256];
  crec_command cmd;
  if ((s = crec_program_add_custom(L->p, region, crec__lw_command_name(op, name, sizeof name), &cu, &cmd))) {
    s = crec__lw_fail_builder(L, op, s);
    goto done;
  }
  for (size_t i = 0; i < total; i++)
    if (!is_hole[i] && (ops[i].access & CREC_ACCESS_WRITE) && (s = crec__lw_note_write(L, op, ops[i].range))) goto done;
  crec__lw_note_command(L);
done:
  crec__free(ops);
  crec__free(is_hole);
  crec__free(kernel_index);
  crec__free(kernels);
  crec__free(attributes);
  return s;
}

/* ---- dispatch ---- */

/* ---- infeed and outfeed ---- */

/* "crec.infeed"(%dst) {queue = "q", timeout_ms = 10000} : (memref<...>) -> ()
 * and "crec.outfeed"(%src) {...}: a feed command over the memref's bytes. */
static crec_status feed_op(lw *L, MlirOperation op, crec_region region, bool in) {
  const char *what = in ? "crec.infeed" : "crec.outfeed";
  if (mlirOperationGetNumOperands(op) != 1 || mlirOperationGetNumResults(op) || mlirOperationGetNumRegions(op))
    return crec__lw_fail(L, op, CREC_ERR_MLIR, "%s takes one memref and has no results: \"%s\"(%%buf) {queue = "
                         "\"q\"} : (memref<...>) -> ()",
                         what, what);
  char queue[256];
  bool present = false;
  if (!crec__lw_string_attr(op, "queue", queue, sizeof queue, &present) || !present || !queue[0])
    return crec__lw_fail(L, op, CREC_ERR_MLIR, "%s needs a string attribute 'queue' (the queue's name)", what);
  crec_feed f = CREC_FEED_INIT;
  f.queue = queue;
  MlirAttribute t = crec__lw_attr(op, "timeout_ms");
  if (!mlirAttributeIsNull(t)) {
    /* asking MLIR only for a value the attribute's type can give (signless, signed or unsigned) */
    MlirType tt = mlirAttributeIsAInteger(t) ? mlirAttributeGetType(t) : (MlirType){NULL};
    bool integer = !mlirTypeIsNull(tt) && mlirTypeIsAInteger(tt) && mlirIntegerTypeGetWidth(tt) <= 64;
    int64_t ms = !integer                         ? -1
                 : mlirIntegerTypeIsUnsigned(tt) ? (int64_t)(mlirIntegerAttrGetValueUInt(t) & INT64_MAX)
                 : mlirIntegerTypeIsSigned(tt)   ? mlirIntegerAttrGetValueSInt(t)
                                                 : mlirIntegerAttrGetValueInt(t);
    if (ms <= 0 || ms > UINT32_MAX)
      return crec__lw_fail(L, op, CREC_ERR_MLIR, "%s: 'timeout_ms' must be a positive integer (milliseconds)", what);
    f.timeout_ms = (uint32_t)ms;
  }
  lw_memref *m;
  MlirType et;
  crec_status s = memref_operand(L, op, 0, in ? "the infeed's destination" : "the outfeed's source", &m, &et);
  if (s) return s;
  crec_range range;
  bool contiguous = false;
  if ((s = crec__lw_memref_range(L, op, m, &range, &contiguous))) return s;
  if (!contiguous)
    return crec__lw_fail(L, op, CREC_ERR_UNSUPPORTED, "%s moves a dense memref's bytes; this view has gaps", what);
  char name[256];
  crec_command cmd;
  const char *label = crec__lw_command_name(op, name, sizeof name);
  s = in ? crec_program_add_infeed(L->p, region, label, &f, range, &cmd)
         : crec_program_add_outfeed(L->p, region, label, &f, range, &cmd);
  if (s) return crec__lw_fail_builder(L, op, s);
  crec__lw_note_command(L);
  /* an infeed writes its memref (a loaded condition must not change under it) */
  return in ? crec__lw_note_write(L, op, range) : CREC_OK;
}

bool crec__lw_is_library_op(MlirOperation op) {
  if (crec__lw_is(op, "linalg.matmul") || crec__lw_is(op, "linalg.batch_matmul") || crec__lw_is(op, "crec.gemm") ||
      crec__lw_is(op, "crec.fft") || crec__lw_is(op, "crec.cholesky") || crec__lw_is(op, "crec.collective_done") ||
      crec__lw_is(op, "crec.custom_call") || crec__lw_is(op, "crec.infeed") || crec__lw_is(op, "crec.outfeed") ||
      crec__lw_is(op, "crec.conv") || linalg_conv_of(op))
    return true;
  for (size_t i = 0; i < NUM_COLLECTIVES; i++)
    if (crec__lw_is(op, collectives[i].op)) return true;
  return false;
}

crec_status crec__lw_library_op(lw *L, MlirOperation op, crec_region region) {
  if (crec__lw_is(op, "linalg.matmul") || crec__lw_is(op, "linalg.batch_matmul")) return linalg_matmul(L, op, region);
  if (crec__lw_is(op, "crec.gemm")) return crec_gemm_op(L, op, region);
  if (crec__lw_is(op, "crec.fft")) return crec_fft_op(L, op, region);
  if (crec__lw_is(op, "crec.cholesky")) return crec_cholesky_op(L, op, region);
  if (crec__lw_is(op, "crec.conv")) return crec_conv_op(L, op, region);
  const struct lw_linalg_conv *conv = linalg_conv_of(op);
  if (conv) return linalg_conv(L, op, region, conv);
  if (crec__lw_is(op, "crec.collective_done")) return collective_done(L, op, region);
  if (crec__lw_is(op, "crec.custom_call")) return custom_call(L, op, region);
  if (crec__lw_is(op, "crec.infeed") || crec__lw_is(op, "crec.outfeed"))
    return feed_op(L, op, region, crec__lw_is(op, "crec.infeed"));
  for (size_t i = 0; i < NUM_COLLECTIVES; i++)
    if (crec__lw_is(op, collectives[i].op)) return collective(L, op, region, collectives[i].kind);
  return crec__lw_fail(L, op, CREC_ERR_INTERNAL, "not a library op");
}

crec_status crec__lw_library_finish(lw *L) {
  for (size_t i = 0; i < L->num_asyncs; i++)
    if (!L->asyncs[i].done)
      return crec__lw_fail(L, L->asyncs[i].start_op, CREC_ERR_MLIR,
                     "the async collective started here (async_id '%s') has no \"crec.collective_done\"",
                     L->asyncs[i].id);
  return CREC_OK;
}

void crec__lw_library_free(lw *L) {
  for (size_t i = 0; i < L->num_comms; i++) crec__free(L->comms[i].name);
  crec__free(L->comms);
  crec__lw_map_free(&L->comm_keys);
  for (size_t i = 0; i < L->num_asyncs; i++) crec__free(L->asyncs[i].id);
  crec__free(L->asyncs);
  crec__lw_map_free(&L->async_keys);
}
