/* GPU suite for library commands: GEMMs against a CPU reference (f32, f16,
 * bf16; odd shapes, transposes, batches, epilogues), pointer rotation with the
 * capture cache counters, a GEMM inside a device loop, NCCL collectives on one
 * rank (through NCCL and as copies), async start/done, custom handlers of both
 * kinds with rotation, host callbacks in order, the errors naming their
 * command, and fault injection over a record of every library command (FFT,
 * Cholesky and convolution included where cuFFT, cuSOLVER and cuDNN open).
 * Skips without a CUDA device (and the NCCL tests without NCCL). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpu_util.h"

static crec_stream stream;

static void setup(void) {
  REQUIRE_DEVICE();
  EXPECT_OK(crec_stream_create(0, &stream));
}
static void teardown(void) { crec_stream_destroy(stream); }

TestSuite(library, .init = setup, .fini = teardown);

/* ---- elements on the host ---- */

/* Host copies of device matrices as float, whatever the element type. */
typedef struct hmat {
  crec_element type;
  size_t n;
  float *f;   /* the values (already rounded to `type`) */
  void *raw;  /* the bytes uploaded */
} hmat;

static size_t esize(crec_element t) { return crec_element_size(t); }

static uint32_t rng_state = 12345;
static float frand(void) {
  rng_state = rng_state * 1664525u + 1013904223u;
  return (float)((rng_state >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static hmat hmat_random(crec_element type, size_t n) {
  hmat m = {type, n, malloc((n ? n : 1) * sizeof(float)), malloc((n ? n : 1) * esize(type))};
  cr_assert(m.f && m.raw);
  for (size_t i = 0; i < n; i++) {
    float v = frand();
    if (type == CREC_ELEMENT_F32) {
      ((float *)m.raw)[i] = v;
    } else if (type == CREC_ELEMENT_F16) {
      ((uint16_t *)m.raw)[i] = gt_f32_to_f16(v);
      v = gt_f16_to_f32(((uint16_t *)m.raw)[i]);
    } else {
      ((uint16_t *)m.raw)[i] = gt_f32_to_bf16(v);
      v = gt_bf16_to_f32(((uint16_t *)m.raw)[i]);
    }
    m.f[i] = v;
  }
  return m;
}

static void hmat_download(hmat *m, const void *dev) {
  gt_download(m->raw, dev, m->n * esize(m->type));
  for (size_t i = 0; i < m->n; i++)
    m->f[i] = m->type == CREC_ELEMENT_F32   ? ((float *)m->raw)[i]
              : m->type == CREC_ELEMENT_F16 ? gt_f16_to_f32(((uint16_t *)m->raw)[i])
                                            : gt_bf16_to_f32(((uint16_t *)m->raw)[i]);
}

static void hmat_free(hmat *m) {
  free(m->f);
  free(m->raw);
}

/* Tolerances, relative to the sum of the magnitudes of every term of an element
 * (|alpha|·Σ|a·b| + |beta·c| + |bias|): accumulation is f32 in every type, so the
 * output rounding dominates for f16 (2^-11) and bf16 (2^-8). */
static double tolerance(crec_element t) {
  return t == CREC_ELEMENT_F32 ? 1e-5 : t == CREC_ELEMENT_F16 ? 2e-3 : 8e-3;
}

/* ---- GEMM against the CPU ---- */

typedef struct gemm_case {
  crec_element type;
  uint64_t m, n, k, batch;
  int ta, tb;
  double alpha, beta;
  int separate_c;      /* C in its own buffer (else C is D) */
  crec_gemm_epilogue epilogue;
  uint64_t pad;        /* extra elements per row (ld = cols + pad) */
  crec_element out;    /* C, D and the bias: CREC_ELEMENT_BYTES for `type` */
} gemm_case;

/* Elements of `batch` packed matrices of `rows` rows of `ld` elements. */
static uint64_t elems(uint64_t rows, uint64_t ld, uint64_t batch) { return batch * rows * ld; }

/* The reference: d_out = epilogue(alpha·op(A)·op(B) + beta·C) and the magnitude bound. */
static void gemm_ref(const gemm_case *g, const hmat *a, const hmat *b, const hmat *c, const hmat *bias, double *out,
                     double *mag) {
  uint64_t lda = (g->ta ? g->m : g->k) + g->pad, ldb = (g->tb ? g->k : g->n) + g->pad, ldd = g->n + g->pad;
  uint64_t sa = (g->ta ? g->k : g->m) * lda, sb = (g->tb ? g->n : g->k) * ldb, sd = g->m * ldd;
  for (uint64_t q = 0; q < g->batch; q++)
    for (uint64_t i = 0; i < g->m; i++)
      for (uint64_t j = 0; j < g->n; j++) {
        double acc = 0, abs = 0;
        for (uint64_t l = 0; l < g->k; l++) {
          double x = a->f[q * sa + (g->ta ? l * lda + i : i * lda + l)];
          double y = b->f[q * sb + (g->tb ? j * ldb + l : l * ldb + j)];
          acc += x * y;
          abs += fabs(x * y);
        }
        double v = g->alpha * acc, m = fabs(g->alpha) * abs;
        size_t di = (size_t)(q * sd + i * ldd + j);
        if (g->beta != 0) {
          v += g->beta * c->f[di];
          m += fabs(g->beta * c->f[di]);
        }
        if (g->epilogue == CREC_GEMM_EPILOGUE_BIAS || g->epilogue == CREC_GEMM_EPILOGUE_BIAS_RELU) {
          v += bias->f[j];
          m += fabs(bias->f[j]);
        }
        if ((g->epilogue == CREC_GEMM_EPILOGUE_RELU || g->epilogue == CREC_GEMM_EPILOGUE_BIAS_RELU) && v < 0) v = 0;
        out[di] = v;
        mag[di] = m;
      }
}

static void expect_gemm_close(const gemm_case *g, const hmat *got, const double *ref, const double *mag,
                              const char *what) {
  uint64_t ldd = g->n + g->pad;
  double tol = tolerance(g->type);
  for (uint64_t q = 0; q < g->batch; q++)
    for (uint64_t i = 0; i < g->m; i++)
      for (uint64_t j = 0; j < g->n; j++) {
        size_t di = (size_t)(q * g->m * ldd + i * ldd + j);
        double err = fabs(got->f[di] - ref[di]), bound = tol * mag[di] + 1e-6;
        if (!(err <= bound))
          cr_assert_fail("%s: %s %llux%llux%llu batch %llu ta %d tb %d: D[%llu][%llu][%llu] = %.7g, expected %.7g "
                         "(error %.3g above %.3g)", what, crec_element_name(g->type), (unsigned long long)g->m,
                         (unsigned long long)g->n, (unsigned long long)g->k, (unsigned long long)g->batch, g->ta, g->tb,
                         (unsigned long long)q, (unsigned long long)i, (unsigned long long)j, got->f[di], ref[di], err,
                         bound);
      }
}

/* Builds, records, replays and runs eagerly one GEMM case; checks both results. */
static void run_gemm_case(const gemm_case *g) {
  crec_program *p;
  EXPECT_OK(crec_program_create(&p));
  crec_region body = crec_program_body(p);
  crec_element ot = g->out ? g->out : g->type;
  size_t es = esize(g->type), eo = esize(ot);
  uint64_t ar = g->ta ? g->k : g->m, ac = g->ta ? g->m : g->k;
  uint64_t br = g->tb ? g->n : g->k, bc = g->tb ? g->k : g->n;
  uint64_t na = elems(ar, ac + g->pad, g->batch), nb = elems(br, bc + g->pad, g->batch);
  uint64_t nd = elems(g->m, g->n + g->pad, g->batch);
  crec_buffer A, B, C, D, BIAS;
  crec_argument_options o = CREC_ARGUMENT_OPTIONS_INIT;
  o.element = g->type;
  EXPECT_OK(crec_program_add_argument(p, "a", na * es, &o, &A));
  EXPECT_OK(crec_program_add_argument(p, "b", nb * es, &o, &B));
  o.element = ot;
  EXPECT_OK(crec_program_add_argument(p, "c", nd * eo, &o, &C));
  EXPECT_OK(crec_program_add_argument(p, "d", nd * eo, &o, &D));
  EXPECT_OK(crec_program_add_argument(p, "bias", g->n * eo, &o, &BIAS));
  crec_gemm d = CREC_GEMM_INIT;
  d.type = g->type;
  d.output_type = ot;
  d.transpose_a = g->ta, d.transpose_b = g->tb;
  d.alpha = g->alpha, d.beta = g->beta;
  d.batch = g->batch;
  d.a = crec_matrix_of(crec_range_whole(A), ar, ac);
  d.a.ld = ac + g->pad;
  d.b = crec_matrix_of(crec_range_whole(B), br, bc);
  d.b.ld = bc + g->pad;
  d.d = crec_matrix_of(crec_range_whole(D), g->m, g->n);
  d.d.ld = g->n + g->pad;
  if (g->separate_c) {
    d.c = crec_matrix_of(crec_range_whole(C), g->m, g->n);
    d.c.ld = g->n + g->pad;
  }
  d.epilogue = g->epilogue;
  if (g->epilogue == CREC_GEMM_EPILOGUE_BIAS || g->epilogue == CREC_GEMM_EPILOGUE_BIAS_RELU)
    d.bias = crec_range_whole(BIAS);
  crec_command cmd;
  EXPECT_OK(crec_program_add_gemm(p, body, "gemm", &d, &cmd));

  hmat ha = hmat_random(g->type, na), hb = hmat_random(g->type, nb), hc = hmat_random(ot, nd);
  hmat hbias = hmat_random(ot, g->n), hd0 = hmat_random(ot, nd);
  /* with C = D, C is D's content before the GEMM */
  const hmat *cref = g->separate_c ? &hc : &hd0;
  double *ref = malloc(nd * sizeof *ref), *mag = malloc(nd * sizeof *mag);
  cr_assert(ref && mag);
  gemm_ref(g, &ha, &hb, cref, &hbias, ref, mag);
  void *da = gt_alloc(na * es), *db = gt_alloc(nb * es), *dc = gt_alloc(nd * eo), *dd = gt_alloc(nd * eo);
  void *dd2 = gt_alloc(nd * eo), *dbias = gt_alloc(g->n * eo);
  gt_upload(da, ha.raw, na * es);
  gt_upload(db, hb.raw, nb * es);
  gt_upload(dc, hc.raw, nd * eo);
  gt_upload(dd, hd0.raw, nd * eo);
  gt_upload(dd2, hd0.raw, nd * eo);
  gt_upload(dbias, hbias.raw, g->n * eo);
  crec_binding bd[5] = {{da, na * es}, {db, nb * es}, {dc, nd * eo}, {dd, nd * eo}, {dbias, g->n * eo}};
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = bd;
  bs.num_buffers = 5;
  crec_exec *ex;
  EXPECT_OK(crec_record(p, &bs, NULL, &ex));
  gt_replay(ex, &bs, stream);
  hmat got = {ot, nd, malloc(nd * sizeof(float)), malloc(nd * eo)};
  hmat_download(&got, dd);
  expect_gemm_close(g, &got, ref, mag, "replay");
  bd[3].ptr = dd2;
  gt_eager(p, &bs, stream);
  hmat_download(&got, dd2);
  expect_gemm_close(g, &got, ref, mag, "eager");
  crec_exec_stats st = CREC_EXEC_STATS_INIT;
  EXPECT_OK(crec_exec_get_stats(ex, &st));
  cr_expect_eq(st.traced_nodes, 1);
  cr_expect_eq(st.trace_captures, 1);
  crec_exec_destroy(ex);
  crec_program_destroy(p);
  void *all[] = {da, db, dc, dd, dd2, dbias};
  for (size_t i = 0; i < 6; i++) crec_device_free(all[i]);
  hmat *hs[] = {&ha, &hb, &hc, &hbias, &hd0, &got};
  for (size_t i = 0; i < 6; i++) hmat_free(hs[i]);
  free(ref);
  free(mag);
}

static void gemm_cases(crec_element type, crec_element out) {
  static const struct {
    uint64_t m, n, k;
  } shapes[] = {{1, 1, 1}, {7, 13, 5}, {16, 8, 32}, {33, 17, 65}, {64, 96, 24}, {127, 5, 130}};
  int i = 0;
  for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
    for (int ta = 0; ta < 2; ta++)
      for (int tb = 0; tb < 2; tb++, i++) {
        gemm_case g = {type, shapes[s].m, shapes[s].n, shapes[s].k, s % 2 ? 3 : 1, ta, tb,
                       i % 3 ? 1.0 : 0.75, i % 4 == 1 ? 0.5 : i % 4 == 3 ? -1.0 : 0.0, i % 4 == 3,
                       (crec_gemm_epilogue)(i % 4), (uint64_t)(i % 5 == 2 ? 3 : 0), out};
        run_gemm_case(&g);
      }
}

Test(library, gemm_f32_matches_the_cpu) { gemm_cases(CREC_ELEMENT_F32, CREC_ELEMENT_BYTES); }
Test(library, gemm_f16_matches_the_cpu) { gemm_cases(CREC_ELEMENT_F16, CREC_ELEMENT_BYTES); }
Test(library, gemm_bf16_matches_the_cpu) { gemm_cases(CREC_ELEMENT_BF16, CREC_ELEMENT_BYTES); }
/* half-precision inputs, single-precision C, D and bias (mixed precision) */
Test(library, gemm_f16_into_f32_matches_the_cpu) { gemm_cases(CREC_ELEMENT_F16, CREC_ELEMENT_F32); }
Test(library, gemm_bf16_into_f32_matches_the_cpu) { gemm_cases(CREC_ELEMENT_BF16, CREC_ELEMENT_F32); }

/* ---- rotation and the capture cache ---- */

enum { RM = 48, RN = 40, RK = 56 };

typedef struct rot_set {
  void *a, *b, *d;
  hmat ha, hb;
  double *ref, *mag;
} rot_set;

/* 100 replays rotating through three sets of addresses, each checked against the
 * CPU. With `variants` 3, each set gets an executable graph of its own: only
 * replays 1 and 2 update (and capture), and the GEMM is never touched again. */
static void rotation(uint32_t cache, int child_graphs, uint32_t variants, uint64_t want_misses,
                     uint64_t want_recaptures) {
  crec_program *p;
  EXPECT_OK(crec_program_create(&p));
  crec_buffer A, B, D;
  EXPECT_OK(crec_program_add_argument(p, "a", RM * RK * 4, NULL, &A));
  EXPECT_OK(crec_program_add_argument(p, "b", RK * RN * 4, NULL, &B));
  EXPECT_OK(crec_program_add_argument(p, "d", RM * RN * 4, NULL, &D));
  crec_gemm d = CREC_GEMM_INIT;
  d.a = crec_matrix_of(crec_range_whole(A), RM, RK);
  d.b = crec_matrix_of(crec_range_whole(B), RK, RN);
  d.d = crec_matrix_of(crec_range_whole(D), RM, RN);
  crec_command cmd;
  EXPECT_OK(crec_program_add_gemm(p, crec_program_body(p), "rot", &d, &cmd));
  gemm_case g = {CREC_ELEMENT_F32, RM, RN, RK, 1, 0, 0, 1.0, 0.0, 0, CREC_GEMM_EPILOGUE_NONE, 0, CREC_ELEMENT_BYTES};
  rot_set sets[3];
  for (int s = 0; s < 3; s++) {
    sets[s].ha = hmat_random(CREC_ELEMENT_F32, RM * RK);
    sets[s].hb = hmat_random(CREC_ELEMENT_F32, RK * RN);
    sets[s].ref = malloc(RM * RN * sizeof(double));
    sets[s].mag = malloc(RM * RN * sizeof(double));
    gemm_ref(&g, &sets[s].ha, &sets[s].hb, NULL, NULL, sets[s].ref, sets[s].mag);
    sets[s].a = gt_alloc(RM * RK * 4);
    sets[s].b = gt_alloc(RK * RN * 4);
    sets[s].d = gt_alloc(RM * RN * 4);
    gt_upload(sets[s].a, sets[s].ha.raw, RM * RK * 4);
    gt_upload(sets[s].b, sets[s].hb.raw, RK * RN * 4);
  }
  crec_binding bd[3];
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = bd;
  bs.num_buffers = 3;
  crec_record_options o = CREC_RECORD_OPTIONS_INIT;
  o.trace_cache_size = cache;
  o.trace_child_graphs = child_graphs;
  o.variants = variants;
  crec_exec *ex = NULL;
  hmat got = {CREC_ELEMENT_F32, RM * RN, malloc(RM * RN * sizeof(float)), malloc(RM * RN * 4)};
  for (int i = 0; i < 100; i++) {
    rot_set *s = &sets[i % 3];
    bd[0] = (crec_binding){s->a, RM * RK * 4};
    bd[1] = (crec_binding){s->b, RK * RN * 4};
    bd[2] = (crec_binding){s->d, RM * RN * 4};
    if (!ex) EXPECT_OK(crec_record(p, &bs, &o, &ex));
    gt_fill(s->d, RM * RN * 4, (uint32_t)i); /* the replay must write all of D again */
    gt_replay(ex, &bs, stream);
    hmat_download(&got, s->d);
    char what[64];
    snprintf(what, sizeof what, "replay %d (set %d)", i, i % 3);
    expect_gemm_close(&g, &got, s->ref, s->mag, what);
  }
  crec_exec_stats st = CREC_EXEC_STATS_INIT;
  EXPECT_OK(crec_exec_get_stats(ex, &st));
  cr_expect_eq(st.replays, 100);
  cr_expect_eq(st.traced_nodes, 1);
  cr_expect_eq(st.trace_misses, want_misses, "misses: %llu", (unsigned long long)st.trace_misses);
  uint64_t want_hits = variants > 1 ? 0 : 99 - want_misses;
  cr_expect_eq(st.trace_hits, want_hits, "hits: %llu", (unsigned long long)st.trace_hits);
  cr_expect_eq(st.variants, variants, "variants: %llu", (unsigned long long)st.variants);
  if (variants > 1) {
    /* every replay after the first runs another graph; from replay 3 on, one that holds its set */
    cr_expect_eq(st.variant_switches, 99, "switches: %llu", (unsigned long long)st.variant_switches);
    cr_expect_eq(st.variant_hits, 97, "variant hits: %llu", (unsigned long long)st.variant_hits);
    cr_expect_eq(st.updates_skipped, 98, "replays that updated nothing: %llu", (unsigned long long)st.updates_skipped);
  }
  cr_expect_eq(st.trace_recaptures, want_recaptures, "re-captures: %llu", (unsigned long long)st.trace_recaptures);
  cr_expect_eq(st.trace_captures, 1 + want_misses);
  if (child_graphs) cr_expect_eq(st.traced_inline, 0, "inlined with trace_child_graphs: %llu", (unsigned long long)st.traced_inline);
  /* what record chose says how the GEMM sits in the graph, as the counters do */
  char *choices = NULL;
  EXPECT_OK(crec_exec_library_choices(ex, &choices));
  const char *form = st.traced_inline ? "; inlined as " : "; a child graph node";
  cr_expect(strstr(choices, form), "the choices say '%s':\n%s", form, choices);
  crec_free(choices);
  crec_exec_destroy(ex);
  crec_program_destroy(p);
  for (int s = 0; s < 3; s++) {
    crec_device_free(sets[s].a);
    crec_device_free(sets[s].b);
    crec_device_free(sets[s].d);
    hmat_free(&sets[s].ha);
    hmat_free(&sets[s].hb);
    free(sets[s].ref);
    free(sets[s].mag);
  }
  hmat_free(&got);
}

Test(library, rotation_over_100_replays_captures_each_address_set_once) {
  /* replay 0 keeps the recorded addresses; replays 1 and 2 capture sets 1 and 2;
   * every later replay finds its set in the cache */
  rotation(16, 0, 1, 2, 0);
}

Test(library, rotation_with_child_graphs_captures_each_address_set_once_too) { rotation(16, 1, 1, 2, 0); }

Test(library, rotation_through_three_variants_updates_the_gemm_twice) {
  /* a cache of one entry: the variants hold what they were set to, whatever the cache evicted */
  rotation(1, 0, 3, 2, 0);
  rotation(16, 1, 3, 2, 0);
}

Test(library, a_cache_smaller_than_the_rotation_re_captures) {
  /* two entries for three sets: every change misses, and from replay 3 on each
   * miss is a set evicted before */
  rotation(2, 0, 1, 99, 97);
}

/* ---- a GEMM in a device loop ---- */

Test(library, gemm_inside_a_while_body_follows_rotation) {
  enum { S = 8, IT = 5 };
  gt t;
  gt_init(&t, 0);
  crec_buffer X, W, state;
  EXPECT_OK(crec_program_add_argument(t.p, "x", S * S * 4, NULL, &X));
  EXPECT_OK(crec_program_add_argument(t.p, "w", S * S * 4, NULL, &W));
  EXPECT_OK(crec_program_add_argument(t.p, "state", 16, NULL, &state));
  crec_buffer Y;
  EXPECT_OK(crec_program_add_temporary(t.p, "y", S * S * 4, &Y));
  crec_region body = crec_program_body(t.p), cond, loop;
  crec_arg init[] = {crec_arg_buffer(crec_range_of(state, 0, 4), CREC_ACCESS_WRITE), crec_arg_i32(IT + 1)};
  gt_launch1(&t, body, t.store_i32, init, 2);
  crec_command w, c;
  EXPECT_OK(crec_program_add_while(t.p, body, "loop", crec_range_of(state, 8, 1), &w, &cond, &loop));
  crec_arg cd[] = {crec_arg_buffer(crec_range_of(state, 0, 4), CREC_ACCESS_READ_WRITE),
                   crec_arg_buffer(crec_range_of(state, 8, 1), CREC_ACCESS_WRITE)};
  gt_launch1(&t, cond, t.countdown, cd, 2);
  crec_gemm g = CREC_GEMM_INIT;
  g.a = crec_matrix_of(crec_range_whole(X), S, S);
  g.b = crec_matrix_of(crec_range_whole(W), S, S);
  g.d = crec_matrix_of(crec_range_whole(Y), S, S);
  EXPECT_OK(crec_program_add_gemm(t.p, loop, "step", &g, &c));
  EXPECT_OK(crec_program_add_memcpy(t.p, loop, NULL, crec_range_whole(X), crec_range_whole(Y), &c));
  /* x <- x W, five times: values stay small with W near the identity / 2 */
  float hw[S * S], hx[2][S * S];
  for (int i = 0; i < S * S; i++) hw[i] = (i / S == i % S ? 0.5f : 0.0f) + 0.01f * frand();
  for (int s = 0; s < 2; s++)
    for (int i = 0; i < S * S; i++) hx[s][i] = frand();
  void *dw = gt_alloc(sizeof hw), *dx[2] = {gt_alloc(S * S * 4), gt_alloc(S * S * 4)}, *ds = gt_alloc(16);
  void *ex_x = gt_alloc(S * S * 4);
  gt_upload(dw, hw, sizeof hw);
  crec_binding bd[3] = {{dx[0], S * S * 4}, {dw, sizeof hw}, {ds, 16}};
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = bd;
  bs.num_buffers = 3;
  gt_upload(dx[0], hx[0], S * S * 4);
  crec_exec *ex;
  EXPECT_OK(crec_record(t.p, &bs, NULL, &ex));
  for (int i = 0; i < 6; i++) {
    int s = i % 2;
    double ref[S * S];
    for (int k = 0; k < S * S; k++) ref[k] = hx[s][k];
    for (int it = 0; it < IT; it++) {
      double nx[S * S];
      for (int r = 0; r < S; r++)
        for (int cc = 0; cc < S; cc++) {
          double acc = 0;
          for (int k = 0; k < S; k++) acc += ref[r * S + k] * hw[k * S + cc];
          nx[r * S + cc] = acc;
        }
      memcpy(ref, nx, sizeof nx);
    }
    gt_upload(dx[s], hx[s], S * S * 4);
    bd[0].ptr = dx[s];
    gt_replay(ex, &bs, stream);
    float got[S * S];
    gt_download(got, dx[s], sizeof got);
    for (int k = 0; k < S * S; k++)
      cr_assert(fabs(got[k] - ref[k]) <= 1e-5 * (1 + fabs(ref[k])), "replay %d: x[%d] = %g, expected %g", i, k,
                got[k], ref[k]);
    /* so does the eager executor */
    gt_upload(ex_x, hx[s], S * S * 4);
    bd[0].ptr = ex_x;
    gt_eager(t.p, &bs, stream);
    gt_download(got, ex_x, sizeof got);
    for (int k = 0; k < S * S; k++)
      cr_assert(fabs(got[k] - ref[k]) <= 1e-5 * (1 + fabs(ref[k])), "eager run %d: x[%d] = %g, expected %g", i, k,
                got[k], ref[k]);
  }
  crec_exec_stats st = CREC_EXEC_STATS_INIT;
  EXPECT_OK(crec_exec_get_stats(ex, &st));
  cr_expect_eq(st.trace_misses, 1);
  cr_expect_eq(st.trace_captures, 2);
  crec_exec_destroy(ex);
  crec_program_destroy(t.p);
  crec_device_free(dw);
  crec_device_free(dx[0]);
  crec_device_free(dx[1]);
  crec_device_free(ds);
  crec_device_free(ex_x);
}

/* ---- NCCL on one rank ---- */

/* A one-rank communicator on device 0; skips when NCCL is missing. */
static crec_comm *one_rank(void) {
  crec_comm_id id;
  crec_status s = crec_comm_get_unique_id(&id);
  if (s == CREC_ERR_UNSUPPORTED) cr_skip_test("NCCL is missing: %s", crec_last_error());
  EXPECT_OK(s);
  crec_comm *c = NULL;
  EXPECT_OK(crec_comm_create(0, &id, 0, 1, &c));
  int rank, size, device;
  EXPECT_OK(crec_comm_get_info(c, &rank, &size, &device));
  cr_assert(rank == 0 && size == 1 && device == 0);
  return c;
}

enum { CN = 256, CB = CN * 4 };

typedef struct coll_prog {
  crec_program *p;
  size_t nargs;
  crec_buffer args[32];
  size_t sends[16], recvs[16], kinds[16]; /* argument indices; expected result kind */
  size_t n;
} coll_prog;

enum { EXPECT_COPY, EXPECT_ZEROS, EXPECT_UNCHANGED };

static crec_buffer coll_arg(coll_prog *cp, uint64_t size) {
  char name[16];
  snprintf(name, sizeof name, "b%zu", cp->nargs);
  EXPECT_OK(crec_program_add_argument(cp->p, name, size, NULL, &cp->args[cp->nargs]));
  return cp->args[cp->nargs++];
}

/* Adds a collective over new send and recv arguments (recv = send for in place). */
static void add_coll(coll_prog *cp, crec_comm_slot w, crec_collective_kind kind, crec_reduction red, int grouped,
                     int in_place, const int32_t *pairs, size_t num_pairs, int expect) {
  static const int32_t single[1] = {0};
  crec_collective d = CREC_COLLECTIVE_INIT;
  d.kind = kind;
  d.communicator = w;
  d.type = kind == CREC_COLLECTIVE_ALL_TO_ALL ? CREC_ELEMENT_BYTES : CREC_ELEMENT_I32;
  d.reduction = red;
  size_t si = cp->nargs;
  crec_buffer s = coll_arg(cp, CB);
  size_t ri = in_place ? si : cp->nargs;
  crec_buffer r = in_place ? s : coll_arg(cp, CB);
  d.send = crec_range_whole(s);
  d.recv = crec_range_whole(r);
  if (grouped) d.groups = single, d.num_groups = 1, d.group_size = 1;
  d.pairs = pairs, d.num_pairs = num_pairs;
  crec_command c;
  EXPECT_OK(crec_program_add_collective(cp->p, crec_program_body(cp->p), NULL, &d, &c));
  cp->sends[cp->n] = si;
  cp->recvs[cp->n] = ri;
  cp->kinds[cp->n] = (size_t)expect;
  cp->n++;
}

/* Every kind on one rank; `grouped`: through single-rank groups (copies) instead of NCCL. */
static coll_prog coll_program(int grouped) {
  coll_prog cp;
  memset(&cp, 0, sizeof cp);
  EXPECT_OK(crec_program_create(&cp.p));
  crec_comm_slot w;
  EXPECT_OK(crec_program_add_communicator(cp.p, "world", 1, &w));
  static const crec_reduction reds[4] = {CREC_REDUCTION_SUM, CREC_REDUCTION_PROD, CREC_REDUCTION_MIN, CREC_REDUCTION_MAX};
  for (int i = 0; i < 4; i++) add_coll(&cp, w, CREC_COLLECTIVE_ALL_REDUCE, reds[i], grouped, 0, NULL, 0, EXPECT_COPY);
  add_coll(&cp, w, CREC_COLLECTIVE_ALL_REDUCE, CREC_REDUCTION_SUM, grouped, 1, NULL, 0, EXPECT_UNCHANGED);
  add_coll(&cp, w, CREC_COLLECTIVE_ALL_GATHER, CREC_REDUCTION_SUM, grouped, 0, NULL, 0, EXPECT_COPY);
  add_coll(&cp, w, CREC_COLLECTIVE_REDUCE_SCATTER, CREC_REDUCTION_MAX, grouped, 0, NULL, 0, EXPECT_COPY);
  add_coll(&cp, w, CREC_COLLECTIVE_ALL_TO_ALL, CREC_REDUCTION_SUM, grouped, 0, NULL, 0, EXPECT_COPY);
  static const int32_t self[2] = {0, 0};
  add_coll(&cp, w, CREC_COLLECTIVE_PERMUTE, CREC_REDUCTION_SUM, 0, 0, self, 1, EXPECT_COPY);
  add_coll(&cp, w, CREC_COLLECTIVE_PERMUTE, CREC_REDUCTION_SUM, 0, 0, NULL, 0, EXPECT_ZEROS);
  return cp;
}

/* Runs a collective program: record, replays over two rotating sets, eager. */
static void run_coll_program(coll_prog *cp, crec_comm *comm, uint64_t want_traced) {
  void *mem[2][32];
  crec_binding bd[32];
  crec_comm *comms[1] = {comm};
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = bd;
  bs.num_buffers = cp->nargs;
  bs.communicators = comms;
  bs.num_communicators = 1;
  for (int s = 0; s < 2; s++)
    for (size_t i = 0; i < cp->nargs; i++) mem[s][i] = gt_alloc(CB);
  crec_exec *ex = NULL;
  uint32_t host[CN], want[CN];
  for (int it = 0; it < 7; it++) {
    int s = it % 2, eager = it == 6;
    for (size_t i = 0; i < cp->nargs; i++) {
      gt_fill(mem[s][i], CB, (uint32_t)(it * 100 + i));
      bd[i] = (crec_binding){mem[s][i], CB};
    }
    /* expectations from the sends before the run (an in-place one keeps its bytes) */
    uint32_t sends[16][CN];
    for (size_t k = 0; k < cp->n; k++) gt_download(sends[k], mem[s][cp->sends[k]], CB);
    if (!ex) EXPECT_OK(crec_record(cp->p, &bs, NULL, &ex));
    if (eager) gt_eager(cp->p, &bs, stream);
    else gt_replay(ex, &bs, stream);
    for (size_t k = 0; k < cp->n; k++) {
      gt_download(host, mem[s][cp->recvs[k]], CB);
      if (cp->kinds[k] == EXPECT_ZEROS) memset(want, 0, CB);
      else memcpy(want, sends[k], CB);
      for (int e = 0; e < CN; e++)
        cr_assert_eq(host[e], want[e], "%s %d: collective %zu: element %d is 0x%08x, expected 0x%08x",
                     eager ? "eager run" : "replay", it, k, e, host[e], want[e]);
    }
  }
  crec_exec_stats st = CREC_EXEC_STATS_INIT;
  EXPECT_OK(crec_exec_get_stats(ex, &st));
  cr_expect_eq(st.traced_nodes, want_traced, "%llu child-graph (NCCL) nodes", (unsigned long long)st.traced_nodes);
  if (want_traced) {
    /* replays 1..5 alternate between two sets: one miss per collective, then hits */
    cr_expect_eq(st.trace_misses, want_traced);
    cr_expect_eq(st.trace_hits, 4 * want_traced);
  }
  crec_exec_destroy(ex);
  for (int s = 0; s < 2; s++)
    for (size_t i = 0; i < cp->nargs; i++) crec_device_free(mem[s][i]);
  crec_program_destroy(cp->p);
}

Test(library, every_collective_on_one_rank_through_nccl) {
  crec_comm *comm = one_rank();
  coll_prog cp = coll_program(0);
  /* four all_reduce, the in-place one, all_gather, reduce_scatter, all_to_all go
   * through NCCL; the permutes (a rank to itself, and no pair) are copies */
  run_coll_program(&cp, comm, 8);
  crec_comm_destroy(comm);
}

Test(library, single_rank_groups_record_copies_and_no_nccl_node) {
  crec_comm *comm = one_rank();
  coll_prog cp = coll_program(1);
  char *text = NULL;
  EXPECT_OK(crec_dump(cp.p, NULL, CREC_DUMP_TEXT, &text, NULL));
  cr_assert(strstr(text, "(single-rank groups: a copy, no NCCL)"), "%s", text);
  crec_free(text);
  run_coll_program(&cp, comm, 0);
  crec_comm_destroy(comm);
}

Test(library, a_wrapped_nccl_communicator_works_too) {
  crec_comm *owner = one_rank();
  crec_comm *wrapped = NULL;
  EXPECT_OK(crec_comm_wrap(crec_comm_native(owner), &wrapped));
  int rank, size;
  EXPECT_OK(crec_comm_get_info(wrapped, &rank, &size, NULL));
  cr_assert(rank == 0 && size == 1);
  coll_prog cp = coll_program(0);
  run_coll_program(&cp, wrapped, 8);
  crec_comm_destroy(wrapped); /* leaves the NCCL communicator to its owner */
  crec_comm_destroy(owner);
}

Test(library, async_start_overlaps_until_its_done) {
  crec_comm *comm = one_rank();
  gt t;
  gt_init(&t, 0);
  crec_comm_slot w;
  EXPECT_OK(crec_program_add_communicator(t.p, "world", 1, &w));
  crec_buffer send, recv, x, z, out;
  EXPECT_OK(crec_program_add_argument(t.p, "send", CB, NULL, &send));
  EXPECT_OK(crec_program_add_argument(t.p, "recv", CB, NULL, &recv));
  EXPECT_OK(crec_program_add_argument(t.p, "x", CB, NULL, &x));
  EXPECT_OK(crec_program_add_argument(t.p, "z", CB, NULL, &z));
  EXPECT_OK(crec_program_add_argument(t.p, "out", CB, NULL, &out));
  crec_region body = crec_program_body(t.p);
  crec_collective d = CREC_COLLECTIVE_INIT;
  d.communicator = w;
  d.type = CREC_ELEMENT_I32;
  d.send = crec_range_whole(send);
  d.recv = crec_range_whole(recv);
  d.async = 1;
  crec_command start, done;
  EXPECT_OK(crec_program_add_collective(t.p, body, "ar", &d, &start));
  crec_arg mid[] = {crec_arg_buffer(crec_range_whole(z), CREC_ACCESS_WRITE),
                    crec_arg_buffer(crec_range_whole(x), CREC_ACCESS_READ), crec_arg_i32(5), crec_arg_i32(CN)};
  crec_command m = gt_launch(&t, body, t.scale, CN, mid, 4);
  EXPECT_OK(crec_program_add_collective_done(t.p, body, NULL, start, &done));
  crec_arg after[] = {crec_arg_buffer(crec_range_whole(out), CREC_ACCESS_WRITE),
                      crec_arg_buffer(crec_range_whole(recv), CREC_ACCESS_READ), crec_arg_i32(7), crec_arg_i32(CN)};
  crec_command a = gt_launch(&t, body, t.scale, CN, after, 4);
  for (int sequential = 0; sequential < 2; sequential++) {
    crec_plan_options po = CREC_PLAN_OPTIONS_INIT;
    po.schedule = sequential ? CREC_SCHEDULE_SEQUENTIAL : CREC_SCHEDULE_CONCURRENT;
    crec_plan *plan;
    EXPECT_OK(crec_plan_create(t.p, &po, &plan));
    const crec_command *deps;
    size_t nd;
    EXPECT_OK(crec_plan_get_deps(plan, m, &deps, &nd));
    cr_assert_eq(nd, 0, "the launch between start and done waits for nothing");
    EXPECT_OK(crec_plan_get_deps(plan, a, &deps, &nd));
    int on_done = 0;
    for (size_t i = 0; i < nd; i++) on_done |= deps[i].id == done.id;
    cr_assert(on_done, "the reader of recv waits for the done");
    crec_plan_destroy(plan);
  }
  void *mem[5];
  crec_binding bd[5];
  for (int i = 0; i < 5; i++) {
    mem[i] = gt_alloc(CB);
    bd[i] = (crec_binding){mem[i], CB};
  }
  crec_comm *comms[1] = {comm};
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = bd;
  bs.num_buffers = 5;
  bs.communicators = comms;
  bs.num_communicators = 1;
  for (int sequential = 0; sequential < 2; sequential++) {
    crec_record_options o = CREC_RECORD_OPTIONS_INIT;
    o.schedule = sequential ? CREC_SCHEDULE_SEQUENTIAL : CREC_SCHEDULE_CONCURRENT;
    crec_exec *ex;
    EXPECT_OK(crec_record(t.p, &bs, &o, &ex));
    for (int it = 0; it < 3; it++) {
      uint32_t hs[CN], hx[CN], ho[CN], hz[CN];
      for (int e = 0; e < CN; e++) hs[e] = (uint32_t)(e * 7 + it), hx[e] = (uint32_t)(e + 100 * it);
      gt_upload(mem[0], hs, CB);
      gt_upload(mem[2], hx, CB);
      if (it == 2) gt_eager(t.p, &bs, stream);
      else gt_replay(ex, &bs, stream);
      gt_download(ho, mem[4], CB);
      gt_download(hz, mem[3], CB);
      for (int e = 0; e < CN; e++) {
        cr_assert_eq(ho[e], hs[e] * 3u + 7u, "out[%d] after run %d", e, it);
        cr_assert_eq(hz[e], hx[e] * 3u + 5u, "z[%d] after run %d", e, it);
      }
    }
    crec_exec_destroy(ex);
  }
  for (int i = 0; i < 5; i++) crec_device_free(mem[i]);
  crec_program_destroy(t.p);
  crec_comm_destroy(comm);
}

/* ---- custom handlers ---- */

typedef struct counts {
  int creates, updates, traces;
  int holes_null; /* every call saw its hole as NULL */
  crec_program *inner; /* the traced handler's own program */
} counts;

/* Operands: 0 dst (written), 1 a hole, 2 src; attribute: the constant c.
 * Launches t_scale(dst, src, c, n) with n from the operand size. */
static crec_status scale_launch(crec_custom_context *ctx, const crec_custom_call *call, int update) {
  /* parameter values are copied when the launch is made or updated */
  void *dst = call->operands[0], *src = call->operands[2];
  uint32_t c;
  memcpy(&c, call->attributes, sizeof c);
  int n = (int)(call->operand_sizes[0] / 4);
  void *params[4] = {&dst, &src, &c, &n};
  crec_custom_launch l = CREC_CUSTOM_LAUNCH_INIT;
  l.kernel = 0;
  l.grid[0] = (uint32_t)(n + 127) / 128;
  l.block[0] = 128;
  l.params = params;
  return update ? crec_custom_context_update(ctx, 0, &l) : crec_custom_context_launch(ctx, &l, NULL);
}

static crec_status h_create(void *user, crec_custom_context *ctx, const crec_custom_call *call) {
  counts *k = user;
  k->creates++;
  cr_assert_eq(call->struct_size, sizeof *call, "crec_custom_call.struct_size is set");
  k->holes_null &= call->operands[1] == NULL && call->operand_sizes[1] == 0 && call->num_operands == 3;
  cr_assert_eq(crec_custom_context_launch_count(ctx), 0);
  crec_status s = scale_launch(ctx, call, 0);
  if (s == CREC_OK) cr_assert_eq(crec_custom_context_launch_count(ctx), 1);
  return s;
}

static crec_status h_update(void *user, crec_custom_context *ctx, const crec_custom_call *call) {
  counts *k = user;
  k->updates++;
  k->holes_null &= call->operands[1] == NULL;
  cr_assert_null(crec_custom_context_stream(ctx));
  cr_assert_eq(crec_custom_context_launch_count(ctx), 1);
  return scale_launch(ctx, call, 1);
}

/* The traced kind: runs a program of its own eagerly on the capturing stream. */
static crec_status h_trace(void *user, crec_stream s, const crec_custom_call *call) {
  counts *k = user;
  k->traces++;
  cr_assert_eq(call->struct_size, sizeof *call, "crec_custom_call.struct_size is set");
  k->holes_null &= call->operands[1] == NULL;
  crec_binding bd[2] = {{call->operands[0], call->operand_sizes[0]}, {call->operands[2], call->operand_sizes[2]}};
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = bd;
  bs.num_buffers = 2;
  return crec_run_eager(k->inner, &bs, s);
}

/* dst = src * 3 + 11, as a custom command, then dst += 1 by a launch after it. */
static crec_program *custom_program(gt *t, const char *target) {
  gt_init(t, 0);
  crec_buffer dst, src;
  EXPECT_OK(crec_program_add_argument(t->p, "dst", CB, NULL, &dst));
  EXPECT_OK(crec_program_add_argument(t->p, "src", CB, NULL, &src));
  const crec_operand ops[3] = {crec_operand_of(crec_range_whole(dst), CREC_ACCESS_WRITE), crec_operand_hole(),
                               crec_operand_of(crec_range_whole(src), CREC_ACCESS_READ)};
  const uint32_t c = 11;
  crec_custom cu = CREC_CUSTOM_INIT;
  cu.target = target;
  cu.operands = ops;
  cu.num_operands = 3;
  cu.kernels = &t->scale;
  cu.num_kernels = 1;
  cu.attributes = &c;
  cu.attributes_size = sizeof c;
  crec_command cmd;
  EXPECT_OK(crec_program_add_custom(t->p, crec_program_body(t->p), "mine", &cu, &cmd));
  crec_arg inc[] = {crec_arg_buffer(crec_range_whole(dst), CREC_ACCESS_READ_WRITE), crec_arg_i32(CN)};
  gt_launch(t, crec_program_body(t->p), t->inc, CN, inc, 2);
  return t->p;
}

/* Replays over three rotating sets (recorded with `o`, which may be NULL), with an
 * eager run at the end; each must leave dst = src * 3 + `plus`. */
static void run_custom_program(crec_program *p, const crec_record_options *o, uint32_t plus, crec_exec_stats *st_out) {
  void *dst[3], *src[3], *edst = gt_alloc(CB);
  for (int s = 0; s < 3; s++) {
    dst[s] = gt_alloc(CB);
    src[s] = gt_alloc(CB);
  }
  crec_binding bd[2];
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = bd;
  bs.num_buffers = 2;
  crec_exec *ex = NULL;
  uint32_t hs[CN], hd[CN];
  for (int it = 0; it < 31; it++) {
    int s = it % 3, eager = it == 30;
    for (int e = 0; e < CN; e++) hs[e] = (uint32_t)(e * 13 + it);
    gt_upload(src[s], hs, CB);
    gt_fill(dst[s], CB, (uint32_t)it);
    bd[0] = (crec_binding){eager ? edst : dst[s], CB};
    bd[1] = (crec_binding){src[s], CB};
    if (!ex) EXPECT_OK(crec_record(p, &bs, o, &ex));
    if (eager) gt_eager(p, &bs, stream);
    else gt_replay(ex, &bs, stream);
    gt_download(hd, eager ? edst : dst[s], CB);
    for (int e = 0; e < CN; e++)
      cr_assert_eq(hd[e], hs[e] * 3u + plus, "%s %d: dst[%d] = %u", eager ? "eager run" : "replay", it, e, hd[e]);
  }
  EXPECT_OK(crec_exec_get_stats(ex, st_out));
  crec_exec_destroy(ex);
  for (int s = 0; s < 3; s++) {
    crec_device_free(dst[s]);
    crec_device_free(src[s]);
  }
  crec_device_free(edst);
}

Test(library, custom_handler_creates_once_and_updates_on_rotation) {
  counts k = {0, 0, 0, 1, NULL};
  crec_custom_handler h = CREC_CUSTOM_HANDLER_INIT;
  h.create = h_create;
  h.update = h_update;
  h.user = &k;
  EXPECT_OK(crec_custom_register("test.scale", &h));
  gt t;
  crec_program *p = custom_program(&t, "test.scale");
  crec_exec_stats st = CREC_EXEC_STATS_INIT;
  run_custom_program(p, NULL, 12, &st);
  cr_expect_eq(k.creates, 2, "create() at record and in the eager run: %d", k.creates);
  /* replay 0 keeps the recorded addresses; every other one changes them */
  cr_expect_eq(k.updates, 29);
  cr_expect_eq(st.custom_updates, 29);
  cr_expect(k.holes_null, "a hole reached a handler as something else than NULL");
  cr_expect_eq(st.traced_nodes, 0);
  /* with a graph per set, update() sets each graph once: replays 1 and 2 */
  crec_record_options o = CREC_RECORD_OPTIONS_INIT;
  o.variants = 3;
  run_custom_program(p, &o, 12, &st);
  cr_expect_eq(k.updates, 31, "update() with variants: %d calls", k.updates - 29);
  cr_expect_eq(st.variant_hits, 27, "%llu replays found their set held", (unsigned long long)st.variant_hits);
  crec_program_destroy(p);
  EXPECT_OK(crec_custom_unregister("test.scale"));
}

Test(library, traced_custom_handler_is_captured_and_cached) {
  counts k = {0, 0, 0, 1, NULL};
  /* the handler's own program: dst = src * 3 + 11 */
  gt inner;
  gt_init(&inner, 0);
  crec_buffer d, s;
  EXPECT_OK(crec_program_add_argument(inner.p, "dst", CB, NULL, &d));
  EXPECT_OK(crec_program_add_argument(inner.p, "src", CB, NULL, &s));
  crec_arg a[] = {crec_arg_buffer(crec_range_whole(d), CREC_ACCESS_WRITE),
                  crec_arg_buffer(crec_range_whole(s), CREC_ACCESS_READ), crec_arg_i32(11), crec_arg_i32(CN)};
  gt_launch(&inner, crec_program_body(inner.p), inner.scale, CN, a, 4);
  k.inner = inner.p;
  /* one eager run first loads its module: the captures then only launch */
  void *warm[2] = {gt_alloc(CB), gt_alloc(CB)};
  crec_binding wb[2] = {{warm[0], CB}, {warm[1], CB}};
  crec_bindings ws = CREC_BINDINGS_INIT;
  ws.buffers = wb;
  ws.num_buffers = 2;
  gt_eager(inner.p, &ws, stream);
  crec_device_free(warm[0]);
  crec_device_free(warm[1]);
  crec_custom_handler h = CREC_CUSTOM_HANDLER_INIT;
  h.kind = CREC_CUSTOM_TRACED;
  h.trace = h_trace;
  h.user = &k;
  EXPECT_OK(crec_custom_register("test.traced", &h));
  gt t;
  crec_program *p = custom_program(&t, "test.traced");
  crec_exec_stats st = CREC_EXEC_STATS_INIT;
  run_custom_program(p, NULL, 12, &st);
  cr_expect_eq(st.traced_nodes, 1);
  cr_expect_eq(st.traced_inline, 1, "its capture, one kernel, is inlined: %llu", (unsigned long long)st.traced_inline);
  cr_expect_eq(st.trace_misses, 2);
  cr_expect_eq(st.trace_hits, 27);
  cr_expect_eq(st.trace_captures, 3);
  cr_expect_eq(k.traces, 4, "three captures and one eager run: %d", k.traces);
  cr_expect(k.holes_null);
  crec_program_destroy(p);
  crec_program_destroy(inner.p);
  EXPECT_OK(crec_custom_unregister("test.traced"));
}

/* ---- inlined traced commands ---- */

/* A traced handler that runs one of its programs eagerly, `which` chosen by the test. */
typedef struct chooser {
  crec_program *progs[3];
  int which;
  int traces;
} chooser;

static crec_status choose_trace(void *user, crec_stream s, const crec_custom_call *call) {
  chooser *c = user;
  c->traces++;
  crec_binding bd[2] = {{call->operands[0], call->operand_sizes[0]}, {call->operands[2], call->operand_sizes[2]}};
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = bd;
  bs.num_buffers = 2;
  return crec_run_eager(c->progs[c->which], &bs, s);
}

enum { CHAIN_SCALE_INC, CHAIN_INC_SCALE, MEMSET_SCALE };

/* The handler's programs over (dst, src): scale then inc (dst = src * 3 + 12), inc
 * then scale (dst = src * 3 + 11, two kernels in the other order), and a memset
 * then scale (dst = src * 3 + 11, a capture with a memset node). Each runs once
 * first, so that captures only launch. */
static void chooser_init(chooser *c, gt *inner) {
  memset(c, 0, sizeof *c);
  void *warm[2] = {gt_alloc(CB), gt_alloc(CB)};
  crec_binding wb[2] = {{warm[0], CB}, {warm[1], CB}};
  crec_bindings ws = CREC_BINDINGS_INIT;
  ws.buffers = wb;
  ws.num_buffers = 2;
  for (int i = 0; i < 3; i++) {
    gt_init(&inner[i], 0);
    crec_program *p = inner[i].p;
    crec_buffer d, s;
    EXPECT_OK(crec_program_add_argument(p, "dst", CB, NULL, &d));
    EXPECT_OK(crec_program_add_argument(p, "src", CB, NULL, &s));
    crec_arg sc[] = {crec_arg_buffer(crec_range_whole(d), CREC_ACCESS_WRITE),
                     crec_arg_buffer(crec_range_whole(s), CREC_ACCESS_READ), crec_arg_i32(11), crec_arg_i32(CN)};
    crec_arg inc[] = {crec_arg_buffer(crec_range_whole(d), CREC_ACCESS_READ_WRITE), crec_arg_i32(CN)};
    crec_region body = crec_program_body(p);
    if (i == CHAIN_INC_SCALE) gt_launch(&inner[i], body, inner[i].inc, CN, inc, 2);
    if (i == MEMSET_SCALE) {
      crec_command m;
      EXPECT_OK(crec_program_add_memset(p, body, NULL, crec_range_whole(d), 0, 4, &m));
    }
    gt_launch(&inner[i], body, inner[i].scale, CN, sc, 4);
    if (i == CHAIN_SCALE_INC) gt_launch(&inner[i], body, inner[i].inc, CN, inc, 2);
    c->progs[i] = p;
    gt_eager(p, &ws, stream);
  }
  crec_device_free(warm[0]);
  crec_device_free(warm[1]);
  crec_custom_handler h = CREC_CUSTOM_HANDLER_INIT;
  h.kind = CREC_CUSTOM_TRACED;
  h.trace = choose_trace;
  h.user = c;
  EXPECT_OK(crec_custom_register("test.chooser", &h));
}

static void chooser_fini(chooser *c) {
  for (int i = 0; i < 3; i++) crec_program_destroy(c->progs[i]);
  EXPECT_OK(crec_custom_unregister("test.chooser"));
}

Test(library, a_traced_chain_of_two_kernels_is_inlined_and_follows_rotation) {
  chooser c;
  gt inner[3], t;
  chooser_init(&c, inner);
  crec_program *p = custom_program(&t, "test.chooser");
  crec_exec_stats st = CREC_EXEC_STATS_INIT;
  run_custom_program(p, NULL, 13, &st);
  cr_expect_eq(st.traced_inline, 1, "scale then inc is a chain of kernels: %llu", (unsigned long long)st.traced_inline);
  cr_expect_eq(st.trace_captures, 3, "one capture per address set: %llu", (unsigned long long)st.trace_captures);
  /* the same with child graphs, as before inlining */
  crec_record_options o = CREC_RECORD_OPTIONS_INIT;
  o.trace_child_graphs = 1;
  run_custom_program(p, &o, 13, &st);
  cr_expect_eq(st.traced_nodes, 1);
  cr_expect_eq(st.traced_inline, 0, "trace_child_graphs inlines nothing: %llu", (unsigned long long)st.traced_inline);
  /* inlined, with a graph per set: each set's kernels are set once */
  o = (crec_record_options)CREC_RECORD_OPTIONS_INIT;
  o.variants = 3;
  run_custom_program(p, &o, 13, &st);
  cr_expect_eq(st.traced_inline, 1);
  cr_expect_eq(st.trace_captures, 3, "one capture per address set: %llu", (unsigned long long)st.trace_captures);
  cr_expect_eq(st.variant_hits, 27, "%llu replays found their set held", (unsigned long long)st.variant_hits);
  crec_program_destroy(p);
  chooser_fini(&c);
}

Test(library, a_traced_capture_with_a_memset_stays_a_child_graph) {
  chooser c;
  gt inner[3], t;
  chooser_init(&c, inner);
  c.which = MEMSET_SCALE;
  crec_program *p = custom_program(&t, "test.chooser");
  crec_exec_stats st = CREC_EXEC_STATS_INIT;
  run_custom_program(p, NULL, 12, &st);
  cr_expect_eq(st.traced_nodes, 1);
  cr_expect_eq(st.traced_inline, 0, "a memset node is no kernel: %llu inlined", (unsigned long long)st.traced_inline);
  crec_program_destroy(p);
  chooser_fini(&c);
}

Test(library, an_inlined_capture_that_changes_kernels_is_refused_and_the_exec_stays_usable) {
  chooser c;
  gt inner[3], t;
  chooser_init(&c, inner);
  crec_program *p = custom_program(&t, "test.chooser");
  void *dst[2] = {gt_alloc(CB), gt_alloc(CB)}, *src = gt_alloc(CB);
  uint32_t hs[CN], hd[CN];
  for (int e = 0; e < CN; e++) hs[e] = (uint32_t)e * 7u;
  gt_upload(src, hs, CB);
  crec_binding bd[2] = {{dst[0], CB}, {src, CB}};
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = bd;
  bs.num_buffers = 2;
  crec_exec *ex;
  EXPECT_OK(crec_record(p, &bs, NULL, &ex));
  /* the library now issues the same two kernels in the other order */
  c.which = CHAIN_INC_SCALE;
  bd[0].ptr = dst[1];
  cr_assert_eq(crec_exec_replay(ex, &bs, stream), CREC_ERR_UNSUPPORTED, "a replay under another chain of kernels");
  const char *err = crec_last_error();
  cr_expect(strstr(err, "'mine'") && strstr(err, "chain of 2 kernels") && strstr(err, "trace_child_graphs"),
            "the error names the command, what changed and the way out: %s", err);
  /* the recorded addresses again: the cache's first capture, whatever the handler does now */
  bd[0].ptr = dst[0];
  gt_fill(dst[0], CB, 5);
  gt_replay(ex, &bs, stream);
  gt_download(hd, dst[0], CB);
  for (int e = 0; e < CN; e++) cr_assert_eq(hd[e], hs[e] * 3u + 13u, "dst[%d] = %u after the refusal", e, hd[e]);
  crec_exec_destroy(ex);
  for (int i = 0; i < 2; i++) crec_device_free(dst[i]);
  crec_device_free(src);
  crec_program_destroy(p);
  chooser_fini(&c);
}

/* ---- host callbacks ---- */

typedef struct cb_log {
  int entries[256];
  int n;
} cb_log;

typedef struct cb_user {
  int tag;               /* logged; -1: log the pinned value instead */
  cb_log *log;
  const volatile int *pinned;
} cb_user;

static void log_cb(void *user) {
  cb_user *u = user;
  if (u->log->n < 256) u->log->entries[u->log->n++] = u->tag >= 0 ? u->tag : *u->pinned;
}

/* A host callback given its operands' addresses reads a host temporary that a
 * kernel wrote through unified addressing (through a copy from a device argument
 * first), in every replay and in the eager run; a recorded one refuses an
 * argument operand, whose address a replay could change. */
typedef struct addr_log {
  int n;
  int32_t seen[64];
  void *where[64];
} addr_log;

static void addr_cb(void *user, void *const *addresses, size_t count) {
  addr_log *l = user;
  if (count == 1 && l->n < 64) {
    l->where[l->n] = addresses[0];
    l->seen[l->n++] = *(const int32_t *)addresses[0];
  }
}

Test(library, host_callbacks_given_addresses_read_host_temporaries) {
  gt t;
  gt_init(&t, 0);
  crec_buffer dev, host, direct;
  EXPECT_OK(crec_program_add_argument(t.p, "dev", 16, NULL, &dev));
  EXPECT_OK(crec_program_add_host_temporary(t.p, "host", 16, &host));
  EXPECT_OK(crec_program_add_host_temporary(t.p, "direct", 16, &direct));
  crec_scalar v;
  EXPECT_OK(crec_program_add_scalar(t.p, "v", CREC_TYPE_I32, &v));
  crec_region body = crec_program_body(t.p);
  crec_arg st[] = {crec_arg_buffer(crec_range_of(dev, 0, 4), CREC_ACCESS_WRITE), crec_arg_scalar(v)};
  gt_launch1(&t, body, t.store_i32, st, 2);
  crec_command c;
  EXPECT_OK(crec_program_add_memcpy(t.p, body, NULL, crec_range_of(host, 4, 4), crec_range_of(dev, 0, 4), &c));
  /* a kernel writing the host temporary itself, through unified addressing */
  crec_arg sd[] = {crec_arg_buffer(crec_range_of(direct, 0, 4), CREC_ACCESS_WRITE), crec_arg_scalar(v)};
  gt_launch1(&t, body, t.store_i32, sd, 2);
  static addr_log la, lb;
  memset(&la, 0, sizeof la);
  memset(&lb, 0, sizeof lb);
  crec_operand rd = crec_operand_of(crec_range_of(host, 4, 4), CREC_ACCESS_READ);
  crec_host_callback cb = CREC_HOST_CALLBACK_INIT;
  cb.fn_buffers = addr_cb;
  cb.user = &la;
  cb.operands = &rd;
  cb.num_operands = 1;
  EXPECT_OK(crec_program_add_host_callback(t.p, body, "reads host", &cb, &c));
  crec_operand rdd = crec_operand_of(crec_range_of(direct, 0, 4), CREC_ACCESS_READ);
  cb.user = &lb;
  cb.operands = &rdd;
  EXPECT_OK(crec_program_add_host_callback(t.p, body, "reads direct", &cb, &c));
  void *ddev = gt_alloc(16);
  crec_binding bd[1] = {{ddev, 16}};
  crec_value val;
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = bd;
  bs.num_buffers = 1;
  bs.scalars = &val;
  bs.num_scalars = 1;
  val.i32 = 7;
  crec_exec *ex;
  EXPECT_OK(crec_record(t.p, &bs, NULL, &ex));
  for (int i = 0; i < 10; i++) {
    val.i32 = 7 + i;
    EXPECT_OK(crec_exec_replay(ex, &bs, stream));
  }
  EXPECT_OK(crec_stream_synchronize(stream));
  val.i32 = 500;
  gt_eager(t.p, &bs, stream);
  cr_assert_eq(la.n, 11, "%d calls, 11 expected", la.n);
  cr_assert_eq(lb.n, 11, "%d calls, 11 expected", lb.n);
  for (int i = 0; i < 11; i++) {
    int want = i < 10 ? 7 + i : 500;
    cr_assert_eq(la.seen[i], want, "run %d read %d through the copy", i, la.seen[i]);
    cr_assert_eq(lb.seen[i], want, "run %d read %d from the kernel's store", i, lb.seen[i]);
  }
  /* the replays' address is the exec's own host arena, plus the operand's offset */
  cr_assert_eq(la.where[0], la.where[9]);
  cr_assert_eq((uintptr_t)la.where[0] % 4, 0);
  crec_exec_destroy(ex);
  /* an argument operand: a record refuses it (a replay could move the argument
   * while a queued host node still has its old address); in a program of its
   * own, since a recorded program takes no more commands */
  crec_program *q;
  crec_buffer qdev;
  EXPECT_OK(crec_program_create(&q));
  EXPECT_OK(crec_program_add_argument(q, "dev", 16, NULL, &qdev));
  crec_operand ra = crec_operand_of(crec_range_of(qdev, 0, 4), CREC_ACCESS_READ);
  cb.operands = &ra;
  EXPECT_OK(crec_program_add_host_callback(q, crec_program_body(q), "reads an argument", &cb, &c));
  crec_bindings bq = CREC_BINDINGS_INIT;
  bq.buffers = bd;
  bq.num_buffers = 1;
  EXPECT_STATUS(crec_record(q, &bq, NULL, &ex), CREC_ERR_UNSUPPORTED);
  EXPECT_ERROR_MENTIONS("operand 0 is argument 'dev'");
  crec_program_destroy(q);
  crec_program_destroy(t.p);
  crec_device_free(ddev);
}

Test(library, host_callbacks_run_once_per_replay_in_order) {
  gt t;
  gt_init(&t, 0);
  crec_argument_options ho = CREC_ARGUMENT_OPTIONS_INIT;
  ho.memory = CREC_MEMORY_HOST;
  crec_buffer dev, pin;
  EXPECT_OK(crec_program_add_argument(t.p, "dev", 16, NULL, &dev));
  EXPECT_OK(crec_program_add_argument(t.p, "pinned", 16, &ho, &pin));
  crec_scalar v;
  EXPECT_OK(crec_program_add_scalar(t.p, "v", CREC_TYPE_I32, &v));
  crec_region body = crec_program_body(t.p);
  void *pinned = NULL;
  EXPECT_OK(crec_host_alloc(0, 16, &pinned));
  static cb_log log;
  memset(&log, 0, sizeof log);
  static cb_user users[3];
  users[0] = (cb_user){1, &log, pinned};
  users[1] = (cb_user){-1, &log, pinned};
  users[2] = (cb_user){3, &log, pinned};
  crec_host_callback cb = CREC_HOST_CALLBACK_INIT;
  cb.fn = log_cb;
  crec_command c;
  cb.user = &users[0];
  EXPECT_OK(crec_program_add_host_callback(t.p, body, "first", &cb, &c));
  crec_arg st[] = {crec_arg_buffer(crec_range_of(dev, 0, 4), CREC_ACCESS_WRITE), crec_arg_scalar(v)};
  gt_launch1(&t, body, t.store_i32, st, 2);
  EXPECT_OK(crec_program_add_memcpy(t.p, body, NULL, crec_range_of(pin, 0, 4), crec_range_of(dev, 0, 4), &c));
  crec_operand rd = crec_operand_of(crec_range_of(pin, 0, 4), CREC_ACCESS_READ);
  cb.user = &users[1];
  cb.operands = &rd;
  cb.num_operands = 1;
  EXPECT_OK(crec_program_add_host_callback(t.p, body, "reads pinned", &cb, &c));
  cb.user = &users[2];
  cb.operands = NULL;
  cb.num_operands = 0;
  EXPECT_OK(crec_program_add_host_callback(t.p, body, "third", &cb, &c));
  void *ddev = gt_alloc(16);
  crec_binding bd[2] = {{ddev, 16}, {pinned, 16}};
  crec_value val;
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = bd;
  bs.num_buffers = 2;
  bs.scalars = &val;
  bs.num_scalars = 1;
  val.i32 = 100;
  crec_exec *ex;
  EXPECT_OK(crec_record(t.p, &bs, NULL, &ex));
  cr_assert_eq(log.n, 0, "recording runs no callback");
  for (int i = 0; i < 20; i++) {
    val.i32 = 100 + i;
    EXPECT_OK(crec_exec_replay(ex, &bs, stream));
  }
  EXPECT_OK(crec_stream_synchronize(stream));
  val.i32 = 999;
  gt_eager(t.p, &bs, stream);
  cr_assert_eq(log.n, 63, "%d callbacks ran, 21 runs x 3 expected", log.n);
  for (int i = 0; i < 21; i++) {
    cr_assert_eq(log.entries[3 * i], 1, "run %d", i);
    cr_assert_eq(log.entries[3 * i + 1], i < 20 ? 100 + i : 999, "run %d read the pinned value %d", i,
                 log.entries[3 * i + 1]);
    cr_assert_eq(log.entries[3 * i + 2], 3, "run %d", i);
  }
  crec_exec_destroy(ex);
  crec_program_destroy(t.p);
  crec_device_free(ddev);
  crec_host_free(pinned);
}

/* ---- errors name their command ---- */

Test(library, unknown_custom_target_names_the_command) {
  int64_t live = crec_debug_live_objects();
  gt t;
  crec_program *p = custom_program(&t, "no.such.target");
  void *m[2] = {gt_alloc(CB), gt_alloc(CB)};
  crec_binding bd[2] = {{m[0], CB}, {m[1], CB}};
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = bd;
  bs.num_buffers = 2;
  crec_exec *ex = NULL;
  EXPECT_STATUS(crec_record(p, &bs, NULL, &ex), CREC_ERR_NOT_FOUND);
  EXPECT_ERROR_MENTIONS("crec_record: command 0 ('mine'): custom target 'no.such.target' is not registered");
  cr_assert_null(ex);
  EXPECT_STATUS(crec_run_eager(p, &bs, stream), CREC_ERR_NOT_FOUND);
  EXPECT_ERROR_MENTIONS("crec_run_eager: command 0 ('mine'): custom target 'no.such.target'");
  crec_program_destroy(p);
  cr_assert_eq(crec_debug_live_objects(), live, "the failed record left objects behind");
  crec_device_free(m[0]);
  crec_device_free(m[1]);
}

Test(library, gemm_shape_mismatch_names_the_command) {
  crec_program *p;
  EXPECT_OK(crec_program_create(&p));
  crec_buffer a, b, d;
  EXPECT_OK(crec_program_add_argument(p, "a", 32 * 64 * 4, NULL, &a));
  EXPECT_OK(crec_program_add_argument(p, "b", 128 * 16 * 4, NULL, &b));
  EXPECT_OK(crec_program_add_argument(p, "d", 32 * 16 * 4, NULL, &d));
  crec_gemm g = CREC_GEMM_INIT;
  g.a = crec_matrix_of(crec_range_whole(a), 32, 64);
  g.b = crec_matrix_of(crec_range_whole(b), 128, 16);
  g.d = crec_matrix_of(crec_range_whole(d), 32, 16);
  crec_command c;
  EXPECT_STATUS(crec_program_add_gemm(p, crec_program_body(p), "fc1", &g, &c), CREC_ERR_INVALID_ARGUMENT);
  EXPECT_ERROR_MENTIONS("crec_program_add_gemm: gemm 'fc1': shape mismatch: op(A) is 32x64 but op(B) is 128x16");
  cr_assert_eq(c.id, 0);
  cr_assert_eq(crec_program_command_count(p), 0);
  crec_program_destroy(p);
}

Test(library, communicator_of_the_wrong_size_names_the_command) {
  crec_comm *comm = one_rank();
  crec_program *p;
  EXPECT_OK(crec_program_create(&p));
  crec_comm_slot w;
  EXPECT_OK(crec_program_add_communicator(p, "world", 2, &w));
  crec_buffer s, r;
  EXPECT_OK(crec_program_add_argument(p, "s", CB, NULL, &s));
  EXPECT_OK(crec_program_add_argument(p, "r", CB, NULL, &r));
  crec_collective d = CREC_COLLECTIVE_INIT;
  d.communicator = w;
  d.send = crec_range_whole(s);
  d.recv = crec_range_whole(r);
  crec_command c;
  EXPECT_OK(crec_program_add_collective(p, crec_program_body(p), "grads", &d, &c));
  void *m[2] = {gt_alloc(CB), gt_alloc(CB)};
  crec_binding bd[2] = {{m[0], CB}, {m[1], CB}};
  crec_comm *comms[1] = {comm};
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = bd;
  bs.num_buffers = 2;
  bs.communicators = comms;
  bs.num_communicators = 1;
  crec_exec *ex = NULL;
  EXPECT_STATUS(crec_record(p, &bs, NULL, &ex), CREC_ERR_BINDING);
  EXPECT_ERROR_MENTIONS("command 0 ('grads'): communicator binding 0 ('world') has 1 ranks, but the program needs 2");
  cr_assert_null(ex);
  EXPECT_STATUS(crec_run_eager(p, &bs, stream), CREC_ERR_BINDING);
  EXPECT_ERROR_MENTIONS("('grads')");
  crec_program_destroy(p);
  crec_device_free(m[0]);
  crec_device_free(m[1]);
  crec_comm_destroy(comm);
}

Test(library, host_callback_in_a_loop_body_runs_eagerly_but_is_not_recorded) {
  gt t;
  gt_init(&t, 0);
  crec_buffer state;
  EXPECT_OK(crec_program_add_argument(t.p, "state", 16, NULL, &state));
  crec_region body = crec_program_body(t.p), cond, loop;
  crec_arg st[] = {crec_arg_buffer(crec_range_of(state, 0, 4), CREC_ACCESS_WRITE), crec_arg_i32(3)};
  gt_launch1(&t, body, t.store_i32, st, 2);
  crec_command w, c;
  EXPECT_OK(crec_program_add_while(t.p, body, NULL, crec_range_of(state, 8, 1), &w, &cond, &loop));
  crec_arg cd[] = {crec_arg_buffer(crec_range_of(state, 0, 4), CREC_ACCESS_READ_WRITE),
                   crec_arg_buffer(crec_range_of(state, 8, 1), CREC_ACCESS_WRITE)};
  gt_launch1(&t, cond, t.countdown, cd, 2);
  static cb_log log;
  memset(&log, 0, sizeof log);
  static cb_user u;
  u = (cb_user){7, &log, NULL};
  crec_host_callback cb = CREC_HOST_CALLBACK_INIT;
  cb.fn = log_cb;
  cb.user = &u;
  EXPECT_OK(crec_program_add_host_callback(t.p, loop, "tick", &cb, &c));
  void *m = gt_alloc(16);
  crec_binding bd = {m, 16};
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = &bd;
  bs.num_buffers = 1;
  crec_exec *ex = NULL;
  EXPECT_STATUS(crec_record(t.p, &bs, NULL, &ex), CREC_ERR_UNSUPPORTED);
  EXPECT_ERROR_MENTIONS("('tick'): a host callback inside a while, if or switch cannot be recorded");
  gt_eager(t.p, &bs, stream);
  cr_assert_eq(log.n, 2, "the body ran %d times, 2 expected", log.n);
  crec_program_destroy(t.p);
  crec_device_free(m);
}

/* ---- fault injection ---- */

static crec_status fault_create(void *user, crec_custom_context *ctx, const crec_custom_call *call) {
  (void)user;
  return scale_launch(ctx, call, 0);
}
static crec_status fault_update(void *user, crec_custom_context *ctx, const crec_custom_call *call) {
  (void)user;
  return scale_launch(ctx, call, 1);
}

/* Adds an FFT (scaled: the scale kernel too), a Cholesky factorization or a
 * convolution (`which` 0, 1, 2) over temporaries of `p` (their contents do not
 * matter to a fault test). */
static void add_solver_call(crec_program *p, crec_region body, int which) {
  crec_buffer t1, t2, t3;
  char name[32];
  snprintf(name, sizeof name, "solver%d.a", which);
  EXPECT_OK(crec_program_add_temporary(p, name, 1024, &t1));
  snprintf(name, sizeof name, "solver%d.b", which);
  EXPECT_OK(crec_program_add_temporary(p, name, 1024, &t2));
  snprintf(name, sizeof name, "solver%d.c", which);
  EXPECT_OK(crec_program_add_temporary(p, name, 1024, &t3));
  crec_command c;
  if (which == 0) {
    crec_fft f = CREC_FFT_INIT;
    f.length[0] = 16, f.scale = 0.5;
    f.input = crec_range_of(t1, 0, 128), f.output = crec_range_of(t2, 0, 128);
    EXPECT_OK(crec_program_add_fft(p, body, "fft", &f, &c));
  } else if (which == 1) {
    crec_cholesky d = CREC_CHOLESKY_INIT;
    d.n = 4, d.a = crec_range_of(t1, 0, 64), d.info = crec_range_of(t2, 0, 4);
    EXPECT_OK(crec_program_add_cholesky(p, body, "potrf", &d, &c));
  } else {
    crec_conv d = CREC_CONV_INIT;
    d.in_channels = 2, d.out_channels = 2, d.in_size[0] = d.in_size[1] = 4, d.filter_size[0] = d.filter_size[1] = 2;
    d.input = crec_range_of(t1, 0, 2 * 16 * 4), d.filter = crec_range_of(t2, 0, 2 * 2 * 4 * 4);
    d.output = crec_range_of(t3, 0, 2 * 9 * 4), d.workspace_bytes = 1 << 20;
    EXPECT_OK(crec_program_add_conv(p, body, "conv", &d, &c));
  }
}

/* Whether the library of add_solver_call(`which`) opens here (cuFFT, cuSOLVER, cuDNN). */
static bool solver_available(int which) {
  crec_program *p;
  EXPECT_OK(crec_program_create(&p));
  add_solver_call(p, crec_program_body(p), which);
  crec_exec *ex = NULL;
  crec_bindings bs = CREC_BINDINGS_INIT;
  crec_status s = crec_record(p, &bs, NULL, &ex);
  bool missing = s == CREC_ERR_UNSUPPORTED && strstr(crec_last_error(), "is not available");
  if (missing) cr_log_warn("fault test without %s: %s", which == 0 ? "an FFT" : which == 1 ? "a Cholesky" : "a conv",
                           crec_last_error());
  crec_exec_destroy(ex);
  crec_program_destroy(p);
  return !missing;
}

static bool with_solver[3];

/* Every library command: GEMM with bias, NCCL all_reduce, a copy collective, a
 * custom nodes command, a host callback, and an FFT, a Cholesky factorization
 * and a convolution where their libraries open. */
static crec_program *every_library_command(gt *t, crec_comm *comm) {
  (void)comm;
  custom_program(t, "fault.scale");
  crec_program *p = t->p;
  crec_region body = crec_program_body(p);
  crec_buffer a, b, d, bias, s, r, r2;
  EXPECT_OK(crec_program_add_argument(p, "a", 16 * 16 * 4, NULL, &a));
  EXPECT_OK(crec_program_add_argument(p, "b", 16 * 16 * 4, NULL, &b));
  EXPECT_OK(crec_program_add_argument(p, "d", 16 * 16 * 4, NULL, &d));
  EXPECT_OK(crec_program_add_argument(p, "bias", 16 * 4, NULL, &bias));
  EXPECT_OK(crec_program_add_argument(p, "s", CB, NULL, &s));
  EXPECT_OK(crec_program_add_argument(p, "r", CB, NULL, &r));
  EXPECT_OK(crec_program_add_argument(p, "r2", CB, NULL, &r2));
  crec_gemm g = CREC_GEMM_INIT;
  g.a = crec_matrix_of(crec_range_whole(a), 16, 16);
  g.b = crec_matrix_of(crec_range_whole(b), 16, 16);
  g.d = crec_matrix_of(crec_range_whole(d), 16, 16);
  g.epilogue = CREC_GEMM_EPILOGUE_BIAS;
  g.bias = crec_range_whole(bias);
  crec_command c;
  EXPECT_OK(crec_program_add_gemm(p, body, "fc", &g, &c));
  crec_comm_slot w;
  EXPECT_OK(crec_program_add_communicator(p, "world", 1, &w));
  crec_collective cd = CREC_COLLECTIVE_INIT;
  cd.communicator = w;
  cd.type = CREC_ELEMENT_I32;
  cd.send = crec_range_whole(s);
  cd.recv = crec_range_whole(r);
  EXPECT_OK(crec_program_add_collective(p, body, "ar", &cd, &c));
  static const int32_t single[1] = {0};
  cd.groups = single, cd.num_groups = 1, cd.group_size = 1;
  cd.recv = crec_range_whole(r2);
  EXPECT_OK(crec_program_add_collective(p, body, "copy", &cd, &c));
  static cb_log log;
  static cb_user u;
  u = (cb_user){1, &log, NULL};
  crec_host_callback cb = CREC_HOST_CALLBACK_INIT;
  cb.fn = log_cb;
  cb.user = &u;
  EXPECT_OK(crec_program_add_host_callback(p, body, "cb", &cb, &c));
  for (int i = 0; i < 3; i++)
    if (with_solver[i]) add_solver_call(p, body, i);
  return p;
}

static void fault_loop(crec_fault_kind kind, crec_status expected, uint64_t limit) {
  crec_comm *comm = one_rank();
  crec_custom_handler h = CREC_CUSTOM_HANDLER_INIT;
  h.create = fault_create;
  h.update = fault_update;
  EXPECT_OK(crec_custom_register("fault.scale", &h));
  void *mem[9];
  crec_binding bd[9];
  static const uint64_t sizes[9] = {CB, CB, 1024, 1024, 1024, 64, CB, CB, CB};
  for (int i = 0; i < 9; i++) {
    mem[i] = gt_alloc(sizes[i]);
    bd[i] = (crec_binding){mem[i], sizes[i]};
  }
  crec_comm *comms[1] = {comm};
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = bd;
  bs.num_buffers = 9;
  bs.communicators = comms;
  bs.num_communicators = 1;
  for (int i = 0; i < 3; i++) with_solver[i] = solver_available(i);
  int64_t baseline = crec_debug_live_objects();
  int failures = 0;
  for (uint64_t n = 1; n < limit; n++) {
    gt t;
    crec_program *p = every_library_command(&t, comm);
    crec_exec *ex = NULL;
    crec_debug_fail_after(kind, n);
    crec_status s = crec_record(p, &bs, NULL, &ex);
    crec_debug_fail_after(kind, 0);
    if (s == CREC_OK) {
      gt_replay(ex, &bs, stream);
      crec_exec_destroy(ex);
      crec_program_destroy(p);
      cr_expect_eq(crec_debug_live_objects(), baseline);
      cr_expect_gt(failures, 10, "only %d calls could fail", failures);
      for (int i = 0; i < 9; i++) crec_device_free(mem[i]);
      EXPECT_OK(crec_custom_unregister("fault.scale"));
      crec_comm_destroy(comm);
      return;
    }
    failures++;
    cr_expect_null(ex);
    /* a driver call the hook fails reports CUDA_ERROR_OUT_OF_MEMORY; a library's call, CREC_ERR_CUDA */
    cr_expect(s == expected || (expected == CREC_ERR_CUDA && s == CREC_ERR_DEVICE_OUT_OF_MEMORY), "event %llu: %s: %s",
              (unsigned long long)n, crec_status_name(s), crec_last_error());
    crec_program_destroy(p);
    cr_expect_eq(crec_debug_live_objects(), baseline, "event %llu: %lld objects live after failing with '%s'",
                 (unsigned long long)n, (long long)crec_debug_live_objects(), crec_last_error());
  }
  cr_assert_fail("record never succeeded");
}

Test(library, record_failure_on_any_cuda_cublas_or_nccl_call_leaks_nothing, .timeout = 600) {
  fault_loop(CREC_FAULT_CUDA, CREC_ERR_CUDA, 600);
}

Test(library, record_failure_on_any_allocation_leaks_nothing, .timeout = 600) {
  fault_loop(CREC_FAULT_ALLOC, CREC_ERR_OUT_OF_MEMORY, 3000);
}

/* D = 0 (a memset, or zeros the test writes), then D += A·B with C = D (as
 * linalg.matmul lowers), with D — or every argument — rotating among buffers
 * that hold garbage: every replay must give A·B. */
static void zero_then_accumulate(uint64_t m, uint64_t n, uint64_t k, int with_memset, int rotate_all) {
  crec_program *p;
  EXPECT_OK(crec_program_create(&p));
  crec_buffer A, B, D;
  EXPECT_OK(crec_program_add_argument(p, "a", m * k * 4, NULL, &A));
  EXPECT_OK(crec_program_add_argument(p, "b", k * n * 4, NULL, &B));
  EXPECT_OK(crec_program_add_argument(p, "d", m * n * 4, NULL, &D));
  crec_command cmd;
  if (with_memset) EXPECT_OK(crec_program_add_memset(p, crec_program_body(p), "zero", crec_range_whole(D), 0, 4, &cmd));
  crec_gemm d = CREC_GEMM_INIT;
  d.a = crec_matrix_of(crec_range_whole(A), m, k);
  d.b = crec_matrix_of(crec_range_whole(B), k, n);
  d.d = crec_matrix_of(crec_range_whole(D), m, n);
  d.beta = 1.0;
  EXPECT_OK(crec_program_add_gemm(p, crec_program_body(p), "acc", &d, &cmd));
  gemm_case g = {CREC_ELEMENT_F32, m, n, k, 1, 0, 0, 1.0, 0.0, 0, CREC_GEMM_EPILOGUE_NONE, 0, CREC_ELEMENT_BYTES};
  hmat ha = hmat_random(CREC_ELEMENT_F32, m * k), hb = hmat_random(CREC_ELEMENT_F32, k * n);
  double *ref = malloc(m * n * sizeof(double)), *mag = malloc(m * n * sizeof(double));
  gemm_ref(&g, &ha, &hb, NULL, NULL, ref, mag);
  void *as[3], *bs_[3], *ds[3];
  for (int s = 0; s < 3; s++) {
    as[s] = gt_alloc(m * k * 4), bs_[s] = gt_alloc(k * n * 4), ds[s] = gt_alloc(m * n * 4);
    gt_upload(as[s], ha.raw, m * k * 4);
    gt_upload(bs_[s], hb.raw, k * n * 4);
  }
  crec_binding bd[3] = {{as[0], m * k * 4}, {bs_[0], k * n * 4}, {ds[0], m * n * 4}};
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = bd;
  bs.num_buffers = 3;
  crec_exec *ex;
  EXPECT_OK(crec_record(p, &bs, NULL, &ex));
  hmat got = {CREC_ELEMENT_F32, m * n, malloc(m * n * sizeof(float)), malloc(m * n * 4)};
  float *zeros = calloc(m * n, sizeof(float));
  for (int i = 0; i < 9; i++) {
    int s = (i + 1) % 3; /* the first replay already changes pointers */
    if (rotate_all) bd[0].ptr = as[s], bd[1].ptr = bs_[s];
    bd[2].ptr = ds[s];
    if (with_memset) gt_fill(ds[s], m * n * 4, (uint32_t)i); /* garbage the memset must clear */
    else gt_upload(ds[s], zeros, m * n * 4);
    gt_replay(ex, &bs, stream);
    hmat_download(&got, ds[s]);
    crec_exec_stats st = CREC_EXEC_STATS_INIT;
    EXPECT_OK(crec_exec_get_stats(ex, &st));
    char what[160];
    snprintf(what, sizeof what, "%s, replay %d (set %d; %llu misses, %llu nodes updated)",
             with_memset ? "memset + gemm" : "gemm on zeros", i, s, (unsigned long long)st.trace_misses,
             (unsigned long long)st.last_nodes_updated);
    expect_gemm_close(&g, &got, ref, mag, what);
  }
  crec_exec_destroy(ex);
  crec_program_destroy(p);
  for (int s = 0; s < 3; s++) {
    crec_device_free(as[s]);
    crec_device_free(bs_[s]);
    crec_device_free(ds[s]);
  }
  hmat_free(&ha);
  hmat_free(&hb);
  hmat_free(&got);
  free(zeros);
  free(ref);
  free(mag);
}

Test(library, gemm_accumulating_into_d_follows_rotation) { zero_then_accumulate(RM, RN, RK, 0, 0); }
Test(library, memset_then_gemm_accumulating_into_d_follows_rotation) { zero_then_accumulate(RM, RN, RK, 1, 0); }
Test(library, odd_memset_then_gemm_with_every_argument_rotating) { zero_then_accumulate(20, 45, 37, 1, 1); }
