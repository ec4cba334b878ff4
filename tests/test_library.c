/* Library commands without a device: builder validation and what builders keep
 * (getters, operands), access sets seen through dependencies (sequential and
 * concurrent, async collectives, host callback order, GEMM workspaces), dumps,
 * the custom handler registry, and option and stats defaults. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define R(b, off, size) crec_arg_buffer(crec_range_of((b), (off), (size)), CREC_ACCESS_READ)
#define W(b, off, size) crec_arg_buffer(crec_range_of((b), (off), (size)), CREC_ACCESS_WRITE)
#define EXPECT_NO_DEPS(plan, command) crec_test_expect_deps((plan), (command), 0, NULL, #command)

static crec_program *prog;
static crec_kernel kern;
static crec_region body;

static void setup(void) {
  prog = crec_test_program(&kern);
  body = crec_program_body(prog);
}
static void teardown(void) { crec_test_teardown_program(&prog); }

TestSuite(library, .init = setup, .fini = teardown);

static crec_buffer arg(const char *name, uint64_t size) { return crec_test_argument(prog, name, size); }

static crec_command launch_n(const char *name, const crec_arg *args, size_t n) {
  return crec_test_launch(prog, body, name, kern, args, n);
}
#define LAUNCH(name, ...)                                                                  \
  launch_n((name), (const crec_arg[]){__VA_ARGS__}, sizeof((const crec_arg[]){__VA_ARGS__}) / sizeof(crec_arg))

static crec_plan *plan_with(crec_schedule schedule) { return crec_test_plan(prog, schedule); }

/* ---------------------------------------------------------------- GEMM ---- */

/* A f32 GEMM D(m x n) = A(m x k) B(k x n) over fresh argument buffers. */
typedef struct gemm_fix {
  crec_buffer a, b, d, bias;
  crec_gemm g;
} gemm_fix;

static gemm_fix gemm_setup(const char *prefix, uint64_t m, uint64_t n, uint64_t k) {
  gemm_fix f;
  char name[64];
  snprintf(name, sizeof name, "%s_a", prefix);
  f.a = arg(name, m * k * 4);
  snprintf(name, sizeof name, "%s_b", prefix);
  f.b = arg(name, k * n * 4);
  snprintf(name, sizeof name, "%s_d", prefix);
  f.d = arg(name, m * n * 4);
  snprintf(name, sizeof name, "%s_bias", prefix);
  f.bias = arg(name, n * 4);
  crec_gemm g = CREC_GEMM_INIT;
  g.a = crec_matrix_of(crec_range_whole(f.a), m, k);
  g.b = crec_matrix_of(crec_range_whole(f.b), k, n);
  g.d = crec_matrix_of(crec_range_whole(f.d), m, n);
  f.g = g;
  return f;
}

Test(library, gemm_adds_a_command_and_its_workspace) {
  gemm_fix f = gemm_setup("x", 32, 64, 48);
  size_t before = crec_program_buffer_count(prog);
  crec_command c;
  EXPECT_OK(crec_program_add_gemm(prog, body, "fc1", &f.g, &c));
  cr_assert_eq(crec_program_buffer_count(prog), before + 1);
  crec_command_info ci = CREC_COMMAND_INFO_INIT;
  EXPECT_OK(crec_command_get_info(prog, c, &ci));
  cr_assert_eq(ci.kind, CREC_COMMAND_GEMM);
  cr_assert_str_eq(ci.name, "fc1");
  crec_buffer_info bi;
  EXPECT_OK(crec_buffer_get_info(prog, ci.workspace, &bi));
  cr_assert_str_eq(bi.name, "fc1.workspace");
  cr_assert_eq(bi.kind, CREC_BUFFER_TEMPORARY);
  cr_assert_eq(bi.size, CREC_GEMM_DEFAULT_WORKSPACE);
  /* a second GEMM of that name gets another workspace name; a given size is kept */
  f.g.workspace_bytes = 1 << 20;
  EXPECT_OK(crec_program_add_gemm(prog, body, "fc1", &f.g, &c));
  EXPECT_OK(crec_command_get_info(prog, c, &ci));
  EXPECT_OK(crec_buffer_get_info(prog, ci.workspace, &bi));
  cr_assert_str_eq(bi.name, "fc1.workspace2");
  cr_assert_eq(bi.size, 1 << 20);
  /* default name */
  EXPECT_OK(crec_program_add_gemm(prog, body, NULL, &f.g, &c));
  EXPECT_OK(crec_command_get_info(prog, c, &ci));
  cr_assert_str_eq(ci.name, "gemm");
}

Test(library, gemm_reads_back_resolved) {
  crec_buffer a = arg("a", 3 * 2 * 10 * 4), b = arg("b", 3 * 10 * 5 * 4), d = arg("d", 3 * 2 * 8 * 4);
  crec_gemm g = CREC_GEMM_INIT;
  g.batch = 3;
  g.transpose_a = 1; /* A stored as K x M = 10 x 2 */
  g.a = crec_matrix_of(crec_range_whole(a), 10, 2);
  g.a.batch_stride = 20;
  g.b = crec_matrix_of(crec_range_whole(b), 10, 5);
  g.d = crec_matrix_of(crec_range_whole(d), 2, 5);
  g.d.ld = 8;
  g.alpha = 0.5;
  g.beta = 2;
  crec_command c;
  EXPECT_OK(crec_program_add_gemm(prog, body, "bmm", &g, &c));
  crec_gemm got = CREC_GEMM_INIT;
  EXPECT_OK(crec_command_get_gemm(prog, c, &got));
  cr_assert_eq(got.batch, 3);
  cr_assert_eq(got.transpose_a, 1);
  cr_assert_eq(got.a.ld, 2);
  cr_assert_eq(got.a.batch_stride, 20);
  cr_assert_eq(got.b.ld, 5);
  cr_assert_eq(got.b.batch_stride, 50);
  cr_assert_eq(got.d.ld, 8);
  cr_assert_eq(got.d.batch_stride, 16);
  cr_assert_eq(got.d.range.size, 3 * 2 * 8 * 4);
  cr_assert_eq(got.c.range.buffer.id, 0, "C is D");
  cr_assert_eq(got.alpha, 0.5);
  cr_assert_eq(got.beta, 2);
  cr_assert_eq(got.workspace_bytes, CREC_GEMM_DEFAULT_WORKSPACE);
  /* operands: a r, b r, d rw (beta != 0 with C = D), workspace rw */
  crec_command_info ci = CREC_COMMAND_INFO_INIT;
  EXPECT_OK(crec_command_get_info(prog, c, &ci));
  cr_assert_eq(ci.num_operands, 4);
  crec_range r;
  crec_access acc;
  EXPECT_OK(crec_command_get_operand(prog, c, 2, &r, &acc));
  cr_assert_eq(r.buffer.id, d.id);
  cr_assert_eq(acc, CREC_ACCESS_READ_WRITE);
  EXPECT_OK(crec_command_get_operand(prog, c, 3, &r, &acc));
  cr_assert_eq(r.buffer.id, ci.workspace.id);
  cr_assert_eq(r.size, CREC_GEMM_DEFAULT_WORKSPACE);
  EXPECT_STATUS(crec_command_get_operand(prog, c, 4, &r, &acc), CREC_ERR_OUT_OF_RANGE);
  /* beta 0: D is only written */
  g.beta = 0;
  EXPECT_OK(crec_program_add_gemm(prog, body, "bmm0", &g, &c));
  EXPECT_OK(crec_command_get_operand(prog, c, 2, &r, &acc));
  cr_assert_eq(acc, CREC_ACCESS_WRITE);
  /* getters refuse other kinds and small structs */
  crec_command l = LAUNCH("k", R(a, 0, 4));
  EXPECT_STATUS(crec_command_get_gemm(prog, l, &got), CREC_ERR_INVALID_ARGUMENT);
  EXPECT_STATUS(crec_command_get_operand(prog, l, 0, &r, &acc), CREC_ERR_INVALID_ARGUMENT);
  got.struct_size = 8;
  EXPECT_STATUS(crec_command_get_gemm(prog, c, &got), CREC_ERR_INVALID_ARGUMENT);
}

/* The first GEMM named `name` in `p`. */
static crec_command gemm_named(const crec_program *p, const char *name) {
  for (size_t i = 0; i < crec_program_command_count(p); i++) {
    crec_command_info ci = CREC_COMMAND_INFO_INIT;
    EXPECT_OK(crec_command_get_info(p, crec_program_command(p, i), &ci));
    if (ci.kind == CREC_COMMAND_GEMM && strcmp(ci.name, name) == 0) return crec_program_command(p, i);
  }
  cr_assert_fail("no GEMM named '%s'", name);
  return crec_program_command(p, 0);
}

/* f16 (or bf16) A and B, f32 C and D (and bias): products of half-precision
 * inputs kept in single precision. D's range is checked at 4 bytes an element;
 * other pairs are refused; a struct from before output_type means one type; the
 * output type survives a program file and shows in the dump. */
Test(library, gemm_of_half_inputs_writes_f32_when_asked) {
  enum { M = 8, N = 16, K = 32 };
  crec_buffer a = arg("ha", M * K * 2), b = arg("hb", K * N * 2), d = arg("fd", M * N * 4), bias = arg("fb", N * 4);
  crec_gemm g = CREC_GEMM_INIT;
  g.type = CREC_ELEMENT_F16;
  g.output_type = CREC_ELEMENT_F32;
  g.a = crec_matrix_of(crec_range_whole(a), M, K);
  g.b = crec_matrix_of(crec_range_whole(b), K, N);
  g.d = crec_matrix_of(crec_range_whole(d), M, N);
  g.epilogue = CREC_GEMM_EPILOGUE_BIAS;
  g.bias = crec_range_whole(bias);
  crec_command c, oc;
  EXPECT_OK(crec_program_add_gemm(prog, body, "mixed", &g, &c));
  crec_gemm got = CREC_GEMM_INIT;
  EXPECT_OK(crec_command_get_gemm(prog, c, &got));
  cr_assert_eq(got.type, CREC_ELEMENT_F16);
  cr_assert_eq(got.output_type, CREC_ELEMENT_F32);
  /* D sized for f16 elements is too small for f32 ones */
  crec_gemm small = g;
  small.d = crec_matrix_of(crec_range_of(d, 0, M * N * 2), M, N);
  EXPECT_REFUSED(prog, crec_program_add_gemm(prog, body, "mixed", &small, &oc), CREC_ERR_OUT_OF_RANGE, "argument 'd'");
  /* f16 out of f32 inputs, and bf16 out of f16 ones, are not products cuBLASLt keeps */
  crec_gemm bad = g;
  bad.type = CREC_ELEMENT_F32, bad.output_type = CREC_ELEMENT_F16;
  EXPECT_REFUSED(prog, crec_program_add_gemm(prog, body, "mixed", &bad, &oc), CREC_ERR_UNSUPPORTED,
                 "output type f16 with f32 inputs is not supported");
  bad.type = CREC_ELEMENT_F16, bad.output_type = CREC_ELEMENT_BF16;
  EXPECT_REFUSED(prog, crec_program_add_gemm(prog, body, "mixed", &bad, &oc), CREC_ERR_UNSUPPORTED,
                 "output type bf16 with f16 inputs");
  /* a caller built before output_type: one element type, and it reads back so */
  crec_buffer fa = arg("fa", M * K * 4), fbb = arg("fbb", K * N * 4);
  crec_gemm old = CREC_GEMM_INIT;
  old.struct_size = offsetof(crec_gemm, output_type);
  old.a = crec_matrix_of(crec_range_whole(fa), M, K);
  old.b = crec_matrix_of(crec_range_whole(fbb), K, N);
  old.d = crec_matrix_of(crec_range_whole(d), M, N);
  old.output_type = CREC_ELEMENT_F16; /* past its struct_size: not read */
  EXPECT_OK(crec_program_add_gemm(prog, body, "old", &old, &oc));
  EXPECT_OK(crec_command_get_gemm(prog, oc, &got));
  cr_assert_eq(got.output_type, CREC_ELEMENT_F32, "one type: the output is f32 too");
  got.struct_size = offsetof(crec_gemm, output_type);
  got.output_type = CREC_ELEMENT_BYTES;
  EXPECT_OK(crec_command_get_gemm(prog, c, &got));
  cr_assert_eq(got.output_type, CREC_ELEMENT_BYTES, "an old caller's struct gets what it holds");
  /* the dump, and a program file's round trip */
  char *text = NULL;
  EXPECT_OK(crec_dump(prog, NULL, CREC_DUMP_TEXT, &text, NULL));
  cr_assert(strstr(text, "gemm 'mixed'") && strstr(text, " f16 into f32 M=8 N=16 K=32"), "%s", text);
  crec_free(text);
  void *bytes = NULL;
  size_t size = 0;
  EXPECT_OK(crec_program_serialize(prog, &bytes, &size));
  crec_program *back = NULL;
  EXPECT_OK(crec_program_deserialize(bytes, size, &back));
  crec_command bc = gemm_named(back, "mixed");
  got = (crec_gemm)CREC_GEMM_INIT;
  EXPECT_OK(crec_command_get_gemm(back, bc, &got));
  cr_assert(got.type == CREC_ELEMENT_F16 && got.output_type == CREC_ELEMENT_F32, "read back %s into %s",
            crec_element_name(got.type), crec_element_name(got.output_type));
  bc = gemm_named(back, "old");
  EXPECT_OK(crec_command_get_gemm(back, bc, &got));
  cr_assert(got.type == CREC_ELEMENT_F32 && got.output_type == CREC_ELEMENT_F32);
  crec_free(bytes);
  crec_program_destroy(back);
}

Test(library, gemm_validation) {
  gemm_fix f = gemm_setup("x", 32, 64, 48);
  crec_command c;
  crec_gemm g;
  EXPECT_REFUSED(prog, crec_program_add_gemm(prog, body, "fc", NULL, &c), CREC_ERR_NULL_POINTER, "'gemm'");
  g = f.g;
  g.struct_size = 16;
  EXPECT_REFUSED(prog, crec_program_add_gemm(prog, body, "fc", &g, &c), CREC_ERR_INVALID_ARGUMENT, "CREC_GEMM_INIT");
  g = f.g;
  g.type = CREC_ELEMENT_F64;
  EXPECT_REFUSED(prog, crec_program_add_gemm(prog, body, "fc", &g, &c), CREC_ERR_UNSUPPORTED, "f64");
  /* inner dimensions: A is 32x48, B^T is 64x48 */
  g = f.g;
  g.transpose_b = 1;
  EXPECT_REFUSED(prog, crec_program_add_gemm(prog, body, "fc", &g, &c), CREC_ERR_INVALID_ARGUMENT,
                 "gemm 'fc': shape mismatch: op(A) is 32x48 but op(B) is 64x48");
  g = f.g;
  g.d = crec_matrix_of(crec_range_whole(f.d), 64, 32);
  EXPECT_REFUSED(prog, crec_program_add_gemm(prog, body, "fc", &g, &c), CREC_ERR_INVALID_ARGUMENT,
                 "shape mismatch: D is 64x32");
  g = f.g;
  g.c = crec_matrix_of(crec_range_whole(f.d), 16, 64);
  EXPECT_REFUSED(prog, crec_program_add_gemm(prog, body, "fc", &g, &c), CREC_ERR_INVALID_ARGUMENT,
                 "shape mismatch: C is 16x64");
  /* a range too small for its matrices */
  g = f.g;
  g.a = crec_matrix_of(crec_range_of(f.a, 0, 32 * 48 * 4 - 4), 32, 48);
  EXPECT_REFUSED(prog, crec_program_add_gemm(prog, body, "fc", &g, &c), CREC_ERR_OUT_OF_RANGE, "need 1536");
  g = f.g;
  g.batch = 2;
  EXPECT_REFUSED(prog, crec_program_add_gemm(prog, body, "fc", &g, &c), CREC_ERR_OUT_OF_RANGE, "argument 'a'");
  g = f.g;
  g.batch = 0;
  EXPECT_REFUSED(prog, crec_program_add_gemm(prog, body, "fc", &g, &c), CREC_ERR_INVALID_ARGUMENT, "batch");
  g = f.g;
  g.a.ld = 40;
  EXPECT_REFUSED(prog, crec_program_add_gemm(prog, body, "fc", &g, &c), CREC_ERR_INVALID_ARGUMENT, "ld 40");
  g = f.g;
  g.a.rows = 0;
  EXPECT_REFUSED(prog, crec_program_add_gemm(prog, body, "fc", &g, &c), CREC_ERR_INVALID_ARGUMENT, "empty");
  /* offsets must be whole elements */
  g = f.g;
  g.b = crec_matrix_of(crec_range_of(f.b, 2, 48 * 64 * 4 - 4), 48, 63);
  EXPECT_REFUSED(prog, crec_program_add_gemm(prog, body, "fc", &g, &c), CREC_ERR_MISALIGNED, "offset 2");
  /* bias and epilogue go together; the bias has N elements */
  g = f.g;
  g.epilogue = CREC_GEMM_EPILOGUE_BIAS;
  EXPECT_REFUSED(prog, crec_program_add_gemm(prog, body, "fc", &g, &c), CREC_ERR_INVALID_ARGUMENT, "needs 'gemm.bias'");
  g = f.g;
  g.bias = crec_range_whole(f.bias);
  EXPECT_REFUSED(prog, crec_program_add_gemm(prog, body, "fc", &g, &c), CREC_ERR_INVALID_ARGUMENT, "adds no bias");
  g.epilogue = CREC_GEMM_EPILOGUE_BIAS_RELU;
  g.bias = crec_range_of(f.bias, 0, 63 * 4);
  EXPECT_REFUSED(prog, crec_program_add_gemm(prog, body, "fc", &g, &c), CREC_ERR_INVALID_ARGUMENT,
                 "shape mismatch: bias holds 63 elements, D has 64 columns");
  g.epilogue = (crec_gemm_epilogue)9;
  EXPECT_REFUSED(prog, crec_program_add_gemm(prog, body, "fc", &g, &c), CREC_ERR_INVALID_ARGUMENT, "epilogue");
  /* D is written: no constants, no host memory */
  float zeros[32 * 64] = {0};
  crec_buffer k, h;
  EXPECT_OK(crec_program_add_constant(prog, "k", zeros, sizeof zeros, &k));
  crec_argument_options ho = CREC_ARGUMENT_OPTIONS_INIT;
  ho.memory = CREC_MEMORY_HOST;
  EXPECT_OK(crec_program_add_argument(prog, "h", sizeof zeros, &ho, &h));
  g = f.g;
  g.d = crec_matrix_of(crec_range_whole(k), 32, 64);
  EXPECT_REFUSED(prog, crec_program_add_gemm(prog, body, "fc", &g, &c), CREC_ERR_INVALID_ARGUMENT, "constant");
  g.d = crec_matrix_of(crec_range_whole(h), 32, 64);
  EXPECT_REFUSED(prog, crec_program_add_gemm(prog, body, "fc", &g, &c), CREC_ERR_INVALID_ARGUMENT, "host memory");
  /* a constant may be read */
  g = f.g;
  g.a = crec_matrix_of(crec_range_of(k, 0, 32 * 48 * 4), 32, 48);
  EXPECT_OK(crec_program_add_gemm(prog, body, "fc", &g, &c));
  /* dynamic sizes: whole ranges are refused, explicit ones taken */
  crec_argument_options dyn = CREC_ARGUMENT_OPTIONS_INIT;
  dyn.dynamic_size = 1;
  crec_buffer x;
  EXPECT_OK(crec_program_add_argument(prog, "dyn", 0, &dyn, &x));
  g = f.g;
  g.a = crec_matrix_of(crec_range_whole(x), 32, 48);
  EXPECT_REFUSED(prog, crec_program_add_gemm(prog, body, "fc", &g, &c), CREC_ERR_UNSUPPORTED, "dynamic-size");
  g.a = crec_matrix_of(crec_range_of(x, 0, 32 * 48 * 4), 32, 48);
  EXPECT_OK(crec_program_add_gemm(prog, body, "fc", &g, &c));
  /* handles */
  g = f.g;
  g.b.range.buffer.id = CREC_TEST_GARBAGE_ID;
  EXPECT_REFUSED(prog, crec_program_add_gemm(prog, body, "fc", &g, &c), CREC_ERR_INVALID_HANDLE, "argument 'b'");
  crec_region bad = {CREC_TEST_GARBAGE_ID};
  EXPECT_REFUSED(prog, crec_program_add_gemm(prog, bad, "fc", &f.g, &c), CREC_ERR_INVALID_HANDLE, "region");
  cr_assert_eq(c.id, 0);
}

/* ----------------------------------------------------------------- FFT ---- */

/* An f32 real-to-complex FFT of 3 transforms of length 10: 120 bytes of reals in,
 * 3 x 6 complex elements (144 bytes) out. */
static crec_fft rfft_of(crec_buffer in, crec_buffer out) {
  crec_fft f = CREC_FFT_INIT;
  f.type = CREC_FFT_REAL_FORWARD;
  f.length[0] = 10;
  f.batch = 3;
  f.input = crec_range_of(in, 0, 120);
  f.output = crec_range_of(out, 0, 144);
  return f;
}

Test(library, fft_adds_a_command_and_its_workspace_and_reads_back) {
  crec_buffer in = arg("sig", 120), out = arg("spec", 256);
  crec_fft f = rfft_of(in, out);
  crec_command c;
  EXPECT_OK(crec_program_add_fft(prog, body, "spectrum", &f, &c));
  crec_command_info info = CREC_COMMAND_INFO_INIT;
  EXPECT_OK(crec_command_get_info(prog, c, &info));
  cr_assert_eq(info.kind, CREC_COMMAND_FFT);
  crec_buffer ws;
  EXPECT_OK(crec_program_find_buffer(prog, "spectrum.workspace", &ws));
  cr_assert_eq(info.workspace.id, ws.id, "the command info names its workspace");
  cr_assert_str_eq(crec_command_kind_name(CREC_COMMAND_FFT), "fft");
  crec_fft got = CREC_FFT_INIT;
  EXPECT_OK(crec_command_get_fft(prog, c, &got));
  cr_assert(got.type == CREC_FFT_REAL_FORWARD && got.precision == CREC_ELEMENT_F32 && got.rank == 1 &&
            got.length[0] == 10 && got.length[1] == 0 && got.batch == 3 && got.scale == 1.0);
  /* the default workspace: the larger of 1 MiB and twice the larger operand */
  cr_assert_eq(got.workspace_bytes, CREC_FFT_DEFAULT_WORKSPACE_MIN);
  crec_buffer_info bi;
  EXPECT_OK(crec_buffer_get_info(prog, ws, &bi));
  cr_assert_eq(bi.kind, CREC_BUFFER_TEMPORARY);
  cr_assert_eq(bi.size, CREC_FFT_DEFAULT_WORKSPACE_MIN);
  /* an inverse real transform's workspace also holds the copy of its input */
  crec_buffer big = arg("big", 1 << 20), back = arg("back", 2 * 4 * 8 * 8);
  crec_fft inv = CREC_FFT_INIT;
  inv.type = CREC_FFT_REAL_INVERSE;
  inv.precision = CREC_ELEMENT_F64;
  inv.rank = 2, inv.length[0] = 4, inv.length[1] = 8, inv.batch = 2;
  inv.input = crec_range_of(big, 0, 2 * 4 * 5 * 16); /* 2 x 4 x (8/2 + 1) complex f64 */
  inv.output = crec_range_whole(back);
  inv.scale = 1.0 / 32;
  inv.workspace_bytes = 1000;
  EXPECT_OK(crec_program_add_fft(prog, body, "irfft", &inv, &c));
  EXPECT_OK(crec_program_find_buffer(prog, "irfft.workspace", &ws));
  EXPECT_OK(crec_buffer_get_info(prog, ws, &bi));
  cr_assert_eq(bi.size, 1024 + 2 * 4 * 5 * 16, "1000 bytes rounded up to 256, then the input's copy: %llu",
               (unsigned long long)bi.size);
  EXPECT_DUMP_HAS(prog, CREC_DUMP_TEXT,
                  "fft 'spectrum' f32 rfft 10 batch 3: spec[0..144) <- sig[0..120); workspace spectrum.workspace",
                  "fft 'irfft' f64 irfft 4x8 batch 2: back[0..512) <- big[0..640), scaled by 0.03125; workspace "
                  "irfft.workspace");
  EXPECT_DUMP_HAS(prog, CREC_DUMP_JSON, "\"kind\":\"fft\"",
                  "\"fft\":{\"type\":\"irfft\",\"precision\":\"f64\",\"length\":[4,8],\"batch\":2,\"scale\":0.03125,"
                  "\"workspace_bytes\":1000}");
  EXPECT_DUMP_HAS(prog, CREC_DUMP_DOT, "\\nf32 rfft 10 batch 3\"");
  cr_assert_str_eq(crec_fft_type_name(CREC_FFT_INVERSE), "ifft");
  cr_assert_str_eq(crec_fft_type_name((crec_fft_type)7), "?");
}

Test(library, fft_orders_after_what_writes_its_input_and_before_what_reads_its_output) {
  crec_buffer in = arg("sig", 120), out = arg("spec", 144);
  crec_command w = LAUNCH("write", W(in, 0, 120));
  crec_fft f = rfft_of(in, out);
  crec_command c;
  EXPECT_OK(crec_program_add_fft(prog, body, "fft", &f, &c));
  crec_command r = LAUNCH("read", R(out, 0, 144));
  crec_command other = LAUNCH("other", R(in, 0, 120));
  crec_plan *plan = plan_with(CREC_SCHEDULE_CONCURRENT);
  crec_test_expect_deps(plan, c, 1, (crec_command[]){w}, "fft");
  crec_test_expect_deps(plan, r, 1, (crec_command[]){c}, "read");
  /* the FFT only reads its input: another reader runs beside it */
  crec_test_expect_deps(plan, other, 1, (crec_command[]){w}, "other");
  crec_plan_destroy(plan);
}

Test(library, fft_validation) {
  crec_buffer in = arg("sig", 4096), out = arg("spec", 4096);
  crec_fft f = rfft_of(in, out), g;
  crec_command c;
  g = f, g.precision = CREC_ELEMENT_F16;
  EXPECT_REFUSED(prog, crec_program_add_fft(prog, body, "x", &g, &c), CREC_ERR_UNSUPPORTED, "precision f16");
  g = f, g.type = (crec_fft_type)4;
  EXPECT_REFUSED(prog, crec_program_add_fft(prog, body, "x", &g, &c), CREC_ERR_INVALID_ARGUMENT, "unknown type 4");
  g = f, g.rank = 0;
  EXPECT_REFUSED(prog, crec_program_add_fft(prog, body, "x", &g, &c), CREC_ERR_INVALID_ARGUMENT, "1 to 3 dimensions");
  g = f, g.rank = 4;
  EXPECT_REFUSED(prog, crec_program_add_fft(prog, body, "x", &g, &c), CREC_ERR_INVALID_ARGUMENT, "rank 4");
  g = f, g.rank = 2;
  EXPECT_REFUSED(prog, crec_program_add_fft(prog, body, "x", &g, &c), CREC_ERR_INVALID_ARGUMENT, "length[1] is 0");
  g = f, g.batch = 0;
  EXPECT_REFUSED(prog, crec_program_add_fft(prog, body, "x", &g, &c), CREC_ERR_INVALID_ARGUMENT, "'fft.batch' is 0");
  g = f, g.scale = NAN;
  EXPECT_REFUSED(prog, crec_program_add_fft(prog, body, "x", &g, &c), CREC_ERR_INVALID_ARGUMENT, "not finite");
  g = f, g.length[0] = (uint64_t)1 << 41;
  EXPECT_REFUSED(prog, crec_program_add_fft(prog, body, "x", &g, &c), CREC_ERR_TOO_LARGE, "2^40");
  /* sizes follow the shape: 3 x 10 reals in, 3 x 6 complex out */
  g = f, g.input = crec_range_of(in, 0, 124);
  EXPECT_REFUSED(prog, crec_program_add_fft(prog, body, "x", &g, &c), CREC_ERR_INVALID_ARGUMENT,
                 "shape mismatch: argument 'input' (buffer 'sig') is 124 bytes, but the transforms' real side is 120");
  g = f, g.output = crec_range_of(out, 0, 240);
  EXPECT_REFUSED(prog, crec_program_add_fft(prog, body, "x", &g, &c), CREC_ERR_INVALID_ARGUMENT,
                 "complex side is 144 bytes");
  g = f, g.output = crec_range_of(out, 4, 144);
  EXPECT_REFUSED(prog, crec_program_add_fft(prog, body, "x", &g, &c), CREC_ERR_MISALIGNED, "8-byte complex element");
  /* in place: complex transforms only; overlapping ranges that are not the same: never */
  g = f, g.output = crec_range_of(in, 0, 144);
  EXPECT_REFUSED(prog, crec_program_add_fft(prog, body, "x", &g, &c), CREC_ERR_INVALID_ARGUMENT, "overlap");
  crec_fft cc = CREC_FFT_INIT;
  cc.length[0] = 16;
  cc.input = cc.output = crec_range_of(in, 0, 128);
  EXPECT_OK(crec_program_add_fft(prog, body, "in place", &cc, &c));
  crec_fft rr = rfft_of(in, out);
  rr.length[0] = 16, rr.batch = 1;
  rr.input = crec_range_of(in, 0, 64), rr.output = crec_range_of(in, 0, 72);
  EXPECT_REFUSED(prog, crec_program_add_fft(prog, body, "x", &rr, &c), CREC_ERR_INVALID_ARGUMENT, "overlap");
  /* device memory only, a writable output, static sizes */
  crec_argument_options ho = CREC_ARGUMENT_OPTIONS_INIT;
  ho.memory = CREC_MEMORY_HOST;
  crec_buffer h;
  EXPECT_OK(crec_program_add_argument(prog, "h", 4096, &ho, &h));
  g = f, g.input = crec_range_of(h, 0, 120);
  EXPECT_REFUSED(prog, crec_program_add_fft(prog, body, "x", &g, &c), CREC_ERR_INVALID_ARGUMENT, "host memory");
  static const float zeros[64];
  crec_buffer k;
  EXPECT_OK(crec_program_add_constant(prog, "k", zeros, sizeof zeros, &k));
  g = f, g.output = crec_range_of(k, 0, 144);
  EXPECT_REFUSED(prog, crec_program_add_fft(prog, body, "x", &g, &c), CREC_ERR_INVALID_ARGUMENT, "constant");
  g = f, g.input = crec_range_of(k, 0, 120);
  EXPECT_OK(crec_program_add_fft(prog, body, "reads a constant", &g, &c));
  crec_argument_options dyn = CREC_ARGUMENT_OPTIONS_INIT;
  dyn.dynamic_size = 1;
  crec_buffer d;
  EXPECT_OK(crec_program_add_argument(prog, "dyn", 0, &dyn, &d));
  g = f, g.input = crec_range_whole(d);
  EXPECT_REFUSED(prog, crec_program_add_fft(prog, body, "x", &g, &c), CREC_ERR_UNSUPPORTED, "dynamic-size");
  g = f, g.workspace_bytes = ((uint64_t)1 << 40) + 1;
  EXPECT_REFUSED(prog, crec_program_add_fft(prog, body, "x", &g, &c), CREC_ERR_TOO_LARGE, "workspace");
  EXPECT_REFUSED(prog, crec_program_add_fft(prog, body, "x", NULL, &c), CREC_ERR_NULL_POINTER, "'fft'");
  g = f, g.struct_size = 8;
  EXPECT_REFUSED(prog, crec_program_add_fft(prog, body, "x", &g, &c), CREC_ERR_INVALID_ARGUMENT, "struct_size");
  /* a getter of the wrong kind */
  crec_command l = LAUNCH("l", R(in, 0, 4));
  crec_fft got = CREC_FFT_INIT;
  EXPECT_STATUS(crec_command_get_fft(prog, l, &got), CREC_ERR_INVALID_ARGUMENT);
  EXPECT_ERROR_MENTIONS("not a fft");
}

/* ------------------------------------------------------------ Cholesky ---- */

Test(library, cholesky_adds_a_command_and_its_workspace_and_reads_back) {
  crec_buffer a = arg("a", 2 * 8 * 8 * 8), info = arg("info", 64);
  crec_cholesky d = CREC_CHOLESKY_INIT;
  d.type = CREC_ELEMENT_F64;
  d.n = 8, d.batch = 2;
  d.a = crec_range_whole(a), d.info = crec_range_of(info, 0, 8);
  crec_command c;
  EXPECT_OK(crec_program_add_cholesky(prog, body, "potrf", &d, &c));
  crec_cholesky got = CREC_CHOLESKY_INIT;
  EXPECT_OK(crec_command_get_cholesky(prog, c, &got));
  cr_assert(got.type == CREC_ELEMENT_F64 && !got.upper && got.n == 8 && got.batch == 2);
  cr_assert_eq(got.workspace_bytes, 1u << 20, "the default workspace: 1 MiB for small matrices");
  crec_command_info info_of = CREC_COMMAND_INFO_INIT;
  EXPECT_OK(crec_command_get_info(prog, c, &info_of));
  crec_buffer ws;
  EXPECT_OK(crec_program_find_buffer(prog, "potrf.workspace", &ws));
  cr_assert_eq(info_of.workspace.id, ws.id);
  d.upper = 7, d.batch = 1, d.type = CREC_ELEMENT_F32, d.n = 4;
  d.a = crec_range_of(a, 0, 64), d.info = crec_range_of(info, 8, 4);
  d.workspace_bytes = 4096;
  EXPECT_OK(crec_program_add_cholesky(prog, body, NULL, &d, &c));
  EXPECT_OK(crec_command_get_cholesky(prog, c, &got));
  cr_assert_eq(got.upper, 1, "upper is kept as 0 or 1");
  EXPECT_DUMP_HAS(prog, CREC_DUMP_TEXT,
                  "cholesky 'potrf' f64 lower n=8 batch 2: a[0..1024) in place, info info[0..8); workspace "
                  "potrf.workspace",
                  "cholesky 'cholesky' f32 upper n=4: a[0..64) in place, info info[8..12); workspace "
                  "cholesky.workspace");
  EXPECT_DUMP_HAS(prog, CREC_DUMP_JSON, "\"kind\":\"cholesky\"",
                  "\"cholesky\":{\"type\":\"f32\",\"uplo\":\"upper\",\"n\":4,\"batch\":1,\"workspace_bytes\":4096}");
  EXPECT_DUMP_HAS(prog, CREC_DUMP_DOT, "\\nf64 lower n=8 batch 2\"");
  /* a later reader of the matrices waits for the factorization, which waits for their writer */
  crec_command r = LAUNCH("read", R(a, 0, 64));
  crec_plan *plan = plan_with(CREC_SCHEDULE_CONCURRENT);
  crec_test_expect_deps(plan, r, 1, (crec_command[]){c}, "read");
  crec_plan_destroy(plan);
}

Test(library, cholesky_validation) {
  crec_buffer a = arg("a", 4096), info = arg("info", 64);
  crec_cholesky d = CREC_CHOLESKY_INIT, g;
  d.n = 8, d.batch = 2;
  d.a = crec_range_of(a, 0, 512), d.info = crec_range_of(info, 0, 8);
  crec_command c;
  g = d, g.type = CREC_ELEMENT_F16;
  EXPECT_REFUSED(prog, crec_program_add_cholesky(prog, body, "x", &g, &c), CREC_ERR_UNSUPPORTED, "f16");
  g = d, g.n = 0;
  EXPECT_REFUSED(prog, crec_program_add_cholesky(prog, body, "x", &g, &c), CREC_ERR_INVALID_ARGUMENT, "'cholesky.n' is 0");
  g = d, g.batch = 0;
  EXPECT_REFUSED(prog, crec_program_add_cholesky(prog, body, "x", &g, &c), CREC_ERR_INVALID_ARGUMENT,
                 "'cholesky.batch' is 0");
  g = d, g.n = (uint64_t)1 << 31;
  EXPECT_REFUSED(prog, crec_program_add_cholesky(prog, body, "x", &g, &c), CREC_ERR_TOO_LARGE, "2^40");
  g = d, g.a = crec_range_of(a, 0, 508);
  EXPECT_REFUSED(prog, crec_program_add_cholesky(prog, body, "x", &g, &c), CREC_ERR_INVALID_ARGUMENT,
                 "shape mismatch: argument 'a' (buffer 'a') is 508 bytes, but 2 matrices of 8x8 f32 are 512 bytes");
  g = d, g.info = crec_range_of(info, 0, 4);
  EXPECT_REFUSED(prog, crec_program_add_cholesky(prog, body, "x", &g, &c), CREC_ERR_INVALID_ARGUMENT, "2 i32 are 8 bytes");
  g = d, g.info = crec_range_of(info, 2, 8);
  EXPECT_REFUSED(prog, crec_program_add_cholesky(prog, body, "x", &g, &c), CREC_ERR_MISALIGNED, "multiple of the 4-byte i32");
  g = d, g.info = crec_range_of(a, 504, 8);
  EXPECT_REFUSED(prog, crec_program_add_cholesky(prog, body, "x", &g, &c), CREC_ERR_INVALID_ARGUMENT, "overlap");
  static const float zeros[128];
  crec_buffer k;
  EXPECT_OK(crec_program_add_constant(prog, "k", zeros, sizeof zeros, &k));
  g = d, g.a = crec_range_of(k, 0, 512);
  EXPECT_REFUSED(prog, crec_program_add_cholesky(prog, body, "x", &g, &c), CREC_ERR_INVALID_ARGUMENT, "constant");
  crec_argument_options ho = CREC_ARGUMENT_OPTIONS_INIT;
  ho.memory = CREC_MEMORY_HOST;
  crec_buffer h;
  EXPECT_OK(crec_program_add_argument(prog, "h", 64, &ho, &h));
  g = d, g.info = crec_range_of(h, 0, 8);
  EXPECT_REFUSED(prog, crec_program_add_cholesky(prog, body, "x", &g, &c), CREC_ERR_INVALID_ARGUMENT, "host memory");
  crec_argument_options dyn = CREC_ARGUMENT_OPTIONS_INIT;
  dyn.dynamic_size = 1;
  crec_buffer x;
  EXPECT_OK(crec_program_add_argument(prog, "dyn", 0, &dyn, &x));
  g = d, g.a = crec_range_whole(x);
  EXPECT_REFUSED(prog, crec_program_add_cholesky(prog, body, "x", &g, &c), CREC_ERR_UNSUPPORTED, "dynamic-size");
  g = d, g.workspace_bytes = ((uint64_t)1 << 40) + 1;
  EXPECT_REFUSED(prog, crec_program_add_cholesky(prog, body, "x", &g, &c), CREC_ERR_TOO_LARGE, "workspace");
  EXPECT_REFUSED(prog, crec_program_add_cholesky(prog, body, "x", NULL, &c), CREC_ERR_NULL_POINTER, "'cholesky'");
}

/* --------------------------------------------------------- convolution ---- */

/* A forward f32 NCHW convolution of a 2 x 3 x 9 x 8 input by 4 filters of 3 x 3,
 * stride 2, padding 1: a 2 x 4 x 5 x 4 output. */
static crec_conv conv_of(crec_buffer x, crec_buffer w, crec_buffer y) {
  crec_conv d = CREC_CONV_INIT;
  d.batch = 2, d.in_channels = 3, d.out_channels = 4;
  d.in_size[0] = 9, d.in_size[1] = 8;
  d.filter_size[0] = d.filter_size[1] = 3;
  d.stride[0] = d.stride[1] = 2;
  d.padding[0] = d.padding[1] = 1;
  d.input = crec_range_of(x, 0, 2 * 3 * 9 * 8 * 4);
  d.filter = crec_range_of(w, 0, 4 * 3 * 3 * 3 * 4);
  d.output = crec_range_of(y, 0, 2 * 4 * 5 * 4 * 4);
  return d;
}

Test(library, conv_adds_a_command_and_its_workspace_and_reads_back) {
  crec_buffer x = arg("x", 4096), w = arg("w", 4096), y = arg("y", 4096), b = arg("b", 64);
  crec_conv d = conv_of(x, w, y);
  uint64_t out[3];
  cr_assert(crec_conv_output_size(&d, out));
  cr_assert(out[0] == 5 && out[1] == 4 && out[2] == 0, "%llu x %llu", (unsigned long long)out[0],
            (unsigned long long)out[1]);
  d.bias = crec_range_of(b, 0, 16);
  d.activation = CREC_CONV_ACTIVATION_RELU;
  crec_command c;
  EXPECT_OK(crec_program_add_conv(prog, body, "conv1", &d, &c));
  crec_conv got = CREC_CONV_INIT;
  EXPECT_OK(crec_command_get_conv(prog, c, &got));
  cr_assert(got.groups == 1 && got.dilation[0] == 1 && got.dilation[1] == 1 && got.stride[2] == 0 &&
            got.workspace_bytes == CREC_CONV_DEFAULT_WORKSPACE);
  crec_command_info info = CREC_COMMAND_INFO_INIT;
  EXPECT_OK(crec_command_get_info(prog, c, &info));
  crec_buffer ws;
  EXPECT_OK(crec_program_find_buffer(prog, "conv1.workspace", &ws));
  cr_assert_eq(info.workspace.id, ws.id);
  /* a grouped NHWC backward-filter pass, searched: it writes the filter */
  crec_conv g = CREC_CONV_INIT;
  g.kind = CREC_CONV_BACKWARD_FILTER, g.layout = CREC_CONV_NHWC, g.type = CREC_ELEMENT_F16, g.algorithm = CREC_CONV_SEARCH;
  g.batch = 1, g.in_channels = 4, g.out_channels = 6, g.groups = 2;
  g.in_size[0] = g.in_size[1] = 6, g.filter_size[0] = g.filter_size[1] = 3, g.dilation[0] = g.dilation[1] = 2;
  g.input = crec_range_of(x, 0, 4 * 36 * 2), g.filter = crec_range_of(w, 0, 6 * 2 * 9 * 2);
  g.output = crec_range_of(y, 0, 6 * 4 * 2); /* (6 - 5) / 1 + 1 = 2: 2 x 2 x 6 */
  g.workspace_bytes = 1 << 20;
  EXPECT_OK(crec_program_add_conv(prog, body, "dw", &g, &c));
  EXPECT_DUMP_HAS(prog, CREC_DUMP_TEXT,
                  "conv 'conv1' f32 forward nchw 3x3 stride 2x2 pad 1x1, N=2 C=3 K=4: x x[0..1728), w w[0..432), y "
                  "y[0..640), bias b[0..16), relu; algorithm by heuristics; workspace conv1.workspace",
                  "conv 'dw' f16 backward_filter nhwc 3x3 dilation 2x2 groups 2, N=1 C=4 K=6:");
  EXPECT_DUMP_HAS(prog, CREC_DUMP_JSON, "\"kind\":\"conv\"",
                  "\"conv\":{\"kind\":\"forward\",\"type\":\"f32\",\"layout\":\"nchw\",\"batch\":2,\"in_channels\":3,"
                  "\"out_channels\":4,\"groups\":1,\"in_size\":[9,8],\"filter_size\":[3,3],\"out_size\":[5,4],"
                  "\"stride\":[2,2],\"padding\":[1,1],\"dilation\":[1,1],\"filter_layout\":\"k_first\",\"bias\":true,"
                  "\"activation\":\"relu\","
                  "\"algorithm\":\"heuristics\",\"workspace_bytes\":33554432}");
  EXPECT_DUMP_HAS(prog, CREC_DUMP_DOT, "\\nf32 forward nchw 3x3 stride 2x2 pad 1x1\"");
  /* the backward-filter pass writes w after the forward pass read it */
  crec_plan *plan = plan_with(CREC_SCHEDULE_CONCURRENT);
  crec_command first = crec_program_command(prog, crec_program_command_count(prog) - 2);
  crec_test_expect_deps(plan, c, 1, (crec_command[]){first}, "dw");
  crec_plan_destroy(plan);
  cr_assert_str_eq(crec_conv_kind_name(CREC_CONV_BACKWARD_DATA), "backward_data");
  cr_assert_str_eq(crec_conv_kind_name((crec_conv_kind)5), "?");
}

Test(library, conv_validation) {
  crec_buffer x = arg("x", 4096), w = arg("w", 4096), y = arg("y", 4096), b = arg("b", 64);
  crec_conv d = conv_of(x, w, y), g;
  crec_command c;
  g = d, g.type = CREC_ELEMENT_F64;
  EXPECT_REFUSED(prog, crec_program_add_conv(prog, body, "x", &g, &c), CREC_ERR_UNSUPPORTED, "f64");
  g = d, g.kind = (crec_conv_kind)3;
  EXPECT_REFUSED(prog, crec_program_add_conv(prog, body, "x", &g, &c), CREC_ERR_INVALID_ARGUMENT, "unknown kind 3");
  g = d, g.filter_layout = (crec_conv_filter_layout)2;
  EXPECT_REFUSED(prog, crec_program_add_conv(prog, body, "x", &g, &c), CREC_ERR_INVALID_ARGUMENT, "unknown filter layout");
  g = d, g.filter_layout = CREC_CONV_FILTER_HWIO, g.workspace_bytes = 1000;
  EXPECT_OK(crec_program_add_conv(prog, body, "hwio", &g, &c));
  crec_buffer hws;
  EXPECT_OK(crec_program_find_buffer(prog, "hwio.workspace", &hws));
  crec_buffer_info hi;
  EXPECT_OK(crec_buffer_get_info(prog, hws, &hi));
  cr_assert_eq(hi.size, 1024 + 432, "cuDNN's 1000 bytes rounded up to 256, then the filter's copy: %llu",
               (unsigned long long)hi.size);
  EXPECT_DUMP_HAS(prog, CREC_DUMP_TEXT, "conv 'hwio' f32 forward nchw (hwio filter) 3x3");
  g = d, g.layout = (crec_conv_layout)2;
  EXPECT_REFUSED(prog, crec_program_add_conv(prog, body, "x", &g, &c), CREC_ERR_INVALID_ARGUMENT, "unknown layout");
  g = d, g.spatial = 1;
  EXPECT_REFUSED(prog, crec_program_add_conv(prog, body, "x", &g, &c), CREC_ERR_INVALID_ARGUMENT, "2 or 3 spatial");
  g = d, g.batch = 0;
  EXPECT_REFUSED(prog, crec_program_add_conv(prog, body, "x", &g, &c), CREC_ERR_INVALID_ARGUMENT, "at least 1");
  g = d, g.groups = 2;
  EXPECT_REFUSED(prog, crec_program_add_conv(prog, body, "x", &g, &c), CREC_ERR_INVALID_ARGUMENT, "multiples of groups 2");
  g = d, g.filter_size[0] = 12;
  EXPECT_REFUSED(prog, crec_program_add_conv(prog, body, "x", &g, &c), CREC_ERR_INVALID_ARGUMENT, "the output is empty");
  g = d, g.output = crec_range_of(y, 0, 636);
  EXPECT_REFUSED(prog, crec_program_add_conv(prog, body, "x", &g, &c), CREC_ERR_INVALID_ARGUMENT,
                 "shape mismatch: argument 'output' (buffer 'y') is 636 bytes, but its 160 f32 elements are 640 bytes");
  g = d, g.input = crec_range_of(x, 2, 1728);
  EXPECT_REFUSED(prog, crec_program_add_conv(prog, body, "x", &g, &c), CREC_ERR_MISALIGNED, "4-byte element");
  g = d, g.bias = crec_range_of(b, 0, 12);
  EXPECT_REFUSED(prog, crec_program_add_conv(prog, body, "x", &g, &c), CREC_ERR_INVALID_ARGUMENT, "one per output channel");
  g = d, g.kind = CREC_CONV_BACKWARD_DATA, g.activation = CREC_CONV_ACTIVATION_RELU;
  EXPECT_REFUSED(prog, crec_program_add_conv(prog, body, "x", &g, &c), CREC_ERR_INVALID_ARGUMENT,
                 "belongs to a forward convolution, not a backward_data one");
  g = d, g.output = crec_range_of(x, 1728, 640);
  EXPECT_OK(crec_program_add_conv(prog, body, "beside its input", &g, &c));
  g = d, g.output = crec_range_of(x, 1088, 640);
  EXPECT_REFUSED(prog, crec_program_add_conv(prog, body, "x", &g, &c), CREC_ERR_INVALID_ARGUMENT,
                 "'output' (written) and 'input' overlap");
  static const float zeros[512];
  crec_buffer k;
  EXPECT_OK(crec_program_add_constant(prog, "k", zeros, sizeof zeros, &k));
  g = d, g.filter = crec_range_of(k, 0, 432);
  EXPECT_OK(crec_program_add_conv(prog, body, "constant filter", &g, &c));
  g.kind = CREC_CONV_BACKWARD_FILTER;
  EXPECT_REFUSED(prog, crec_program_add_conv(prog, body, "x", &g, &c), CREC_ERR_INVALID_ARGUMENT, "constant");
  crec_argument_options dyn = CREC_ARGUMENT_OPTIONS_INIT;
  dyn.dynamic_size = 1;
  crec_buffer dx;
  EXPECT_OK(crec_program_add_argument(prog, "dyn", 0, &dyn, &dx));
  g = d, g.input = crec_range_whole(dx);
  EXPECT_REFUSED(prog, crec_program_add_conv(prog, body, "x", &g, &c), CREC_ERR_UNSUPPORTED, "dynamic-size");
  g = d, g.in_size[0] = (uint64_t)1 << 31;
  EXPECT_REFUSED(prog, crec_program_add_conv(prog, body, "x", &g, &c), CREC_ERR_TOO_LARGE, "2^31-1");
  g = d, g.in_size[0] = 1, g.filter_size[0] = 1, g.padding[0] = (uint64_t)1 << 30, g.stride[0] = 1;
  EXPECT_REFUSED(prog, crec_program_add_conv(prog, body, "x", &g, &c), CREC_ERR_TOO_LARGE, "output size");
  EXPECT_REFUSED(prog, crec_program_add_conv(prog, body, "x", NULL, &c), CREC_ERR_NULL_POINTER, "'conv'");
}

Test(library, gemm_refused_for_lack_of_memory_adds_nothing) {
  gemm_fix f = gemm_setup("x", 8, 8, 8);
  crec_command c;
  for (uint64_t n = 1;; n++) {
    crec_test_counts before = crec_test_counts_of(prog);
    crec_debug_fail_after(CREC_FAULT_ALLOC, n);
    crec_status s = crec_program_add_gemm(prog, body, "fc", &f.g, &c);
    crec_debug_fail_after(CREC_FAULT_ALLOC, 0);
    if (s == CREC_OK) break;
    cr_assert_eq(s, CREC_ERR_OUT_OF_MEMORY, "allocation %llu: %s", (unsigned long long)n, crec_last_error());
    crec_test_expect_counts(prog, &before, "crec_program_add_gemm under a failed allocation");
    cr_assert_lt(n, 100);
  }
  crec_command_info ci = CREC_COMMAND_INFO_INIT;
  EXPECT_OK(crec_command_get_info(prog, c, &ci));
  crec_buffer_info bi;
  EXPECT_OK(crec_buffer_get_info(prog, ci.workspace, &bi));
  cr_assert_str_eq(bi.name, "fc.workspace", "a refused attempt left a workspace behind");
}

Test(library, gemm_access_sets_and_workspaces) {
  gemm_fix f = gemm_setup("x", 16, 16, 16);
  crec_buffer other = arg("other", 64);
  crec_command wa = LAUNCH("write a", W(f.a, 0, 64));
  crec_command g1;
  EXPECT_OK(crec_program_add_gemm(prog, body, "g1", &f.g, &g1));
  crec_command rd = LAUNCH("read d", R(f.d, 0, 64));
  crec_command indep = LAUNCH("independent", W(other, 0, 64));
  /* a second GEMM on other buffers: its workspace shares the first's arena bytes */
  gemm_fix f2 = gemm_setup("y", 16, 16, 16);
  crec_command g2;
  EXPECT_OK(crec_program_add_gemm(prog, body, "g2", &f2.g, &g2));
  crec_plan *plan = plan_with(CREC_SCHEDULE_CONCURRENT);
  EXPECT_DEPS(plan, g1, wa);
  EXPECT_DEPS(plan, rd, g1);
  EXPECT_NO_DEPS(plan, indep);
  EXPECT_DEPS(plan, g2, g1);
  crec_command_info i1 = CREC_COMMAND_INFO_INIT, i2 = CREC_COMMAND_INFO_INIT;
  EXPECT_OK(crec_command_get_info(prog, g1, &i1));
  EXPECT_OK(crec_command_get_info(prog, g2, &i2));
  uint64_t o1, o2;
  EXPECT_OK(crec_plan_get_temporary(plan, i1.workspace, &o1));
  EXPECT_OK(crec_plan_get_temporary(plan, i2.workspace, &o2));
  cr_assert_eq(o1, o2, "workspaces never live together share the arena");
  cr_assert_eq(crec_plan_arena_bytes(plan), CREC_GEMM_DEFAULT_WORKSPACE);
  crec_plan_destroy(plan);
}

/* --------------------------------------------------------- collectives ---- */

static crec_comm_slot comm(const char *name, int size) {
  crec_comm_slot c;
  EXPECT_OK(crec_program_add_communicator(prog, name, size, &c));
  return c;
}

static crec_collective coll(crec_collective_kind kind, crec_comm_slot cm, crec_range send, crec_range recv) {
  crec_collective d = CREC_COLLECTIVE_INIT;
  d.kind = kind;
  d.communicator = cm;
  d.send = send;
  d.recv = recv;
  return d;
}

Test(library, communicators) {
  crec_comm_slot a = comm("world", 4), b = comm("pair", 2), c;
  cr_assert_neq(a.id, b.id);
  EXPECT_STATUS(crec_program_add_communicator(prog, "world", 2, &c), CREC_ERR_DUPLICATE_NAME);
  cr_assert_eq(c.id, 0);
  EXPECT_STATUS(crec_program_add_communicator(prog, "x", 0, &c), CREC_ERR_INVALID_ARGUMENT);
  EXPECT_STATUS(crec_program_add_communicator(prog, "x", 65537, &c), CREC_ERR_INVALID_ARGUMENT);
  EXPECT_STATUS(crec_program_add_communicator(prog, "", 2, &c), CREC_ERR_INVALID_ARGUMENT);
  EXPECT_STATUS(crec_program_add_communicator(prog, NULL, 2, &c), CREC_ERR_NULL_POINTER);
  EXPECT_STATUS(crec_program_add_communicator(NULL, "x", 2, &c), CREC_ERR_NULL_POINTER);
  cr_assert_eq(crec_program_communicator_count(prog), 2);
  cr_assert_eq(crec_program_communicator_count(NULL), 0);
  const char *name;
  int size;
  EXPECT_OK(crec_program_get_communicator(prog, 1, &name, &size));
  cr_assert_str_eq(name, "pair");
  cr_assert_eq(size, 2);
  EXPECT_STATUS(crec_program_get_communicator(prog, 2, &name, &size), CREC_ERR_OUT_OF_RANGE);
  cr_assert_null(name);
}

Test(library, collective_shapes) {
  crec_comm_slot w = comm("world", 4);
  crec_buffer s = arg("s", 1024), r = arg("r", 4096);
  crec_command c;
  crec_collective d;
  /* all_reduce: equal sizes; in place allowed */
  d = coll(CREC_COLLECTIVE_ALL_REDUCE, w, crec_range_of(s, 0, 256), crec_range_of(r, 0, 256));
  EXPECT_OK(crec_program_add_collective(prog, body, "ar", &d, &c));
  d.recv = crec_range_of(r, 0, 512);
  EXPECT_REFUSED(prog, crec_program_add_collective(prog, body, "ar", &d, &c), CREC_ERR_INVALID_ARGUMENT,
                 "all_reduce 'ar': shape mismatch: send holds 64 and recv 128 f32 elements");
  d.recv = d.send;
  EXPECT_OK(crec_program_add_collective(prog, body, "ar in place", &d, &c));
  /* all_gather: recv is 4x send */
  d = coll(CREC_COLLECTIVE_ALL_GATHER, w, crec_range_of(s, 0, 256), crec_range_of(r, 0, 1024));
  EXPECT_OK(crec_program_add_collective(prog, body, NULL, &d, &c));
  crec_command_info ci = CREC_COMMAND_INFO_INIT;
  EXPECT_OK(crec_command_get_info(prog, c, &ci));
  cr_assert_str_eq(ci.name, "all_gather");
  d.recv = crec_range_of(r, 0, 1020);
  EXPECT_REFUSED(prog, crec_program_add_collective(prog, body, NULL, &d, &c), CREC_ERR_INVALID_ARGUMENT, "shape mismatch");
  /* reduce_scatter: send is 4x recv */
  d = coll(CREC_COLLECTIVE_REDUCE_SCATTER, w, crec_range_of(s, 0, 1024), crec_range_of(r, 0, 256));
  d.reduction = CREC_REDUCTION_MAX;
  EXPECT_OK(crec_program_add_collective(prog, body, NULL, &d, &c));
  d.recv = crec_range_of(r, 0, 1024);
  EXPECT_REFUSED(prog, crec_program_add_collective(prog, body, NULL, &d, &c), CREC_ERR_INVALID_ARGUMENT, "shape mismatch");
  /* all_to_all: equal sizes, whole blocks */
  d = coll(CREC_COLLECTIVE_ALL_TO_ALL, w, crec_range_of(s, 0, 1024), crec_range_of(r, 0, 1024));
  EXPECT_OK(crec_program_add_collective(prog, body, NULL, &d, &c));
  d = coll(CREC_COLLECTIVE_ALL_TO_ALL, w, crec_range_of(s, 0, 1012), crec_range_of(r, 0, 1012));
  EXPECT_REFUSED(prog, crec_program_add_collective(prog, body, NULL, &d, &c), CREC_ERR_INVALID_ARGUMENT, "shape mismatch");
  /* element sizes */
  d = coll(CREC_COLLECTIVE_ALL_REDUCE, w, crec_range_of(s, 2, 256), crec_range_of(r, 0, 256));
  EXPECT_REFUSED(prog, crec_program_add_collective(prog, body, NULL, &d, &c), CREC_ERR_MISALIGNED, "offset 2");
  d = coll(CREC_COLLECTIVE_ALL_REDUCE, w, crec_range_of(s, 0, 254), crec_range_of(r, 0, 254));
  EXPECT_REFUSED(prog, crec_program_add_collective(prog, body, NULL, &d, &c), CREC_ERR_INVALID_ARGUMENT, "whole");
  /* reductions need typed elements NCCL reduces */
  d = coll(CREC_COLLECTIVE_ALL_REDUCE, w, crec_range_of(s, 0, 256), crec_range_of(r, 0, 256));
  d.type = CREC_ELEMENT_BYTES;
  EXPECT_REFUSED(prog, crec_program_add_collective(prog, body, NULL, &d, &c), CREC_ERR_INVALID_ARGUMENT, "bytes");
  d.type = CREC_ELEMENT_I16;
  EXPECT_REFUSED(prog, crec_program_add_collective(prog, body, NULL, &d, &c), CREC_ERR_UNSUPPORTED, "16-bit");
  d.type = CREC_ELEMENT_F32;
  d.reduction = (crec_reduction)7;
  EXPECT_REFUSED(prog, crec_program_add_collective(prog, body, NULL, &d, &c), CREC_ERR_INVALID_ARGUMENT, "reduction");
  /* bytes move fine */
  d = coll(CREC_COLLECTIVE_ALL_GATHER, w, crec_range_of(s, 0, 3), crec_range_of(r, 0, 12));
  d.type = CREC_ELEMENT_BYTES;
  EXPECT_OK(crec_program_add_collective(prog, body, NULL, &d, &c));
  /* overlaps other than an exact in-place all_reduce */
  d = coll(CREC_COLLECTIVE_ALL_GATHER, w, crec_range_of(r, 0, 256), crec_range_of(r, 0, 1024));
  EXPECT_REFUSED(prog, crec_program_add_collective(prog, body, NULL, &d, &c), CREC_ERR_INVALID_ARGUMENT, "overlap");
  d = coll(CREC_COLLECTIVE_ALL_REDUCE, w, crec_range_of(r, 0, 256), crec_range_of(r, 128, 256));
  EXPECT_REFUSED(prog, crec_program_add_collective(prog, body, NULL, &d, &c), CREC_ERR_INVALID_ARGUMENT, "overlap");
  /* handles, kinds, struct size, constants */
  d = coll(CREC_COLLECTIVE_ALL_REDUCE, (crec_comm_slot){CREC_TEST_GARBAGE_ID}, crec_range_of(s, 0, 256),
           crec_range_of(r, 0, 256));
  EXPECT_REFUSED(prog, crec_program_add_collective(prog, body, NULL, &d, &c), CREC_ERR_INVALID_HANDLE, "communicator");
  d = coll((crec_collective_kind)9, w, crec_range_of(s, 0, 256), crec_range_of(r, 0, 256));
  EXPECT_REFUSED(prog, crec_program_add_collective(prog, body, NULL, &d, &c), CREC_ERR_INVALID_ARGUMENT, "kind");
  d = coll(CREC_COLLECTIVE_ALL_REDUCE, w, crec_range_of(s, 0, 256), crec_range_of(r, 0, 256));
  d.struct_size = 4;
  EXPECT_REFUSED(prog, crec_program_add_collective(prog, body, NULL, &d, &c), CREC_ERR_INVALID_ARGUMENT,
                 "CREC_COLLECTIVE_INIT");
  float k[64] = {0};
  crec_buffer kb;
  EXPECT_OK(crec_program_add_constant(prog, "k", k, sizeof k, &kb));
  d = coll(CREC_COLLECTIVE_ALL_REDUCE, w, crec_range_whole(kb), crec_range_of(r, 0, 256));
  EXPECT_OK(crec_program_add_collective(prog, body, "from a constant", &d, &c));
  d = coll(CREC_COLLECTIVE_ALL_REDUCE, w, crec_range_of(r, 0, 256), crec_range_whole(kb));
  EXPECT_REFUSED(prog, crec_program_add_collective(prog, body, NULL, &d, &c), CREC_ERR_INVALID_ARGUMENT, "constant");
}

Test(library, collective_groups_and_pairs) {
  crec_comm_slot w = comm("world", 4);
  crec_buffer s = arg("s", 1024), r = arg("r", 4096);
  crec_command c;
  crec_collective d = coll(CREC_COLLECTIVE_ALL_REDUCE, w, crec_range_of(s, 0, 256), crec_range_of(r, 0, 256));
  /* single-rank groups: degenerate, a copy */
  const int32_t singles[4] = {2, 0, 3, 1};
  d.groups = singles, d.num_groups = 4, d.group_size = 1;
  EXPECT_OK(crec_program_add_collective(prog, body, "single", &d, &c));
  crec_collective got = CREC_COLLECTIVE_INIT;
  crec_command start;
  EXPECT_OK(crec_command_get_collective(prog, c, &got, &start));
  cr_assert_eq(start.id, 0);
  cr_assert_eq(got.num_groups, 4);
  cr_assert_neq(got.groups, singles, "the groups are copied");
  cr_assert_eq(got.groups[0], 2);
  /* one group of all ranks: any order for all_reduce, rank order for the others */
  const int32_t all_mixed[4] = {3, 1, 2, 0}, all_sorted[4] = {0, 1, 2, 3};
  d.groups = all_mixed, d.num_groups = 1, d.group_size = 4;
  EXPECT_OK(crec_program_add_collective(prog, body, "all", &d, &c));
  crec_collective g = coll(CREC_COLLECTIVE_ALL_GATHER, w, crec_range_of(s, 0, 256), crec_range_of(r, 0, 1024));
  g.groups = all_mixed, g.num_groups = 1, g.group_size = 4;
  EXPECT_REFUSED(prog, crec_program_add_collective(prog, body, NULL, &g, &c), CREC_ERR_UNSUPPORTED, "out of order");
  g.groups = all_sorted;
  EXPECT_OK(crec_program_add_collective(prog, body, NULL, &g, &c));
  /* a group size between 1 and all ranks needs sub-communicators */
  const int32_t halves[4] = {0, 1, 2, 3};
  d.groups = halves, d.num_groups = 2, d.group_size = 2;
  EXPECT_REFUSED(prog, crec_program_add_collective(prog, body, NULL, &d, &c), CREC_ERR_UNSUPPORTED, "sub-communicators");
  /* groups that do not partition the ranks */
  const int32_t twice[4] = {0, 1, 1, 3}, outside[4] = {0, 1, 2, 4};
  d.num_groups = 4, d.group_size = 1;
  d.groups = twice;
  EXPECT_REFUSED(prog, crec_program_add_collective(prog, body, NULL, &d, &c), CREC_ERR_INVALID_ARGUMENT, "more than one group");
  d.groups = outside;
  EXPECT_REFUSED(prog, crec_program_add_collective(prog, body, NULL, &d, &c), CREC_ERR_INVALID_ARGUMENT, "rank 4");
  d.groups = singles, d.num_groups = 3;
  EXPECT_REFUSED(prog, crec_program_add_collective(prog, body, NULL, &d, &c), CREC_ERR_INVALID_ARGUMENT, "partition");
  d.num_groups = 4, d.group_size = ((size_t)1 << 62) + 1; /* 4 x (2^62 + 1) wraps to 4 in 64 bits */
  EXPECT_REFUSED(prog, crec_program_add_collective(prog, body, NULL, &d, &c), CREC_ERR_INVALID_ARGUMENT, "do not partition");
  d.group_size = 1;
  d.groups = NULL, d.num_groups = 2;
  EXPECT_REFUSED(prog, crec_program_add_collective(prog, body, NULL, &d, &c), CREC_ERR_NULL_POINTER, "groups");
  /* permute pairs */
  crec_collective p = coll(CREC_COLLECTIVE_PERMUTE, w, crec_range_of(s, 0, 256), crec_range_of(r, 0, 256));
  const int32_t ring[8] = {0, 1, 1, 2, 2, 3, 3, 0};
  p.pairs = ring, p.num_pairs = 4;
  EXPECT_OK(crec_program_add_collective(prog, body, "ring", &p, &c));
  const int32_t same_target[4] = {0, 1, 2, 1}, same_source[4] = {0, 1, 0, 2}, bad_rank[2] = {0, 9};
  p.pairs = same_target, p.num_pairs = 2;
  EXPECT_REFUSED(prog, crec_program_add_collective(prog, body, NULL, &p, &c), CREC_ERR_INVALID_ARGUMENT, "target of pairs");
  p.pairs = same_source;
  EXPECT_REFUSED(prog, crec_program_add_collective(prog, body, NULL, &p, &c), CREC_ERR_INVALID_ARGUMENT, "source of pairs");
  p.pairs = bad_rank, p.num_pairs = 1;
  EXPECT_REFUSED(prog, crec_program_add_collective(prog, body, NULL, &p, &c), CREC_ERR_INVALID_ARGUMENT, "outside");
  p.pairs = ring, p.num_pairs = 4;
  p.groups = all_sorted, p.num_groups = 1, p.group_size = 4;
  EXPECT_REFUSED(prog, crec_program_add_collective(prog, body, NULL, &p, &c), CREC_ERR_INVALID_ARGUMENT, "not groups");
  d.groups = NULL, d.num_groups = 0, d.group_size = 0;
  d.pairs = ring, d.num_pairs = 4;
  EXPECT_REFUSED(prog, crec_program_add_collective(prog, body, NULL, &d, &c), CREC_ERR_INVALID_ARGUMENT, "pairs");
  /* the text dump says which collectives skip NCCL */
  char *text = NULL;
  EXPECT_OK(crec_dump(prog, NULL, CREC_DUMP_TEXT, &text, NULL));
  cr_assert(strstr(text, "#0 collective 'single' all_reduce sum f32 over 'world' in 4 groups of 1: r[0..256) <- s[0..256) "
                         "(single-rank groups: a copy, no NCCL)"), "%s", text);
  cr_assert(strstr(text, "'ring' collective_permute f32 over 'world' pairs [0->1, 1->2, 2->3, 3->0]"), "%s", text);
  crec_free(text);
}

Test(library, replica_and_partition_ids_write_one_i32_from_the_device_assignment) {
  crec_comm_slot w = comm("world", 4);
  crec_buffer r = arg("r", 64), s = arg("s", 64);
  crec_command c;
  crec_collective d = coll(CREC_COLLECTIVE_REPLICA_ID, w, (crec_range){{0}, 0, 0}, crec_range_of(r, 0, 4));
  d.type = CREC_ELEMENT_I32;
  crec_command rc;
  EXPECT_OK(crec_program_add_collective(prog, body, NULL, &d, &rc));
  /* 2 replicas of 2 partitions, in any order */
  const int32_t assignment[4] = {3, 1, 0, 2};
  crec_collective p = coll(CREC_COLLECTIVE_PARTITION_ID, w, (crec_range){{0}, 0, 0}, crec_range_of(r, 4, 4));
  p.type = CREC_ELEMENT_I32;
  p.groups = assignment, p.num_groups = 2, p.group_size = 2;
  crec_command pc;
  EXPECT_OK(crec_program_add_collective(prog, body, "where", &p, &pc));
  crec_collective got = CREC_COLLECTIVE_INIT;
  EXPECT_OK(crec_command_get_collective(prog, pc, &got, NULL));
  cr_assert_eq(got.kind, CREC_COLLECTIVE_PARTITION_ID);
  cr_assert(got.num_groups == 2 && got.group_size == 2 && got.groups[0] == 3);
  /* what each refuses, named */
  crec_collective bad = d;
  bad.type = CREC_ELEMENT_F32;
  EXPECT_REFUSED(prog, crec_program_add_collective(prog, body, NULL, &bad, &c), CREC_ERR_INVALID_ARGUMENT,
                 "writes one i32");
  bad = d;
  bad.send = crec_range_of(s, 0, 4);
  EXPECT_REFUSED(prog, crec_program_add_collective(prog, body, NULL, &bad, &c), CREC_ERR_INVALID_ARGUMENT,
                 "reads nothing");
  bad = d;
  bad.recv = crec_range_of(r, 0, 8);
  EXPECT_REFUSED(prog, crec_program_add_collective(prog, body, NULL, &bad, &c), CREC_ERR_INVALID_ARGUMENT, "one i32");
  bad = d;
  bad.async = 1;
  EXPECT_REFUSED(prog, crec_program_add_collective(prog, body, NULL, &bad, &c), CREC_ERR_INVALID_ARGUMENT, "async");
  bad = p;
  bad.num_groups = 1;
  EXPECT_REFUSED(prog, crec_program_add_collective(prog, body, NULL, &bad, &c), CREC_ERR_INVALID_ARGUMENT,
                 "do not cover communicator 'world' of 4 ranks");
  bad = p; /* 4 x (2^62 + 1) wraps to 4 in 64 bits */
  bad.num_groups = 4, bad.group_size = ((size_t)1 << 62) + 1;
  EXPECT_REFUSED(prog, crec_program_add_collective(prog, body, NULL, &bad, &c), CREC_ERR_INVALID_ARGUMENT,
                 "do not cover communicator");
  const int32_t twice[4] = {0, 1, 1, 3};
  bad = p;
  bad.groups = twice;
  EXPECT_REFUSED(prog, crec_program_add_collective(prog, body, NULL, &bad, &c), CREC_ERR_INVALID_ARGUMENT,
                 "more than one place");
  /* the dump says where the value comes from; only the write is an access */
  char *text = NULL;
  EXPECT_OK(crec_dump(prog, NULL, CREC_DUMP_TEXT, &text, NULL));
  cr_assert(strstr(text, "collective 'replica_id' replica_id of 'world': r[0..4) = the replica of the bound "
                         "communicator's rank (a fill, no NCCL)"), "%s", text);
  cr_assert(strstr(text, "collective 'where' partition_id of 'world' in 2 replicas of 2 partitions: r[4..8) = the "
                         "partition of"), "%s", text);
  crec_free(text);
  crec_command_info info = CREC_COMMAND_INFO_INIT;
  EXPECT_OK(crec_command_get_info(prog, rc, &info));
  cr_assert_eq(info.num_operands, 1, "a replica_id only writes: %zu operands", info.num_operands);
}

Test(library, async_start_and_done) {
  crec_comm_slot w = comm("world", 2);
  crec_buffer s = arg("s", 1024), r = arg("r", 1024), x = arg("x", 64), y = arg("y", 64);
  crec_collective d = coll(CREC_COLLECTIVE_ALL_REDUCE, w, crec_range_of(s, 0, 1024), crec_range_of(r, 0, 1024));
  d.async = 1;
  crec_command before = LAUNCH("before", W(s, 0, 64));
  crec_command start, done, c;
  EXPECT_OK(crec_program_add_collective(prog, body, "ar", &d, &start));
  crec_command mid = LAUNCH("overlaps", W(x, 0, 64), R(y, 0, 64));
  crec_command clash = LAUNCH("writes send", W(s, 512, 64));
  EXPECT_OK(crec_program_add_collective_done(prog, body, NULL, start, &done));
  crec_command after = LAUNCH("reads recv", R(r, 0, 64), W(y, 0, 64));
  crec_command_info ci = CREC_COMMAND_INFO_INIT;
  EXPECT_OK(crec_command_get_info(prog, done, &ci));
  cr_assert_str_eq(ci.name, "ar.done");
  cr_assert_eq(ci.kind, CREC_COMMAND_COLLECTIVE);
  cr_assert_eq(ci.start.id, start.id);
  crec_collective got = CREC_COLLECTIVE_INIT;
  crec_command st;
  EXPECT_OK(crec_command_get_collective(prog, done, &got, &st));
  cr_assert_eq(st.id, start.id);
  cr_assert_eq(got.async, 1);
  cr_assert_eq(got.kind, CREC_COLLECTIVE_ALL_REDUCE);
  /* concurrent: the middle launch waits for nothing; the done for its start */
  crec_plan *plan = plan_with(CREC_SCHEDULE_CONCURRENT);
  EXPECT_DEPS(plan, start, before);
  EXPECT_NO_DEPS(plan, mid);
  EXPECT_DEPS(plan, clash, start);
  EXPECT_DEPS(plan, done, clash); /* the done touches the send range too; clash comes after the start */
  EXPECT_DEPS(plan, after, mid, done);
  crec_plan_destroy(plan);
  /* sequential: the start leaves the chain, so the middle launch still overlaps
   * it; a launch writing what the collective sends waits for it, as above */
  plan = plan_with(CREC_SCHEDULE_SEQUENTIAL);
  EXPECT_DEPS(plan, start, before);
  EXPECT_DEPS(plan, mid, before);
  EXPECT_DEPS(plan, clash, start, mid);
  EXPECT_DEPS(plan, done, clash);
  EXPECT_DEPS(plan, after, done);
  crec_plan_destroy(plan);
  /* a done needs an async start of its region, once */
  EXPECT_REFUSED(prog, crec_program_add_collective_done(prog, body, NULL, start, &c), CREC_ERR_INVALID_ARGUMENT,
                 "already has its done");
  EXPECT_REFUSED(prog, crec_program_add_collective_done(prog, body, NULL, mid, &c), CREC_ERR_INVALID_ARGUMENT,
                 "not an async collective start");
  EXPECT_REFUSED(prog, crec_program_add_collective_done(prog, body, NULL, done, &c), CREC_ERR_INVALID_ARGUMENT,
                 "not an async collective start");
  d.async = 0;
  crec_command sync_ar;
  EXPECT_OK(crec_program_add_collective(prog, body, "sync", &d, &sync_ar));
  EXPECT_REFUSED(prog, crec_program_add_collective_done(prog, body, NULL, sync_ar, &c), CREC_ERR_INVALID_ARGUMENT,
                 "not an async");
  d.async = 1;
  crec_command s2, w2;
  crec_region cond, loop;
  EXPECT_OK(crec_program_add_collective(prog, body, "s2", &d, &s2));
  EXPECT_OK(crec_program_add_while(prog, body, NULL, crec_range_of(x, 0, 1), &w2, &cond, &loop));
  EXPECT_REFUSED(prog, crec_program_add_collective_done(prog, loop, NULL, s2, &c), CREC_ERR_INVALID_ARGUMENT,
                 "region of its start");
  EXPECT_REFUSED(prog, crec_program_add_collective_done(prog, body, NULL, (crec_command){CREC_TEST_GARBAGE_ID}, &c),
                 CREC_ERR_INVALID_HANDLE, "start");
  /* dumps name both halves */
  char *text = NULL;
  EXPECT_OK(crec_dump(prog, NULL, CREC_DUMP_TEXT, &text, NULL));
  cr_assert(strstr(text, ", async start"), "%s", text);
  char want[64];
  snprintf(want, sizeof want, "'ar.done' done of #%zu ('ar')", crec_handle_index(start.id));
  cr_assert(strstr(text, want), "%s", text);
  crec_free(text);
}

/* ----------------------------------------------------- custom commands ---- */

Test(library, custom_keeps_operands_holes_kernels_and_attributes) {
  crec_buffer x = arg("x", 256), y = arg("y", 256);
  const crec_operand ops[3] = {crec_operand_of(crec_range_of(x, 0, 128), CREC_ACCESS_READ), crec_operand_hole(),
                               crec_operand_of(crec_range_whole(y), CREC_ACCESS_WRITE)};
  const char attrs[] = "{alpha = 2.0 : f32}";
  crec_custom cu = CREC_CUSTOM_INIT;
  cu.target = "my.op";
  cu.operands = ops;
  cu.num_operands = 3;
  cu.kernels = &kern;
  cu.num_kernels = 1;
  cu.attributes = attrs;
  cu.attributes_size = sizeof attrs;
  crec_command c;
  EXPECT_OK(crec_program_add_custom(prog, body, NULL, &cu, &c));
  crec_command_info ci = CREC_COMMAND_INFO_INIT;
  EXPECT_OK(crec_command_get_info(prog, c, &ci));
  cr_assert_str_eq(ci.name, "my.op");
  cr_assert_eq(ci.kind, CREC_COMMAND_CUSTOM);
  cr_assert_eq(ci.num_operands, 2, "holes are no accesses");
  crec_custom got = CREC_CUSTOM_INIT;
  EXPECT_OK(crec_command_get_custom(prog, c, &got));
  cr_assert_str_eq(got.target, "my.op");
  cr_assert_eq(got.num_operands, 3);
  cr_assert_eq(got.operands[1].range.buffer.id, 0);
  cr_assert_eq(got.operands[2].range.size, 256, "whole resolved");
  cr_assert_eq(got.num_kernels, 1);
  cr_assert_eq(got.kernels[0].id, kern.id);
  cr_assert_eq(got.attributes_size, sizeof attrs);
  cr_assert_str_eq(got.attributes, attrs);
  cr_assert_neq(got.attributes, (const void *)attrs);
  /* accesses order it */
  crec_command rd = LAUNCH("reads y", R(y, 0, 4));
  crec_command wx = LAUNCH("writes x", W(x, 0, 4));
  crec_plan *plan = plan_with(CREC_SCHEDULE_CONCURRENT);
  EXPECT_DEPS(plan, rd, c);
  EXPECT_DEPS(plan, wx, c);
  crec_plan_destroy(plan);
  char *text = NULL;
  EXPECT_OK(crec_dump(prog, NULL, CREC_DUMP_TEXT, &text, NULL));
  cr_assert(strstr(text, "custom 'my.op' target 'my.op' (r x[0..128), hole, w y[0..256)) kernels k, 20 attribute bytes"),
            "%s", text);
  crec_free(text);
}

Test(library, custom_validation) {
  crec_buffer x = arg("x", 256);
  crec_custom cu = CREC_CUSTOM_INIT;
  crec_command c;
  EXPECT_REFUSED(prog, crec_program_add_custom(prog, body, NULL, &cu, &c), CREC_ERR_NULL_POINTER, "target");
  cu.target = "";
  EXPECT_REFUSED(prog, crec_program_add_custom(prog, body, NULL, &cu, &c), CREC_ERR_INVALID_ARGUMENT, "empty");
  cu.target = "t";
  cu.num_operands = 1;
  EXPECT_REFUSED(prog, crec_program_add_custom(prog, body, NULL, &cu, &c), CREC_ERR_NULL_POINTER, "operands");
  crec_operand bad = crec_operand_of(crec_range_of(x, 200, 100), CREC_ACCESS_READ);
  cu.operands = &bad;
  EXPECT_REFUSED(prog, crec_program_add_custom(prog, body, NULL, &cu, &c), CREC_ERR_OUT_OF_RANGE, "operands[0]");
  bad = crec_operand_of(crec_range_of(x, 0, 100), (crec_access)0);
  EXPECT_REFUSED(prog, crec_program_add_custom(prog, body, NULL, &cu, &c), CREC_ERR_INVALID_ARGUMENT, "access");
  bad = crec_operand_of(crec_range_of(x, 0, 100), CREC_ACCESS_READ);
  crec_kernel nk = {CREC_TEST_GARBAGE_ID};
  cu.kernels = &nk;
  cu.num_kernels = 1;
  EXPECT_REFUSED(prog, crec_program_add_custom(prog, body, NULL, &cu, &c), CREC_ERR_INVALID_HANDLE, "kernels[0]");
  cu.num_kernels = 0;
  cu.attributes_size = 4;
  EXPECT_REFUSED(prog, crec_program_add_custom(prog, body, NULL, &cu, &c), CREC_ERR_NULL_POINTER, "attributes");
  cu.attributes_size = 0;
  cu.struct_size = 3;
  EXPECT_REFUSED(prog, crec_program_add_custom(prog, body, NULL, &cu, &c), CREC_ERR_INVALID_ARGUMENT, "CREC_CUSTOM_INIT");
  cu.struct_size = sizeof cu;
  EXPECT_OK(crec_program_add_custom(prog, body, "ok", &cu, &c));
}

static crec_status noop_fn(void *user, crec_custom_context *ctx, const crec_custom_call *call) {
  (void)user, (void)ctx, (void)call;
  return CREC_OK;
}
static crec_status noop_trace(void *user, crec_stream stream, const crec_custom_call *call) {
  (void)user, (void)stream, (void)call;
  return CREC_OK;
}
static int freed;
static void count_free(void *user) { freed += *(int *)user; }

Test(library, custom_registry) {
  crec_custom_handler h = CREC_CUSTOM_HANDLER_INIT;
  EXPECT_STATUS(crec_custom_register("t", &h), CREC_ERR_INVALID_ARGUMENT); /* no create/update */
  EXPECT_ERROR_MENTIONS("create() and update()");
  h.create = noop_fn;
  EXPECT_STATUS(crec_custom_register("t", &h), CREC_ERR_INVALID_ARGUMENT);
  h.update = noop_fn;
  int one = 1;
  h.user = &one;
  h.user_free = count_free;
  EXPECT_STATUS(crec_custom_register("", &h), CREC_ERR_INVALID_ARGUMENT);
  EXPECT_STATUS(crec_custom_register(NULL, &h), CREC_ERR_NULL_POINTER);
  EXPECT_STATUS(crec_custom_register("t", NULL), CREC_ERR_NULL_POINTER);
  EXPECT_OK(crec_custom_register("t", &h));
  EXPECT_STATUS(crec_custom_register("t", &h), CREC_ERR_DUPLICATE_NAME);
  crec_custom_handler tr = CREC_CUSTOM_HANDLER_INIT;
  tr.kind = CREC_CUSTOM_TRACED;
  EXPECT_STATUS(crec_custom_register("tr", &tr), CREC_ERR_INVALID_ARGUMENT);
  EXPECT_ERROR_MENTIONS("trace()");
  tr.trace = noop_trace;
  EXPECT_OK(crec_custom_register("tr", &tr));
  tr.kind = (crec_custom_kind)5;
  EXPECT_STATUS(crec_custom_register("other", &tr), CREC_ERR_INVALID_ARGUMENT);
  tr.kind = CREC_CUSTOM_TRACED;
  tr.struct_size = 8;
  EXPECT_STATUS(crec_custom_register("other", &tr), CREC_ERR_INVALID_ARGUMENT);
  cr_assert_eq(freed, 0);
  EXPECT_OK(crec_custom_unregister("t"));
  cr_assert_eq(freed, 1, "user_free runs when nothing uses the handler");
  EXPECT_STATUS(crec_custom_unregister("t"), CREC_ERR_NOT_FOUND);
  EXPECT_STATUS(crec_custom_unregister(NULL), CREC_ERR_NULL_POINTER);
  EXPECT_OK(crec_custom_unregister("tr"));
  /* a name may be registered again */
  EXPECT_OK(crec_custom_register("t", &h));
  EXPECT_OK(crec_custom_unregister("t"));
  cr_assert_eq(freed, 2);
}

/* ------------------------------------------------------ host callbacks ---- */

static void host_noop(void *user) { (void)user; }

Test(library, host_callbacks_run_in_program_order) {
  crec_buffer x = arg("x", 256), y = arg("y", 256);
  crec_host_callback cb = CREC_HOST_CALLBACK_INIT;
  cb.fn = host_noop;
  crec_command h1, h2, h3;
  EXPECT_OK(crec_program_add_host_callback(prog, body, NULL, &cb, &h1));
  crec_command mid = LAUNCH("mid", W(x, 0, 64));
  EXPECT_OK(crec_program_add_host_callback(prog, body, "second", &cb, &h2));
  crec_operand rx = crec_operand_of(crec_range_of(x, 0, 4), CREC_ACCESS_READ);
  cb.operands = &rx;
  cb.num_operands = 1;
  EXPECT_OK(crec_program_add_host_callback(prog, body, "reads x", &cb, &h3));
  crec_command wy = LAUNCH("writes y", W(y, 0, 64));
  crec_command_info ci = CREC_COMMAND_INFO_INIT;
  EXPECT_OK(crec_command_get_info(prog, h1, &ci));
  cr_assert_str_eq(ci.name, "host");
  cr_assert_eq(ci.kind, CREC_COMMAND_HOST);
  crec_plan *plan = plan_with(CREC_SCHEDULE_CONCURRENT);
  EXPECT_NO_DEPS(plan, h1);
  EXPECT_NO_DEPS(plan, mid);
  EXPECT_DEPS(plan, h2, h1);
  EXPECT_DEPS(plan, h3, mid, h2);
  EXPECT_NO_DEPS(plan, wy);
  crec_plan_destroy(plan);
  crec_host_callback got = CREC_HOST_CALLBACK_INIT;
  EXPECT_OK(crec_command_get_host_callback(prog, h3, &got));
  cr_assert_eq(got.fn, host_noop);
  cr_assert_eq(got.num_operands, 1);
  cr_assert_eq(got.operands[0].range.buffer.id, x.id);
  char *text = NULL;
  EXPECT_OK(crec_dump(prog, NULL, CREC_DUMP_TEXT, &text, NULL));
  cr_assert(strstr(text, "host 'reads x' callback (r x[0..4))"), "%s", text);
  crec_free(text);
}

Test(library, host_callback_owns_user_data_only_on_success) {
  freed = 0;
  int *u = malloc(sizeof *u);
  *u = 10;
  crec_host_callback cb = CREC_HOST_CALLBACK_INIT;
  cb.fn = host_noop;
  cb.user = u;
  cb.user_free = count_free;
  crec_command c;
  crec_operand bad = crec_operand_of(crec_range_of((crec_buffer){CREC_TEST_GARBAGE_ID}, 0, 4), CREC_ACCESS_READ);
  cb.operands = &bad;
  cb.num_operands = 1;
  EXPECT_REFUSED(prog, crec_program_add_host_callback(prog, body, NULL, &cb, &c), CREC_ERR_INVALID_HANDLE, "operands[0]");
  cb.num_operands = 0;
  cb.fn = NULL;
  EXPECT_REFUSED(prog, crec_program_add_host_callback(prog, body, NULL, &cb, &c), CREC_ERR_NULL_POINTER, "fn");
  cb.fn = host_noop;
  cb.struct_size = 1;
  EXPECT_REFUSED(prog, crec_program_add_host_callback(prog, body, NULL, &cb, &c), CREC_ERR_INVALID_ARGUMENT, "INIT");
  cb.struct_size = sizeof cb;
  for (uint64_t n = 1;; n++) {
    crec_debug_fail_after(CREC_FAULT_ALLOC, n);
    crec_status s = crec_program_add_host_callback(prog, body, NULL, &cb, &c);
    crec_debug_fail_after(CREC_FAULT_ALLOC, 0);
    if (s == CREC_OK) break;
    cr_assert_eq(s, CREC_ERR_OUT_OF_MEMORY);
    cr_assert_lt(n, 50);
  }
  cr_assert_eq(freed, 0, "failed calls left user data to the caller");
  crec_program_destroy(prog);
  prog = NULL;
  cr_assert_eq(freed, 10, "the program freed its user data once");
  free(u);
}

/* -------------------------------------------------------------- dumps ---- */

Test(library, dumps_describe_every_library_command) {
  gemm_fix f = gemm_setup("x", 4, 8, 2);
  f.g.type = CREC_ELEMENT_F16;
  f.g.transpose_a = 1;
  f.g.a = crec_matrix_of(crec_range_of(f.a, 0, 16), 2, 4);
  f.g.b = crec_matrix_of(crec_range_of(f.b, 0, 32), 2, 8);
  f.g.d = crec_matrix_of(crec_range_of(f.d, 0, 64), 4, 8);
  f.g.epilogue = CREC_GEMM_EPILOGUE_BIAS_RELU;
  f.g.bias = crec_range_of(f.bias, 0, 16);
  f.g.beta = 1;
  crec_command c;
  EXPECT_OK(crec_program_add_gemm(prog, body, "fc", &f.g, &c));
  crec_comm_slot w = comm("world", 1);
  crec_collective d = coll(CREC_COLLECTIVE_ALL_GATHER, w, crec_range_of(f.a, 0, 16), crec_range_of(f.b, 0, 16));
  EXPECT_OK(crec_program_add_collective(prog, body, "ag", &d, &c));
  crec_custom cu = CREC_CUSTOM_INIT;
  cu.target = "t\"q";
  EXPECT_OK(crec_program_add_custom(prog, body, "cust", &cu, &c));
  crec_host_callback cb = CREC_HOST_CALLBACK_INIT;
  cb.fn = host_noop;
  EXPECT_OK(crec_program_add_host_callback(prog, body, "cb", &cb, &c));
  EXPECT_DUMP_HAS(prog, CREC_DUMP_TEXT,
                  "#0 gemm 'fc' f16 M=4 N=8 K=2: x_d[0..64) = 1 * A^T x_a[0..16) * B x_b[0..32) + 1 * C (D) + bias "
                  "x_bias[0..16), relu; workspace fc.workspace",
                  "  fc.workspace     temporary 4194304 bytes, arena offset 0",
                  "collective 'ag' all_gather f32 over 'world': x_b[0..16) <- x_a[0..16)",
                  "custom 'cust' target 't\"q' ()", "host 'cb' callback ()");
  EXPECT_DUMP_HAS(prog, CREC_DUMP_JSON, "\"kind\":\"gemm\"", "\"kind\":\"collective\"", "\"kind\":\"custom\"",
                  "\"kind\":\"host\"");
  EXPECT_DUMP_HAS(prog, CREC_DUMP_DOT, "label=\"#0 gemm\\nfc\\nf16 4x8x2\"", "\\nall_gather\"", "\\ntarget t\\\"q\"");
}

/* ------------------------------------------------- options and stats ---- */

Test(library, option_and_stats_defaults) {
  crec_record_options o = CREC_RECORD_OPTIONS_INIT;
  cr_assert_eq(o.struct_size, sizeof o);
  cr_assert_eq(o.trace_cache_size, 16);
  cr_assert_eq(o.profile, 0, "CUPTI stays off unless asked for");
  char *choices = (char *)"untouched";
  EXPECT_STATUS(crec_exec_library_choices(NULL, &choices), CREC_ERR_NULL_POINTER);
  EXPECT_ERROR_MENTIONS("'exec'");
  cr_assert_null(choices, "the output is cleared on failure");
  crec_exec_stats st = CREC_EXEC_STATS_INIT;
  cr_assert_eq(st.struct_size, sizeof st);
  cr_assert_eq(st.trace_hits + st.trace_misses + st.trace_recaptures + st.trace_captures + st.custom_updates, 0);
  crec_bindings b = CREC_BINDINGS_INIT;
  cr_assert_eq(b.struct_size, sizeof b);
  cr_assert_null(b.communicators);
  crec_gemm g = CREC_GEMM_INIT;
  cr_assert_eq(g.struct_size, sizeof g);
  cr_assert_eq(g.alpha, 1.0);
  cr_assert_eq(g.batch, 1);
  crec_custom_launch l = CREC_CUSTOM_LAUNCH_INIT;
  cr_assert_eq(l.grid[2], 1);
  cr_assert_str_eq(crec_collective_kind_name(CREC_COLLECTIVE_PERMUTE), "collective_permute");
  cr_assert_str_eq(crec_collective_kind_name((crec_collective_kind)99), "unknown");
  cr_assert_str_eq(crec_reduction_name(CREC_REDUCTION_MIN), "min");
  cr_assert_str_eq(crec_reduction_name((crec_reduction)-1), "unknown");
  /* options are checked before anything else needs a device */
  o.trace_cache_size = 70000;
  crec_exec *e = NULL;
  EXPECT_STATUS(crec_record(prog, &b, &o, &e), CREC_ERR_INVALID_ARGUMENT);
  EXPECT_ERROR_MENTIONS("trace_cache_size");
}

Test(library, communicator_bindings_are_checked_before_the_device) {
  crec_comm_slot w = comm("world", 2);
  crec_buffer s = arg("s", 64), r = arg("r", 64);
  crec_collective d = coll(CREC_COLLECTIVE_ALL_REDUCE, w, crec_range_whole(s), crec_range_whole(r));
  crec_command c;
  EXPECT_OK(crec_program_add_collective(prog, body, "ar", &d, &c));
  char mem[2][64];
  crec_binding bd[2] = {{mem[0], 64}, {mem[1], 64}};
  crec_bindings b = CREC_BINDINGS_INIT;
  b.buffers = bd;
  b.num_buffers = 2;
  crec_exec *e = NULL;
  EXPECT_STATUS(crec_record(prog, &b, NULL, &e), CREC_ERR_BINDING);
  EXPECT_ERROR_MENTIONS("0 communicator bindings given, but the program has 1");
  crec_comm *none[1] = {NULL};
  b.communicators = none;
  b.num_communicators = 1;
  EXPECT_STATUS(crec_record(prog, &b, NULL, &e), CREC_ERR_BINDING);
  EXPECT_ERROR_MENTIONS("command 0 ('ar'): communicator binding 0 ('world'): NULL");
  EXPECT_STATUS(crec_run_eager(prog, &b, NULL), CREC_ERR_BINDING);
  b.communicators = NULL;
  EXPECT_STATUS(crec_record(prog, &b, NULL, &e), CREC_ERR_NULL_POINTER);
  cr_assert_null(e);
}

Test(library, communicator_calls_without_nccl_or_arguments) {
  crec_comm *c = (crec_comm *)&c;
  EXPECT_STATUS(crec_comm_create(0, NULL, 0, 1, &c), CREC_ERR_NULL_POINTER);
  cr_assert_null(c);
  crec_comm_id id;
  memset(&id, 0, sizeof id);
  EXPECT_STATUS(crec_comm_create(0, &id, 2, 2, &c), CREC_ERR_OUT_OF_RANGE);
  EXPECT_STATUS(crec_comm_create(0, &id, 0, 0, &c), CREC_ERR_OUT_OF_RANGE);
  EXPECT_STATUS(crec_comm_wrap(NULL, &c), CREC_ERR_NULL_POINTER);
  EXPECT_STATUS(crec_comm_get_unique_id(NULL), CREC_ERR_NULL_POINTER);
  EXPECT_STATUS(crec_comm_get_info(NULL, NULL, NULL, NULL), CREC_ERR_NULL_POINTER);
  cr_assert_null(crec_comm_native(NULL));
  crec_comm_destroy(NULL);
}

/* ---- host callbacks ---- */

static void cb_plain(void *user) { (void)user; }
static void cb_addresses(void *user, void *const *addresses, size_t count) {
  (void)user;
  (void)addresses;
  (void)count;
}

/* A host callback sets fn or fn_buffers, not both; a caller built against the
 * first crec_host_callback (without fn_buffers) still adds and reads one back. */
Test(library, a_host_callback_takes_one_of_its_two_functions) {
  crec_buffer t;
  EXPECT_OK(crec_program_add_host_temporary(prog, "t", 64, &t));
  crec_operand op = crec_operand_of(crec_range_of(t, 8, 8), CREC_ACCESS_WRITE);
  crec_host_callback cb = CREC_HOST_CALLBACK_INIT;
  crec_command c;
  EXPECT_STATUS(crec_program_add_host_callback(prog, body, "none", &cb, &c), CREC_ERR_NULL_POINTER);
  EXPECT_ERROR_MENTIONS("both fn and fn_buffers are NULL");
  cb.fn = cb_plain;
  cb.fn_buffers = cb_addresses;
  EXPECT_STATUS(crec_program_add_host_callback(prog, body, "both", &cb, &c), CREC_ERR_INVALID_ARGUMENT);
  EXPECT_ERROR_MENTIONS("fn and fn_buffers are both set");
  cb.fn = NULL;
  cb.operands = &op;
  cb.num_operands = 1;
  EXPECT_OK(crec_program_add_host_callback(prog, body, "addresses", &cb, &c));
  crec_host_callback back = CREC_HOST_CALLBACK_INIT;
  EXPECT_OK(crec_command_get_host_callback(prog, c, &back));
  cr_assert_eq(back.fn_buffers, cb_addresses);
  cr_assert_null(back.fn);
  cr_assert_eq(back.num_operands, 1);
  cr_assert_eq(back.operands[0].range.offset, 8);
  /* the first version of the struct: fn_buffers unknown to it, and not written back */
  crec_host_callback old = CREC_HOST_CALLBACK_INIT;
  old.struct_size = offsetof(crec_host_callback, fn_buffers);
  old.fn = cb_plain;
  EXPECT_OK(crec_program_add_host_callback(prog, body, "old", &old, &c));
  crec_host_callback old_back;
  memset(&old_back, 0x5a, sizeof old_back);
  old_back.struct_size = offsetof(crec_host_callback, fn_buffers);
  EXPECT_OK(crec_command_get_host_callback(prog, c, &old_back));
  cr_assert_eq(old_back.fn, cb_plain);
  unsigned char tail[sizeof(crec_host_buffers_fn)];
  memset(tail, 0x5a, sizeof tail);
  cr_assert(memcmp(&old_back.fn_buffers, tail, sizeof tail) == 0, "a field the caller does not know was written");
}
