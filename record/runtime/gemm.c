/* GEMM through cuBLASLt, opened at run time. Each CUDA context gets a plan per
 * GEMM command: descriptors and the algorithm the heuristic picks once, for the
 * alignment every binding guarantees, so every later call (eager, or captured
 * for a new address set) runs the same kernels.
 *
 * crec's matrices are row-major; cuBLASLt's default is column-major. A row-major
 * X (r x c, ld) is the column-major X^T (c x r, ld), so D = op(A)·op(B) becomes
 * D^T = op(B)^T · op(A)^T: cuBLASLt multiplies B by A, with m = N and n = M. The
 * bias then runs along cuBLASLt's rows, which are D's columns, as it should. */
#include <cublasLt.h>
#include <dlfcn.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "runtime_internal.h"

/* The cuBLASLt functions crec calls, declared by hand (no typeof in C11). */
/* The cuBLASLt functions crec calls: (field, symbol, return type, parameters);
 * one table makes the struct and the lookups. */
#define CREC__LT_FUNCS(X)                                                                                         \
  X(create, "cublasLtCreate", cublasStatus_t, (cublasLtHandle_t *))                                               \
  X(destroy, "cublasLtDestroy", cublasStatus_t, (cublasLtHandle_t))                                               \
  X(get_version, "cublasLtGetVersion", size_t, (void))                                                            \
  X(status_name, "cublasLtGetStatusName", const char *, (cublasStatus_t))                                         \
  X(status_string, "cublasLtGetStatusString", const char *, (cublasStatus_t))                                     \
  X(desc_create, "cublasLtMatmulDescCreate", cublasStatus_t,                                                      \
    (cublasLtMatmulDesc_t *, cublasComputeType_t, cudaDataType_t))                                                \
  X(desc_destroy, "cublasLtMatmulDescDestroy", cublasStatus_t, (cublasLtMatmulDesc_t))                            \
  X(desc_set, "cublasLtMatmulDescSetAttribute", cublasStatus_t,                                                   \
    (cublasLtMatmulDesc_t, cublasLtMatmulDescAttributes_t, const void *, size_t))                                 \
  X(layout_create, "cublasLtMatrixLayoutCreate", cublasStatus_t,                                                  \
    (cublasLtMatrixLayout_t *, cudaDataType, uint64_t, uint64_t, int64_t))                                        \
  X(layout_destroy, "cublasLtMatrixLayoutDestroy", cublasStatus_t, (cublasLtMatrixLayout_t))                      \
  X(layout_set, "cublasLtMatrixLayoutSetAttribute", cublasStatus_t,                                               \
    (cublasLtMatrixLayout_t, cublasLtMatrixLayoutAttribute_t, const void *, size_t))                              \
  X(pref_create, "cublasLtMatmulPreferenceCreate", cublasStatus_t, (cublasLtMatmulPreference_t *))                \
  X(pref_destroy, "cublasLtMatmulPreferenceDestroy", cublasStatus_t, (cublasLtMatmulPreference_t))                \
  X(pref_set, "cublasLtMatmulPreferenceSetAttribute", cublasStatus_t,                                             \
    (cublasLtMatmulPreference_t, cublasLtMatmulPreferenceAttributes_t, const void *, size_t))                     \
  X(heuristic, "cublasLtMatmulAlgoGetHeuristic", cublasStatus_t,                                                  \
    (cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, \
     cublasLtMatrixLayout_t, cublasLtMatmulPreference_t, int, cublasLtMatmulHeuristicResult_t *, int *))          \
  X(matmul, "cublasLtMatmul", cublasStatus_t,                                                                     \
    (cublasLtHandle_t, cublasLtMatmulDesc_t, const void *, const void *, cublasLtMatrixLayout_t, const void *,      \
     cublasLtMatrixLayout_t, const void *, const void *, cublasLtMatrixLayout_t, void *, cublasLtMatrixLayout_t,   \
     const cublasLtMatmulAlgo_t *, void *, size_t, cudaStream_t))

typedef struct crec__lt {
#define CREC__LT_FIELD(field, symbol, ret, params) ret(*field) params;
  CREC__LT_FUNCS(CREC__LT_FIELD)
#undef CREC__LT_FIELD
} crec__lt;

CREC__LIBRARY_LOADER(crec__lt, lt, CREC__LT_FUNCS, "cuBLASLt", "libcublasLt.so.13")

/* Returns the cuBLASLt table, or NULL after setting CREC_ERR_UNSUPPORTED in `fn`'s name. */
static const crec__lt *cublaslt(const char *fn, const char *label) {
  return crec__loader_check(&loader, load, label, fn) ? NULL : &lt;
}

crec_status crec__gemm_library(const char *fn) { return crec__loader_check(&loader, load, NULL, fn); }

/* Calls cuBLASLt with the CUDA fault hook in front (test builds fail the n-th call). */
#define LT(call) (crec__cu_fault() ? CUBLAS_STATUS_ALLOC_FAILED : (call))

static crec_status lt_fail(const char *fn, const char *label, cublasStatus_t r, const char *call) {
  const char *name = lt.status_name ? lt.status_name(r) : NULL;
  const char *text = lt.status_string ? lt.status_string(r) : NULL;
  return crec__error(CREC_ERR_CUDA, fn, "%s: %s failed: %s (%s)", label, call, name ? name : "CUBLAS_STATUS_?",
                     text ? text : "no description");
}

/* A GEMM's plan in one context. */
typedef struct crec__gemm_plan {
  cublasLtMatmulDesc_t op;
  cublasLtMatrixLayout_t a, b, c, d; /* cuBLASLt's operands: a is crec's B, b is crec's A */
  cublasLtMatmulAlgo_t algo;
  size_t workspace;                  /* bytes the algorithm uses */
  float alpha, beta;
  bool bias;
  pthread_mutex_t lock;              /* the bias pointer lives in `op`: set and used under it */
} crec__gemm_plan;

static void plan_free(const crec__lt *l, crec__gemm_plan *g) {
  if (!g) return;
  if (g->op) l->desc_destroy(g->op);
  if (g->a) l->layout_destroy(g->a);
  if (g->b) l->layout_destroy(g->b);
  if (g->c) l->layout_destroy(g->c);
  if (g->d) l->layout_destroy(g->d);
  pthread_mutex_destroy(&g->lock);
  crec__free(g);
}

void crec__gemm_state_free(const crec_program *p, crec__ctx_state *st) {
  /* nothing made, so nothing to free (and `loaded`, written by another
   * thread's first GEMM, is not read here: only what this state holds) */
  if (!st->gemm && !st->lt) return;
  for (size_t i = 0; st->gemm && i < p->num_commands; i++) plan_free(&lt, st->gemm[i]);
  crec__free(st->gemm);
  st->gemm = NULL;
  if (st->lt) {
    lt.destroy((cublasLtHandle_t)st->lt);
    st->lt = NULL;
    CREC__CUDA_LIVE(-1);
  }
}

static cudaDataType_t data_type(crec_element e) {
  return e == CREC_ELEMENT_F16 ? CUDA_R_16F : e == CREC_ELEMENT_BF16 ? CUDA_R_16BF : CUDA_R_32F;
}

/* The largest power of two (at most 256) every address of a matrix is a multiple
 * of: its buffer's guaranteed alignment, its offset, and the batch stride. */
static uint32_t guaranteed_alignment(const crec_program *p, crec_range r, uint64_t stride_bytes, uint64_t batch) {
  const crec__buffer *b = &p->buffers[crec__index(r.buffer.id)];
  /* temporaries sit at multiples of the arena alignment (at least 256), constants
   * in their own allocations (256-aligned) */
  uint64_t bits = b->kind == CREC_BUFFER_ARGUMENT ? b->alignment : 256;
  bits |= r.offset;
  if (batch > 1) bits |= stride_bytes;
  uint32_t a = 1;
  while (a < 256 && !(bits & a)) a <<= 1;
  return a;
}

/* Makes a layout for a row-major `rows` x `cols` matrix with `ld`, as cuBLASLt's
 * column-major `cols` x `rows`. */
static cublasStatus_t make_layout(const crec__lt *l, cublasLtMatrixLayout_t *out, crec_element type, uint64_t rows,
                                  uint64_t cols, uint64_t ld, uint64_t batch, uint64_t stride) {
  cublasStatus_t r = LT(l->layout_create(out, data_type(type), cols, rows, (int64_t)ld));
  if (r != CUBLAS_STATUS_SUCCESS) {
    *out = NULL;
    return r;
  }
  if (batch > 1) {
    int32_t count = (int32_t)batch;
    int64_t off = (int64_t)stride;
    r = LT(l->layout_set(*out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
    if (r == CUBLAS_STATUS_SUCCESS)
      r = LT(l->layout_set(*out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &off, sizeof off));
  }
  return r;
}

static crec_status make_plan(const crec_program *p, const crec__lt *l, cublasLtHandle_t h, uint32_t ci,
                             crec__gemm_plan **out, const char *fn) {
  const crec__command *c = &p->commands[ci];
  const crec__gemm *gm = c->gemm;
  const crec_gemm *g = &gm->desc;
  char label[200];
  crec__command_label(p, ci, label, sizeof label);
  crec__gemm_plan *pl = crec__calloc(1, sizeof *pl);
  if (!pl) return crec__oom(fn);
  pthread_mutex_init(&pl->lock, NULL);
  const char *call = "cublasLtMatmulDescCreate";
  cublasLtMatmulPreference_t pref = NULL;
  crec_status s = CREC_OK;
  size_t es = crec_element_size(g->type), eo = crec_element_size(g->output_type);
  bool has_c = g->c.range.buffer.id != 0;
  const crec_matrix *cm = has_c ? &g->c : &g->d;
  cublasStatus_t r = LT(l->desc_create(&pl->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  if (r != CUBLAS_STATUS_SUCCESS) pl->op = NULL;
  /* cuBLASLt's A is crec's B and the reverse (see the top of this file) */
  cublasOperation_t ta = g->transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N, tb = g->transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (r == CUBLAS_STATUS_SUCCESS) {
    call = "cublasLtMatmulDescSetAttribute(TRANSA, TRANSB)";
    r = LT(l->desc_set(pl->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    if (r == CUBLAS_STATUS_SUCCESS) r = LT(l->desc_set(pl->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  }
  if (r == CUBLAS_STATUS_SUCCESS && g->epilogue != CREC_GEMM_EPILOGUE_NONE) {
    call = "cublasLtMatmulDescSetAttribute(EPILOGUE)";
    cublasLtEpilogue_t ep = g->epilogue == CREC_GEMM_EPILOGUE_BIAS ? CUBLASLT_EPILOGUE_BIAS
                            : g->epilogue == CREC_GEMM_EPILOGUE_RELU ? CUBLASLT_EPILOGUE_RELU
                                                                     : CUBLASLT_EPILOGUE_RELU_BIAS;
    r = LT(l->desc_set(pl->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &ep, sizeof ep));
    pl->bias = g->epilogue != CREC_GEMM_EPILOGUE_RELU;
    if (r == CUBLAS_STATUS_SUCCESS && pl->bias && g->batch > 1) {
      int64_t zero = 0; /* one bias for the whole batch */
      call = "cublasLtMatmulDescSetAttribute(BIAS_BATCH_STRIDE)";
      r = LT(l->desc_set(pl->op, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, &zero, sizeof zero));
    }
  }
  if (r == CUBLAS_STATUS_SUCCESS) {
    call = "cublasLtMatrixLayoutCreate";
    r = make_layout(l, &pl->a, g->type, g->b.rows, g->b.cols, g->b.ld, g->batch, g->b.batch_stride);
    if (r == CUBLAS_STATUS_SUCCESS)
      r = make_layout(l, &pl->b, g->type, g->a.rows, g->a.cols, g->a.ld, g->batch, g->a.batch_stride);
    if (r == CUBLAS_STATUS_SUCCESS)
      r = make_layout(l, &pl->c, g->output_type, cm->rows, cm->cols, cm->ld, g->batch, cm->batch_stride);
    if (r == CUBLAS_STATUS_SUCCESS)
      r = make_layout(l, &pl->d, g->output_type, g->d.rows, g->d.cols, g->d.ld, g->batch, g->d.batch_stride);
  }
  if (r == CUBLAS_STATUS_SUCCESS) {
    call = "cublasLtMatmulPreferenceCreate";
    r = LT(l->pref_create(&pref));
    if (r != CUBLAS_STATUS_SUCCESS) pref = NULL;
  }
  if (r == CUBLAS_STATUS_SUCCESS) {
    call = "cublasLtMatmulPreferenceSetAttribute";
    uint64_t ws = g->workspace_bytes;
    uint32_t al[4] = {guaranteed_alignment(p, g->b.range, g->b.batch_stride * es, g->batch),
                      guaranteed_alignment(p, g->a.range, g->a.batch_stride * es, g->batch),
                      guaranteed_alignment(p, cm->range, cm->batch_stride * eo, g->batch),
                      guaranteed_alignment(p, g->d.range, g->d.batch_stride * eo, g->batch)};
    static const cublasLtMatmulPreferenceAttributes_t which[4] = {
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    r = LT(l->pref_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    for (int i = 0; i < 4 && r == CUBLAS_STATUS_SUCCESS; i++) r = LT(l->pref_set(pref, which[i], &al[i], sizeof al[i]));
  }
  if (r == CUBLAS_STATUS_SUCCESS) {
    call = "cublasLtMatmulAlgoGetHeuristic";
    cublasLtMatmulHeuristicResult_t res;
    memset(&res, 0, sizeof res);
    int found = 0;
    r = LT(l->heuristic(h, pl->op, pl->a, pl->b, pl->c, pl->d, pref, 1, &res, &found));
    if (r == CUBLAS_STATUS_SUCCESS && (found == 0 || res.state != CUBLAS_STATUS_SUCCESS)) {
      s = crec__error(CREC_ERR_UNSUPPORTED, fn,
                      "%s: cuBLASLt has no algorithm for this %s GEMM%s%s (M=%" PRIu64 " N=%" PRIu64 " K=%" PRIu64
                      ", batch %" PRIu64 ", %" PRIu64 " workspace bytes)",
                      label, crec_element_name(g->type), g->output_type != g->type ? " into " : "",
                      g->output_type != g->type ? crec_element_name(g->output_type) : "", gm->m, gm->n, gm->k,
                      g->batch, g->workspace_bytes);
    } else if (r == CUBLAS_STATUS_SUCCESS) {
      pl->algo = res.algo;
      pl->workspace = res.workspaceSize;
    }
  }
  if (pref) l->pref_destroy(pref);
  if (r != CUBLAS_STATUS_SUCCESS) s = lt_fail(fn, label, r, call);
  if (s) {
    plan_free(l, pl);
    return s;
  }
  pl->alpha = (float)g->alpha;
  pl->beta = (float)g->beta;
  *out = pl;
  return CREC_OK;
}

crec_status crec__gemm_prepare(const crec_program *p, crec__runtime *rt, crec__ctx_state *st, const char *fn) {
  size_t first = p->num_commands;
  for (size_t i = 0; i < p->num_commands && first == p->num_commands; i++)
    if (p->commands[i].kind == CREC_COMMAND_GEMM) first = i;
  if (first == p->num_commands) return CREC_OK;
  char label[200];
  const crec__lt *l = cublaslt(fn, crec__command_label(p, first, label, sizeof label));
  if (!l) return CREC_ERR_UNSUPPORTED;
  crec_status s = CREC_OK;
  pthread_mutex_lock(&rt->lock);
  if (!st->gemm) {
    st->gemm = crec__calloc(p->num_commands, sizeof *st->gemm);
    if (!st->gemm) s = crec__oom(fn);
  }
  if (!s && !st->lt) {
    cublasLtHandle_t h = NULL;
    cublasStatus_t r = LT(l->create(&h));
    if (r != CUBLAS_STATUS_SUCCESS) {
      s = lt_fail(fn, label, r, "cublasLtCreate");
    } else {
      st->lt = h;
      CREC__CUDA_LIVE(1);
    }
  }
  for (size_t i = first; i < p->num_commands && !s; i++)
    if (p->commands[i].kind == CREC_COMMAND_GEMM && !st->gemm[i])
      s = make_plan(p, l, (cublasLtHandle_t)st->lt, (uint32_t)i, &st->gemm[i], fn);
  /* plans made before a failure stay: they are valid and freed with the state */
  pthread_mutex_unlock(&rt->lock);
  return s;
}

crec_status crec__gemm_issue(const crec_program *p, const crec__ctx_state *st, const crec__values *v,
                             uint32_t ci, CUstream stream, const char *fn) {
  const crec__gemm *gm = p->commands[ci].gemm;
  const crec_gemm *g = &gm->desc;
  crec__gemm_plan *pl = st->gemm[ci];
  void *a = (void *)(uintptr_t)crec__range_addr(v, g->a.range);
  void *b = (void *)(uintptr_t)crec__range_addr(v, g->b.range);
  void *d = (void *)(uintptr_t)crec__range_addr(v, g->d.range);
  void *c = g->c.range.buffer.id ? (void *)(uintptr_t)crec__range_addr(v, g->c.range) : d;
  void *ws = (void *)(uintptr_t)v->base[gm->workspace];
  cublasStatus_t r = CUBLAS_STATUS_SUCCESS;
  const char *call = "cublasLtMatmul";
  if (pl->bias) {
    void *bias = (void *)(uintptr_t)crec__range_addr(v, g->bias);
    pthread_mutex_lock(&pl->lock);
    r = LT(lt.desc_set(pl->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
    if (r != CUBLAS_STATUS_SUCCESS) call = "cublasLtMatmulDescSetAttribute(BIAS_POINTER)";
  }
  if (r == CUBLAS_STATUS_SUCCESS)
    r = LT(lt.matmul((cublasLtHandle_t)st->lt, pl->op, &pl->alpha, b, pl->a, a, pl->b, &pl->beta, c, pl->c, d, pl->d,
                     &pl->algo, ws, pl->workspace, (cudaStream_t)stream));
  if (pl->bias) pthread_mutex_unlock(&pl->lock);
  if (r != CUBLAS_STATUS_SUCCESS) {
    char label[200];
    return lt_fail(fn, crec__command_label(p, ci, label, sizeof label), r, call);
  }
  return CREC_OK;
}

void crec__gemm_choice(const crec_program *p, const crec__ctx_state *st, uint32_t ci, crec__text *t) {
  const crec__gemm_plan *pl = st->gemm ? st->gemm[ci] : NULL;
  if (!pl) return;
  crec__text_printf(t, "cuBLASLt's heuristic's first algorithm, %zu of the %" PRIu64 " workspace bytes", pl->workspace,
                    p->commands[ci].gemm->desc.workspace_bytes);
}
