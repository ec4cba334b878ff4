/* Program files (serialize.h): programs built with the C API (every buffer and
 * command kind) and every MLIR input of the suites and examples that lowers
 * without a GPU are written and read back, and must dump (JSON and text) byte
 * for byte as the original and serialize again to the same bytes. Damaged
 * files (every truncation, every flipped bit, wrong magic, version or header
 * size, trailing bytes, forged contents with a good checksum) give one clear
 * error naming the byte, and leave nothing allocated; so does every failed
 * allocation. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

TestSuite(serialize, .fini = crec_test_leak_check);

/* ---- helpers ---- */

typedef struct file {
  unsigned char *bytes;
  size_t size;
} file;

static file serialize(const crec_program *p) {
  file f = {NULL, 0};
  void *b = NULL;
  EXPECT_OK(crec_program_serialize(p, &b, &f.size));
  cr_assert_not_null(b);
  cr_assert_gt(f.size, 32);
  f.bytes = b;
  return f;
}

static crec_program *deserialize(file f) {
  crec_program *p = NULL;
  EXPECT_OK(crec_program_deserialize(f.bytes, f.size, &p));
  cr_assert_not_null(p);
  return p;
}

static char *dump(const crec_program *p, crec_dump_format format) {
  char *out = NULL;
  EXPECT_OK(crec_dump(p, NULL, format, &out, NULL));
  return out;
}

/* FNV-1a (64 bit), as the format's checksum. */
static uint64_t fnv1a(const unsigned char *d, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ d[i]) * 1099511628211ull;
  return h;
}
static void put_le64(unsigned char *at, uint64_t v) {
  for (int i = 0; i < 8; i++) at[i] = (unsigned char)(v >> (8 * i));
}
/* Makes the header's body size and checksum match the bytes (a forger's step). */
static void fix_header(unsigned char *bytes, size_t size) {
  put_le64(bytes + 16, size - 32);
  put_le64(bytes + 24, fnv1a(bytes + 32, size - 32));
}

/* Asserts that `p` reads back as itself: equal JSON and text dumps, equal bytes
 * when written again. `what` names it in messages. */
static void expect_round_trip(const crec_program *p, const char *what) {
  file f = serialize(p);
  crec_program *q = deserialize(f);
  for (int fmt = CREC_DUMP_TEXT; fmt <= CREC_DUMP_DOT; fmt++) {
    char *a = dump(p, (crec_dump_format)fmt), *b = dump(q, (crec_dump_format)fmt);
    cr_assert_str_eq(b, a, "%s: the %s dump of the program read back differs", what,
                     fmt == CREC_DUMP_TEXT ? "text" : fmt == CREC_DUMP_JSON ? "JSON" : "DOT");
    crec_free(a);
    crec_free(b);
  }
  file g = serialize(q);
  cr_assert_eq(g.size, f.size, "%s: written again, %zu bytes instead of %zu", what, g.size, f.size);
  cr_assert(memcmp(g.bytes, f.bytes, f.size) == 0, "%s: written again, the bytes differ", what);
  crec_free(g.bytes);
  crec_free(f.bytes);
  crec_program_destroy(q);
}

/* ---- a program with every buffer and command kind ---- */

/* A cubin's first bytes: 64-bit little-endian CUDA ELF, ABI version 8, SM 90 in e_flags. */
static void fake_cubin(unsigned char *img, size_t size) {
  memset(img, 0, size);
  memcpy(img, "\x7f" "ELF", 4);
  img[4] = 2, img[5] = 1, img[6] = 1, img[7] = 0x41, img[8] = 8;
  img[0x30] = 0x04, img[0x31] = 0x5a, img[0x32] = 0x00, img[0x33] = 0x06;
}

/* The handles every_kind() makes in one part and uses in another. */
typedef struct kinds {
  crec_program *p;
  crec_kernel k, big, clustered;
  crec_buffer x, host, dyn, f16, t, idx, pred, c, later;
  crec_scalar n, scale, dyn_size;
  crec_region body, lbody, b2;
} kinds;

/* every_kind(): modules, kernels, buffers of every kind and option, scalars. */
static void every_kind_objects(kinds *w) {
  crec_program *p = NULL;
  EXPECT_OK(crec_program_create(&p));
  crec_module ptx, cubin, fatbin;
  EXPECT_OK(crec_program_add_module(p, "ptx", CREC_IMAGE_PTX, crec_test_ptx, strlen(crec_test_ptx), &ptx));
  unsigned char img[128];
  fake_cubin(img, sizeof img);
  EXPECT_OK(crec_program_add_module(p, "cubin", CREC_IMAGE_CUBIN, img, sizeof img, &cubin));
  static const unsigned char fat[16] = {0x50, 0xED, 0x55, 0xBA, 1, 0, 16, 0, 1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_OK(crec_program_add_module(p, "fatbin", CREC_IMAGE_FATBIN, fat, sizeof fat, &fatbin));
  crec_kernel k, big, clustered;
  EXPECT_OK(crec_program_add_kernel(p, ptx, "k", NULL, &k));
  crec_kernel_options ko = CREC_KERNEL_OPTIONS_INIT;
  ko.shared_bytes = 100000;
  EXPECT_OK(crec_program_add_kernel(p, cubin, "big", &ko, &big));
  crec_kernel_options kc = CREC_KERNEL_OPTIONS_INIT;
  kc.cluster[0] = 2, kc.cluster[1] = 1, kc.cluster[2] = 1;
  EXPECT_OK(crec_program_add_kernel(p, fatbin, "clustered", &kc, &clustered));
  /* buffers: arguments with every option, temporaries, constants */
  crec_buffer x, host, dyn, f16, t, idx, pred, c;
  EXPECT_OK(crec_program_add_argument(p, "x", 4096, NULL, &x));
  crec_argument_options ho = CREC_ARGUMENT_OPTIONS_INIT;
  ho.memory = CREC_MEMORY_HOST;
  ho.alignment = 64;
  ho.element = CREC_ELEMENT_I32;
  EXPECT_OK(crec_program_add_argument(p, "host", 256, &ho, &host));
  crec_argument_options dyo = CREC_ARGUMENT_OPTIONS_INIT;
  dyo.dynamic_size = 1;
  dyo.element = CREC_ELEMENT_F32;
  EXPECT_OK(crec_program_add_argument(p, "dyn", 0, &dyo, &dyn));
  crec_argument_options fo = CREC_ARGUMENT_OPTIONS_INIT;
  fo.element = CREC_ELEMENT_F16;
  EXPECT_OK(crec_program_add_argument(p, "f16", 1 << 16, &fo, &f16));
  EXPECT_OK(crec_program_add_temporary(p, "t", 4096, &t));
  EXPECT_OK(crec_program_add_temporary(p, "idx", 4, &idx));
  EXPECT_OK(crec_program_add_temporary(p, "pred", 1, &pred));
  float weights[64];
  for (int i = 0; i < 64; i++) weights[i] = (float)i * 0.5f;
  EXPECT_OK(crec_program_add_constant(p, "c", weights, sizeof weights, &c));
  /* scalars: bound, and the size of the dynamic argument */
  crec_scalar n, scale, dyn_size;
  EXPECT_OK(crec_program_add_scalar(p, "n", CREC_TYPE_I32, &n));
  EXPECT_OK(crec_program_add_scalar(p, "scale", CREC_TYPE_F64, &scale));
  EXPECT_OK(crec_program_add_size_scalar(p, "dyn.size", dyn, &dyn_size));
  w->p = p;
  w->k = k, w->big = big, w->clustered = clustered;
  w->x = x, w->host = host, w->dyn = dyn, w->f16 = f16, w->t = t, w->idx = idx, w->pred = pred, w->c = c;
  w->n = n, w->scale = scale, w->dyn_size = dyn_size;
}

/* every_kind(): launches with every kind of argument, copies and fills. */
static void every_kind_launches(kinds *w) {
  crec_program *p = w->p;
  crec_kernel k = w->k, big = w->big, clustered = w->clustered;
  crec_buffer x = w->x, host = w->host, dyn = w->dyn, t = w->t, idx = w->idx, pred = w->pred, c = w->c;
  crec_scalar n = w->n, scale = w->scale, dyn_size = w->dyn_size;
  crec_region body = crec_program_body(p);
  crec_command cmd;
  /* a launch with every kind of argument and dims from scalars */
  unsigned char blob[100];
  for (int i = 0; i < 100; i++) blob[i] = (unsigned char)(i * 7);
  crec_arg args[] = {crec_arg_buffer(crec_range_of(x, 0, 1024), CREC_ACCESS_READ),
                     crec_arg_buffer(crec_range_whole(t), CREC_ACCESS_WRITE),
                     crec_arg_buffer(crec_range_whole(dyn), CREC_ACCESS_READ_WRITE),
                     crec_arg_scalar(n),
                     crec_arg_scalar(scale),
                     crec_arg_i32(-7),
                     crec_arg_i64(1ll << 40),
                     crec_arg_f32(1.5f),
                     crec_arg_f64(-2.25),
                     crec_arg_bytes(blob, 3),
                     crec_arg_bytes(blob, sizeof blob)};
  crec_launch l = CREC_LAUNCH_INIT;
  l.kernel = k;
  l.grid[0] = crec_dim_from(n);
  l.grid[1] = crec_dim_of(3);
  l.block[0] = crec_dim_of(128);
  l.shared_bytes = crec_dim_from(dyn_size);
  l.args = args;
  l.num_args = sizeof args / sizeof *args;
  EXPECT_OK(crec_program_add_launch(p, body, "everything", &l, &cmd));
  crec_launch lb = CREC_LAUNCH_INIT;
  lb.kernel = big;
  lb.shared_bytes = crec_dim_of(90000);
  EXPECT_OK(crec_program_add_launch(p, body, NULL, &lb, &cmd));
  crec_launch lc = CREC_LAUNCH_INIT;
  lc.kernel = clustered;
  lc.grid[0] = crec_dim_of(2);
  lc.flags = CREC_LAUNCH_EARLY_START; /* a fatbin's kernel: crec cannot read its code, and takes the promise */
  EXPECT_OK(crec_program_add_launch(p, body, NULL, &lc, &cmd));
  /* copies and fills */
  EXPECT_OK(crec_program_add_memcpy(p, body, "in", crec_range_of(t, 0, 256), crec_range_of(c, 0, 256), &cmd));
  EXPECT_OK(crec_program_add_memcpy(p, body, NULL, crec_range_of(host, 0, 256), crec_range_of(x, 256, 256), &cmd));
  EXPECT_OK(crec_program_add_memcpy(p, body, "dyn.copy", crec_range_whole(dyn), crec_range_of(x, 0, 64), &cmd));
  EXPECT_OK(crec_program_add_memset(p, body, "zero", crec_range_of(t, 256, 256), 0, 1, &cmd));
  EXPECT_OK(crec_program_add_memset(p, body, NULL, crec_range_whole(dyn), 0x3f80, 2, &cmd));
  EXPECT_OK(crec_program_add_memset(p, body, "idx0", crec_range_whole(idx), 1, 4, &cmd));
  EXPECT_OK(crec_program_add_memset(p, body, "pred0", crec_range_whole(pred), 1, 1, &cmd));
  EXPECT_OK(crec_program_add_barrier(p, body, NULL, &cmd));
  w->body = body;
}

/* every_kind(): control flow, a limited loop holding an if and two switches. */
static void every_kind_control(kinds *w) {
  crec_program *p = w->p;
  crec_buffer x = w->x, t = w->t, idx = w->idx, pred = w->pred;
  crec_region body = w->body;
  crec_command cmd;
  /* control flow: a limited loop holding an if and two switches */
  crec_command loop;
  crec_region cond, lbody, then_r, else_r, branches[3], cases[4];
  EXPECT_OK(crec_program_add_while(p, body, "loop", crec_range_whole(pred), &loop, &cond, &lbody));
  EXPECT_OK(crec_program_set_loop_limit(p, loop, 1000));
  EXPECT_OK(crec_program_add_memset(p, cond, "step", crec_range_whole(pred), 0, 1, &cmd));
  EXPECT_OK(crec_program_add_if(p, lbody, NULL, crec_range_of(t, 0, 1), &cmd, &then_r, &else_r));
  EXPECT_OK(crec_program_add_memset(p, then_r, NULL, crec_range_of(t, 512, 4), 7, 4, &cmd));
  EXPECT_OK(crec_program_add_memcpy(p, else_r, NULL, crec_range_of(t, 1024, 8), crec_range_of(x, 8, 8), &cmd));
  EXPECT_OK(crec_program_add_switch(p, lbody, "sw", crec_range_whole(idx), 3, NULL, &cmd, branches));
  EXPECT_OK(crec_program_add_memset(p, branches[2], NULL, crec_range_of(t, 2048, 4), 2, 4, &cmd));
  static const int32_t values[3] = {-5, 100, 7};
  EXPECT_OK(crec_program_add_switch(p, body, "table", crec_range_whole(idx), 4, values, &cmd, cases));
  EXPECT_OK(crec_program_add_memset(p, cases[1], NULL, crec_range_of(t, 3072, 4), 1, 4, &cmd));
  crec_command unlimited;
  crec_region c2, b2;
  EXPECT_OK(crec_program_add_while(p, cases[3], "forever", crec_range_whole(pred), &unlimited, &c2, &b2));
  EXPECT_OK(crec_program_set_loop_limit(p, unlimited, CREC_LOOP_UNLIMITED));
  w->lbody = lbody;
  w->b2 = b2;
}

/* every_kind(): GEMMs, FFTs, a Cholesky factorization and convolutions. */
static void every_kind_math(kinds *w) {
  crec_program *p = w->p;
  crec_buffer x = w->x, f16 = w->f16, t = w->t;
  crec_region body = w->body, lbody = w->lbody;
  crec_command cmd;
  /* library commands: GEMMs (each adds its workspace), collectives, barriers across ranks, custom */
  crec_gemm g = CREC_GEMM_INIT;
  g.type = CREC_ELEMENT_F16;
  g.a = crec_matrix_of(crec_range_of(f16, 0, 2 * 16 * 32), 16, 32);
  g.b = crec_matrix_of(crec_range_of(f16, 2048, 2 * 32 * 8), 32, 8);
  g.d = crec_matrix_of(crec_range_of(f16, 4096, 2 * 16 * 8), 16, 8);
  g.epilogue = CREC_GEMM_EPILOGUE_BIAS_RELU;
  g.bias = crec_range_of(f16, 8192, 16);
  g.alpha = 0.5;
  g.beta = 1.0;
  g.transpose_b = 0;
  g.workspace_bytes = 1 << 16;
  EXPECT_OK(crec_program_add_gemm(p, body, "mm", &g, &cmd));
  crec_buffer later;
  EXPECT_OK(crec_program_add_temporary(p, "later", 64, &later));
  crec_gemm g2 = CREC_GEMM_INIT;
  g2.batch = 2;
  g2.transpose_a = 1;
  g2.a = crec_matrix_of(crec_range_of(x, 0, 4 * 2 * 8 * 4), 8, 4);
  g2.b = crec_matrix_of(crec_range_of(x, 512, 4 * 2 * 8 * 4), 8, 4);
  g2.c = crec_matrix_of(crec_range_of(x, 1024, 4 * 2 * 4 * 4), 4, 4);
  g2.d = crec_matrix_of(crec_range_of(t, 0, 4 * 2 * 4 * 4), 4, 4);
  g2.beta = 2.0;
  EXPECT_OK(crec_program_add_gemm(p, lbody, NULL, &g2, &cmd));
  /* FFTs (each adds its workspace): a scaled inverse real one in a loop body, a complex one in place */
  crec_buffer spec, sig;
  EXPECT_OK(crec_program_add_argument(p, "spec", 2 * 4 * 5 * 16, NULL, &spec));
  EXPECT_OK(crec_program_add_argument(p, "sig", 2 * 4 * 8 * 8, NULL, &sig));
  crec_fft ft = CREC_FFT_INIT;
  ft.type = CREC_FFT_REAL_INVERSE;
  ft.precision = CREC_ELEMENT_F64;
  ft.rank = 2, ft.length[0] = 4, ft.length[1] = 8, ft.batch = 2;
  ft.input = crec_range_whole(spec), ft.output = crec_range_whole(sig);
  ft.scale = 1.0 / 32;
  EXPECT_OK(crec_program_add_fft(p, lbody, "irfft", &ft, &cmd));
  crec_fft f2 = CREC_FFT_INIT;
  f2.length[0] = 16, f2.workspace_bytes = 4096;
  f2.input = f2.output = crec_range_of(sig, 0, 128);
  EXPECT_OK(crec_program_add_fft(p, body, NULL, &f2, &cmd));
  /* a Cholesky factorization (it adds its workspace too) */
  crec_buffer spd;
  EXPECT_OK(crec_program_add_argument(p, "spd", 3 * 6 * 6 * 8 + 12, NULL, &spd));
  crec_cholesky ch = CREC_CHOLESKY_INIT;
  ch.type = CREC_ELEMENT_F64, ch.upper = 1, ch.n = 6, ch.batch = 3, ch.workspace_bytes = 8192;
  ch.a = crec_range_of(spd, 0, 3 * 6 * 6 * 8), ch.info = crec_range_of(spd, 3 * 6 * 6 * 8, 12);
  EXPECT_OK(crec_program_add_cholesky(p, body, "potrf", &ch, &cmd));
  /* convolutions (each adds its workspace): a forward one with a bias and a ReLU, a grouped backward pass */
  crec_buffer act;
  EXPECT_OK(crec_program_add_argument(p, "act", 8192, NULL, &act));
  crec_conv cv = CREC_CONV_INIT;
  cv.type = CREC_ELEMENT_F16, cv.layout = CREC_CONV_NHWC, cv.batch = 1, cv.in_channels = 4, cv.out_channels = 8;
  cv.in_size[0] = 6, cv.in_size[1] = 5, cv.filter_size[0] = 3, cv.filter_size[1] = 3, cv.padding[0] = 1;
  cv.input = crec_range_of(act, 0, 4 * 30 * 2), cv.filter = crec_range_of(act, 256, 8 * 4 * 9 * 2);
  cv.output = crec_range_of(act, 1024, 8 * 6 * 3 * 2), cv.bias = crec_range_of(act, 2048, 16);
  cv.activation = CREC_CONV_ACTIVATION_RELU, cv.workspace_bytes = 1 << 16, cv.filter_layout = CREC_CONV_FILTER_HWIO;
  EXPECT_OK(crec_program_add_conv(p, body, "conv", &cv, &cmd));
  crec_conv bd = cv;
  bd.kind = CREC_CONV_BACKWARD_DATA, bd.bias = (crec_range){{0}, 0, 0}, bd.activation = CREC_CONV_ACTIVATION_NONE;
  bd.groups = 2, bd.filter = crec_range_of(act, 256, 8 * 2 * 9 * 2), bd.algorithm = CREC_CONV_SEARCH;
  bd.input = crec_range_of(act, 4096, 4 * 30 * 2);
  EXPECT_OK(crec_program_add_conv(p, lbody, NULL, &bd, &cmd));
  w->later = later;
}

/* every_kind(): collectives, barriers across ranks, custom commands. */
static void every_kind_collectives(kinds *w) {
  crec_program *p = w->p;
  crec_kernel k = w->k, clustered = w->clustered;
  crec_buffer x = w->x, t = w->t, later = w->later;
  crec_region body = w->body, lbody = w->lbody, b2 = w->b2;
  crec_command cmd;
  crec_comm_slot world, solo;
  EXPECT_OK(crec_program_add_communicator(p, "world", 4, &world));
  EXPECT_OK(crec_program_add_communicator(p, "solo", 1, &solo));
  crec_collective ar = CREC_COLLECTIVE_INIT;
  ar.communicator = world;
  ar.send = ar.recv = crec_range_of(x, 2048, 256);
  ar.reduction = CREC_REDUCTION_MAX;
  EXPECT_OK(crec_program_add_collective(p, body, NULL, &ar, &cmd));
  crec_collective ag = CREC_COLLECTIVE_INIT;
  ag.kind = CREC_COLLECTIVE_ALL_GATHER;
  ag.communicator = world;
  ag.type = CREC_ELEMENT_BYTES;
  ag.send = crec_range_of(x, 0, 64);
  ag.recv = crec_range_of(t, 0, 256);
  ag.async = 1;
  crec_command start;
  EXPECT_OK(crec_program_add_collective(p, body, "gather", &ag, &start));
  EXPECT_OK(crec_program_add_memset(p, body, NULL, crec_range_of(t, 3584, 4), 0, 4, &cmd));
  EXPECT_OK(crec_program_add_collective_done(p, body, NULL, start, &cmd));
  static const int32_t groups[4] = {0, 1, 2, 3};
  crec_collective rs = CREC_COLLECTIVE_INIT;
  rs.kind = CREC_COLLECTIVE_REDUCE_SCATTER;
  rs.communicator = world;
  rs.type = CREC_ELEMENT_I32;
  rs.send = crec_range_of(x, 0, 256);
  rs.recv = crec_range_of(t, 0, 256);
  rs.groups = groups;
  rs.num_groups = 4;
  rs.group_size = 1;
  EXPECT_OK(crec_program_add_collective(p, body, "scatter", &rs, &cmd));
  static const int32_t pairs[6] = {0, 1, 1, 2, 2, 0};
  crec_collective pm = CREC_COLLECTIVE_INIT;
  pm.kind = CREC_COLLECTIVE_PERMUTE;
  pm.communicator = world;
  pm.send = crec_range_of(x, 0, 128);
  pm.recv = crec_range_of(t, 128, 128);
  pm.pairs = pairs;
  pm.num_pairs = 3;
  EXPECT_OK(crec_program_add_collective(p, body, NULL, &pm, &cmd));
  EXPECT_OK(crec_program_add_comm_barrier(p, body, NULL, world, &cmd));
  EXPECT_OK(crec_program_add_comm_barrier(p, lbody, "sync", solo, &cmd));
  crec_operand ops[] = {crec_operand_of(crec_range_of(x, 0, 16), CREC_ACCESS_READ), crec_operand_hole(),
                        crec_operand_of(crec_range_whole(later), CREC_ACCESS_READ_WRITE)};
  crec_kernel kernels[] = {k, clustered};
  static const char attrs[] = "{alpha = 2.0 : f32}";
  crec_custom cu = CREC_CUSTOM_INIT;
  cu.target = "my.op";
  cu.operands = ops;
  cu.num_operands = 3;
  cu.kernels = kernels;
  cu.num_kernels = 2;
  cu.attributes = attrs;
  cu.attributes_size = sizeof attrs;
  EXPECT_OK(crec_program_add_custom(p, body, NULL, &cu, &cmd));
  crec_custom bare = CREC_CUSTOM_INIT;
  bare.target = "bare";
  EXPECT_OK(crec_program_add_custom(p, b2, "nothing", &bare, &cmd));
}

static crec_program *every_kind(void) {
  kinds w = {0};
  every_kind_objects(&w);
  every_kind_launches(&w);
  every_kind_control(&w);
  every_kind_math(&w);
  every_kind_collectives(&w);
  crec_program *p = w.p;
  /* what no command uses comes after them all */
  crec_buffer unused;
  EXPECT_OK(crec_program_add_argument(p, "unused", 8, NULL, &unused));
  crec_scalar m;
  EXPECT_OK(crec_program_add_scalar(p, "m", CREC_TYPE_I64, &m));
  return p;
}

Test(serialize, every_buffer_and_command_kind_round_trips) {
  crec_program *p = every_kind();
  expect_round_trip(p, "every kind");
  /* what dumps do not show */
  file f = serialize(p);
  crec_program *q = deserialize(f);
  crec_buffer cb;
  crec_buffer_info a, b;
  EXPECT_OK(crec_program_find_buffer(q, "c", &cb));
  EXPECT_OK(crec_buffer_get_info(q, cb, &b));
  EXPECT_OK(crec_buffer_get_info(p, crec_program_buffer(p, crec_handle_index(cb.id)), &a));
  cr_assert_eq(b.size, a.size);
  cr_assert(memcmp(a.data, b.data, (size_t)a.size) == 0, "the constant's data differs");
  for (size_t i = 0; i < crec_program_buffer_count(p); i++) {
    EXPECT_OK(crec_buffer_get_info(p, crec_program_buffer(p, i), &a));
    EXPECT_OK(crec_buffer_get_info(q, crec_program_buffer(q, i), &b));
    cr_assert_str_eq(b.name, a.name);
    cr_assert(b.kind == a.kind && b.memory == a.memory && b.size == a.size && b.alignment == a.alignment &&
                  b.dynamic_size == a.dynamic_size && b.element == a.element && b.argument_index == a.argument_index,
              "buffer %zu ('%s') differs", i, a.name);
  }
  for (size_t i = 0; i < crec_program_module_count(p); i++) {
    crec_module_info ma, mb;
    EXPECT_OK(crec_module_get_info(p, crec_program_module(p, i), &ma));
    EXPECT_OK(crec_module_get_info(q, crec_program_module(q, i), &mb));
    cr_assert(ma.format == mb.format && ma.size == mb.size && memcmp(ma.image, mb.image, ma.size) == 0,
              "module %zu differs", i);
  }
  for (size_t i = 0; i < crec_program_command_count(p); i++) {
    uint64_t la, lb;
    if (crec_program_get_loop_limit(p, crec_program_command(p, i), &la) != CREC_OK) continue;
    EXPECT_OK(crec_program_get_loop_limit(q, crec_program_command(q, i), &lb));
    cr_assert_eq(lb, la, "command %zu: loop limit %llu, not %llu", i, (unsigned long long)lb, (unsigned long long)la);
  }
  crec_command custom = crec_program_command(q, crec_program_command_count(q) - 2);
  crec_custom u = CREC_CUSTOM_INIT;
  EXPECT_OK(crec_command_get_custom(q, custom, &u));
  cr_assert_str_eq(u.target, "my.op");
  cr_assert_eq(u.num_operands, 3);
  cr_assert_eq(u.operands[1].range.buffer.id, 0, "the hole is kept");
  cr_assert_eq(u.num_kernels, 2);
  cr_assert_eq(u.attributes_size, sizeof "{alpha = 2.0 : f32}");
  cr_assert_str_eq(u.attributes, "{alpha = 2.0 : f32}");
  crec_arg big;
  EXPECT_OK(crec_command_get_arg(q, crec_program_command(q, 0), 10, &big));
  cr_assert_eq(big.size, 100);
  for (int i = 0; i < 100; i++) cr_assert_eq(((const unsigned char *)big.data)[i], (unsigned char)(i * 7));
  crec_free(f.bytes);
  crec_program_destroy(q);
  crec_program_destroy(p);
  cr_assert_eq(crec_debug_live_objects(), 0);
}

Test(serialize, small_programs_round_trip) {
  crec_program *p = NULL;
  EXPECT_OK(crec_program_create(&p));
  expect_round_trip(p, "the empty program");
  crec_program_destroy(p);
  crec_kernel k;
  p = crec_test_program(&k);
  expect_round_trip(p, "a module and a kernel");
  crec_program_destroy(p);
  /* a derived scalar without its host function: an incomplete program is still written as it is */
  EXPECT_OK(crec_program_create(&p));
  crec_scalar s;
  EXPECT_OK(crec_program_add_derived_scalar(p, "later", CREC_TYPE_F32, &s));
  file f = serialize(p);
  crec_program *q = deserialize(f);
  crec_scalar_info info;
  EXPECT_OK(crec_scalar_get_info(q, crec_program_scalar(q, 0), &info));
  cr_assert_str_eq(info.name, "later");
  cr_assert(info.kind == CREC_SCALAR_DERIVED && info.type == CREC_TYPE_F32);
  EXPECT_STATUS(crec_program_validate(q), CREC_ERR_INVALID_PROGRAM);
  crec_free(f.bytes);
  crec_program_destroy(q);
  crec_program_destroy(p);
}

/* Random programs of the property suites: creation order differs from program order. */
Test(serialize, random_programs_round_trip) {
  crec_test_shape shape = {6, 4096, 40, true, true};
  for (uint64_t seed = 1; seed <= 60; seed++) {
    crec_program *p = crec_test_random_program(seed, &shape);
    char what[32];
    snprintf(what, sizeof what, "random program %llu", (unsigned long long)seed);
    expect_round_trip(p, what);
    crec_program_destroy(p);
  }
}

/* Warnings are not written: the program read back finds the same ones. */
Test(serialize, warnings_follow_from_the_program) {
  crec_kernel k;
  crec_program *p = crec_test_program(&k);
  crec_buffer t, x;
  EXPECT_OK(crec_program_add_temporary(p, "acc", 64, &t));
  EXPECT_OK(crec_program_add_argument(p, "x", 64, NULL, &x));
  crec_command cmd;
  EXPECT_OK(crec_program_add_memcpy(p, crec_program_body(p), "read", crec_range_whole(x), crec_range_whole(t), &cmd));
  EXPECT_OK(crec_program_validate(p));
  cr_assert_eq(crec_program_warning_count(p), 1);
  file f = serialize(p);
  crec_program *q = deserialize(f);
  EXPECT_OK(crec_program_validate(q));
  cr_assert_eq(crec_program_warning_count(q), 1);
  crec_warning_info a, b;
  EXPECT_OK(crec_program_get_warning(p, 0, &a));
  EXPECT_OK(crec_program_get_warning(q, 0, &b));
  cr_assert_str_eq(b.message, a.message);
  crec_free(f.bytes);
  crec_program_destroy(q);
  crec_program_destroy(p);
}

/* ---- every MLIR program of the suites and the examples ---- */

typedef struct {
  size_t done, refused;
} round_trips;

/* One lowered program: serialized and read back, or refused when it has host code. */
static void round_trip_one(const char *name, const char *path, crec_program *p, void *user) {
  round_trips *r = user;
  void *bytes = NULL;
  size_t size = 0;
  crec_status s = crec_program_serialize(p, &bytes, &size);
  if (s == CREC_ERR_UNSUPPORTED) {
    /* host code JIT-compiled in this process: refused, saying what is missing */
    cr_assert(crec_program_host_function_count(p) > 0 || strstr(crec_last_error(), "host callback"),
              "%s: refused without host code: %s", path, crec_last_error());
    EXPECT_ERROR_MENTIONS("relinkable host object or as its MLIR source");
    cr_assert_null(bytes);
    cr_log_info("%s: refused: %s", name, crec_last_error());
    r->refused++;
    return;
  }
  cr_assert_eq(s, CREC_OK, "%s: %s: %s", path, crec_status_name(s), crec_last_error());
  crec_free(bytes);
  expect_round_trip(p, path);
  crec_program_file_info info = CREC_PROGRAM_FILE_INFO_INIT;
  file f = serialize(p);
  EXPECT_OK(crec_program_file_get_info(f.bytes, f.size, &info));
  /* what the lowering compiles is PTX for the chip it was given */
  if (crec_program_module_count(p) > 0 && strstr(info.target, "compute_") == NULL)
    cr_assert(strstr(info.target, "sm_") || strcmp(info.target, "any") == 0, "%s: target '%s'", path, info.target);
  crec_free(f.bytes);
  r->done++;
}

Test(serialize, every_mlir_program_round_trips, .init = crec_test_require_mlir) {
  round_trips r = {0, 0};
  crec_test_lower_each_file(crec_test_mlir_dir(), round_trip_one, &r);
  /* the build tree's examples/: image.mlir's image is built there */
  DIR *built = opendir(CREC_TEST_MLIR_DIR "../../examples");
  if (built) closedir(built);
  crec_test_lower_each_file(built ? CREC_TEST_MLIR_DIR "../../examples" : CREC_SOURCE_DIR "/examples", round_trip_one,
                            &r);
  size_t done = r.done, refused = r.refused;
  /* tests/mlir has 11 programs and examples/ 5; host.mlir and both dynamic.mlir hold host code */
  cr_log_info("%zu programs round-tripped, %zu refused", done, refused);
  cr_assert_geq(done, 12, "only %zu programs round-tripped (%zu refused)", done, refused);
  cr_assert_geq(refused, 1, "no program with host code was refused");
}

Test(serialize, a_lowered_programs_target_is_its_ptx_chip, .init = crec_test_require_mlir) {
  crec_lower_options o = CREC_LOWER_OPTIONS_INIT;
  o.chip = "sm_90";
  crec_program *p = NULL;
  EXPECT_OK(crec_lower_mlir_file(CREC_SOURCE_DIR "/examples/jacobi.mlir", &o, &p));
  file f = serialize(p);
  crec_program_file_info info = CREC_PROGRAM_FILE_INFO_INIT;
  EXPECT_OK(crec_program_file_get_info(f.bytes, f.size, &info));
  cr_assert_str_eq(info.target, "compute_90");
  crec_free(f.bytes);
  crec_program_destroy(p);
}

/* ---- what a file says about itself ---- */

Test(serialize, file_info_names_format_version_and_chips) {
  crec_program *p = every_kind();
  file f = serialize(p);
  crec_program_file_info info = CREC_PROGRAM_FILE_INFO_INIT;
  EXPECT_OK(crec_program_file_get_info(f.bytes, f.size, &info));
  cr_assert_eq(info.struct_size, sizeof info);
  cr_assert_eq(info.format_version, CREC_PROGRAM_FILE_VERSION);
  cr_assert_str_eq(info.crec_version, crec_version());
  /* PTX of .target sm_75, a cubin of sm_90, a fatbin that does not say */
  cr_assert_str_eq(info.target, "compute_75,sm_90");
  crec_program_file_info small = CREC_PROGRAM_FILE_INFO_INIT;
  small.struct_size = 8;
  EXPECT_STATUS(crec_program_file_get_info(f.bytes, f.size, &small), CREC_ERR_INVALID_ARGUMENT);
  EXPECT_ERROR_MENTIONS("struct_size");
  EXPECT_STATUS(crec_program_file_get_info(f.bytes, 40, &info), CREC_ERR_INVALID_ARGUMENT);
  EXPECT_ERROR_MENTIONS("truncated");
  EXPECT_STATUS(crec_program_file_get_info(f.bytes, f.size, NULL), CREC_ERR_NULL_POINTER);
  crec_free(f.bytes);
  crec_program_destroy(p);
  /* no module: "any" */
  EXPECT_OK(crec_program_create(&p));
  f = serialize(p);
  EXPECT_OK(crec_program_file_get_info(f.bytes, f.size, &info));
  cr_assert_str_eq(info.target, "any");
  crec_free(f.bytes);
  crec_program_destroy(p);
}

/* ---- what a file cannot hold ---- */

static int add_one(void *user, const crec_value *in, crec_value *out) {
  (void)user;
  out[0].i32 = in[0].i32 + 1;
  return 0;
}
static void callback(void *user) { (void)user; }

Test(serialize, host_code_is_refused_by_name) {
  crec_program *p = NULL;
  EXPECT_OK(crec_program_create(&p));
  crec_scalar n, m;
  EXPECT_OK(crec_program_add_scalar(p, "n", CREC_TYPE_I32, &n));
  EXPECT_OK(crec_program_add_derived_scalar(p, "m", CREC_TYPE_I32, &m));
  EXPECT_OK(crec_program_add_host_function(p, "plus_one", add_one, NULL, NULL, &n, 1, &m, 1));
  void *bytes = (void *)p;
  size_t size = 99;
  EXPECT_STATUS(crec_program_serialize(p, &bytes, &size), CREC_ERR_UNSUPPORTED);
  EXPECT_ERROR_MENTIONS("crec_program_serialize: host function 0 ('plus_one')");
  EXPECT_ERROR_MENTIONS("relinkable host object or as its MLIR source");
  cr_assert_null(bytes);
  cr_assert_eq(size, 0);
  crec_program_destroy(p);

  EXPECT_OK(crec_program_create(&p));
  crec_command c;
  EXPECT_OK(crec_program_add_barrier(p, crec_program_body(p), NULL, &c));
  crec_host_callback cb = CREC_HOST_CALLBACK_INIT;
  cb.fn = callback;
  EXPECT_OK(crec_program_add_host_callback(p, crec_program_body(p), "notify", &cb, &c));
  EXPECT_STATUS(crec_program_serialize(p, &bytes, &size), CREC_ERR_UNSUPPORTED);
  EXPECT_ERROR_MENTIONS("command 1 ('notify') is a host callback");
  EXPECT_ERROR_MENTIONS("MLIR source");
  crec_program_destroy(p);
}

Test(serialize, null_arguments) {
  crec_program *p = NULL;
  EXPECT_OK(crec_program_create(&p));
  void *bytes;
  size_t size;
  EXPECT_STATUS(crec_program_serialize(NULL, &bytes, &size), CREC_ERR_NULL_POINTER);
  EXPECT_STATUS(crec_program_serialize(p, NULL, &size), CREC_ERR_NULL_POINTER);
  EXPECT_ERROR_MENTIONS("'bytes'");
  EXPECT_STATUS(crec_program_serialize(p, &bytes, NULL), CREC_ERR_NULL_POINTER);
  EXPECT_ERROR_MENTIONS("'size'");
  crec_program *q = p;
  EXPECT_STATUS(crec_program_deserialize(NULL, 10, &q), CREC_ERR_NULL_POINTER);
  cr_assert_null(q);
  EXPECT_STATUS(crec_program_deserialize("x", 1, NULL), CREC_ERR_NULL_POINTER);
  q = p;
  EXPECT_STATUS(crec_program_deserialize(NULL, 0, &q), CREC_ERR_INVALID_ARGUMENT);
  EXPECT_ERROR_MENTIONS("truncated");
  cr_assert_null(q);
  crec_program_destroy(p);
}

/* ---- damaged files ---- */

/* Expects `bytes` to be refused with `status` and a message holding `needle` and
 * "at byte", leaving no program and no live object. */
static void expect_refused(const unsigned char *bytes, size_t size, crec_status status, const char *needle,
                           const char *what) {
  int64_t live = crec_debug_live_objects();
  crec_program *q = (crec_program *)&live;
  crec_status s = crec_program_deserialize(bytes, size, &q);
  cr_assert_eq(s, status, "%s: %s, expected %s: %s", what, crec_status_name(s), crec_status_name(status),
               crec_last_error());
  cr_assert_null(q, "%s: a program came back with an error", what);
  cr_assert(strncmp(crec_last_error(), "crec_program_deserialize: at byte ", 34) == 0,
            "%s: the message does not say the byte: %s", what, crec_last_error());
  cr_assert(strstr(crec_last_error(), needle), "%s: '%s' does not mention '%s'", what, crec_last_error(), needle);
  cr_assert_eq(crec_debug_live_objects(), live, "%s: objects left alive", what);
}

Test(serialize, truncated_at_every_length) {
  crec_program *p = every_kind();
  file f = serialize(p);
  for (size_t n = 0; n < f.size; n++) {
    char what[64];
    snprintf(what, sizeof what, "the first %zu of %zu bytes", n, f.size);
    unsigned char *copy = malloc(n ? n : 1); /* exactly n bytes: ASan sees a read past them */
    memcpy(copy, f.bytes, n);
    expect_refused(copy, n, CREC_ERR_INVALID_ARGUMENT, "truncated", what);
    free(copy);
  }
  crec_free(f.bytes);
  crec_program_destroy(p);
}

Test(serialize, every_flipped_bit_is_caught) {
  crec_program *p = every_kind();
  file f = serialize(p);
  for (size_t i = 0; i < f.size; i++) {
    for (int bit = 0; bit < 8; bit++) {
      f.bytes[i] ^= (unsigned char)(1u << bit);
      char what[64];
      snprintf(what, sizeof what, "bit %d of byte %zu flipped", bit, i);
      if (i < 8) expect_refused(f.bytes, f.size, CREC_ERR_INVALID_ARGUMENT, "not a crec program file", what);
      else if (i < 12) expect_refused(f.bytes, f.size, CREC_ERR_UNSUPPORTED, "format version", what);
      else if (i < 16) expect_refused(f.bytes, f.size, CREC_ERR_UNSUPPORTED, "a header of", what);
      else if (i < 24) expect_refused(f.bytes, f.size, CREC_ERR_INVALID_ARGUMENT, "bytes of body", what);
      else expect_refused(f.bytes, f.size, CREC_ERR_INVALID_ARGUMENT, "checksum mismatch", what);
      f.bytes[i] ^= (unsigned char)(1u << bit);
    }
  }
  crec_free(f.bytes);
  crec_program_destroy(p);
}

Test(serialize, wrong_magic_version_header_and_trailing_bytes) {
  crec_kernel k;
  crec_program *p = crec_test_program(&k);
  file f = serialize(p);
  unsigned char *b = malloc(f.size + 4);
  memcpy(b, f.bytes, f.size);
  memcpy(b, "%PDF-1.7", 8);
  expect_refused(b, f.size, CREC_ERR_INVALID_ARGUMENT, "not a crec program file", "wrong magic");
  expect_refused((const unsigned char *)"{\"buffers\"", 10, CREC_ERR_INVALID_ARGUMENT, "not a crec program file",
                 "JSON");
  memcpy(b, f.bytes, f.size);
  b[8] = 3;
  expect_refused(b, f.size, CREC_ERR_UNSUPPORTED, "at byte 8: format version 3, but crec", "version 3");
  b[8] = 0;
  expect_refused(b, f.size, CREC_ERR_UNSUPPORTED, "format version 0", "version 0");
  b[8] = CREC_PROGRAM_FILE_VERSION;
  b[12] = 40;
  expect_refused(b, f.size, CREC_ERR_UNSUPPORTED, "at byte 12: a header of 40 bytes", "header size");
  b[12] = 32;
  memcpy(b + f.size, "more", 4);
  char needle[64];
  snprintf(needle, sizeof needle, "at byte %zu: 4 bytes after the end", f.size);
  expect_refused(b, f.size + 4, CREC_ERR_INVALID_ARGUMENT, needle, "trailing bytes");
  b[24] ^= 1;
  expect_refused(b, f.size, CREC_ERR_INVALID_ARGUMENT, "at byte 24: checksum mismatch", "checksum");
  free(b);
  crec_free(f.bytes);
  crec_program_destroy(p);
}

/* Finds the only place of `pattern` in `bytes`. */
static size_t find_once(const file *f, const void *pattern, size_t n) {
  size_t at = SIZE_MAX;
  for (size_t i = 0; i + n <= f->size; i++)
    if (memcmp(f->bytes + i, pattern, n) == 0) {
      cr_assert_eq(at, SIZE_MAX, "the pattern is in the file twice");
      at = i;
    }
  cr_assert_neq(at, SIZE_MAX, "the pattern is not in the file");
  return at;
}

/* A file of format version 1 (before launches had flags) still reads: its launches
 * have none. Made from a version 2 file whose last command is a launch: its flags
 * are the body's last 4 bytes, and the CMDS section, the last, shrinks by them. */
Test(serialize, a_version_1_file_reads_with_launches_without_flags) {
  crec_kernel k;
  crec_program *p = crec_test_program(&k);
  crec_buffer x;
  EXPECT_OK(crec_program_add_argument(p, "x", 64, NULL, &x));
  crec_arg a[] = {crec_arg_buffer(crec_range_whole(x), CREC_ACCESS_READ_WRITE)};
  crec_launch l = CREC_LAUNCH_INIT;
  l.kernel = k;
  l.args = a;
  l.num_args = 1;
  crec_command c;
  EXPECT_OK(crec_program_add_launch(p, crec_program_body(p), "last", &l, &c));
  file f = serialize(p);
  size_t cmds = find_once(&f, "CMDS", 4);
  unsigned char *b = malloc(f.size);
  memcpy(b, f.bytes, f.size);
  uint64_t section = 0;
  for (int i = 0; i < 8; i++) section |= (uint64_t)b[cmds + 4 + i] << (8 * i);
  cr_assert_eq(cmds + 12 + section, f.size, "CMDS is the last section");
  put_le64(b + cmds + 4, section - 4);
  b[8] = 1;
  fix_header(b, f.size - 4);
  crec_program_file_info info = CREC_PROGRAM_FILE_INFO_INIT;
  EXPECT_OK(crec_program_file_get_info(b, f.size - 4, &info));
  cr_expect_eq(info.format_version, 1);
  crec_program *q = NULL;
  EXPECT_OK(crec_program_deserialize(b, f.size - 4, &q));
  crec_command_info ci = CREC_COMMAND_INFO_INIT;
  EXPECT_OK(crec_command_get_info(q, crec_program_command(q, 0), &ci));
  cr_expect_str_eq(ci.name, "last");
  cr_expect_eq(ci.launch_flags, 0);
  /* the same file as version 2 is 4 bytes short: its launch's flags are cut off */
  b[8] = 2;
  fix_header(b, f.size - 4);
  crec_program *r = NULL;
  EXPECT_STATUS(crec_program_deserialize(b, f.size - 4, &r), CREC_ERR_INVALID_ARGUMENT);
  EXPECT_ERROR_MENTIONS("a launch's flags");
  free(b);
  crec_free(f.bytes);
  crec_program_destroy(q);
  crec_program_destroy(p);
}

/* A file whose checksum is good but whose contents a builder refuses: the
 * builder's message, after the byte and the command. */
Test(serialize, forged_contents_are_checked_by_the_builders) {
  crec_program *p = NULL;
  EXPECT_OK(crec_program_create(&p));
  crec_buffer x;
  EXPECT_OK(crec_program_add_argument(p, "x", 0x123456, NULL, &x));
  crec_command c;
  EXPECT_OK(crec_program_add_memcpy(p, crec_program_body(p), "copy", crec_range_of(x, 0x1000, 0x800),
                                    crec_range_of(x, 0, 0x800), &c));
  file f = serialize(p);
  unsigned char size[8] = {0x56, 0x34, 0x12, 0, 0, 0, 0, 0};
  size_t at = find_once(&f, size, sizeof size);
  f.bytes[at] = 0x00, f.bytes[at + 1] = 0x10, f.bytes[at + 2] = 0; /* x is now 4096 bytes */
  fix_header(f.bytes, f.size);
  expect_refused(f.bytes, f.size, CREC_ERR_INVALID_ARGUMENT,
                 "command 0 ('copy'): crec_program_add_memcpy: argument 'dst' (buffer 'x'): offset 4096 is beyond "
                 "buffer size 4096", "a copy beyond its buffer");
  /* an unknown section */
  crec_free(f.bytes);
  f = serialize(p);
  at = find_once(&f, "SCAL", 4);
  memcpy(f.bytes + at, "SCAX", 4);
  fix_header(f.bytes, f.size);
  char needle[80];
  snprintf(needle, sizeof needle, "at byte %zu: section 'SCAX' where section 'SCAL' comes", at);
  expect_refused(f.bytes, f.size, CREC_ERR_INVALID_ARGUMENT, needle, "an unknown section");
  crec_free(f.bytes);
  crec_program_destroy(p);
}

/* A forger who fixes the checksum after each change reaches the parser and the
 * builders: every flipped byte is then a clean error or a program, and a
 * program read back dumps. */
Test(serialize, every_forged_byte_is_a_clean_error_or_a_program) {
  crec_program *p = every_kind();
  file f = serialize(p);
  static const unsigned char flips[] = {0x01, 0x80, 0xff};
  size_t programs = 0;
  for (size_t i = 32; i < f.size; i++) {
    for (size_t j = 0; j < sizeof flips; j++) {
      unsigned char was = f.bytes[i];
      f.bytes[i] ^= flips[j];
      fix_header(f.bytes, f.size);
      int64_t live = crec_debug_live_objects();
      crec_program *q = NULL;
      crec_status s = crec_program_deserialize(f.bytes, f.size, &q);
      if (s == CREC_OK) {
        cr_assert_not_null(q);
        char *text = NULL;
        crec_status d = crec_dump(q, NULL, CREC_DUMP_TEXT, &text, NULL);
        cr_assert(d == CREC_OK || d == CREC_ERR_INVALID_PROGRAM, "byte %zu ^ 0x%02x: dump: %s", i, flips[j],
                  crec_last_error());
        crec_free(text);
        crec_program_destroy(q);
        programs++;
      } else {
        cr_assert(s == CREC_ERR_INVALID_ARGUMENT || s == CREC_ERR_UNSUPPORTED, "byte %zu ^ 0x%02x: %s: %s", i,
                  flips[j], crec_status_name(s), crec_last_error());
        cr_assert_null(q);
        cr_assert(strncmp(crec_last_error(), "crec_program_deserialize: at byte ", 34) == 0, "byte %zu: %s", i,
                  crec_last_error());
      }
      cr_assert_eq(crec_debug_live_objects(), live, "byte %zu ^ 0x%02x: objects left alive", i, flips[j]);
      f.bytes[i] = was;
    }
  }
  /* names, data and immediates take any byte: some forgeries are programs */
  cr_assert_gt(programs, 0);
  crec_free(f.bytes);
  crec_program_destroy(p);
}

/* ---- failed allocations ---- */

Test(serialize, every_failed_allocation_is_reported_and_frees_everything) {
  crec_program *p = every_kind();
  file f = serialize(p);
  bool done_write = false, done_read = false;
  uint64_t n = 1;
  for (; !(done_write && done_read); n++) {
    int64_t live = crec_debug_live_objects();
    if (!done_write) {
      void *bytes = NULL;
      size_t size = 0;
      crec_debug_fail_after(CREC_FAULT_ALLOC, n);
      crec_status s = crec_program_serialize(p, &bytes, &size);
      crec_debug_fail_after(CREC_FAULT_ALLOC, 0);
      if (s == CREC_OK) {
        cr_assert(size == f.size && memcmp(bytes, f.bytes, size) == 0);
        crec_free(bytes);
        done_write = true;
      } else {
        cr_assert_eq(s, CREC_ERR_OUT_OF_MEMORY, "serialize, allocation %llu: %s", (unsigned long long)n,
                     crec_last_error());
        EXPECT_ERROR_MENTIONS("crec_program_serialize");
        cr_assert_null(bytes);
      }
    }
    if (!done_read) {
      crec_program *q = NULL;
      crec_debug_fail_after(CREC_FAULT_ALLOC, n);
      crec_status s = crec_program_deserialize(f.bytes, f.size, &q);
      crec_debug_fail_after(CREC_FAULT_ALLOC, 0);
      if (s == CREC_OK) {
        crec_program_destroy(q);
        done_read = true;
      } else {
        cr_assert_eq(s, CREC_ERR_OUT_OF_MEMORY, "deserialize, allocation %llu: %s", (unsigned long long)n,
                     crec_last_error());
        EXPECT_ERROR_MENTIONS("crec_program_deserialize");
        cr_assert_null(q);
      }
    }
    cr_assert_eq(crec_debug_live_objects(), live, "allocation %llu: objects left alive", (unsigned long long)n);
  }
  cr_log_info("a file of %zu bytes; %llu allocations failed in turn", f.size, (unsigned long long)n - 1);
  cr_assert_gt(n, 100, "the file was read with too few allocations to test anything");
  crec_free(f.bytes);
  crec_program_destroy(p);
}
