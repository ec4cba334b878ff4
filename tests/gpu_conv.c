/* GPU suite for convolution commands (crec_program_add_conv, through cuDNN):
 * forward (plain, with a bias, with a ReLU, with both fused), backward data and
 * backward filter; NCHW and NHWC; strides, padding, dilation and groups; 2 and
 * 3 spatial dimensions; f32, f16 and bf16; heuristics and search; against a
 * direct convolution on the host, over replays that rotate three buffer sets
 * and an eager run; inside a loop body and a branch; a one-byte workspace. Skips
 * without a CUDA device, and without cuDNN (saying so). */
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

TestSuite(gpu_conv, .init = setup, .fini = teardown);

static uint32_t rng = 4242;
static double drand(void) { return gt_drand(&rng); }

/* Sizes of a convolution's tensors, padded to three spatial dimensions with 1. */
typedef struct shape {
  uint64_t n, c, k, g, cg;
  uint64_t in[3], f[3], out[3], stride[3], pad[3], dil[3];
  int nhwc, hwio;
} shape;

static shape shape_of(const crec_conv *d) {
  shape s = {d->batch, d->in_channels, d->out_channels, d->groups ? d->groups : 1, 0, {1, 1, 1}, {1, 1, 1},
             {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, d->layout == CREC_CONV_NHWC,
             d->filter_layout == CREC_CONV_FILTER_HWIO};
  s.cg = s.c / s.g;
  uint64_t out[3];
  crec_conv_output_size(d, out);
  for (uint32_t i = 0; i < d->spatial; i++) {
    s.in[i] = d->in_size[i], s.f[i] = d->filter_size[i], s.out[i] = out[i];
    s.stride[i] = d->stride[i] ? d->stride[i] : 1, s.pad[i] = d->padding[i], s.dil[i] = d->dilation[i] ? d->dilation[i] : 1;
  }
  return s;
}

/* Index of element (a, b, sp) of a tensor of `lead` x `chan` x sizes: NCHW or NHWC. */
static uint64_t at(int nhwc, uint64_t a, uint64_t b, uint64_t chan, const uint64_t sp[3], const uint64_t size[3]) {
  uint64_t s = (sp[0] * size[1] + sp[1]) * size[2] + sp[2];
  return nhwc ? (a * size[0] * size[1] * size[2] + s) * chan + b : (a * chan + b) * size[0] * size[1] * size[2] + s;
}

static uint64_t count(uint64_t a, uint64_t b, const uint64_t size[3]) { return a * b * size[0] * size[1] * size[2]; }

/* The direct convolution: every (n, k, output point, cg, filter point) adds x·w
 * to y (FORWARD), dy·w to dx (BACKWARD_DATA) or x·dy to dw (BACKWARD_FILTER). */
static void reference(const crec_conv *d, const double *x, const double *w, const double *y, double *out) {
  shape s = shape_of(d);
  uint64_t kg = s.k / s.g;
  for (uint64_t n = 0; n < s.n; n++)
    for (uint64_t k = 0; k < s.k; k++)
      for (uint64_t o0 = 0; o0 < s.out[0]; o0++)
        for (uint64_t o1 = 0; o1 < s.out[1]; o1++)
          for (uint64_t o2 = 0; o2 < s.out[2]; o2++) {
            uint64_t o[3] = {o0, o1, o2};
            uint64_t yi = at(s.nhwc, n, k, s.k, o, s.out);
            double acc = 0;
            for (uint64_t cg = 0; cg < s.cg; cg++)
              for (uint64_t f0 = 0; f0 < s.f[0]; f0++)
                for (uint64_t f1 = 0; f1 < s.f[1]; f1++)
                  for (uint64_t f2 = 0; f2 < s.f[2]; f2++) {
                    uint64_t f[3] = {f0, f1, f2}, i[3];
                    bool inside = true;
                    for (int q = 0; q < 3; q++) {
                      int64_t v = (int64_t)(o[q] * s.stride[q] + f[q] * s.dil[q]) - (int64_t)s.pad[q];
                      inside = inside && v >= 0 && v < (int64_t)s.in[q];
                      i[q] = inside ? (uint64_t)v : 0;
                    }
                    if (!inside) continue;
                    uint64_t c = (k / kg) * s.cg + cg;
                    uint64_t xi = at(s.nhwc, n, c, s.c, i, s.in);
                    /* HWIO: spatial..., C/groups, K */
                    uint64_t wi = s.hwio ? (((f0 * s.f[1] + f1) * s.f[2] + f2) * s.cg + cg) * s.k + k
                                         : at(s.nhwc, k, cg, s.cg, f, s.f);
                    if (d->kind == CREC_CONV_FORWARD) acc += x[xi] * w[wi];
                    else if (d->kind == CREC_CONV_BACKWARD_DATA) out[xi] += y[yi] * w[wi];
                    else out[wi] += x[xi] * y[yi];
                  }
            if (d->kind == CREC_CONV_FORWARD) out[yi] = acc;
          }
}

/* Host values rounded to `t` (what the device gets), and their bytes. */
static void *to_type(crec_element t, double *v, size_t n) {
  size_t es = crec_element_size(t);
  unsigned char *raw = malloc(n * es);
  for (size_t i = 0; i < n; i++) {
    float f = (float)v[i];
    if (t == CREC_ELEMENT_F16) {
      uint16_t h = gt_f32_to_f16(f);
      memcpy(raw + 2 * i, &h, 2);
      v[i] = gt_f16_to_f32(h);
    } else if (t == CREC_ELEMENT_BF16) {
      uint16_t h = gt_f32_to_bf16(f);
      memcpy(raw + 2 * i, &h, 2);
      v[i] = gt_bf16_to_f32(h);
    } else {
      memcpy(raw + 4 * i, &f, 4);
      v[i] = f;
    }
  }
  return raw;
}

static double from_type(crec_element t, const void *raw, size_t i) {
  uint16_t h;
  if (t == CREC_ELEMENT_F32) {
    float f;
    memcpy(&f, (const char *)raw + 4 * i, 4);
    return f;
  }
  memcpy(&h, (const char *)raw + 2 * i, 2);
  return t == CREC_ELEMENT_F16 ? gt_f16_to_f32(h) : gt_bf16_to_f32(h);
}

/* One buffer set: host x, w, y (dy), bias and the expected written tensor; device copies. */
typedef struct cset {
  double *x, *w, *y, *bias, *want;
  size_t nx, nw, ny, nb, nwant;
  void *dx, *dw, *dy, *db;
} cset;

static void *upload_values(crec_element t, double *v, size_t n) {
  void *raw = to_type(t, v, n);
  void *d = gt_alloc(n * crec_element_size(t));
  gt_upload(d, raw, n * crec_element_size(t));
  free(raw);
  return d;
}

static double *random_values(size_t n) {
  double *v = malloc(sizeof *v * n);
  for (size_t i = 0; i < n; i++) v[i] = drand();
  return v;
}

static cset make_set(const crec_conv *d) {
  shape s = shape_of(d);
  cset c = {0};
  c.nx = count(s.n, s.c, s.in), c.nw = count(s.k, s.cg, s.f), c.ny = count(s.n, s.k, s.out);
  c.nb = d->bias.buffer.id ? s.k : 0;
  c.x = random_values(c.nx), c.w = random_values(c.nw), c.y = random_values(c.ny);
  c.bias = c.nb ? random_values(c.nb) : NULL;
  c.dx = upload_values(d->type, c.x, c.nx), c.dw = upload_values(d->type, c.w, c.nw);
  c.dy = upload_values(d->type, c.y, c.ny);
  c.db = c.nb ? upload_values(d->type, c.bias, c.nb) : NULL;
  c.nwant = d->kind == CREC_CONV_FORWARD ? c.ny : d->kind == CREC_CONV_BACKWARD_DATA ? c.nx : c.nw;
  c.want = calloc(c.nwant, sizeof *c.want);
  reference(d, c.x, c.w, c.y, c.want);
  if (d->kind == CREC_CONV_FORWARD)
    for (size_t i = 0; i < c.ny; i++) {
      uint64_t k = s.nhwc ? i % s.k : (i / (s.out[0] * s.out[1] * s.out[2])) % s.k;
      if (c.bias) c.want[i] += c.bias[k];
      if (d->activation == CREC_CONV_ACTIVATION_RELU) c.want[i] = fmax(c.want[i], 0);
    }
  return c;
}

static void free_set(cset *c) {
  free(c->x), free(c->w), free(c->y), free(c->bias), free(c->want);
  crec_device_free(c->dx), crec_device_free(c->dw), crec_device_free(c->dy);
  if (c->db) crec_device_free(c->db);
}

/* The written tensor of the set, on the device. */
static void *written(const crec_conv *d, const cset *c) {
  return d->kind == CREC_CONV_FORWARD ? c->dy : d->kind == CREC_CONV_BACKWARD_DATA ? c->dx : c->dw;
}

static void expect_close(const crec_conv *d, const cset *c, const char *what) {
  size_t es = crec_element_size(d->type);
  void *raw = malloc(c->nwant * es);
  gt_download(raw, written(d, c), c->nwant * es);
  double mag = 1e-30, worst = 0;
  size_t worst_at = 0;
  for (size_t i = 0; i < c->nwant; i++) mag = fmax(mag, fabs(c->want[i]));
  for (size_t i = 0; i < c->nwant; i++) {
    double e = fabs(from_type(d->type, raw, i) - c->want[i]);
    if (e > worst) worst = e, worst_at = i;
  }
  /* f32 without TF32; f16 and bf16 results are rounded once to the type */
  double tol = d->type == CREC_ELEMENT_F32 ? 1e-4 : d->type == CREC_ELEMENT_F16 ? 4e-3 : 2e-2;
  cr_expect(worst <= tol * mag, "%s: %s %s %s: worst error %.3g at %zu (got %.6g, want %.6g), allowed %.3g", what,
            crec_element_name(d->type), crec_conv_kind_name(d->kind), d->layout == CREC_CONV_NHWC ? "nhwc" : "nchw",
            worst, worst_at, from_type(d->type, raw, worst_at), c->want[worst_at], tol * mag);
  free(raw);
}

static void skip_without_cudnn(crec_status s) {
  if (s == CREC_ERR_UNSUPPORTED && strstr(crec_last_error(), "cuDNN is not available")) cr_skip_test("%s", crec_last_error());
}

/* Records `d` (its ranges are set here: whole arguments x, w, y, bias) and
 * checks replays over three rotating sets, then an eager run. */
static void run_case(crec_conv d) {
  shape s = shape_of(&d);
  size_t es = crec_element_size(d.type);
  crec_program *p;
  EXPECT_OK(crec_program_create(&p));
  crec_buffer x, w, y, b;
  EXPECT_OK(crec_program_add_argument(p, "x", count(s.n, s.c, s.in) * es, NULL, &x));
  EXPECT_OK(crec_program_add_argument(p, "w", count(s.k, s.cg, s.f) * es, NULL, &w));
  EXPECT_OK(crec_program_add_argument(p, "y", count(s.n, s.k, s.out) * es, NULL, &y));
  bool bias = d.bias.buffer.id != 0;
  if (bias) EXPECT_OK(crec_program_add_argument(p, "bias", s.k * es, NULL, &b));
  d.input = crec_range_whole(x), d.filter = crec_range_whole(w), d.output = crec_range_whole(y);
  if (bias) d.bias = crec_range_whole(b);
  crec_command cmd;
  EXPECT_OK(crec_program_add_conv(p, crec_program_body(p), "conv", &d, &cmd));
  cset sets[3];
  for (int i = 0; i < 3; i++) sets[i] = make_set(&d);
  crec_binding bd[4];
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = bd;
  bs.num_buffers = bias ? 4 : 3;
  crec_exec *ex = NULL;
  int reps = gt_reps(60);
  for (int i = 0; i < reps; i++) {
    cset *c = &sets[i % 3];
    gt_fill(written(&d, c), c->nwant * es, (uint32_t)i); /* the replay must write all of it again */
    bd[0] = (crec_binding){c->dx, c->nx * es}, bd[1] = (crec_binding){c->dw, c->nw * es};
    bd[2] = (crec_binding){c->dy, c->ny * es}, bd[3] = (crec_binding){c->db, c->nb * es};
    if (!ex) {
      crec_status rs = crec_record(p, &bs, NULL, &ex);
      if (rs == CREC_ERR_UNSUPPORTED && strstr(crec_last_error(), "cuDNN is not available")) {
        for (int k = 0; k < 3; k++) free_set(&sets[k]);
        crec_program_destroy(p);
        skip_without_cudnn(rs);
      }
      cr_assert_eq(rs, CREC_OK, "crec_record: %s: %s", crec_status_name(rs), crec_last_error());
    }
    gt_replay(ex, &bs, stream);
    char what[64];
    snprintf(what, sizeof what, "replay %d (set %d)", i, i % 3);
    expect_close(&d, c, what);
    if (i == 0) {
      /* what record chose is said, by kind */
      char *choices = NULL;
      EXPECT_OK(crec_exec_library_choices(ex, &choices));
      char want[64];
      snprintf(want, sizeof want, "conv 'conv': cuDNN %s algorithm ", crec_conv_kind_name(d.kind));
      cr_expect(strstr(choices, want), "the choices name the algorithm:\n%s", choices);
      crec_free(choices);
    }
  }
  cset *c = &sets[2];
  gt_fill(written(&d, c), c->nwant * es, 77);
  bd[0] = (crec_binding){c->dx, c->nx * es}, bd[1] = (crec_binding){c->dw, c->nw * es};
  bd[2] = (crec_binding){c->dy, c->ny * es}, bd[3] = (crec_binding){c->db, c->nb * es};
  gt_eager(p, &bs, stream);
  expect_close(&d, c, "eager");
  crec_exec_destroy(ex);
  for (int k = 0; k < 3; k++) free_set(&sets[k]);
  crec_program_destroy(p);
}

/* A 2-D convolution of 2 x 6 x 11 x 9 by 8 filters of 3 x 3, stride 2, padding 1. */
static crec_conv base(void) {
  crec_conv d = CREC_CONV_INIT;
  d.batch = 2, d.in_channels = 6, d.out_channels = 8;
  d.in_size[0] = 11, d.in_size[1] = 9;
  d.filter_size[0] = d.filter_size[1] = 3;
  d.stride[0] = d.stride[1] = 2;
  d.padding[0] = d.padding[1] = 1;
  return d;
}

/* A stand-in range whose buffer id is nonzero: run_case replaces it with the bias argument. */
static crec_range some_bias(void) { return (crec_range){{1}, 0, 0}; }

Test(gpu_conv, forward_passes_match_the_direct_convolution) {
  crec_conv d = base();
  run_case(d);
  d.layout = CREC_CONV_NHWC;
  run_case(d);
  d.bias = some_bias();
  run_case(d);
  d.activation = CREC_CONV_ACTIVATION_RELU; /* bias and ReLU: the fused call */
  run_case(d);
  d.bias = (crec_range){{0}, 0, 0}; /* ReLU alone */
  d.layout = CREC_CONV_NCHW;
  d.groups = 2, d.dilation[0] = 2, d.stride[1] = 1;
  run_case(d);
  d = base();
  d.algorithm = CREC_CONV_SEARCH;
  run_case(d);
  /* linalg's hwcf filter, transposed by crec: NHWC and NCHW activations */
  d = base();
  d.filter_layout = CREC_CONV_FILTER_HWIO, d.layout = CREC_CONV_NHWC;
  run_case(d);
  d.layout = CREC_CONV_NCHW, d.groups = 2;
  run_case(d);
}

Test(gpu_conv, half_precision_and_three_dimensions) {
  crec_conv d = base();
  d.type = CREC_ELEMENT_F16, d.layout = CREC_CONV_NHWC;
  run_case(d);
  d.type = CREC_ELEMENT_BF16, d.bias = some_bias(), d.activation = CREC_CONV_ACTIVATION_RELU;
  run_case(d);
  crec_conv t = CREC_CONV_INIT;
  t.spatial = 3, t.batch = 1, t.in_channels = 4, t.out_channels = 4;
  t.in_size[0] = 5, t.in_size[1] = 6, t.in_size[2] = 7;
  t.filter_size[0] = t.filter_size[1] = t.filter_size[2] = 3;
  t.padding[0] = t.padding[1] = t.padding[2] = 1;
  run_case(t);
}

Test(gpu_conv, backward_passes_match_the_direct_convolution) {
  crec_conv d = base();
  d.kind = CREC_CONV_BACKWARD_DATA;
  run_case(d);
  d.layout = CREC_CONV_NHWC, d.groups = 2;
  run_case(d);
  d = base();
  d.kind = CREC_CONV_BACKWARD_FILTER;
  run_case(d);
  d.dilation[0] = d.dilation[1] = 2, d.stride[0] = d.stride[1] = 1, d.algorithm = CREC_CONV_SEARCH;
  run_case(d);
  /* an HWIO filter's gradient comes back in HWIO */
  d = base();
  d.kind = CREC_CONV_BACKWARD_FILTER, d.filter_layout = CREC_CONV_FILTER_HWIO, d.layout = CREC_CONV_NHWC;
  run_case(d);
  d.kind = CREC_CONV_BACKWARD_DATA;
  run_case(d);
}

Test(gpu_conv, a_one_byte_workspace_records_an_algorithm_without_work_area_or_names_the_need) {
  /* whether some algorithm needs no work area depends on cuDNN's version and the chip: either the
   * record chooses one, and it computes the same, or it fails naming the command and the option */
  crec_conv d = base();
  d.workspace_bytes = 1;
  crec_program *p;
  EXPECT_OK(crec_program_create(&p));
  shape s = shape_of(&d);
  crec_buffer x, w, y;
  EXPECT_OK(crec_program_add_argument(p, "x", count(s.n, s.c, s.in) * 4, NULL, &x));
  EXPECT_OK(crec_program_add_argument(p, "w", count(s.k, s.cg, s.f) * 4, NULL, &w));
  EXPECT_OK(crec_program_add_argument(p, "y", count(s.n, s.k, s.out) * 4, NULL, &y));
  d.input = crec_range_whole(x), d.filter = crec_range_whole(w), d.output = crec_range_whole(y);
  crec_command cmd;
  EXPECT_OK(crec_program_add_conv(p, crec_program_body(p), "tight", &d, &cmd));
  cset c = make_set(&d);
  crec_binding bd[3] = {{c.dx, c.nx * 4}, {c.dw, c.nw * 4}, {c.dy, c.ny * 4}};
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = bd;
  bs.num_buffers = 3;
  crec_exec *ex = NULL;
  crec_status rs = crec_record(p, &bs, NULL, &ex);
  if (rs == CREC_ERR_UNSUPPORTED && strstr(crec_last_error(), "cuDNN is not available")) {
    free_set(&c);
    crec_program_destroy(p);
    skip_without_cudnn(rs);
  }
  if (rs == CREC_OK) {
    /* an algorithm without a work area was chosen: it must compute the same */
    gt_replay(ex, &bs, stream);
    expect_close(&d, &c, "with a 1-byte workspace");
    crec_exec_destroy(ex);
  } else {
    cr_expect_eq(rs, CREC_ERR_OUT_OF_RANGE, "%s: %s", crec_status_name(rs), crec_last_error());
    EXPECT_ERROR_MENTIONS("conv 'tight'");
    EXPECT_ERROR_MENTIONS("crec_conv.workspace_bytes");
  }
  free_set(&c);
  crec_program_destroy(p);
}

Test(gpu_conv, convolutions_in_a_loop_body_and_a_branch_follow_rotation) {
  /* state = 3; while (--state > 0) y = conv(x, w); if (1) z = relu(conv(x, w) + bias):
   * each replay binds another of three sets, and fills y and z with junk first */
  gt t;
  gt_init(&t, 1);
  crec_conv d = base();
  d.layout = CREC_CONV_NHWC;
  crec_conv e = d;
  e.bias = some_bias(), e.activation = CREC_CONV_ACTIVATION_RELU;
  shape s = shape_of(&d);
  uint64_t nx = count(s.n, s.c, s.in) * 4, nw = count(s.k, s.cg, s.f) * 4, ny = count(s.n, s.k, s.out) * 4;
  crec_buffer x, w, y, z, b, state;
  EXPECT_OK(crec_program_add_argument(t.p, "x", nx, NULL, &x));
  EXPECT_OK(crec_program_add_argument(t.p, "w", nw, NULL, &w));
  EXPECT_OK(crec_program_add_argument(t.p, "y", ny, NULL, &y));
  EXPECT_OK(crec_program_add_argument(t.p, "z", ny, NULL, &z));
  EXPECT_OK(crec_program_add_argument(t.p, "bias", s.k * 4, NULL, &b));
  EXPECT_OK(crec_program_add_argument(t.p, "state", 64, NULL, &state));
  crec_region top = crec_program_body(t.p);
  crec_command cmd;
  d.input = e.input = crec_range_whole(x), d.filter = e.filter = crec_range_whole(w);
  d.output = crec_range_whole(y), e.output = crec_range_whole(z), e.bias = crec_range_whole(b);
  EXPECT_OK(crec_program_add_conv(t.p, gt_countdown_loop(&t, top, state, 3), "in loop", &d, &cmd));
  EXPECT_OK(crec_program_add_conv(t.p, gt_taken_branch(&t, top, state), "in branch", &e, &cmd));
  /* each set's x, w and bias serve both: e's expected output is computed from them */
  cset sets[3];
  double *want_z[3];
  void *dz[3], *dstate[3];
  for (int i = 0; i < 3; i++) {
    sets[i] = make_set(&e);
    want_z[i] = sets[i].want;
    sets[i].want = calloc(sets[i].nwant, sizeof *sets[i].want);
    reference(&d, sets[i].x, sets[i].w, sets[i].y, sets[i].want);
    dz[i] = gt_alloc(ny), dstate[i] = gt_alloc(64);
  }
  crec_binding bd[6];
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = bd;
  bs.num_buffers = 6;
  crec_exec *ex = NULL;
  int reps = gt_reps(30);
  for (int i = 0; i < reps; i++) {
    int k = i % 3;
    cset *c = &sets[k];
    gt_fill(c->dy, ny, (uint32_t)i), gt_fill(dz[k], ny, (uint32_t)i + 7);
    bd[0] = (crec_binding){c->dx, nx}, bd[1] = (crec_binding){c->dw, nw}, bd[2] = (crec_binding){c->dy, ny};
    bd[3] = (crec_binding){dz[k], ny}, bd[4] = (crec_binding){c->db, s.k * 4}, bd[5] = (crec_binding){dstate[k], 64};
    if (!ex) {
      crec_status rs = crec_record(t.p, &bs, NULL, &ex);
      if (rs) {
        for (int j = 0; j < 3; j++) free(want_z[j]), free_set(&sets[j]), crec_device_free(dz[j]), crec_device_free(dstate[j]);
        crec_program_destroy(t.p);
      }
      skip_without_cudnn(rs);
      cr_assert_eq(rs, CREC_OK, "crec_record: %s: %s", crec_status_name(rs), crec_last_error());
    }
    gt_replay(ex, &bs, stream);
    char what[64];
    snprintf(what, sizeof what, "replay %d: the loop's", i);
    expect_close(&d, c, what);
    cset cz = *c;
    cz.dy = dz[k], cz.want = want_z[k];
    snprintf(what, sizeof what, "replay %d: the branch's", i);
    expect_close(&e, &cz, what);
  }
  crec_exec_destroy(ex);
  for (int i = 0; i < 3; i++) free(want_z[i]), free_set(&sets[i]), crec_device_free(dz[i]), crec_device_free(dstate[i]);
  crec_program_destroy(t.p);
}
