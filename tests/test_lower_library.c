/* Library ops from MLIR: linalg.matmul, linalg.batch_matmul and "crec.gemm"
 * lowered to GEMMs, "crec.fft" to FFTs, "crec.cholesky" to Cholesky
 * factorizations, the linalg convolutions and "crec.conv" to convolutions, the crec.* collectives to collectives over communicator
 * slots, "crec.custom_call" to custom commands; each checked through the library
 * getters (crec_command_get_gemm and co.), the command's operands and the JSON
 * dump. Their errors are in test_lower_errors.c, but for crec.fft's,
 * crec.cholesky's and the convolutions', which are here. */
#include <stdio.h>
#include <string.h>

#include "common.h"

TestSuite(lower_library, .init = crec_test_require_mlir, .fini = crec_test_leak_check);

#define MLIR_DIR CREC_TEST_MLIR_DIR

static crec_gemm gemm(const crec_program *p, size_t index) {
  crec_gemm g = CREC_GEMM_INIT;
  EXPECT_OK(crec_command_get_gemm(p, crec_program_command(p, index), &g));
  return g;
}

static crec_collective collective(const crec_program *p, size_t index, crec_command *start) {
  crec_collective d = CREC_COLLECTIVE_INIT;
  EXPECT_OK(crec_command_get_collective(p, crec_program_command(p, index), &d, start));
  return d;
}

/* A matrix operand: its range and shape as the GEMM reads it back (ld and batch stride resolved). */
static void expect_matrix(const crec_program *p, crec_matrix m, const char *name, uint64_t offset, uint64_t size,
                          uint64_t rows, uint64_t cols, uint64_t ld, uint64_t batch_stride) {
  crec_test_expect_range(p, m.range, name, offset, size);
  cr_assert_eq(m.rows, rows, "'%s': %llu rows, expected %llu", name, (unsigned long long)m.rows, (unsigned long long)rows);
  cr_assert_eq(m.cols, cols, "'%s': %llu columns, expected %llu", name, (unsigned long long)m.cols,
               (unsigned long long)cols);
  cr_assert_eq(m.ld, ld, "'%s': ld %llu, expected %llu", name, (unsigned long long)m.ld, (unsigned long long)ld);
  cr_assert_eq(m.batch_stride, batch_stride, "'%s': batch stride %llu, expected %llu", name,
               (unsigned long long)m.batch_stride, (unsigned long long)batch_stride);
}

static void expect_operand(const crec_program *p, size_t cmd, size_t index, const char *name, uint64_t offset,
                           uint64_t size, crec_access access) {
  crec_range r;
  crec_access a;
  EXPECT_OK(crec_command_get_operand(p, crec_program_command(p, cmd), index, &r, &a));
  crec_test_expect_range(p, r, name, offset, size);
  cr_assert_eq(a, access, "operand %zu of command %zu: access %d, expected %d", index, cmd, a, access);
}

/* linalg.matmul of f16 (or bf16) matrices into an f32 one, as upstream's sm90
 * GEMM checks its result: one GEMM with f32 output; f32 into f16 is refused. */
Test(lower_library, linalg_matmul_of_half_inputs_into_f32_is_one_mixed_precision_gemm) {
  crec_program *p = crec_test_lower_text(
      "func.func @main(%a: memref<16x32xf16>, %b: memref<32x8xf16>, %c: memref<16x8xf32>) {\n"
      "  linalg.matmul ins(%a, %b : memref<16x32xf16>, memref<32x8xf16>) outs(%c : memref<16x8xf32>)\n"
      "  return\n"
      "}\n");
  crec_gemm g = CREC_GEMM_INIT;
  EXPECT_OK(crec_command_get_gemm(p, crec_program_command(p, 0), &g));
  cr_assert(g.type == CREC_ELEMENT_F16 && g.output_type == CREC_ELEMENT_F32, "%s into %s", crec_element_name(g.type),
            crec_element_name(g.output_type));
  cr_assert(g.beta == 1.0, "it accumulates into C");
  crec_program_destroy(p);
}

/* ---- GEMM ---- */

Test(lower_library, linalg_matmul_accumulates_into_its_output_and_crec_gemm_takes_its_attributes) {
  crec_program *p = crec_test_lower_file("gemm.mlir");
  cr_assert_eq(crec_program_command_count(p), 5);
  /* layer1: linalg.matmul ins(x: 20x37, w1: 37x45) outs(h: 20x45) */
  crec_command_info c = crec_test_command(p, 1);
  cr_assert_eq(c.kind, CREC_COMMAND_GEMM);
  cr_assert_str_eq(c.name, "layer1");
  cr_assert_str_eq(crec_test_buffer_name(p, c.workspace), "layer1.workspace");
  crec_gemm g = gemm(p, 1);
  cr_assert_eq(g.type, CREC_ELEMENT_F32);
  cr_assert_eq(g.batch, 1);
  cr_assert(!g.transpose_a && !g.transpose_b);
  cr_assert_eq(g.alpha, 1.0);
  cr_assert_eq(g.beta, 1.0, "linalg accumulates: beta is 1");
  cr_assert_eq(g.c.range.buffer.id, 0, "C is D itself");
  cr_assert_eq(g.epilogue, CREC_GEMM_EPILOGUE_NONE);
  expect_matrix(p, g.a, "x", 0, 20 * 37 * 4, 20, 37, 37, 20 * 37);
  expect_matrix(p, g.b, "w1", 0, 37 * 45 * 4, 37, 45, 45, 37 * 45);
  expect_matrix(p, g.d, "h", 0, 20 * 45 * 4, 20, 45, 45, 20 * 45);
  /* a, b read; d read and written (beta 1); the workspace */
  cr_assert_eq(c.num_operands, 4);
  expect_operand(p, 1, 0, "x", 0, 20 * 37 * 4, CREC_ACCESS_READ);
  expect_operand(p, 1, 2, "h", 0, 20 * 45 * 4, CREC_ACCESS_READ_WRITE);

  /* layer2: "crec.gemm"(h, w2, y, b2) {transpose_b, alpha = 0.5, epilogue = "bias_relu"} */
  c = crec_test_command(p, 3);
  cr_assert_str_eq(c.name, "layer2");
  g = gemm(p, 3);
  cr_assert(!g.transpose_a && g.transpose_b);
  cr_assert_eq(g.alpha, 0.5);
  cr_assert_eq(g.beta, 0.0);
  cr_assert_eq(g.epilogue, CREC_GEMM_EPILOGUE_BIAS_RELU);
  expect_matrix(p, g.b, "w2", 0, 13 * 45 * 4, 13, 45, 45, 13 * 45);
  expect_matrix(p, g.d, "y", 0, 20 * 13 * 4, 20, 13, 13, 20 * 13);
  crec_test_expect_range(p, g.bias, "b2", 0, 13 * 4);
  cr_assert_eq(g.workspace_bytes, CREC_GEMM_DEFAULT_WORKSPACE);
  cr_assert_eq(c.num_operands, 5);
  expect_operand(p, 3, 2, "y", 0, 20 * 13 * 4, CREC_ACCESS_WRITE);
  expect_operand(p, 3, 3, "b2", 0, 13 * 4, CREC_ACCESS_READ);

  /* linalg.batch_matmul ins(p: 3x4x5, q: 3x5x6) outs(z: 3x4x6), named by the builder's default */
  cr_assert_str_eq(crec_test_command(p, 4).name, "gemm");
  g = gemm(p, 4);
  cr_assert_eq(g.batch, 3);
  cr_assert_eq(g.beta, 1.0);
  expect_matrix(p, g.a, "p", 0, 3 * 4 * 5 * 4, 4, 5, 5, 4 * 5);
  expect_matrix(p, g.b, "q", 0, 3 * 5 * 6 * 4, 5, 6, 6, 5 * 6);
  expect_matrix(p, g.d, "z", 0, 3 * 4 * 6 * 4, 4, 6, 6, 4 * 6);

  char *j = crec_test_json(p);
  cr_assert_str_eq(j,
                   "{\"buffers\":["
                   "{\"name\":\"x\",\"kind\":\"argument\",\"size\":2960,\"element\":\"f32\",\"dynamic\":false},"
                   "{\"name\":\"w1\",\"kind\":\"argument\",\"size\":6660,\"element\":\"f32\",\"dynamic\":false},"
                   "{\"name\":\"b1\",\"kind\":\"argument\",\"size\":180,\"element\":\"f32\",\"dynamic\":false},"
                   "{\"name\":\"w2\",\"kind\":\"argument\",\"size\":2340,\"element\":\"f32\",\"dynamic\":false},"
                   "{\"name\":\"b2\",\"kind\":\"argument\",\"size\":52,\"element\":\"f32\",\"dynamic\":false},"
                   "{\"name\":\"y\",\"kind\":\"argument\",\"size\":1040,\"element\":\"f32\",\"dynamic\":false},"
                   "{\"name\":\"p\",\"kind\":\"argument\",\"size\":240,\"element\":\"f32\",\"dynamic\":false},"
                   "{\"name\":\"q\",\"kind\":\"argument\",\"size\":360,\"element\":\"f32\",\"dynamic\":false},"
                   "{\"name\":\"z\",\"kind\":\"argument\",\"size\":288,\"element\":\"f32\",\"dynamic\":false},"
                   "{\"name\":\"h\",\"kind\":\"temporary\",\"size\":3600,\"element\":\"bytes\",\"dynamic\":false,"
                   "\"arena_offset\":4194304,\"live\":[0,3]},"
                   "{\"name\":\"layer1.workspace\",\"kind\":\"temporary\",\"size\":4194304,\"element\":\"bytes\","
                   "\"dynamic\":false,\"arena_offset\":0,\"live\":[1,1]},"
                   "{\"name\":\"layer2.workspace\",\"kind\":\"temporary\",\"size\":4194304,\"element\":\"bytes\","
                   "\"dynamic\":false,\"arena_offset\":0,\"live\":[3,3]},"
                   "{\"name\":\"gemm.workspace\",\"kind\":\"temporary\",\"size\":4194304,\"element\":\"bytes\","
                   "\"dynamic\":false,\"arena_offset\":0,\"live\":[4,4]}],"
                   "\"scalars\":[],"
                   "\"regions\":[{\"id\":0,\"parent\":null,\"role\":\"program\",\"index\":0}],"
                   "\"commands\":[{\"id\":0,\"kind\":\"memset\",\"name\":\"memset\",\"region\":0,\"deps\":[],"
                   "\"dst\":{\"buffer\":\"h\",\"offset\":0,\"end\":3600},"
                   "\"bytes\":3600,\"value\":\"0x0\",\"element_size\":4},"
                   "{\"id\":1,\"kind\":\"gemm\",\"name\":\"layer1\",\"region\":0,\"deps\":[0],"
                   "\"gemm\":{\"type\":\"f32\",\"output_type\":\"f32\",\"m\":20,\"n\":45,\"k\":37,\"batch\":1,\"transpose_a\":false,"
                   "\"transpose_b\":false,\"alpha\":1,\"beta\":1,\"accumulate\":true,\"epilogue\":\"none\","
                   "\"workspace_bytes\":4194304},\"operands\":["
                   "{\"buffer\":\"x\",\"offset\":0,\"end\":2960,\"access\":\"read\"},"
                   "{\"buffer\":\"w1\",\"offset\":0,\"end\":6660,\"access\":\"read\"},"
                   "{\"buffer\":\"h\",\"offset\":0,\"end\":3600,\"access\":\"read-write\"},"
                   "{\"buffer\":\"layer1.workspace\",\"offset\":0,\"end\":4194304,\"access\":\"read-write\"}]},"
                   "{\"id\":2,\"kind\":\"launch\",\"name\":\"bias_relu\",\"region\":0,\"deps\":[1],"
                   "\"kernel\":{\"entry\":\"bias_relu\",\"module\":\"kernels\",\"format\":\"ptx\"},\"grid\":[20,1,1],"
                   "\"block\":[45,1,1],\"shared\":0,\"args\":["
                   "{\"kind\":\"buffer\",\"buffer\":\"h\",\"offset\":0,\"end\":3600,\"access\":\"read-write\"},"
                   "{\"kind\":\"buffer\",\"buffer\":\"b1\",\"offset\":0,\"end\":180,\"access\":\"read\"}]},"
                   "{\"id\":3,\"kind\":\"gemm\",\"name\":\"layer2\",\"region\":0,\"deps\":[2],"
                   "\"gemm\":{\"type\":\"f32\",\"output_type\":\"f32\",\"m\":20,\"n\":13,\"k\":45,\"batch\":1,\"transpose_a\":false,"
                   "\"transpose_b\":true,\"alpha\":0.5,\"beta\":0,\"accumulate\":true,\"epilogue\":\"bias_relu\","
                   "\"workspace_bytes\":4194304},\"operands\":["
                   "{\"buffer\":\"h\",\"offset\":0,\"end\":3600,\"access\":\"read\"},"
                   "{\"buffer\":\"w2\",\"offset\":0,\"end\":2340,\"access\":\"read\"},"
                   "{\"buffer\":\"y\",\"offset\":0,\"end\":1040,\"access\":\"write\"},"
                   "{\"buffer\":\"b2\",\"offset\":0,\"end\":52,\"access\":\"read\"},"
                   "{\"buffer\":\"layer2.workspace\",\"offset\":0,\"end\":4194304,\"access\":\"read-write\"}]},"
                   "{\"id\":4,\"kind\":\"gemm\",\"name\":\"gemm\",\"region\":0,\"deps\":[3],"
                   "\"gemm\":{\"type\":\"f32\",\"output_type\":\"f32\",\"m\":4,\"n\":6,\"k\":5,\"batch\":3,\"transpose_a\":false,"
                   "\"transpose_b\":false,\"alpha\":1,\"beta\":1,\"accumulate\":true,\"epilogue\":\"none\","
                   "\"workspace_bytes\":4194304},\"operands\":["
                   "{\"buffer\":\"p\",\"offset\":0,\"end\":240,\"access\":\"read\"},"
                   "{\"buffer\":\"q\",\"offset\":0,\"end\":360,\"access\":\"read\"},"
                   "{\"buffer\":\"z\",\"offset\":0,\"end\":288,\"access\":\"read-write\"},"
                   "{\"buffer\":\"gemm.workspace\",\"offset\":0,\"end\":4194304,\"access\":\"read-write\"}]}]}\n");
  crec_free(j);
  crec_program_destroy(p);
}

Test(lower_library, linalg_matmul_in_generic_form_lowers_like_the_custom_form) {
  /* MLIR 19 needs the body region and the operand segments in generic form */
  const char *generic =
      "module {\n  func.func @main(%a: memref<4x8xf32>, %b: memref<8x3xf32>, %c: memref<4x3xf32>) {\n"
      "    \"linalg.matmul\"(%a, %b, %c) <{operandSegmentSizes = array<i32: 2, 1>}> ({\n"
      "    ^bb0(%x: f32, %y: f32, %z: f32):\n"
      "      %m = \"arith.mulf\"(%x, %y) : (f32, f32) -> f32\n"
      "      %s = \"arith.addf\"(%z, %m) : (f32, f32) -> f32\n"
      "      \"linalg.yield\"(%s) : (f32) -> ()\n"
      "    }) : (memref<4x8xf32>, memref<8x3xf32>, memref<4x3xf32>) -> ()\n"
      "    return\n  }\n}\n";
  const char *custom =
      "module {\n  func.func @main(%a: memref<4x8xf32>, %b: memref<8x3xf32>, %c: memref<4x3xf32>) {\n"
      "    linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x3xf32>) outs(%c : memref<4x3xf32>)\n"
      "    return\n  }\n}\n";
  crec_program *g = crec_test_lower_text(generic), *c = crec_test_lower_text(custom);
  char *jg = NULL, *jc = NULL;
  EXPECT_OK(crec_dump(g, NULL, CREC_DUMP_TEXT, &jg, NULL));
  EXPECT_OK(crec_dump(c, NULL, CREC_DUMP_TEXT, &jc, NULL));
  cr_assert_str_eq(jg, jc);
  cr_assert(strstr(jg, "gemm 'gemm' f32 M=4 N=3 K=8: arg2[0..48) = 1 * A arg0[0..128) * B arg1[0..96) + 1 * C (D)"), "%s",
            jg);
  crec_free(jg);
  crec_free(jc);
  crec_program_destroy(g);
  crec_program_destroy(c);
}

Test(lower_library, half_and_bfloat_gemms_with_a_separate_c_and_a_workspace_size) {
  crec_program *p = crec_test_lower_text(
      "module {\n  func.func @main(%a: memref<8x4xf16>, %b: memref<8x6xf16>, %c: memref<4x6xf16>, %d: memref<4x6xf16>,\n"
      "                  %e: memref<2x3x5xbf16>, %f: memref<2x7x5xbf16>, %g: memref<2x3x7xbf16>) {\n"
      "    \"crec.gemm\"(%a, %b, %d, %c) {transpose_a, has_c, alpha = 2 : i64, beta = -1.5 : f32,\n"
      "                                 workspace_bytes = 65536 : i64, epilogue = \"relu\"}\n"
      "        : (memref<8x4xf16>, memref<8x6xf16>, memref<4x6xf16>, memref<4x6xf16>) -> ()\n"
      "    \"crec.gemm\"(%e, %f, %g) {transpose_b = true, transpose_a = false}\n"
      "        : (memref<2x3x5xbf16>, memref<2x7x5xbf16>, memref<2x3x7xbf16>) -> ()\n"
      "    return\n  }\n}\n");
  crec_gemm g = gemm(p, 0);
  cr_assert_eq(g.type, CREC_ELEMENT_F16);
  cr_assert(g.transpose_a && !g.transpose_b);
  cr_assert_eq(g.alpha, 2.0);
  cr_assert_eq(g.beta, -1.5);
  cr_assert_eq(g.epilogue, CREC_GEMM_EPILOGUE_RELU);
  cr_assert_eq(g.workspace_bytes, 65536);
  expect_matrix(p, g.a, "arg0", 0, 64, 8, 4, 4, 32);
  expect_matrix(p, g.c, "arg2", 0, 48, 4, 6, 6, 24);
  expect_matrix(p, g.d, "arg3", 0, 48, 4, 6, 6, 24);
  crec_command_info c = crec_test_command(p, 0);
  cr_assert_eq(c.num_operands, 5, "a, b, c, d and the workspace");
  expect_operand(p, 0, 2, "arg2", 0, 48, CREC_ACCESS_READ);
  expect_operand(p, 0, 3, "arg3", 0, 48, CREC_ACCESS_WRITE);
  crec_buffer_info ws;
  EXPECT_OK(crec_buffer_get_info(p, c.workspace, &ws));
  cr_assert_eq(ws.size, 65536);

  g = gemm(p, 1);
  cr_assert_eq(g.type, CREC_ELEMENT_BF16);
  cr_assert(!g.transpose_a && g.transpose_b, "bool attributes are read too");
  cr_assert_eq(g.batch, 2, "rank-3 operands make a batch");
  cr_assert_eq(g.alpha, 1.0);
  cr_assert_eq(g.beta, 0.0, "crec.gemm overwrites d by default");
  expect_matrix(p, g.b, "arg5", 0, 2 * 7 * 5 * 2, 7, 5, 5, 35);
  crec_program_destroy(p);
}

Test(lower_library, strided_views_set_ld_batch_stride_and_the_byte_offset) {
  /* a 4x8 window at (2, 4) of a 8x16 matrix: ld 16, first element 2*16+4 = 36 */
  crec_program *p = crec_test_lower_text(
      "module {\n  func.func @main(%big: memref<8x16xf32> {crec.name = \"big\"}, %b: memref<8x3xf32>,\n"
      "                  %d: memref<4x3xf32>, %bb: memref<2x4x10xf32> {crec.name = \"bb\"},\n"
      "                  %q: memref<2x8x3xf32>, %z: memref<2x4x3xf32>) {\n"
      "    %a = memref.subview %big[2, 4] [4, 8] [1, 1] : memref<8x16xf32> to memref<4x8xf32, strided<[16, 1], offset: 36>>\n"
      "    linalg.matmul ins(%a, %b : memref<4x8xf32, strided<[16, 1], offset: 36>>, memref<8x3xf32>)\n"
      "        outs(%d : memref<4x3xf32>)\n"
      "    %w = memref.subview %bb[0, 0, 2] [2, 4, 8] [1, 1, 1]\n"
      "        : memref<2x4x10xf32> to memref<2x4x8xf32, strided<[40, 10, 1], offset: 2>>\n"
      "    linalg.batch_matmul ins(%w, %q : memref<2x4x8xf32, strided<[40, 10, 1], offset: 2>>, memref<2x8x3xf32>)\n"
      "        outs(%z : memref<2x4x3xf32>)\n"
      "    return\n  }\n}\n");
  crec_gemm g = gemm(p, 0);
  expect_matrix(p, g.a, "big", 36 * 4, ((4 - 1) * 16 + 8) * 4, 4, 8, 16, 4 * 16);
  g = gemm(p, 1);
  /* rows of 10 elements, matrices of 4 rows: the batch stride 40 is packed */
  expect_matrix(p, g.a, "bb", 2 * 4, (40 + 3 * 10 + 8) * 4, 4, 8, 10, 40);
  crec_program_destroy(p);

  /* a batch stride that is not rows x ld is kept */
  p = crec_test_lower_text(
      "module {\n  func.func @main(%bb: memref<120xf32> {crec.name = \"bb\"}, %q: memref<2x8x3xf32>,\n"
      "                  %z: memref<2x4x3xf32>) {\n"
      "    %r = memref.reinterpret_cast %bb to offset: [4], sizes: [2, 4, 8], strides: [48, 10, 1]\n"
      "        : memref<120xf32> to memref<2x4x8xf32, strided<[48, 10, 1], offset: 4>>\n"
      "    linalg.batch_matmul ins(%r, %q : memref<2x4x8xf32, strided<[48, 10, 1], offset: 4>>, memref<2x8x3xf32>)\n"
      "        outs(%z : memref<2x4x3xf32>)\n"
      "    return\n  }\n}\n");
  g = gemm(p, 0);
  expect_matrix(p, g.a, "bb", 16, (48 + 30 + 8) * 4, 4, 8, 10, 48);
  crec_program_destroy(p);
}

Test(lower_library, library_ops_inside_device_control_flow_go_to_its_regions) {
  crec_program *p = crec_test_lower_text(
      "module {\n  func.func @main(%go: memref<i1>, %a: memref<4x4xf32>, %x: memref<16xf32>, %y: memref<16xf32>) {\n"
      "    %p = memref.load %go[] : memref<i1>\n"
      "    scf.if %p {\n"
      "      linalg.matmul ins(%a, %a : memref<4x4xf32>, memref<4x4xf32>) outs(%a : memref<4x4xf32>)\n"
      "    } else {\n"
      "      \"crec.all_reduce\"(%x, %y) {reduction = \"max\", num_ranks = 2 : i64}\n"
      "          : (memref<16xf32>, memref<16xf32>) -> ()\n"
      "    }\n    return\n  }\n}\n");
  crec_command iff = crec_program_command(p, 0);
  crec_command_info g = crec_test_command(p, 1), r = crec_test_command(p, 2);
  cr_assert_eq(g.kind, CREC_COMMAND_GEMM);
  cr_assert_eq(g.region.id, crec_command_region(p, iff, 0).id, "the matmul is in the then region");
  cr_assert_eq(r.kind, CREC_COMMAND_COLLECTIVE);
  cr_assert_eq(r.region.id, crec_command_region(p, iff, 1).id, "the all_reduce is in the else region");
  crec_program_destroy(p);
}

/* ---- FFT ---- */

static crec_fft fft(const crec_program *p, size_t index) {
  crec_fft f = CREC_FFT_INIT;
  EXPECT_OK(crec_command_get_fft(p, crec_program_command(p, index), &f));
  return f;
}

/* FFT `index` of `p`: its type, precision, lengths (rank of them), batch and scale. */
static void expect_fft(const crec_program *p, size_t index, crec_fft_type type, crec_element precision, uint32_t rank,
                       uint64_t l0, uint64_t l1, uint64_t l2, uint64_t batch, double scale) {
  crec_command_info c = crec_test_command(p, index);
  cr_assert_eq(c.kind, CREC_COMMAND_FFT, "command %zu is a %s, not an FFT", index, crec_command_kind_name(c.kind));
  crec_fft f = fft(p, index);
  cr_assert_eq(f.type, type, "command %zu: type %s, expected %s", index, crec_fft_type_name(f.type),
               crec_fft_type_name(type));
  cr_assert_eq(f.precision, precision, "command %zu: precision %s", index, crec_element_name(f.precision));
  cr_assert_eq(f.rank, rank, "command %zu: rank %u, expected %u", index, f.rank, rank);
  uint64_t want[3] = {l0, l1, l2};
  for (int d = 0; d < 3; d++)
    cr_assert_eq(f.length[d], want[d], "command %zu: length[%d] is %llu, expected %llu", index, d,
                 (unsigned long long)f.length[d], (unsigned long long)want[d]);
  cr_assert_eq(f.batch, batch, "command %zu: batch %llu, expected %llu", index, (unsigned long long)f.batch,
               (unsigned long long)batch);
  cr_assert_eq(f.scale, scale, "command %zu: scale %g, expected %g", index, f.scale, scale);
}

/* The last operand of command `index`: its workspace, of `name`. */
static void expect_fft_workspace(const crec_program *p, size_t index, const char *name) {
  crec_command_info c = crec_test_command(p, index);
  crec_range r;
  crec_access a;
  EXPECT_OK(crec_command_get_operand(p, crec_program_command(p, index), c.num_operands - 1, &r, &a));
  cr_assert_str_eq(crec_test_buffer_name(p, r.buffer), name);
  cr_assert_eq(a, CREC_ACCESS_READ_WRITE);
}

Test(lower_library, crec_fft_lowers_with_xla_shapes_a_batch_and_normalized_inverses) {
  crec_program *p = crec_test_lower_file("fft.mlir");
  cr_assert_eq(crec_program_command_count(p), 4);
  /* complex<f32> is 8 bytes and complex<f64> 16, in arguments and temporaries alike */
  crec_buffer_info b;
  EXPECT_OK(crec_buffer_get_info(p, crec_program_buffer(p, 2), &b));
  cr_assert_str_eq(b.name, "image");
  cr_assert_eq(b.size, 2 * 8 * 16 * 16);
  cr_assert_eq(b.element, CREC_ELEMENT_BYTES, "crec has no complex element type: an argument of them is bytes");
  EXPECT_OK(crec_buffer_get_info(p, crec_program_buffer(p, 4), &b));
  cr_assert_str_eq(b.name, "spectrum");
  cr_assert_eq(b.kind, CREC_BUFFER_TEMPORARY);
  cr_assert_eq(b.size, 4 * 33 * 8);

  /* RFFT of 4 signals of 64 reals into 4 x 33 complex<f32> */
  cr_assert_str_eq(crec_test_command(p, 0).name, "rfft");
  expect_fft(p, 0, CREC_FFT_REAL_FORWARD, CREC_ELEMENT_F32, 1, 64, 0, 0, 4, 1.0);
  crec_fft f = fft(p, 0);
  crec_test_expect_range(p, f.input, "signal", 0, 4 * 64 * 4);
  crec_test_expect_range(p, f.output, "spectrum", 0, 4 * 33 * 8);
  cr_assert_eq(f.workspace_bytes, CREC_FFT_DEFAULT_WORKSPACE_MIN, "no workspace_bytes: the default");
  cr_assert_eq(crec_test_command(p, 0).num_operands, 3);
  expect_operand(p, 0, 0, "signal", 0, 4 * 64 * 4, CREC_ACCESS_READ);
  expect_operand(p, 0, 1, "spectrum", 0, 4 * 33 * 8, CREC_ACCESS_WRITE);
  expect_fft_workspace(p, 0, "rfft.workspace");

  /* IRFFT back, normalized by 1/64 (fft_length as array<i64: ...>) */
  expect_fft(p, 1, CREC_FFT_REAL_INVERSE, CREC_ELEMENT_F32, 1, 64, 0, 0, 4, 1.0 / 64);
  f = fft(p, 1);
  crec_test_expect_range(p, f.input, "spectrum", 0, 4 * 33 * 8);
  crec_test_expect_range(p, f.output, "back", 0, 4 * 64 * 4);
  expect_operand(p, 1, 0, "spectrum", 0, 4 * 33 * 8, CREC_ACCESS_READ);

  /* a 2-D FFT of 2 images in place: one operand read and written, then the workspace */
  cr_assert_str_eq(crec_test_command(p, 2).name, "fft2");
  expect_fft(p, 2, CREC_FFT_FORWARD, CREC_ELEMENT_F64, 2, 8, 16, 0, 2, 1.0);
  f = fft(p, 2);
  crec_test_expect_range(p, f.input, "image", 0, 4096);
  crec_test_expect_range(p, f.output, "image", 0, 4096);
  cr_assert_eq(f.workspace_bytes, 65536);
  cr_assert_eq(crec_test_command(p, 2).num_operands, 2);
  expect_operand(p, 2, 0, "image", 0, 4096, CREC_ACCESS_READ_WRITE);
  expect_fft_workspace(p, 2, "fft2.workspace");

  /* its inverse, normalized by 1/(8·16), named by the builder's default */
  cr_assert_str_eq(crec_test_command(p, 3).name, "fft");
  expect_fft(p, 3, CREC_FFT_INVERSE, CREC_ELEMENT_F64, 2, 8, 16, 0, 2, 1.0 / 128);
  f = fft(p, 3);
  crec_test_expect_range(p, f.input, "image", 0, 4096);
  crec_test_expect_range(p, f.output, "image_back", 0, 4096);
  expect_fft_workspace(p, 3, "fft.workspace");
  /* the transforms are ordered by what they read and write */
  crec_plan *plan = crec_test_plan(p, CREC_SCHEDULE_CONCURRENT);
  EXPECT_DEPS(plan, crec_program_command(p, 1), crec_program_command(p, 0));
  EXPECT_DEPS(plan, crec_program_command(p, 3), crec_program_command(p, 2));
  crec_plan_destroy(plan);
  cr_assert_eq(crec_program_warning_count(p), 0, "the IRFFT reads what the RFFT wrote");
  crec_program_destroy(p);
}

Test(lower_library, crec_fft_types_by_number_lengths_in_every_form_f64_and_batches) {
  crec_program *p = crec_test_lower_text(
      "module {\n"
      "  func.func @main(%a: memref<2x3x4x8xcomplex<f32>>, %b: memref<2x3x4x8xcomplex<f32>>,\n"
      "                  %r: memref<5x6xf64>, %c: memref<5x4xcomplex<f64>>, %big: memref<4x8x16xcomplex<f32>>,\n"
      "                  %v: memref<2x3x5xcomplex<f64>>, %w: memref<2x3x8xf64>) {\n"
      /* 0: XLA's FftType number, lengths as array<i32: ...>: 2x3 leading dims make a batch of 6 */
      "    \"crec.fft\"(%a, %b) {fft_type = 1 : i64, fft_length = array<i32: 4, 8>}\n"
      "        : (memref<2x3x4x8xcomplex<f32>>, memref<2x3x4x8xcomplex<f32>>) -> ()\n"
      /* 1: an f64 RFFT of 5 rows of 6: 4 frequencies each; lengths as MHLO's dense<...> */
      "    \"crec.fft\"(%r, %c) {fft_type = 2 : i32, fft_length = dense<[6]> : tensor<1xi64>}\n"
      "        : (memref<5x6xf64>, memref<5x4xcomplex<f64>>) -> ()\n"
      /* 2: every dimension transformed (rank 3, batch 1), into a window of rows 1..3 of %big */
      "    %rows = memref.subview %big[1, 0, 0] [2, 8, 16] [1, 1, 1]\n"
      "        : memref<4x8x16xcomplex<f32>> to memref<2x8x16xcomplex<f32>, strided<[128, 16, 1], offset: 128>>\n"
      "    \"crec.fft\"(%rows, %rows) {fft_type = \"FFT\", fft_length = [2, 8, 16], workspace_bytes = 0 : i64}\n"
      "        : (memref<2x8x16xcomplex<f32>, strided<[128, 16, 1], offset: 128>>,\n"
      "           memref<2x8x16xcomplex<f32>, strided<[128, 16, 1], offset: 128>>) -> ()\n"
      /* 3: a 2-D IRFFT in f64: 3x5 complex (5 = 8/2 + 1) to 3x8 reals; lengths as i32 attributes */
      "    \"crec.fft\"(%v, %w) {fft_type = \"IRFFT\", fft_length = [3 : i32, 8 : i32], crec.name = \"inverse\"}\n"
      "        : (memref<2x3x5xcomplex<f64>>, memref<2x3x8xf64>) -> ()\n"
      "    return\n  }\n}\n");
  cr_assert_eq(crec_program_command_count(p), 4);
  expect_fft(p, 0, CREC_FFT_INVERSE, CREC_ELEMENT_F32, 2, 4, 8, 0, 6, 1.0 / 32);
  crec_fft f = fft(p, 0);
  crec_test_expect_range(p, f.input, "arg0", 0, 2 * 3 * 4 * 8 * 8);
  crec_test_expect_range(p, f.output, "arg1", 0, 2 * 3 * 4 * 8 * 8);

  expect_fft(p, 1, CREC_FFT_REAL_FORWARD, CREC_ELEMENT_F64, 1, 6, 0, 0, 5, 1.0);
  f = fft(p, 1);
  crec_test_expect_range(p, f.input, "arg2", 0, 5 * 6 * 8);
  crec_test_expect_range(p, f.output, "arg3", 0, 5 * 4 * 16);

  /* the window starts at element 128, of 8 bytes */
  expect_fft(p, 2, CREC_FFT_FORWARD, CREC_ELEMENT_F32, 3, 2, 8, 16, 1, 1.0);
  f = fft(p, 2);
  crec_test_expect_range(p, f.input, "arg4", 128 * 8, 2 * 8 * 16 * 8);
  crec_test_expect_range(p, f.output, "arg4", 128 * 8, 2 * 8 * 16 * 8);
  cr_assert_eq(f.workspace_bytes, CREC_FFT_DEFAULT_WORKSPACE_MIN, "workspace_bytes 0 is the default");

  cr_assert_str_eq(crec_test_command(p, 3).name, "inverse");
  expect_fft(p, 3, CREC_FFT_REAL_INVERSE, CREC_ELEMENT_F64, 2, 3, 8, 0, 2, 1.0 / 24);
  f = fft(p, 3);
  crec_test_expect_range(p, f.input, "arg5", 0, 2 * 3 * 5 * 16);
  crec_test_expect_range(p, f.output, "arg6", 0, 2 * 3 * 8 * 8);
  crec_program_destroy(p);

  /* an odd last length keeps (n - 1)/2 + 1 frequencies: 7 reals, 4 complex */
  p = crec_test_lower_text("module {\n  func.func @main(%x: memref<7xf32>, %y: memref<4xcomplex<f32>>) {\n"
                           "    \"crec.fft\"(%x, %y) {fft_type = \"RFFT\", fft_length = [7]}\n"
                           "        : (memref<7xf32>, memref<4xcomplex<f32>>) -> ()\n"
                           "    return\n  }\n}\n");
  expect_fft(p, 0, CREC_FFT_REAL_FORWARD, CREC_ELEMENT_F32, 1, 7, 0, 0, 1, 1.0);
  crec_program_destroy(p);
}

/* Lowering `text` fails with `status` at `location`, the op `opname`, whose name the
 * message gives with `reason`; nothing is returned or leaked. */
static void expect_op_refused_at(const char *text, const char *location, const char *opname, crec_status status,
                                   const char *reason) {
  crec_lower_options o = CREC_LOWER_OPTIONS_INIT;
  o.filename = "bad.mlir";
  crec_program *p = NULL;
  int64_t live = crec_debug_live_objects();
  crec_status s = crec_lower_mlir_string(text, strlen(text), &o, &p);
  const char *e = crec_last_error();
  cr_assert_eq(s, status, "status %s, expected %s: %s", crec_status_name(s), crec_status_name(status), e);
  cr_assert_null(p, "a failed lowering returns no program");
  cr_assert_eq(crec_debug_live_objects(), live, "a failed lowering leaks");
  char where[96];
  snprintf(where, sizeof where, "%s: '%s': ", location, opname);
  cr_assert(strstr(e, where) != NULL, "message '%s' lacks the op's location and name '%s'", e, where);
  cr_assert(strstr(e, reason) != NULL, "message '%s' lacks '%s'", e, reason);
  cr_assert(strchr(e, '\n') == NULL, "message '%s' spans several lines", e);
}

static void expect_fft_refused_at(const char *text, const char *location, crec_status status, const char *reason) {
  expect_op_refused_at(text, location, "crec.fft", status, reason);
}

/* ... when the op is the first of FFT_MAIN's body: line 3, column 5 */
static void expect_fft_refused(const char *text, crec_status status, const char *reason) {
  expect_fft_refused_at(text, "bad.mlir:3:5", status, reason);
}

/* An entry taking `args` whose first op, on line 3, column 5, is `body`. */
#define FFT_MAIN(args, body) "module {\n  func.func @main(" args ") {\n" body "    return\n  }\n}\n"
#define C8x16 "memref<8x16xcomplex<f32>>"
#define FFT_ARGS "%x: " C8x16 ", %y: " C8x16
#define FFT_OP(attrs) "    \"crec.fft\"(%x, %y) " attrs " : (" C8x16 ", " C8x16 ") -> ()\n"

Test(lower_library, crec_fft_refuses_bad_attributes_at_the_op) {
  expect_fft_refused(FFT_MAIN(FFT_ARGS, FFT_OP("{fft_type = \"DFT\", fft_length = [8, 16]}")), CREC_ERR_MLIR,
                     "unknown fft_type 'DFT' (FFT, IFFT, RFFT or IRFFT, as XLA names them)");
  expect_fft_refused(FFT_MAIN(FFT_ARGS, FFT_OP("{fft_type = \"fft\", fft_length = [8, 16]}")), CREC_ERR_MLIR,
                     "unknown fft_type 'fft'");
  expect_fft_refused(FFT_MAIN(FFT_ARGS, FFT_OP("{fft_type = 4 : i64, fft_length = [8, 16]}")), CREC_ERR_MLIR,
                     "fft_type is 4; as a number it is XLA's FftType: 0 (FFT), 1 (IFFT), 2 (RFFT) or 3 (IRFFT)");
  expect_fft_refused(FFT_MAIN(FFT_ARGS, FFT_OP("{fft_type = 1.0 : f32, fft_length = [8, 16]}")), CREC_ERR_MLIR,
                     "fft_type must be a string, \"FFT\", \"IFFT\", \"RFFT\" or \"IRFFT\"");
  expect_fft_refused(FFT_MAIN(FFT_ARGS, FFT_OP("{fft_type = true, fft_length = [8, 16]}")), CREC_ERR_MLIR,
                     "fft_type must be a string");
  expect_fft_refused(FFT_MAIN(FFT_ARGS, FFT_OP("{fft_length = [8, 16]}")), CREC_ERR_MLIR,
                     "needs fft_type = \"FFT\", \"IFFT\", \"RFFT\" or \"IRFFT\"");
  expect_fft_refused(FFT_MAIN(FFT_ARGS, FFT_OP("{fft_type = \"FFT\"}")), CREC_ERR_MLIR,
                     "needs fft_length, the lengths it transforms");
  /* fft_length: 1 to 3 positive integers */
  expect_fft_refused(FFT_MAIN(FFT_ARGS, FFT_OP("{fft_type = \"FFT\", fft_length = [1, 1, 8, 16]}")), CREC_ERR_MLIR,
                     "fft_length has 4 lengths; an FFT transforms 1 to 3 dimensions");
  expect_fft_refused(FFT_MAIN(FFT_ARGS, FFT_OP("{fft_type = \"FFT\", fft_length = []}")), CREC_ERR_MLIR,
                     "fft_length has 0 lengths");
  expect_fft_refused(FFT_MAIN(FFT_ARGS, FFT_OP("{fft_type = \"FFT\", fft_length = array<i64>}")), CREC_ERR_MLIR,
                     "fft_length has 0 lengths");
  expect_fft_refused(FFT_MAIN(FFT_ARGS, FFT_OP("{fft_type = \"FFT\", fft_length = [8, 0]}")), CREC_ERR_MLIR,
                     "fft_length[1] is 0; every length must be positive");
  expect_fft_refused(FFT_MAIN(FFT_ARGS, FFT_OP("{fft_type = \"FFT\", fft_length = array<i64: -8, 16>}")),
                     CREC_ERR_MLIR, "fft_length[0] is -8; every length must be positive");
  expect_fft_refused(FFT_MAIN(FFT_ARGS, FFT_OP("{fft_type = \"FFT\", fft_length = [8, \"16\"]}")), CREC_ERR_MLIR,
                     "fft_length[1] is not an integer; fft_length must be a list of 1 to 3 integers, like [8, 16]");
  expect_fft_refused(FFT_MAIN(FFT_ARGS, FFT_OP("{fft_type = \"FFT\", fft_length = 16 : i64}")), CREC_ERR_MLIR,
                     "fft_length must be a list of 1 to 3 integers, like [8, 16] or array<i64: 8, 16>");
  expect_fft_refused(FFT_MAIN(FFT_ARGS, FFT_OP("{fft_type = \"FFT\", fft_length = dense<8> : tensor<1x1xi64>}")),
                     CREC_ERR_MLIR, "(a dense one is a tensor of rank 1 of i64 or i32)");
  /* the other attributes, the operands and results */
  expect_fft_refused(FFT_MAIN(FFT_ARGS, FFT_OP("{fft_type = \"FFT\", fft_lengths = [8, 16]}")), CREC_ERR_MLIR,
                     "unknown attribute 'fft_lengths' (it takes fft_type, fft_length, workspace_bytes, crec.name)");
  expect_fft_refused(FFT_MAIN(FFT_ARGS, FFT_OP("{fft_type = \"FFT\", fft_length = [8, 16], workspace_bytes = -1 : i64}")),
                     CREC_ERR_MLIR, "workspace_bytes is -1; it must be 0 (the default) or more");
  expect_fft_refused(FFT_MAIN(FFT_ARGS, "    \"crec.fft\"(%x) {fft_type = \"FFT\", fft_length = [8, 16]} : (" C8x16
                                        ") -> ()\n"),
                     CREC_ERR_MLIR, "takes two memref operands, the input and the output, but has 1");
  expect_fft_refused_at(FFT_MAIN(FFT_ARGS, "    %r = \"crec.fft\"(%x, %y) {fft_type = \"FFT\", fft_length = [8, 16]} : ("
                                           C8x16 ", " C8x16 ") -> i32\n"),
                        "bad.mlir:3:10", CREC_ERR_MLIR, "takes no results or regions");
}

Test(lower_library, crec_fft_refuses_operands_that_do_not_fit_the_transform) {
  /* element types: the complex and real sides, and cuFFT's precisions */
  expect_fft_refused(FFT_MAIN("%x: memref<8x16xf32>, %y: " C8x16,
                              "    \"crec.fft\"(%x, %y) {fft_type = \"FFT\", fft_length = [8, 16]}"
                              " : (memref<8x16xf32>, " C8x16 ") -> ()\n"),
                     CREC_ERR_MLIR, "the input has f32 elements, but the input of an FFT is complex (complex<f32> or "
                                    "complex<f64>): a real input is an RFFT's");
  expect_fft_refused(FFT_MAIN("%x: " C8x16 ", %y: memref<8x9xcomplex<f32>>",
                              "    \"crec.fft\"(%x, %y) {fft_type = \"RFFT\", fft_length = [8, 16]}"
                              " : (" C8x16 ", memref<8x9xcomplex<f32>>) -> ()\n"),
                     CREC_ERR_MLIR, "the input has complex<f32> elements, but the input of an RFFT is real (f32 or f64)");
  expect_fft_refused(FFT_MAIN("%x: memref<8x9xcomplex<f32>>, %y: memref<8x16xcomplex<f32>>",
                              "    \"crec.fft\"(%x, %y) {fft_type = \"IRFFT\", fft_length = [8, 16]}"
                              " : (memref<8x9xcomplex<f32>>, " C8x16 ") -> ()\n"),
                     CREC_ERR_MLIR, "the output has complex<f32> elements, but the output of an IRFFT is real");
  expect_fft_refused(FFT_MAIN("%x: memref<8x16xcomplex<f16>>, %y: " C8x16,
                              "    \"crec.fft\"(%x, %y) {fft_type = \"FFT\", fft_length = [8, 16]}"
                              " : (memref<8x16xcomplex<f16>>, " C8x16 ") -> ()\n"),
                     CREC_ERR_UNSUPPORTED, "the input has complex<f16> elements; an FFT takes complex<f32> or "
                                           "complex<f64>");
  expect_fft_refused(FFT_MAIN("%x: memref<8x16xi32>, %y: memref<8x9xcomplex<f32>>",
                              "    \"crec.fft\"(%x, %y) {fft_type = \"RFFT\", fft_length = [8, 16]}"
                              " : (memref<8x16xi32>, memref<8x9xcomplex<f32>>) -> ()\n"),
                     CREC_ERR_UNSUPPORTED, "the input has i32 elements");
  /* mixed precision */
  expect_fft_refused(FFT_MAIN("%x: " C8x16 ", %y: memref<8x16xcomplex<f64>>",
                              "    \"crec.fft\"(%x, %y) {fft_type = \"FFT\", fft_length = [8, 16]}"
                              " : (" C8x16 ", memref<8x16xcomplex<f64>>) -> ()\n"),
                     CREC_ERR_UNSUPPORTED, "mixed precision (the input complex<f32>, the output complex<f64>): an FFT "
                                           "reads and writes one precision, f32 or f64");
  expect_fft_refused(FFT_MAIN("%x: memref<8x16xf64>, %y: memref<8x9xcomplex<f32>>",
                              "    \"crec.fft\"(%x, %y) {fft_type = \"RFFT\", fft_length = [8, 16]}"
                              " : (memref<8x16xf64>, memref<8x9xcomplex<f32>>) -> ()\n"),
                     CREC_ERR_UNSUPPORTED, "mixed precision (the input f64, the output complex<f32>)");
  /* shapes: the trailing dimensions, the complex side of a real transform, the batch, the rank */
  expect_fft_refused(FFT_MAIN(FFT_ARGS, FFT_OP("{fft_type = \"FFT\", fft_length = [16, 8]}")), CREC_ERR_INVALID_ARGUMENT,
                     "shape mismatch: the input is 8x16, but an FFT with fft_length [16, 8] needs 16x8 as its trailing "
                     "dimensions (both sides of a complex transform are fft_length)");
  expect_fft_refused(FFT_MAIN("%x: memref<8x16xf32>, %y: " C8x16,
                              "    \"crec.fft\"(%x, %y) {fft_type = \"RFFT\", fft_length = [8, 16]}"
                              " : (memref<8x16xf32>, " C8x16 ") -> ()\n"),
                     CREC_ERR_INVALID_ARGUMENT, "shape mismatch: the output is 8x16, but an RFFT with fft_length [8, 16] "
                                                "needs 8x9 as its trailing dimensions (the complex side keeps "
                                                "fft_length[-1]/2 + 1 elements of its last dimension)");
  expect_fft_refused(FFT_MAIN("%x: memref<8x9xcomplex<f32>>, %y: memref<8x18xf32>",
                              "    \"crec.fft\"(%x, %y) {fft_type = \"IRFFT\", fft_length = [8, 16]}"
                              " : (memref<8x9xcomplex<f32>>, memref<8x18xf32>) -> ()\n"),
                     CREC_ERR_INVALID_ARGUMENT, "shape mismatch: the output is 8x18, but an IRFFT with fft_length "
                                                "[8, 16] needs 8x16 as its trailing dimensions (the real side's "
                                                "trailing dimensions are fft_length)");
  expect_fft_refused(FFT_MAIN(FFT_ARGS, FFT_OP("{fft_type = \"FFT\", fft_length = [4, 8, 16]}")),
                     CREC_ERR_INVALID_ARGUMENT, "shape mismatch: the input is 8x16, but an FFT with fft_length [4, 8, 16] "
                                                "needs 4x8x16");
  expect_fft_refused(FFT_MAIN("%x: memref<4x8x16xcomplex<f32>>, %y: memref<2x2x8x16xcomplex<f32>>",
                              "    \"crec.fft\"(%x, %y) {fft_type = \"FFT\", fft_length = [8, 16]}"
                              " : (memref<4x8x16xcomplex<f32>>, memref<2x2x8x16xcomplex<f32>>) -> ()\n"),
                     CREC_ERR_INVALID_ARGUMENT, "shape mismatch: the input's batch dimensions (before the 2 it "
                                                "transforms) are 4 but the output's 2x2; they must be the same");
  expect_fft_refused(FFT_MAIN("%x: " C8x16 ", %y: memref<3x8x16xcomplex<f32>>",
                              "    \"crec.fft\"(%x, %y) {fft_type = \"FFT\", fft_length = [8, 16]}"
                              " : (" C8x16 ", memref<3x8x16xcomplex<f32>>) -> ()\n"),
                     CREC_ERR_INVALID_ARGUMENT, "are none but the output's 3");
  /* static shapes, dense layouts, memrefs */
  expect_fft_refused(FFT_MAIN("%x: memref<?x16xcomplex<f32>>, %y: " C8x16,
                              "    \"crec.fft\"(%x, %y) {fft_type = \"FFT\", fft_length = [16]}"
                              " : (memref<?x16xcomplex<f32>>, " C8x16 ") -> ()\n"),
                     CREC_ERR_UNSUPPORTED, "the input has a dynamic size (dimension 0); an FFT needs static shapes");
  expect_fft_refused_at(FFT_MAIN("%x: memref<8x32xcomplex<f32>>, %y: " C8x16,
                              "    %v = memref.subview %x[0, 0] [8, 16] [1, 1]"
                              " : memref<8x32xcomplex<f32>> to memref<8x16xcomplex<f32>, strided<[32, 1]>>\n"
                              "    \"crec.fft\"(%y, %v) {fft_type = \"FFT\", fft_length = [8, 16]}"
                              " : (" C8x16 ", memref<8x16xcomplex<f32>, strided<[32, 1]>>) -> ()\n"),
                     "bad.mlir:4:5", CREC_ERR_UNSUPPORTED, "non-identity layout: the output has strides [32, 1]; an FFT reads and "
                                           "writes dense row-major memrefs");
  /* what only the builder sees comes through with the op's location: overlapping views,
   * host memory */
  expect_fft_refused_at(FFT_MAIN("%x: memref<3x16xcomplex<f32>>",
                              "    %a = memref.subview %x[0, 0] [2, 16] [1, 1]"
                              " : memref<3x16xcomplex<f32>> to memref<2x16xcomplex<f32>, strided<[16, 1]>>\n"
                              "    %b = memref.subview %x[1, 0] [2, 16] [1, 1]"
                              " : memref<3x16xcomplex<f32>> to memref<2x16xcomplex<f32>, strided<[16, 1], offset: 16>>\n"
                              "    \"crec.fft\"(%a, %b) {fft_type = \"FFT\", fft_length = [16]}"
                              " : (memref<2x16xcomplex<f32>, strided<[16, 1]>>,"
                              " memref<2x16xcomplex<f32>, strided<[16, 1], offset: 16>>) -> ()\n"),
                     "bad.mlir:5:5", CREC_ERR_INVALID_ARGUMENT, "crec_program_add_fft: fft 'fft': arguments 'input' and 'output' "
                                                "overlap in buffer 'arg0' without being the same range");
  expect_fft_refused(FFT_MAIN("%x: " C8x16 " {crec.memory = \"host\"}, %y: " C8x16,
                              FFT_OP("{fft_type = \"IFFT\", fft_length = [8, 16], crec.name = \"on host\"}")),
                     CREC_ERR_INVALID_ARGUMENT, "crec_program_add_fft: fft 'on host': argument 'input': buffer 'arg0' "
                                                "is host memory");
}

/* ---- Cholesky ---- */

static crec_cholesky cholesky(const crec_program *p, size_t index) {
  crec_cholesky d = CREC_CHOLESKY_INIT;
  EXPECT_OK(crec_command_get_cholesky(p, crec_program_command(p, index), &d));
  return d;
}

/* Cholesky `index` of `p`: its type, triangle, order and batch, and its workspace `ws`
 * of `ws_bytes`, the command's last operand. */
static crec_cholesky expect_cholesky(const crec_program *p, size_t index, crec_element type, int upper, uint64_t n,
                                     uint64_t batch, const char *ws, uint64_t ws_bytes) {
  crec_command_info c = crec_test_command(p, index);
  cr_assert_eq(c.kind, CREC_COMMAND_CHOLESKY, "command %zu is a %s, not a Cholesky factorization", index,
               crec_command_kind_name(c.kind));
  crec_cholesky d = cholesky(p, index);
  cr_assert_eq(d.type, type, "command %zu: type %s, expected %s", index, crec_element_name(d.type),
               crec_element_name(type));
  cr_assert_eq(d.upper, upper, "command %zu: upper %d, expected %d", index, d.upper, upper);
  cr_assert_eq(d.n, n, "command %zu: n %llu, expected %llu", index, (unsigned long long)d.n, (unsigned long long)n);
  cr_assert_eq(d.batch, batch, "command %zu: batch %llu, expected %llu", index, (unsigned long long)d.batch,
               (unsigned long long)batch);
  cr_assert_eq(d.workspace_bytes, ws_bytes, "command %zu: a workspace of %llu bytes, expected %llu", index,
               (unsigned long long)d.workspace_bytes, (unsigned long long)ws_bytes);
  cr_assert_eq(c.num_operands, 3, "a, info, the workspace");
  cr_assert_str_eq(crec_test_buffer_name(p, c.workspace), ws);
  expect_fft_workspace(p, index, ws);
  return d;
}

/* The buffer named `name`: a temporary of `size` bytes. */
static void expect_temporary(const crec_program *p, const char *name, uint64_t size) {
  crec_buffer b;
  EXPECT_OK(crec_program_find_buffer(p, name, &b));
  crec_buffer_info info;
  EXPECT_OK(crec_buffer_get_info(p, b, &info));
  cr_assert_eq(info.kind, CREC_BUFFER_TEMPORARY, "'%s' is a %s", name, crec_buffer_kind_name(info.kind));
  cr_assert_eq(info.size, size, "'%s' is %llu bytes, expected %llu", name, (unsigned long long)info.size,
               (unsigned long long)size);
}

Test(lower_library, crec_cholesky_factors_in_place_lower_by_default_with_an_info_temporary_when_absent) {
  crec_program *p = crec_test_lower_file("cholesky.mlir");
  cr_assert_eq(crec_program_command_count(p), 3);
  cr_assert_eq(crec_test_command(p, 0).kind, CREC_COMMAND_MEMCPY, "memref.copy keeps A: a copy first");

  /* 3 matrices of 16x16 f32 in %l, lower (the default), info in %info; 4·16·16·4 bytes is
   * less than 1 MiB, the default workspace */
  cr_assert_str_eq(crec_test_command(p, 1).name, "chol");
  crec_cholesky d = expect_cholesky(p, 1, CREC_ELEMENT_F32, 0, 16, 3, "chol.workspace", 1u << 20);
  crec_test_expect_range(p, d.a, "l", 0, 3 * 16 * 16 * 4);
  crec_test_expect_range(p, d.info, "info", 0, 3 * 4);
  expect_operand(p, 1, 0, "l", 0, 3 * 16 * 16 * 4, CREC_ACCESS_READ_WRITE);
  expect_operand(p, 1, 1, "info", 0, 3 * 4, CREC_ACCESS_WRITE);

  /* lower = false: U in the upper triangle; no info operand: a temporary of one i32 */
  cr_assert_str_eq(crec_test_command(p, 2).name, "upper");
  d = expect_cholesky(p, 2, CREC_ELEMENT_F64, 1, 8, 1, "upper.workspace", 65536);
  crec_test_expect_range(p, d.a, "b", 0, 8 * 8 * 8);
  crec_test_expect_range(p, d.info, "upper.info", 0, 4);
  expect_temporary(p, "upper.info", 4);
  expect_operand(p, 2, 0, "b", 0, 8 * 8 * 8, CREC_ACCESS_READ_WRITE);
  expect_operand(p, 2, 1, "upper.info", 0, 4, CREC_ACCESS_WRITE);

  /* the factorization reads what the copy wrote; nothing reads undefined bytes */
  crec_plan *plan = crec_test_plan(p, CREC_SCHEDULE_CONCURRENT);
  EXPECT_DEPS(plan, crec_program_command(p, 1), crec_program_command(p, 0));
  crec_plan_destroy(plan);
  cr_assert_eq(crec_program_warning_count(p), 0);
  crec_program_destroy(p);
}

Test(lower_library, crec_cholesky_batches_leading_dims_takes_info_in_any_shape_and_names_its_temporaries) {
  crec_program *p = crec_test_lower_text(
      "module {\n"
      "  func.func @main(%a: memref<2x3x4x4xf64>, %i: memref<2x3xi32>, %s: memref<5x5xf32>, %si: memref<i32>,\n"
      "                  %big: memref<4x8x8xf32>, %bi: memref<2x1xi32>, %x: memref<6x6xf32>,\n"
      "                  %taken: memref<1xi32> {crec.name = \"mine.info\"}) {\n"
      /* 0: 2x3 leading dims make a batch of 6; info in the batch's shape; lower = true said */
      "    \"crec.cholesky\"(%a, %i) {lower = true} : (memref<2x3x4x4xf64>, memref<2x3xi32>) -> ()\n"
      /* 1: one matrix, its info a memref of rank 0; lower = false as an i1 */
      "    \"crec.cholesky\"(%s, %si) {lower = 0 : i1, workspace_bytes = 0 : i64} : (memref<5x5xf32>, memref<i32>) -> ()\n"
      /* 2: matrices 1 and 2 of %big, a view without gaps, info of 2x1 */
      "    %two = memref.subview %big[1, 0, 0] [2, 8, 8] [1, 1, 1]\n"
      "        : memref<4x8x8xf32> to memref<2x8x8xf32, strided<[64, 8, 1], offset: 64>>\n"
      "    \"crec.cholesky\"(%two, %bi) : (memref<2x8x8xf32, strided<[64, 8, 1], offset: 64>>, memref<2x1xi32>) -> ()\n"
      /* 3, 4: no info and no name: cholesky.info, then cholesky.info2 */
      "    \"crec.cholesky\"(%x) : (memref<6x6xf32>) -> ()\n"
      "    \"crec.cholesky\"(%x) {lower = false} : (memref<6x6xf32>) -> ()\n"
      /* 5: a name whose .info is taken by an argument */
      "    \"crec.cholesky\"(%x) {crec.name = \"mine\"} : (memref<6x6xf32>) -> ()\n"
      "    return\n  }\n}\n");
  cr_assert_eq(crec_program_command_count(p), 6);
  crec_cholesky d = expect_cholesky(p, 0, CREC_ELEMENT_F64, 0, 4, 6, "cholesky.workspace", 1u << 20);
  crec_test_expect_range(p, d.a, "arg0", 0, 6 * 4 * 4 * 8);
  crec_test_expect_range(p, d.info, "arg1", 0, 6 * 4);

  d = expect_cholesky(p, 1, CREC_ELEMENT_F32, 1, 5, 1, "cholesky.workspace2", 1u << 20);
  crec_test_expect_range(p, d.a, "arg2", 0, 5 * 5 * 4);
  crec_test_expect_range(p, d.info, "arg3", 0, 4);

  /* the view starts at element 64, of 4 bytes */
  d = expect_cholesky(p, 2, CREC_ELEMENT_F32, 0, 8, 2, "cholesky.workspace3", 1u << 20);
  crec_test_expect_range(p, d.a, "arg4", 64 * 4, 2 * 8 * 8 * 4);
  crec_test_expect_range(p, d.info, "arg5", 0, 2 * 4);
  expect_operand(p, 2, 0, "arg4", 64 * 4, 2 * 8 * 8 * 4, CREC_ACCESS_READ_WRITE);

  d = expect_cholesky(p, 3, CREC_ELEMENT_F32, 0, 6, 1, "cholesky.workspace4", 1u << 20);
  crec_test_expect_range(p, d.info, "cholesky.info", 0, 4);
  expect_temporary(p, "cholesky.info", 4);
  d = expect_cholesky(p, 4, CREC_ELEMENT_F32, 1, 6, 1, "cholesky.workspace5", 1u << 20);
  crec_test_expect_range(p, d.info, "cholesky.info2", 0, 4);
  expect_temporary(p, "cholesky.info2", 4);
  cr_assert_str_eq(crec_test_command(p, 5).name, "mine");
  d = expect_cholesky(p, 5, CREC_ELEMENT_F32, 0, 6, 1, "mine.workspace", 1u << 20);
  crec_test_expect_range(p, d.info, "mine.info2", 0, 4);
  expect_temporary(p, "mine.info2", 4);
  /* the factorizations of %x are ordered by what they read and write */
  crec_plan *plan = crec_test_plan(p, CREC_SCHEDULE_CONCURRENT);
  EXPECT_DEPS(plan, crec_program_command(p, 4), crec_program_command(p, 3));
  EXPECT_DEPS(plan, crec_program_command(p, 5), crec_program_command(p, 4));
  crec_plan_destroy(plan);
  crec_program_destroy(p);

  /* in a device loop, its body's command; a batch of matrices of 1x1 */
  p = crec_test_lower_text("module {\n  func.func @main(%m: memref<7x1x1xf32>) {\n"
                           "    %c0 = arith.constant 0 : index\n    %c1 = arith.constant 1 : index\n"
                           "    %c3 = arith.constant 3 : index\n"
                           "    scf.for %k = %c0 to %c3 step %c1 {\n"
                           "      \"crec.cholesky\"(%m) {crec.name = \"again\"} : (memref<7x1x1xf32>) -> ()\n"
                           "    }\n    return\n  }\n}\n");
  crec_command loop = crec_program_command(p, 1);
  cr_assert_eq(crec_test_command(p, 1).kind, CREC_COMMAND_WHILE);
  size_t at = crec_program_command_count(p) - 1;
  d = expect_cholesky(p, at, CREC_ELEMENT_F32, 0, 1, 7, "again.workspace", 1u << 20);
  cr_assert_eq(crec_test_command(p, at).region.id, crec_command_region(p, loop, 1).id, "in the loop's body");
  crec_test_expect_range(p, d.info, "again.info", 0, 7 * 4);
  crec_program_destroy(p);
}

static void expect_cholesky_refused_at(const char *text, const char *location, crec_status status, const char *reason) {
  expect_op_refused_at(text, location, "crec.cholesky", status, reason);
}

/* ... when the op is the first of FFT_MAIN's body: line 3, column 5 */
static void expect_cholesky_refused(const char *text, crec_status status, const char *reason) {
  expect_cholesky_refused_at(text, "bad.mlir:3:5", status, reason);
}

#define M3 "memref<3x16x16xf32>"
#define CHOL_ARGS "%a: " M3 ", %i: memref<3xi32>"
#define CHOL_OP(attrs) "    \"crec.cholesky\"(%a, %i) " attrs " : (" M3 ", memref<3xi32>) -> ()\n"
/* the op on %a of type `at` alone (no info) */
#define CHOL_ALONE(at) FFT_MAIN("%a: " at, "    \"crec.cholesky\"(%a) : (" at ") -> ()\n")
/* the op on %a of M3 and %i of type `it` */
#define CHOL_INFO(it) FFT_MAIN("%a: " M3 ", %i: " it, "    \"crec.cholesky\"(%a, %i) : (" M3 ", " it ") -> ()\n")

Test(lower_library, crec_cholesky_refuses_bad_attributes_and_operand_counts_at_the_op) {
  expect_cholesky_refused(FFT_MAIN(CHOL_ARGS, CHOL_OP("{lower = 1 : i64}")), CREC_ERR_MLIR,
                          "lower must be a bool: lower = true (the lower triangle gets L, the default) or lower = false "
                          "(the upper triangle gets U)");
  expect_cholesky_refused(FFT_MAIN(CHOL_ARGS, CHOL_OP("{lower = \"true\"}")), CREC_ERR_MLIR, "lower must be a bool");
  expect_cholesky_refused(FFT_MAIN(CHOL_ARGS, CHOL_OP("{lower}")), CREC_ERR_MLIR, "lower must be a bool");
  expect_cholesky_refused(FFT_MAIN(CHOL_ARGS, CHOL_OP("{upper = true}")), CREC_ERR_MLIR,
                          "unknown attribute 'upper' (it takes lower, workspace_bytes, crec.name)");
  expect_cholesky_refused(FFT_MAIN(CHOL_ARGS, CHOL_OP("{workspace_bytes = -1 : i64}")), CREC_ERR_MLIR,
                          "workspace_bytes is -1; it must be 0 (the default) or more");
  expect_cholesky_refused(FFT_MAIN(CHOL_ARGS, CHOL_OP("{workspace_bytes = 1.0 : f32}")), CREC_ERR_MLIR,
                          "workspace_bytes must be an integer");
  /* operands and results */
  expect_cholesky_refused(FFT_MAIN(CHOL_ARGS, "    \"crec.cholesky\"() : () -> ()\n"), CREC_ERR_MLIR,
                          "takes one or two memref operands, the matrices 'a' and optionally 'info', but has 0");
  expect_cholesky_refused(FFT_MAIN(CHOL_ARGS ", %j: memref<3xi32>",
                                   "    \"crec.cholesky\"(%a, %i, %j) : (" M3 ", memref<3xi32>, memref<3xi32>) -> ()\n"),
                          CREC_ERR_MLIR, "takes one or two memref operands, the matrices 'a' and optionally 'info', "
                                         "but has 3");
  expect_cholesky_refused_at(FFT_MAIN(CHOL_ARGS, "    %r = \"crec.cholesky\"(%a, %i) : (" M3 ", memref<3xi32>) -> i32\n"),
                             "bad.mlir:3:10", CREC_ERR_MLIR, "takes no results or regions");
}

Test(lower_library, crec_cholesky_refuses_matrices_and_info_that_do_not_fit) {
  /* shapes: rank 2 or more, square */
  expect_cholesky_refused(CHOL_ALONE("memref<3x16x8xf32>"), CREC_ERR_INVALID_ARGUMENT,
                          "shape mismatch: 'a' is 3x16x8, but its last two dimensions must be equal (n x n matrices); "
                          "16x8 is not square");
  expect_cholesky_refused(CHOL_ALONE("memref<16xf32>"), CREC_ERR_INVALID_ARGUMENT,
                          "shape mismatch: 'a' has rank 1 (16), but a Cholesky factorization takes square matrices: "
                          "rank 2 or more, the last two dimensions n x n and the ones before them a batch");
  expect_cholesky_refused(CHOL_ALONE("memref<f32>"), CREC_ERR_INVALID_ARGUMENT, "'a' has rank 0 (a scalar)");
  /* element types: cuSOLVER's potrf in f32 or f64 */
  expect_cholesky_refused(CHOL_ALONE("memref<16x16xf16>"), CREC_ERR_UNSUPPORTED,
                          "'a' has f16 elements; a Cholesky factorization takes f32 or f64");
  expect_cholesky_refused(CHOL_ALONE("memref<16x16xi32>"), CREC_ERR_UNSUPPORTED, "'a' has i32 elements");
  expect_cholesky_refused(CHOL_ALONE("memref<16x16xcomplex<f32>>"), CREC_ERR_UNSUPPORTED,
                          "'a' has complex<f32> elements");
  expect_cholesky_refused(FFT_MAIN("%a: f32", "    \"crec.cholesky\"(%a) : (f32) -> ()\n"), CREC_ERR_UNSUPPORTED,
                          "'a' has type f32; it must be a memref");
  /* static shapes, dense layouts */
  expect_cholesky_refused(CHOL_ALONE("memref<?x16x16xf32>"), CREC_ERR_UNSUPPORTED,
                          "'a' has a dynamic size (dimension 0); a Cholesky factorization needs static shapes");
  expect_cholesky_refused_at(FFT_MAIN("%x: memref<8x16xf32>",
                                      "    %v = memref.subview %x[0, 0] [8, 8] [1, 1]"
                                      " : memref<8x16xf32> to memref<8x8xf32, strided<[16, 1]>>\n"
                                      "    \"crec.cholesky\"(%v) : (memref<8x8xf32, strided<[16, 1]>>) -> ()\n"),
                             "bad.mlir:4:5", CREC_ERR_UNSUPPORTED,
                             "non-identity layout: 'a' has strides [16, 1]; a Cholesky factorization reads and writes "
                             "dense row-major memrefs (an identity layout");
  /* info: one i32 per matrix, static and dense */
  expect_cholesky_refused(CHOL_INFO("memref<2xi32>"), CREC_ERR_INVALID_ARGUMENT,
                          "shape mismatch: 'info' holds 2 i32 (2), but 'a' is 3 matrices of 16x16 (3x16x16): it takes "
                          "one i32 per matrix");
  expect_cholesky_refused(CHOL_INFO("memref<3x2xi32>"), CREC_ERR_INVALID_ARGUMENT, "'info' holds 6 i32 (3x2)");
  expect_cholesky_refused(CHOL_INFO("memref<i32>"), CREC_ERR_INVALID_ARGUMENT, "'info' holds 1 i32 (a scalar)");
  expect_cholesky_refused(CHOL_INFO("memref<3xi64>"), CREC_ERR_UNSUPPORTED,
                          "'info' has i64 elements; it takes i32, one per matrix");
  expect_cholesky_refused(CHOL_INFO("memref<3xf32>"), CREC_ERR_UNSUPPORTED, "'info' has f32 elements");
  expect_cholesky_refused(CHOL_INFO("memref<3xui32>"), CREC_ERR_UNSUPPORTED, "'info' has ui32 elements");
  expect_cholesky_refused(CHOL_INFO("memref<?xi32>"), CREC_ERR_UNSUPPORTED,
                          "'info' has a dynamic size (dimension 0); a Cholesky factorization needs static shapes");
  expect_cholesky_refused(FFT_MAIN("%a: " M3 ", %i: i32", "    \"crec.cholesky\"(%a, %i) : (" M3 ", i32) -> ()\n"),
                          CREC_ERR_UNSUPPORTED, "'info' has type i32; it must be a memref");
  /* what only the builder sees comes through with the op's location: host memory */
  expect_cholesky_refused(FFT_MAIN("%a: " M3 " {crec.memory = \"host\"}, %i: memref<3xi32>",
                                   CHOL_OP("{crec.name = \"on host\"}")),
                          CREC_ERR_INVALID_ARGUMENT, "crec_program_add_cholesky: cholesky 'on host': argument 'a': "
                                                     "buffer 'arg0' is host memory");
}

/* ---- convolutions ---- */

static crec_conv conv(const crec_program *p, size_t index) {
  crec_conv d = CREC_CONV_INIT;
  EXPECT_OK(crec_command_get_conv(p, crec_program_command(p, index), &d));
  return d;
}

/* Convolution `index` of `p`: what it computes and its shape (sizes, strides and
 * dilations as "AxB" / "AxBxC" of the spatial dimensions), and its workspace `ws`,
 * the command's last operand. */
static crec_conv expect_conv(const crec_program *p, size_t index, crec_conv_kind kind, crec_element type,
                             crec_conv_layout layout, crec_conv_filter_layout filter_layout, uint32_t spatial,
                             uint64_t batch, uint64_t c, uint64_t k, uint64_t groups, const uint64_t *in,
                             const uint64_t *filter, const uint64_t *stride, const uint64_t *padding,
                             const uint64_t *dilation, const char *ws) {
  crec_command_info info = crec_test_command(p, index);
  cr_assert_eq(info.kind, CREC_COMMAND_CONV, "command %zu is a %s, not a convolution", index,
               crec_command_kind_name(info.kind));
  crec_conv d = conv(p, index);
  cr_assert_eq(d.kind, kind, "command %zu: kind %s, expected %s", index, crec_conv_kind_name(d.kind),
               crec_conv_kind_name(kind));
  cr_assert_eq(d.type, type, "command %zu: type %s, expected %s", index, crec_element_name(d.type),
               crec_element_name(type));
  cr_assert_eq(d.layout, layout, "command %zu: layout %d, expected %d", index, d.layout, layout);
  cr_assert_eq(d.filter_layout, filter_layout, "command %zu: filter layout %d, expected %d", index, d.filter_layout,
               filter_layout);
  cr_assert_eq(d.spatial, spatial, "command %zu: spatial %u, expected %u", index, d.spatial, spatial);
  cr_assert_eq(d.batch, batch, "command %zu: batch %llu, expected %llu", index, (unsigned long long)d.batch,
               (unsigned long long)batch);
  cr_assert_eq(d.in_channels, c, "command %zu: C %llu, expected %llu", index, (unsigned long long)d.in_channels,
               (unsigned long long)c);
  cr_assert_eq(d.out_channels, k, "command %zu: K %llu, expected %llu", index, (unsigned long long)d.out_channels,
               (unsigned long long)k);
  cr_assert_eq(d.groups, groups, "command %zu: groups %llu, expected %llu", index, (unsigned long long)d.groups,
               (unsigned long long)groups);
  for (uint32_t i = 0; i < 3; i++) {
    uint64_t want[5] = {i < spatial ? in[i] : 0, i < spatial ? filter[i] : 0, i < spatial ? stride[i] : 0,
                        i < spatial ? padding[i] : 0, i < spatial ? dilation[i] : 0};
    uint64_t have[5] = {d.in_size[i], d.filter_size[i], d.stride[i], d.padding[i], d.dilation[i]};
    static const char *const what[5] = {"in_size", "filter_size", "stride", "padding", "dilation"};
    for (int j = 0; j < 5; j++)
      cr_assert_eq(have[j], want[j], "command %zu: %s[%u] is %llu, expected %llu", index, what[j], i,
                   (unsigned long long)have[j], (unsigned long long)want[j]);
  }
  cr_assert_str_eq(crec_test_buffer_name(p, info.workspace), ws);
  expect_fft_workspace(p, index, ws);
  return d;
}

#define V(...) ((const uint64_t[]){__VA_ARGS__})

Test(lower_library, crec_conv_and_linalg_convolutions_after_a_zero_fill_lower_to_cudnn_convolutions) {
  crec_program *p = crec_test_lower_file("conv.mlir");
  cr_assert_eq(crec_program_command_count(p), 7);
  /* the linalg.fill of 0: a memset the convolution follows */
  cr_assert_eq(crec_test_command(p, 0).kind, CREC_COMMAND_MEMSET);
  /* stem: conv_2d_nhwc_hwcf, NHWC with linalg's HWCF filter (HWIO), stride 2: 9x9 to 4x4 */
  cr_assert_str_eq(crec_test_command(p, 1).name, "stem");
  crec_conv d = expect_conv(p, 1, CREC_CONV_FORWARD, CREC_ELEMENT_F32, CREC_CONV_NHWC, CREC_CONV_FILTER_HWIO, 2, 2, 3,
                            8, 1, V(9, 9), V(3, 3), V(2, 2), V(0, 0), V(1, 1), "stem.workspace");
  crec_test_expect_range(p, d.input, "x", 0, 2 * 9 * 9 * 3 * 4);
  crec_test_expect_range(p, d.filter, "w", 0, 3 * 3 * 3 * 8 * 4);
  crec_test_expect_range(p, d.output, "y", 0, 2 * 4 * 4 * 8 * 4);
  cr_assert_eq(d.bias.buffer.id, 0);
  cr_assert_eq(d.activation, CREC_CONV_ACTIVATION_NONE);
  cr_assert_eq(d.algorithm, CREC_CONV_HEURISTICS);
  cr_assert_eq(d.workspace_bytes, CREC_CONV_DEFAULT_WORKSPACE);
  expect_operand(p, 1, 0, "x", 0, 2 * 9 * 9 * 3 * 4, CREC_ACCESS_READ);
  expect_operand(p, 1, 1, "w", 0, 3 * 3 * 3 * 8 * 4, CREC_ACCESS_READ);
  expect_operand(p, 1, 2, "y", 0, 2 * 4 * 4 * 8 * 4, CREC_ACCESS_WRITE);

  /* depthwise_conv_2d_nchw_chw in f16 after a gpu.memset: groups = C = K = 4, the chw filter
   * is K_FIRST with C/groups = 1; dilation 2: 12 - 2·2 = 8 */
  cr_assert_eq(crec_test_command(p, 2).kind, CREC_COMMAND_MEMSET);
  d = expect_conv(p, 3, CREC_CONV_FORWARD, CREC_ELEMENT_F16, CREC_CONV_NCHW, CREC_CONV_FILTER_K_FIRST, 2, 1, 4, 4, 4,
                  V(12, 12), V(3, 3), V(1, 1), V(0, 0), V(2, 2), "depthwise.workspace");
  crec_test_expect_range(p, d.filter, "k", 0, 4 * 3 * 3 * 2);
  crec_test_expect_range(p, d.output, "edges", 0, 4 * 8 * 8 * 2);

  /* crec.conv forward: padding 1, the bias and ReLU */
  d = expect_conv(p, 4, CREC_CONV_FORWARD, CREC_ELEMENT_F32, CREC_CONV_NCHW, CREC_CONV_FILTER_K_FIRST, 2, 2, 3, 8, 1,
                  V(16, 16), V(3, 3), V(1, 1), V(1, 1), V(1, 1), "forward.workspace");
  crec_test_expect_range(p, d.bias, "b", 0, 8 * 4);
  cr_assert_eq(d.activation, CREC_CONV_ACTIVATION_RELU);
  cr_assert_eq(crec_test_command(p, 4).num_operands, 5, "input, filter, output, bias, workspace");
  expect_operand(p, 4, 2, "out", 0, 2 * 8 * 16 * 16 * 4, CREC_ACCESS_WRITE);
  expect_operand(p, 4, 3, "b", 0, 8 * 4, CREC_ACCESS_READ);
  /* backward_data writes the input (dx), XLA's [[1, 1], [1, 1]] padding */
  d = expect_conv(p, 5, CREC_CONV_BACKWARD_DATA, CREC_ELEMENT_F32, CREC_CONV_NCHW, CREC_CONV_FILTER_K_FIRST, 2, 2, 3, 8,
                  1, V(16, 16), V(3, 3), V(1, 1), V(1, 1), V(1, 1), "dgrad.workspace");
  expect_operand(p, 5, 0, "da", 0, 2 * 3 * 16 * 16 * 4, CREC_ACCESS_WRITE);
  expect_operand(p, 5, 2, "out", 0, 2 * 8 * 16 * 16 * 4, CREC_ACCESS_READ);
  /* backward_filter writes the filter (dw), by a timed search in a 1 MiB workspace */
  d = expect_conv(p, 6, CREC_CONV_BACKWARD_FILTER, CREC_ELEMENT_F32, CREC_CONV_NCHW, CREC_CONV_FILTER_K_FIRST, 2, 2, 3,
                  8, 1, V(16, 16), V(3, 3), V(1, 1), V(1, 1), V(1, 1), "wgrad.workspace");
  cr_assert_eq(d.algorithm, CREC_CONV_SEARCH);
  cr_assert_eq(d.workspace_bytes, 1u << 20);
  expect_operand(p, 6, 1, "df", 0, 8 * 3 * 3 * 3 * 4, CREC_ACCESS_WRITE);
  /* each convolution follows its fill; the backward passes read what the forward one wrote */
  crec_plan *plan = crec_test_plan(p, CREC_SCHEDULE_CONCURRENT);
  EXPECT_DEPS(plan, crec_program_command(p, 1), crec_program_command(p, 0));
  crec_plan_destroy(plan);
  cr_assert_eq(crec_program_warning_count(p), 0);
  crec_program_destroy(p);
}

/* An entry of `args` that zero-fills %y (of type `yt`) with linalg.fill, then runs `conv`. */
#define CONV_MAIN(args, yt, conv)                                                                                    \
  "module {\n  func.func @main(" args ") {\n    %z = arith.constant 0.0 : f32\n"                                   \
  "    linalg.fill ins(%z : f32) outs(%y : " yt ")\n" conv "    return\n  }\n}\n"

Test(lower_library, every_linalg_convolution_layout_maps_onto_cudnn_tensors_as_they_lie_in_memory) {
  /* 0, 1: conv_2d_nchw_fchw (K_FIRST) with strides [1, 2] and dilations [2, 1] as dense arrays */
  crec_program *p = crec_test_lower_text(CONV_MAIN(
      "%x: memref<2x3x11x12xf32>, %w: memref<5x3x3x3xf32>, %y: memref<2x5x7x5xf32>", "memref<2x5x7x5xf32>",
      "    linalg.conv_2d_nchw_fchw {strides = dense<[1, 2]> : tensor<2xi64>, dilations = dense<[2, 1]> : tensor<2xi64>}\n"
      "        ins(%x, %w : memref<2x3x11x12xf32>, memref<5x3x3x3xf32>) outs(%y : memref<2x5x7x5xf32>)\n"));
  cr_assert_eq(crec_program_command_count(p), 2);
  crec_conv d = expect_conv(p, 1, CREC_CONV_FORWARD, CREC_ELEMENT_F32, CREC_CONV_NCHW, CREC_CONV_FILTER_K_FIRST, 2, 2,
                            3, 5, 1, V(11, 12), V(3, 3), V(1, 2), V(0, 0), V(2, 1), "conv.workspace");
  crec_test_expect_range(p, d.output, "arg2", 0, 2 * 5 * 7 * 5 * 4);
  crec_program_destroy(p);

  /* conv_2d_nhwc_fhwc: NHWC, filter K, H, W, C: K_FIRST; bf16 through gpu.memset */
  p = crec_test_lower_text(
      "module {\n  func.func @main(%x: memref<1x6x6x4xbf16>, %w: memref<2x3x3x4xbf16>, %y: memref<1x4x4x2xbf16>) {\n"
      "    %z = arith.constant 0.0 : bf16\n    gpu.memset %y, %z : memref<1x4x4x2xbf16>, bf16\n"
      "    linalg.conv_2d_nhwc_fhwc ins(%x, %w : memref<1x6x6x4xbf16>, memref<2x3x3x4xbf16>)"
      " outs(%y : memref<1x4x4x2xbf16>)\n    return\n  }\n}\n");
  expect_conv(p, 1, CREC_CONV_FORWARD, CREC_ELEMENT_BF16, CREC_CONV_NHWC, CREC_CONV_FILTER_K_FIRST, 2, 1, 4, 2, 1,
              V(6, 6), V(3, 3), V(1, 1), V(0, 0), V(1, 1), "conv.workspace");
  crec_program_destroy(p);

  /* the 3-D ones: ndhwc_dhwcf (HWIO) and ncdhw_fcdhw (K_FIRST) */
  p = crec_test_lower_text(CONV_MAIN(
      "%x: memref<1x5x6x7x2xf32>, %w: memref<2x2x3x2x4xf32>, %y: memref<1x4x5x3x4xf32>", "memref<1x4x5x3x4xf32>",
      "    linalg.conv_3d_ndhwc_dhwcf {strides = dense<[1, 1, 2]> : tensor<3xi64>}\n"
      "        ins(%x, %w : memref<1x5x6x7x2xf32>, memref<2x2x3x2x4xf32>) outs(%y : memref<1x4x5x3x4xf32>)\n"));
  expect_conv(p, 1, CREC_CONV_FORWARD, CREC_ELEMENT_F32, CREC_CONV_NHWC, CREC_CONV_FILTER_HWIO, 3, 1, 2, 4, 1,
              V(5, 6, 7), V(2, 2, 3), V(1, 1, 2), V(0, 0, 0), V(1, 1, 1), "conv.workspace");
  crec_program_destroy(p);
  p = crec_test_lower_text(CONV_MAIN(
      "%x: memref<2x3x4x4x4xf32>, %w: memref<6x3x2x2x2xf32>, %y: memref<2x6x3x3x3xf32>", "memref<2x6x3x3x3xf32>",
      "    linalg.conv_3d_ncdhw_fcdhw ins(%x, %w : memref<2x3x4x4x4xf32>, memref<6x3x2x2x2xf32>)"
      " outs(%y : memref<2x6x3x3x3xf32>)\n"));
  expect_conv(p, 1, CREC_CONV_FORWARD, CREC_ELEMENT_F32, CREC_CONV_NCHW, CREC_CONV_FILTER_K_FIRST, 3, 2, 3, 6, 1,
              V(4, 4, 4), V(2, 2, 2), V(1, 1, 1), V(0, 0, 0), V(1, 1, 1), "conv.workspace");
  crec_program_destroy(p);

  /* depthwise NHWC: the hwc filter is HWIO with C/groups = 1; hwcm (a channel multiplier M)
   * is HWIO with K = C·M, output channel c·M + m as nhwcm lays it out */
  p = crec_test_lower_text(CONV_MAIN(
      "%x: memref<1x5x5x6xf32>, %w: memref<3x3x6xf32>, %y: memref<1x3x3x6xf32>", "memref<1x3x3x6xf32>",
      "    linalg.depthwise_conv_2d_nhwc_hwc ins(%x, %w : memref<1x5x5x6xf32>, memref<3x3x6xf32>)"
      " outs(%y : memref<1x3x3x6xf32>)\n"));
  expect_conv(p, 1, CREC_CONV_FORWARD, CREC_ELEMENT_F32, CREC_CONV_NHWC, CREC_CONV_FILTER_HWIO, 2, 1, 6, 6, 6,
              V(5, 5), V(3, 3), V(1, 1), V(0, 0), V(1, 1), "conv.workspace");
  crec_program_destroy(p);
  p = crec_test_lower_text(CONV_MAIN(
      "%x: memref<2x5x5x3xf32>, %w: memref<3x3x3x2xf32>, %y: memref<2x3x3x3x2xf32>", "memref<2x3x3x3x2xf32>",
      "    linalg.depthwise_conv_2d_nhwc_hwcm ins(%x, %w : memref<2x5x5x3xf32>, memref<3x3x3x2xf32>)"
      " outs(%y : memref<2x3x3x3x2xf32>)\n"));
  d = expect_conv(p, 1, CREC_CONV_FORWARD, CREC_ELEMENT_F32, CREC_CONV_NHWC, CREC_CONV_FILTER_HWIO, 2, 2, 3, 6, 3,
                  V(5, 5), V(3, 3), V(1, 1), V(0, 0), V(1, 1), "conv.workspace");
  crec_test_expect_range(p, d.output, "arg2", 0, 2 * 3 * 3 * 3 * 2 * 4);
  crec_program_destroy(p);
  p = crec_test_lower_text(CONV_MAIN(
      "%x: memref<1x2x4x4x4xf32>, %w: memref<2x2x2x2xf32>, %y: memref<1x2x3x3x3xf32>", "memref<1x2x3x3x3xf32>",
      "    linalg.depthwise_conv_3d_ncdhw_cdhw ins(%x, %w : memref<1x2x4x4x4xf32>, memref<2x2x2x2xf32>)"
      " outs(%y : memref<1x2x3x3x3xf32>)\n"));
  expect_conv(p, 1, CREC_CONV_FORWARD, CREC_ELEMENT_F32, CREC_CONV_NCHW, CREC_CONV_FILTER_K_FIRST, 3, 1, 2, 2, 2,
              V(4, 4, 4), V(2, 2, 2), V(1, 1, 1), V(0, 0, 0), V(1, 1, 1), "conv.workspace");
  crec_program_destroy(p);

  /* grouped: ngchw_gfchw is cuDNN's grouped NCHW (K = G·F, C = G·C/groups); fgchw the same
   * bytes when each group has one filter */
  p = crec_test_lower_text(CONV_MAIN(
      "%x: memref<1x2x3x5x5xf32>, %w: memref<2x4x3x3x3xf32>, %y: memref<1x2x4x3x3xf32>", "memref<1x2x4x3x3xf32>",
      "    linalg.conv_2d_ngchw_gfchw ins(%x, %w : memref<1x2x3x5x5xf32>, memref<2x4x3x3x3xf32>)"
      " outs(%y : memref<1x2x4x3x3xf32>)\n"));
  expect_conv(p, 1, CREC_CONV_FORWARD, CREC_ELEMENT_F32, CREC_CONV_NCHW, CREC_CONV_FILTER_K_FIRST, 2, 1, 6, 8, 2,
              V(5, 5), V(3, 3), V(1, 1), V(0, 0), V(1, 1), "conv.workspace");
  crec_program_destroy(p);
  p = crec_test_lower_text(CONV_MAIN(
      "%x: memref<1x2x3x5x5xf32>, %w: memref<1x2x3x3x3xf32>, %y: memref<1x2x1x3x3xf32>", "memref<1x2x1x3x3xf32>",
      "    linalg.conv_2d_ngchw_fgchw ins(%x, %w : memref<1x2x3x5x5xf32>, memref<1x2x3x3x3xf32>)"
      " outs(%y : memref<1x2x1x3x3xf32>)\n"));
  expect_conv(p, 1, CREC_CONV_FORWARD, CREC_ELEMENT_F32, CREC_CONV_NCHW, CREC_CONV_FILTER_K_FIRST, 2, 1, 6, 2, 2,
              V(5, 5), V(3, 3), V(1, 1), V(0, 0), V(1, 1), "conv.workspace");
  crec_program_destroy(p);

  /* 1-D ones are 2-D over 1 x W; linalg.conv_2d has no batch or channels: N = C = K = 1 */
  p = crec_test_lower_text(CONV_MAIN(
      "%x: memref<2x10x3xf32>, %w: memref<3x3x4xf32>, %y: memref<2x4x4xf32>", "memref<2x4x4xf32>",
      "    linalg.conv_1d_nwc_wcf {strides = dense<2> : tensor<1xi64>}\n"
      "        ins(%x, %w : memref<2x10x3xf32>, memref<3x3x4xf32>) outs(%y : memref<2x4x4xf32>)\n"));
  expect_conv(p, 1, CREC_CONV_FORWARD, CREC_ELEMENT_F32, CREC_CONV_NHWC, CREC_CONV_FILTER_HWIO, 2, 2, 3, 4, 1,
              V(1, 10), V(1, 3), V(1, 2), V(0, 0), V(1, 1), "conv.workspace");
  crec_program_destroy(p);
  p = crec_test_lower_text(CONV_MAIN(
      "%x: memref<6x7xf32>, %w: memref<2x3xf32>, %y: memref<5x5xf32>", "memref<5x5xf32>",
      "    linalg.conv_2d ins(%x, %w : memref<6x7xf32>, memref<2x3xf32>) outs(%y : memref<5x5xf32>)\n"));
  expect_conv(p, 1, CREC_CONV_FORWARD, CREC_ELEMENT_F32, CREC_CONV_NCHW, CREC_CONV_FILTER_K_FIRST, 2, 1, 1, 1, 1,
              V(6, 7), V(2, 3), V(1, 1), V(0, 0), V(1, 1), "conv.workspace");
  crec_program_destroy(p);
}

Test(lower_library, a_linalg_convolution_follows_a_zero_fill_that_always_runs_just_before_it) {
  /* a fill of a larger view around it, then the conv inside an scf.if; a fill and a conv in
   * each copy of an unrolled loop body, and in a device loop's body */
  crec_program *p = crec_test_lower_text(
      "module {\n  func.func @main(%x: memref<1x1x4x4xf32>, %w: memref<1x1x3x3xf32>, %all: memref<3x1x1x2x2xf32>,\n"
      "                  %flag: memref<1xi8>) {\n"
      "    %z = arith.constant 0.0 : f32\n    %c0 = arith.constant 0 : index\n    %c1 = arith.constant 1 : index\n"
      "    %c3 = arith.constant 3 : index\n"
      "    %y = memref.subview %all[1, 0, 0, 0, 0] [1, 1, 1, 2, 2] [1, 1, 1, 1, 1] : memref<3x1x1x2x2xf32> to"
      " memref<1x1x2x2xf32, strided<[4, 4, 2, 1], offset: 4>>\n"
      "    linalg.fill ins(%z : f32) outs(%all : memref<3x1x1x2x2xf32>)\n"
      "    %b = memref.load %flag[%c0] : memref<1xi8>\n    %t = arith.trunci %b : i8 to i1\n"
      "    scf.if %t {\n"
      "      linalg.conv_2d_nchw_fchw {crec.name = \"in_if\"} ins(%x, %w : memref<1x1x4x4xf32>, memref<1x1x3x3xf32>)"
      " outs(%y : memref<1x1x2x2xf32, strided<[4, 4, 2, 1], offset: 4>>)\n"
      "    }\n"
      "    scf.for %i = %c0 to %c3 step %c1 {\n"
      "      %v = memref.subview %all[%i, 0, 0, 0, 0] [1, 1, 1, 2, 2] [1, 1, 1, 1, 1] : memref<3x1x1x2x2xf32> to"
      " memref<1x1x2x2xf32, strided<[4, 4, 2, 1], offset: ?>>\n"
      "      linalg.fill ins(%z : f32) outs(%v : memref<1x1x2x2xf32, strided<[4, 4, 2, 1], offset: ?>>)\n"
      "      linalg.conv_2d_nchw_fchw {crec.name = \"unrolled\"} ins(%x, %w : memref<1x1x4x4xf32>,"
      " memref<1x1x3x3xf32>) outs(%v : memref<1x1x2x2xf32, strided<[4, 4, 2, 1], offset: ?>>)\n"
      "    }\n"
      "    scf.for %i = %c0 to %c3 step %c1 {\n"
      "      linalg.fill ins(%z : f32) outs(%y : memref<1x1x2x2xf32, strided<[4, 4, 2, 1], offset: 4>>)\n"
      "      linalg.conv_2d_nchw_fchw {crec.name = \"looped\"} ins(%x, %w : memref<1x1x4x4xf32>,"
      " memref<1x1x3x3xf32>) outs(%y : memref<1x1x2x2xf32, strided<[4, 4, 2, 1], offset: 4>>)\n"
      "    }\n"
      "    return\n  }\n}\n");
  size_t convs = 0, n = crec_program_command_count(p);
  for (size_t i = 0; i < n; i++) {
    crec_command_info c = crec_test_command(p, i);
    if (c.kind != CREC_COMMAND_CONV) continue;
    crec_conv d = conv(p, i);
    uint64_t at = strcmp(c.name, "unrolled") == 0 ? (uint64_t)(convs - 1) * 16 : 16;
    crec_test_expect_range(p, d.output, "arg2", at, 16);
    convs++;
  }
  cr_assert_eq(convs, 5, "in_if, three unrolled copies, looped");
  crec_program_destroy(p);
}

#define NCHW_ARGS "%x: memref<1x2x5x5xf32>, %w: memref<3x2x3x3xf32>, %y: memref<1x3x3x3xf32>"
#define NCHW_Y "memref<1x3x3x3xf32>"
#define NCHW_CONV(attrs) \
  "    linalg.conv_2d_nchw_fchw " attrs " ins(%x, %w : memref<1x2x5x5xf32>, memref<3x2x3x3xf32>) outs(%y : " NCHW_Y ")\n"
#define ACCUMULATES "linalg's convolutions accumulate into their output (out += conv) but cuDNN's overwrite it (out = conv), " \
                    "so crec lowers one only right after a zero fill of its whole output: "
#define FIX "; zero it just before (linalg.fill or gpu.memset of 0 over the whole output) or write \"crec.conv\", which overwrites"

Test(lower_library, a_linalg_convolution_without_a_zero_fill_just_before_it_is_refused) {
  const char *conv_op = "linalg.conv_2d_nchw_fchw";
  /* nothing wrote the output (an entry argument: the caller's bytes) */
  expect_op_refused_at(FFT_MAIN(NCHW_ARGS, NCHW_CONV("")), "bad.mlir:3:5", conv_op, CREC_ERR_UNSUPPORTED,
                         ACCUMULATES "nothing writes 'arg2' before it" FIX);
  /* a fill with another value */
  expect_op_refused_at(FFT_MAIN(NCHW_ARGS, "    %one = arith.constant 1.0 : f32\n"
                                             "    linalg.fill ins(%one : f32) outs(%y : " NCHW_Y ")\n" NCHW_CONV("")),
                         "bad.mlir:5:5", conv_op, CREC_ERR_UNSUPPORTED,
                         ACCUMULATES "the last write of 'arg2' before it is 'linalg.fill' at bad.mlir:4:5, not a fill "
                                     "with zero" FIX);
  /* another write after the fill */
  expect_op_refused_at(CONV_MAIN(NCHW_ARGS ", %src: " NCHW_Y, NCHW_Y,
                                   "    memref.copy %src, %y : " NCHW_Y " to " NCHW_Y "\n" NCHW_CONV("")),
                         "bad.mlir:6:5", conv_op, CREC_ERR_UNSUPPORTED,
                         "the last write of 'arg2' before it is 'memref.copy' at bad.mlir:5:5");
  /* a second convolution into the same output would add to the first */
  expect_op_refused_at(CONV_MAIN(NCHW_ARGS, NCHW_Y, NCHW_CONV("") NCHW_CONV("")), "bad.mlir:6:5", conv_op,
                         CREC_ERR_UNSUPPORTED,
                         "the last write of 'arg2' before it is 'linalg.conv_2d_nchw_fchw' at bad.mlir:5:5");
  /* a fill of part of the output */
  expect_op_refused_at(
      FFT_MAIN(NCHW_ARGS, "    %z = arith.constant 0.0 : f32\n"
                          "    %v = memref.subview %y[0, 0, 0, 0] [1, 1, 3, 3] [1, 1, 1, 1] : " NCHW_Y
                          " to memref<1x1x3x3xf32, strided<[27, 9, 3, 1]>>\n"
                          "    linalg.fill ins(%z : f32) outs(%v : memref<1x1x3x3xf32, strided<[27, 9, 3, 1]>>)\n"
                          NCHW_CONV("")),
      "bad.mlir:6:5", conv_op, CREC_ERR_UNSUPPORTED,
      ACCUMULATES "the zero fill at bad.mlir:5:5 writes bytes [0, 36) of 'arg2', not all of the output's [0, 108)" FIX);
  /* a fill in a branch that may not run */
  expect_op_refused_at(
      FFT_MAIN(NCHW_ARGS ", %flag: memref<1xi8>",
               "    %z = arith.constant 0.0 : f32\n    %c0 = arith.constant 0 : index\n"
               "    %b = memref.load %flag[%c0] : memref<1xi8>\n    %t = arith.trunci %b : i8 to i1\n"
               "    scf.if %t {\n      linalg.fill ins(%z : f32) outs(%y : " NCHW_Y ")\n    }\n" NCHW_CONV("")),
      "bad.mlir:10:5", conv_op, CREC_ERR_UNSUPPORTED,
      "the zero fill at bad.mlir:8:7 is inside a branch or loop that does not hold this op, so it may not run before it");
  /* a loop that the fill comes before: the second iteration would accumulate */
  expect_op_refused_at(
      CONV_MAIN(NCHW_ARGS, NCHW_Y,
                "    %c0 = arith.constant 0 : index\n    %c1 = arith.constant 1 : index\n"
                "    %c4 = arith.constant 4 : index\n    scf.for %i = %c0 to %c4 step %c1 {\n  " NCHW_CONV("")
                "    }\n"),
      "bad.mlir:9:7", conv_op, CREC_ERR_UNSUPPORTED,
      "it runs in a loop ('scf.for' at bad.mlir:8:5) that the zero fill at bad.mlir:4:5 comes before, so each "
      "iteration after the first would add to the last one's");
}

Test(lower_library, linalg_convolutions_refuse_what_cudnn_cannot_compute_as_linalg_does) {
  const char *conv_op = "linalg.conv_2d_nchw_fchw";
  /* mixed element types: linalg promotes, crec's convolution has one type */
  expect_op_refused_at(
      CONV_MAIN("%x: memref<1x2x5x5xf16>, %w: memref<3x2x3x3xf16>, %y: " NCHW_Y, NCHW_Y,
                "    linalg.conv_2d_nchw_fchw ins(%x, %w : memref<1x2x5x5xf16>, memref<3x2x3x3xf16>) outs(%y : " NCHW_Y
                ")\n"),
      "bad.mlir:5:5", conv_op, CREC_ERR_UNSUPPORTED,
      "mixed element types (the input f16, the output f32): crec's convolution reads and writes one element type");
  expect_op_refused_at(
      FFT_MAIN("%x: memref<1x2x5x5xi32>, %w: memref<3x2x3x3xi32>, %y: memref<1x3x3x3xi32>",
               "    linalg.conv_2d_nchw_fchw ins(%x, %w : memref<1x2x5x5xi32>, memref<3x2x3x3xi32>)"
               " outs(%y : memref<1x3x3x3xi32>)\n"),
      "bad.mlir:3:5", conv_op, CREC_ERR_UNSUPPORTED, "the input has i32 elements; a convolution takes f32, f16 or bf16");
  /* an input larger than the output needs: linalg reads a part of it, cuDNN all */
  expect_op_refused_at(
      CONV_MAIN("%x: memref<1x2x7x5xf32>, %w: memref<3x2x3x3xf32>, %y: " NCHW_Y, NCHW_Y,
                "    linalg.conv_2d_nchw_fchw ins(%x, %w : memref<1x2x7x5xf32>, memref<3x2x3x3xf32>) outs(%y : " NCHW_Y
                ")\n"),
      "bad.mlir:5:5", conv_op, CREC_ERR_INVALID_ARGUMENT,
      "shape mismatch: the output's spatial sizes are 3x3, but an input of 7x5 with a filter of 3x3, strides [1, 1], "
      "padding [0, 0] and dilations [1, 1] gives 5x3 ((in + 2·padding - dilation·(filter - 1) - 1) / stride + 1): "
      "cuDNN convolves the whole input, linalg only the part the output needs");
  /* dynamic shapes, views with gaps */
  expect_op_refused_at(
      CONV_MAIN("%x: memref<?x2x5x5xf32>, %w: memref<3x2x3x3xf32>, %y: memref<?x3x3x3xf32>", "memref<?x3x3x3xf32>",
                "    linalg.conv_2d_nchw_fchw ins(%x, %w : memref<?x2x5x5xf32>, memref<3x2x3x3xf32>)"
                " outs(%y : memref<?x3x3x3xf32>)\n"),
      "bad.mlir:5:5", conv_op, CREC_ERR_UNSUPPORTED,
      "the input has a dynamic size (dimension 0); a convolution needs static shapes");
  expect_op_refused_at(
      CONV_MAIN("%big: memref<1x2x5x9xf32>, %w: memref<3x2x3x3xf32>, %y: " NCHW_Y, NCHW_Y,
                "    %x = memref.subview %big[0, 0, 0, 0] [1, 2, 5, 5] [1, 1, 1, 1] : memref<1x2x5x9xf32> to"
                " memref<1x2x5x5xf32, strided<[90, 45, 9, 1]>>\n"
                "    linalg.conv_2d_nchw_fchw ins(%x, %w : memref<1x2x5x5xf32, strided<[90, 45, 9, 1]>>,"
                " memref<3x2x3x3xf32>) outs(%y : " NCHW_Y ")\n"),
      "bad.mlir:6:5", conv_op, CREC_ERR_UNSUPPORTED,
      "non-identity layout: the input has strides [90, 45, 9, 1]; a convolution reads and writes dense row-major memrefs");
  /* fgchw with several groups and filters per group is not cuDNN's grouped layout */
  expect_op_refused_at(
      CONV_MAIN("%x: memref<1x2x3x5x5xf32>, %w: memref<4x2x3x3x3xf32>, %y: memref<1x2x4x3x3xf32>",
                "memref<1x2x4x3x3xf32>",
                "    linalg.conv_2d_ngchw_fgchw ins(%x, %w : memref<1x2x3x5x5xf32>, memref<4x2x3x3x3xf32>)"
                " outs(%y : memref<1x2x4x3x3xf32>)\n"),
      "bad.mlir:5:5", "linalg.conv_2d_ngchw_fgchw", CREC_ERR_UNSUPPORTED,
      "the filter is 4x2x3x3x3, F x G x C x H x W: linalg's fgchw keeps the filters of one group apart (filter f of "
      "group g at [f][g]), while cuDNN's grouped filter holds each group's filters together (G x F x C x H x W, "
      "linalg.conv_2d_ngchw_gfchw); store the filter as gfchw, or write \"crec.conv\" with feature_group_count");
  /* the quantized ones are not lowered */
  expect_op_refused_at(
      FFT_MAIN("%x: memref<1x5x5x2xi8>, %w: memref<3x3x2x3xi8>, %y: memref<1x3x3x3xi32>, %zp: i32",
               "    linalg.conv_2d_nhwc_hwcf_q ins(%x, %w, %zp, %zp : memref<1x5x5x2xi8>, memref<3x3x2x3xi8>, i32, i32)"
               " outs(%y : memref<1x3x3x3xi32>)\n"),
      "bad.mlir:3:5", "linalg.conv_2d_nhwc_hwcf_q", CREC_ERR_UNSUPPORTED,
      "crec lowers linalg.matmul, linalg.batch_matmul, linalg.fill, linalg.copy and the convolutions");
}

#define CC_ARGS "%x: memref<2x3x8x8xf32>, %w: memref<4x3x3x3xf32>, %y: memref<2x4x8x8xf32>"
#define CC_TYPES "(memref<2x3x8x8xf32>, memref<4x3x3x3xf32>, memref<2x4x8x8xf32>) -> ()"
#define CC_OP(attrs) "    \"crec.conv\"(%x, %w, %y) " attrs " : " CC_TYPES "\n"
static void expect_crec_conv_refused(const char *text, crec_status status, const char *reason) {
  expect_op_refused_at(text, "bad.mlir:3:5", "crec.conv", status, reason);
}

Test(lower_library, crec_conv_takes_every_layout_spatial_rank_group_count_and_attribute_form) {
  /* NHWC with an HWIO filter, 3-D, 2 groups, bf16; strides and dilations as array<i64: ...>, dense<...>
   * and i32 lists; padding as a dense XLA table */
  crec_program *p = crec_test_lower_text(
      "module {\n  func.func @main(%x: memref<1x6x7x8x4xbf16>, %w: memref<3x3x3x2x6xbf16>, %y: memref<1x6x4x8x6xbf16>,\n"
      "                  %a: memref<2x11x11x6xf16>, %f: memref<4x3x3x3xf16>, %o: memref<2x4x4x4xf16>, %b: memref<4xf16>) {\n"
      "    \"crec.conv\"(%x, %w, %y) {layout = \"NHWC\", filter_layout = \"HWIO\", feature_group_count = 2 : i64,\n"
      "        window_strides = array<i64: 1, 2, 1>, rhs_dilation = dense<[1, 1, 1]> : tensor<3xi64>,\n"
      "        padding = dense<[[1, 1], [1, 1], [1, 1]]> : tensor<3x2xi64>}\n"
      "        : (memref<1x6x7x8x4xbf16>, memref<3x3x3x2x6xbf16>, memref<1x6x4x8x6xbf16>) -> ()\n"
      /* NHWC with a K_FIRST filter (K, spatial, C/groups), stride 2, dilation 2, a bias */
      "    \"crec.conv\"(%a, %f, %o, %b) {layout = \"NHWC\", filter_layout = \"K_FIRST\", window_strides = [2 : i32, 2 : i32],\n"
      "        rhs_dilation = [2, 2], feature_group_count = 2, kind = \"forward\", activation = \"none\", algorithm = \"heuristics\",\n"
      "        workspace_bytes = 0 : i64, crec.name = \"nhwc\"}\n"
      "        : (memref<2x11x11x6xf16>, memref<4x3x3x3xf16>, memref<2x4x4x4xf16>, memref<4xf16>) -> ()\n"
      "    return\n  }\n}\n");
  cr_assert_eq(crec_program_command_count(p), 2);
  crec_conv d = expect_conv(p, 0, CREC_CONV_FORWARD, CREC_ELEMENT_BF16, CREC_CONV_NHWC, CREC_CONV_FILTER_HWIO, 3, 1,
                            4, 6, 2, V(6, 7, 8), V(3, 3, 3), V(1, 2, 1), V(1, 1, 1), V(1, 1, 1), "conv.workspace");
  crec_test_expect_range(p, d.filter, "arg1", 0, 3 * 3 * 3 * 2 * 6 * 2);
  d = expect_conv(p, 1, CREC_CONV_FORWARD, CREC_ELEMENT_F16, CREC_CONV_NHWC, CREC_CONV_FILTER_K_FIRST, 2, 2, 6, 4, 2,
                  V(11, 11), V(3, 3), V(2, 2), V(0, 0), V(2, 2), "nhwc.workspace");
  cr_assert_eq(d.groups, 2, "6 input channels, 3 per filter");
  crec_test_expect_range(p, d.bias, "arg6", 0, 4 * 2);
  crec_program_destroy(p);
}

Test(lower_library, crec_conv_refuses_bad_attributes_and_operand_counts_at_the_op) {
  expect_crec_conv_refused(FFT_MAIN(CC_ARGS, CC_OP("{kind = \"backward\"}")), CREC_ERR_MLIR,
                           "unknown kind 'backward' (forward, backward_data or backward_filter)");
  expect_crec_conv_refused(FFT_MAIN(CC_ARGS, CC_OP("{layout = \"NCDHW\"}")), CREC_ERR_MLIR,
                           "unknown layout 'NCDHW' (NCHW or NHWC)");
  expect_crec_conv_refused(FFT_MAIN(CC_ARGS, CC_OP("{filter_layout = \"OIHW\"}")), CREC_ERR_MLIR,
                           "unknown filter_layout 'OIHW' (K_FIRST or HWIO)");
  expect_crec_conv_refused(FFT_MAIN(CC_ARGS, CC_OP("{activation = \"gelu\"}")), CREC_ERR_MLIR,
                           "unknown activation 'gelu' (none or relu)");
  expect_crec_conv_refused(FFT_MAIN(CC_ARGS, CC_OP("{algorithm = \"fastest\"}")), CREC_ERR_MLIR,
                           "unknown algorithm 'fastest' (heuristics or search)");
  expect_crec_conv_refused(FFT_MAIN(CC_ARGS, CC_OP("{kind = 1 : i64}")), CREC_ERR_MLIR, "kind must be a string");
  expect_crec_conv_refused(FFT_MAIN(CC_ARGS, CC_OP("{lhs_dilation = [1, 1]}")), CREC_ERR_MLIR,
                           "unknown attribute 'lhs_dilation' (it takes kind, layout, filter_layout, window_strides, "
                           "padding, rhs_dilation, feature_group_count, activation, algorithm, workspace_bytes, "
                           "crec.name)");
  expect_crec_conv_refused(FFT_MAIN(CC_ARGS, CC_OP("{workspace_bytes = -1 : i64}")), CREC_ERR_MLIR,
                           "workspace_bytes is -1; it must be 0 (the default) or more");
  expect_crec_conv_refused(FFT_MAIN(CC_ARGS, CC_OP("{feature_group_count = 0 : i64}")), CREC_ERR_MLIR,
                           "feature_group_count is 0; it must be 1 (the default) or more");
  /* lists: one entry per spatial dimension */
  expect_crec_conv_refused(FFT_MAIN(CC_ARGS, CC_OP("{window_strides = [1, 1, 1]}")), CREC_ERR_MLIR,
                           "window_strides has 3 entries, but the convolution has 2 spatial dimensions; "
                           "window_strides must be a list of 2 integers (one per spatial dimension), like [1, 1] or "
                           "array<i64: 1, 1>");
  expect_crec_conv_refused(FFT_MAIN(CC_ARGS, CC_OP("{window_strides = array<i64: 2>}")), CREC_ERR_MLIR,
                           "window_strides has 1 entries");
  expect_crec_conv_refused(FFT_MAIN(CC_ARGS, CC_OP("{rhs_dilation = [1, \"2\"]}")), CREC_ERR_MLIR,
                           "rhs_dilation[1] is not an integer");
  expect_crec_conv_refused(FFT_MAIN(CC_ARGS, CC_OP("{rhs_dilation = [1, 0]}")), CREC_ERR_MLIR,
                           "rhs_dilation[1] is 0; it must be 1 or more");
  expect_crec_conv_refused(FFT_MAIN(CC_ARGS, CC_OP("{window_strides = 2 : i64}")), CREC_ERR_MLIR,
                           "window_strides must be a list of 2 integers");
  expect_crec_conv_refused(FFT_MAIN(CC_ARGS, CC_OP("{window_strides = dense<1> : tensor<2x2xi64>}")), CREC_ERR_MLIR,
                           "(a dense one is a tensor of rank 1 of i64 or i32)");
  /* padding: symmetric only, as cuDNN pads */
  expect_crec_conv_refused(FFT_MAIN(CC_ARGS, CC_OP("{padding = [[1, 1], [0, 1]]}")), CREC_ERR_UNSUPPORTED,
                           "padding of spatial dimension 1 is [0, 1]: cuDNN pads both sides of a dimension alike "
                           "(symmetric padding, lo == hi); copy the input into a larger zeroed memref for other "
                           "padding");
  expect_crec_conv_refused(FFT_MAIN(CC_ARGS, CC_OP("{padding = dense<[[2, 1], [1, 1]]> : tensor<2x2xi64>}")),
                           CREC_ERR_UNSUPPORTED, "padding of spatial dimension 0 is [2, 1]: cuDNN pads both sides");
  expect_crec_conv_refused(FFT_MAIN(CC_ARGS, CC_OP("{padding = [-1, -1]}")), CREC_ERR_MLIR,
                           "padding of spatial dimension 0 is [-1, -1]; it must be 0 or more");
  expect_crec_conv_refused(FFT_MAIN(CC_ARGS, CC_OP("{padding = [[1, 1, 1], [1, 1]]}")), CREC_ERR_MLIR,
                           "padding[0] is not a pair [lo, hi] of integers");
  /* operands and results */
  expect_crec_conv_refused(FFT_MAIN(CC_ARGS, "    \"crec.conv\"(%x, %w) : (memref<2x3x8x8xf32>, memref<4x3x3x3xf32>) -> ()\n"),
                           CREC_ERR_MLIR, "takes three or four memref operands, the input, the filter, the output and "
                                          "optionally the bias, but has 2");
  expect_op_refused_at(FFT_MAIN(CC_ARGS, "    %r = \"crec.conv\"(%x, %w, %y) : (memref<2x3x8x8xf32>, "
                                           "memref<4x3x3x3xf32>, memref<2x4x8x8xf32>) -> i32\n"),
                         "bad.mlir:3:10", "crec.conv", CREC_ERR_MLIR, "takes no results or regions");
}

Test(lower_library, crec_conv_refuses_tensors_that_do_not_fit_the_convolution) {
  expect_crec_conv_refused(FFT_MAIN("%x: memref<3x8x8xf32>, %w: memref<4x3x3xf32>, %y: memref<4x8x8xf32>",
                                    "    \"crec.conv\"(%x, %w, %y) : (memref<3x8x8xf32>, memref<4x3x3xf32>, "
                                    "memref<4x8x8xf32>) -> ()\n"),
                           CREC_ERR_INVALID_ARGUMENT, "shape mismatch: the input has rank 3 (3x8x8), but a convolution "
                                                      "takes tensors of rank 4 (2 spatial dimensions) or 5 (3)");
  expect_crec_conv_refused(FFT_MAIN("%x: memref<2x3x8x8xf32>, %w: memref<4x3x3x3x3xf32>, %y: memref<2x4x8x8xf32>",
                                    "    \"crec.conv\"(%x, %w, %y) : (memref<2x3x8x8xf32>, memref<4x3x3x3x3xf32>, "
                                    "memref<2x4x8x8xf32>) -> ()\n"),
                           CREC_ERR_INVALID_ARGUMENT, "shape mismatch: the filter has rank 5 but the input 4: every "
                                                      "tensor of a 2-D convolution has rank 4");
  expect_crec_conv_refused(FFT_MAIN("%x: memref<2x3x8x8xf32>, %w: memref<4x3x3x3xf32>, %y: memref<3x4x6x6xf32>",
                                    "    \"crec.conv\"(%x, %w, %y) : (memref<2x3x8x8xf32>, memref<4x3x3x3xf32>, "
                                    "memref<3x4x6x6xf32>) -> ()\n"),
                           CREC_ERR_INVALID_ARGUMENT, "shape mismatch: the output is 3x4x6x6, a batch of 3, but the "
                                                      "input 2x3x8x8, a batch of 2");
  expect_crec_conv_refused(FFT_MAIN("%x: memref<2x3x8x8xf32>, %w: memref<4x3x3x3xf32>, %y: memref<2x5x6x6xf32>",
                                    "    \"crec.conv\"(%x, %w, %y) : (memref<2x3x8x8xf32>, memref<4x3x3x3xf32>, "
                                    "memref<2x5x6x6xf32>) -> ()\n"),
                           CREC_ERR_INVALID_ARGUMENT, "shape mismatch: the output (2x5x6x6, NCHW) has 5 channels, but "
                                                      "the filter (4x3x3x3, K_FIRST: K, C/groups, spatial) makes 4");
  /* an NHWC input read as NCHW: its channels are not the filter's */
  expect_crec_conv_refused(FFT_MAIN("%x: memref<2x8x8x3xf32>, %w: memref<4x3x3x3xf32>, %y: memref<2x4x6x6xf32>",
                                    "    \"crec.conv\"(%x, %w, %y) : (memref<2x8x8x3xf32>, memref<4x3x3x3xf32>, "
                                    "memref<2x4x6x6xf32>) -> ()\n"),
                           CREC_ERR_INVALID_ARGUMENT, "shape mismatch: the filter (4x3x3x3, K_FIRST: K, C/groups, "
                                                      "spatial) takes 3 input channels per group, but the input "
                                                      "(2x8x8x3, NCHW) has 8 channels in 1 group");
  expect_crec_conv_refused(FFT_MAIN(CC_ARGS, CC_OP("{feature_group_count = 3 : i64}")), CREC_ERR_INVALID_ARGUMENT,
                           "takes 3 input channels per group, but the input (2x3x8x8, NCHW) has 3 channels in 3 groups");
  /* the output's spatial sizes (no padding: 8 - 3 + 1 = 6, not 8) */
  expect_crec_conv_refused(FFT_MAIN(CC_ARGS, CC_OP("")), CREC_ERR_INVALID_ARGUMENT,
                           "shape mismatch: the output's spatial sizes are 8x8, but an input of 8x8 with a filter of "
                           "3x3, strides [1, 1], padding [0, 0] and dilations [1, 1] gives 6x6 ((in + 2·padding - "
                           "dilation·(filter - 1) - 1) / stride + 1)");
  expect_crec_conv_refused(FFT_MAIN(CC_ARGS ", %b: memref<2x2xf32>",
                                    "    \"crec.conv\"(%x, %w, %y, %b) {padding = [1, 1]} : (memref<2x3x8x8xf32>, "
                                    "memref<4x3x3x3xf32>, memref<2x4x8x8xf32>, memref<2x2xf32>) -> ()\n"),
                           CREC_ERR_INVALID_ARGUMENT, "shape mismatch: the bias has rank 2; it is a memref of rank 1, "
                                                      "one element per output channel");
  /* element types */
  expect_crec_conv_refused(FFT_MAIN("%x: memref<2x3x8x8xf32>, %w: memref<4x3x3x3xf16>, %y: memref<2x4x8x8xf32>",
                                    "    \"crec.conv\"(%x, %w, %y) {padding = [1, 1]} : (memref<2x3x8x8xf32>, "
                                    "memref<4x3x3x3xf16>, memref<2x4x8x8xf32>) -> ()\n"),
                           CREC_ERR_UNSUPPORTED, "mixed element types (the input f32, the filter f16): crec's "
                                                 "convolution reads and writes one element type");
  expect_crec_conv_refused(FFT_MAIN("%x: memref<2x3x8x8xf64>, %w: memref<4x3x3x3xf64>, %y: memref<2x4x8x8xf64>",
                                    "    \"crec.conv\"(%x, %w, %y) : (memref<2x3x8x8xf64>, memref<4x3x3x3xf64>, "
                                    "memref<2x4x8x8xf64>) -> ()\n"),
                           CREC_ERR_UNSUPPORTED, "the input has f64 elements; a convolution takes f32, f16 or bf16");
  expect_crec_conv_refused(FFT_MAIN(CC_ARGS ", %s: f32", "    \"crec.conv\"(%x, %w, %s) : (memref<2x3x8x8xf32>, "
                                                         "memref<4x3x3x3xf32>, f32) -> ()\n"),
                           CREC_ERR_UNSUPPORTED, "the output has type f32; it must be a memref");
  /* what only the builder sees comes through with the op's location: a bias outside a forward
   * pass, K not a multiple of the groups, host memory */
  expect_crec_conv_refused(FFT_MAIN(CC_ARGS ", %b: memref<4xf32>",
                                    "    \"crec.conv\"(%x, %w, %y, %b) {kind = \"backward_data\", padding = [1, 1]} : "
                                    "(memref<2x3x8x8xf32>, memref<4x3x3x3xf32>, memref<2x4x8x8xf32>, memref<4xf32>) -> ()\n"),
                           CREC_ERR_INVALID_ARGUMENT, "crec_program_add_conv: conv 'conv': a bias or an activation "
                                                      "belongs to a forward convolution, not a backward_data one");
  expect_crec_conv_refused(FFT_MAIN("%x: memref<2x6x8x8xf32>, %w: memref<5x3x3x3xf32>, %y: memref<2x5x8x8xf32>",
                                    "    \"crec.conv\"(%x, %w, %y) {padding = [1, 1], feature_group_count = 2 : i64} : "
                                    "(memref<2x6x8x8xf32>, memref<5x3x3x3xf32>, memref<2x5x8x8xf32>) -> ()\n"),
                           CREC_ERR_INVALID_ARGUMENT, "crec_program_add_conv: conv 'conv': in_channels 6 and "
                                                      "out_channels 5 must be multiples of groups 2");
  expect_crec_conv_refused(FFT_MAIN("%x: memref<2x3x8x8xf32> {crec.memory = \"host\"}, %w: memref<4x3x3x3xf32>, "
                                    "%y: memref<2x4x8x8xf32>",
                                    CC_OP("{padding = [1, 1], crec.name = \"on host\"}")),
                           CREC_ERR_INVALID_ARGUMENT, "crec_program_add_conv: conv 'on host': argument 'input': buffer "
                                                      "'arg0' is host memory");
}

/* ---- collectives ---- */

Test(lower_library, collectives_get_their_kind_type_groups_and_a_communicator_slot) {
  crec_program *p = crec_test_lower_file("collectives.mlir");
  cr_assert_eq(crec_program_communicator_count(p), 1);
  const char *cname;
  int size;
  EXPECT_OK(crec_program_get_communicator(p, 0, &cname, &size));
  cr_assert_str_eq(cname, "world", "the default communicator is 'world'");
  cr_assert_eq(size, 1);

  crec_command start;
  crec_collective d = collective(p, 0, &start);
  cr_assert_eq(start.id, 0, "an all_reduce start is not a done");
  cr_assert_eq(d.kind, CREC_COLLECTIVE_ALL_REDUCE);
  cr_assert_eq(d.reduction, CREC_REDUCTION_SUM);
  cr_assert_eq(d.type, CREC_ELEMENT_F32);
  cr_assert(d.async);
  cr_assert_null(d.groups, "no replica_groups: one group of every rank");
  crec_test_expect_range(p, d.send, "x", 0, 1024);
  crec_test_expect_range(p, d.recv, "sum", 0, 1024);

  d = collective(p, 1, NULL);
  cr_assert_eq(d.kind, CREC_COLLECTIVE_ALL_GATHER);
  cr_assert(!d.async);
  cr_assert_eq(d.num_groups, 1);
  cr_assert_eq(d.group_size, 1);
  cr_assert_eq(d.groups[0], 0);

  d = collective(p, 2, NULL);
  cr_assert_eq(d.kind, CREC_COLLECTIVE_PERMUTE);
  cr_assert_eq(d.type, CREC_ELEMENT_I32);
  cr_assert_eq(d.num_pairs, 1);
  cr_assert(d.pairs[0] == 0 && d.pairs[1] == 0);
  crec_test_expect_range(p, d.recv, "moved", 0, 256);

  crec_command_info done = crec_test_command(p, 3);
  cr_assert_eq(done.kind, CREC_COMMAND_COLLECTIVE);
  cr_assert_str_eq(done.name, "all_reduce.done");
  cr_assert_eq(done.start.id, crec_program_command(p, 0).id, "the done finishes the all_reduce");
  char *j = crec_test_json(p);
  cr_assert_str_eq(j,
                   "{\"buffers\":["
                   "{\"name\":\"x\",\"kind\":\"argument\",\"size\":1024,\"element\":\"f32\",\"dynamic\":false},"
                   "{\"name\":\"sum\",\"kind\":\"argument\",\"size\":1024,\"element\":\"f32\",\"dynamic\":false},"
                   "{\"name\":\"gathered\",\"kind\":\"argument\",\"size\":1024,\"element\":\"f32\",\"dynamic\":false},"
                   "{\"name\":\"ids\",\"kind\":\"argument\",\"size\":256,\"element\":\"i32\",\"dynamic\":false},"
                   "{\"name\":\"moved\",\"kind\":\"argument\",\"size\":256,\"element\":\"i32\",\"dynamic\":false}],"
                   "\"scalars\":[],"
                   "\"regions\":[{\"id\":0,\"parent\":null,\"role\":\"program\",\"index\":0}],"
                   "\"commands\":[{\"id\":0,\"kind\":\"collective\",\"name\":\"all_reduce\",\"region\":0,\"deps\":[],"
                   "\"collective\":{\"op\":\"all_reduce\",\"type\":\"f32\",\"reduction\":\"sum\","
                   "\"communicator\":\"world\",\"ranks\":1,\"async\":\"start\"},\"operands\":["
                   "{\"buffer\":\"x\",\"offset\":0,\"end\":1024,\"access\":\"read\"},"
                   "{\"buffer\":\"sum\",\"offset\":0,\"end\":1024,\"access\":\"write\"}]},"
                   "{\"id\":1,\"kind\":\"collective\",\"name\":\"all_gather\",\"region\":0,\"deps\":[],"
                   "\"collective\":{\"op\":\"all_gather\",\"type\":\"f32\",\"communicator\":\"world\",\"ranks\":1,"
                   "\"async\":\"no\"},\"operands\":[{\"buffer\":\"x\",\"offset\":0,\"end\":1024,\"access\":\"read\"},"
                   "{\"buffer\":\"gathered\",\"offset\":0,\"end\":1024,\"access\":\"write\"}]},"
                   "{\"id\":2,\"kind\":\"collective\",\"name\":\"collective_permute\",\"region\":0,\"deps\":[],"
                   "\"collective\":{\"op\":\"collective_permute\",\"type\":\"i32\",\"communicator\":\"world\","
                   "\"ranks\":1,\"async\":\"no\"},\"operands\":["
                   "{\"buffer\":\"ids\",\"offset\":0,\"end\":256,\"access\":\"read\"},"
                   "{\"buffer\":\"moved\",\"offset\":0,\"end\":256,\"access\":\"write\"}]},"
                   "{\"id\":3,\"kind\":\"collective\",\"name\":\"all_reduce.done\",\"region\":0,\"deps\":[0,1],"
                   "\"collective\":{\"op\":\"all_reduce\",\"type\":\"f32\",\"reduction\":\"sum\","
                   "\"communicator\":\"world\",\"ranks\":1,\"async\":\"done\"},\"operands\":["
                   "{\"buffer\":\"x\",\"offset\":0,\"end\":1024,\"access\":\"read-write\"},"
                   "{\"buffer\":\"sum\",\"offset\":0,\"end\":1024,\"access\":\"read-write\"}]}]}\n");
  crec_free(j);
  crec_program_destroy(p);
}

Test(lower_library, every_collective_kind_and_reduction_with_named_communicators) {
  crec_program *p = crec_test_lower_text(
      "module {\n  func.func @main(%a: memref<8xi32>, %b: memref<8xi32>, %f: memref<16xf16>, %g: memref<32xf16>,\n"
      "                  %s: memref<2xbf16>,\n"
      "                  %t: memref<8xbf16>, %u: memref<8xi8>, %v: memref<8xi8>, %w: memref<8xf64>, %x: memref<8xf64>) {\n"
      "    \"crec.all_reduce\"(%a, %a) {reduction = \"prod\", num_ranks = 4 : i64, crec.name = \"in place\",\n"
      "                               replica_groups = dense<[[3, 1, 0, 2]]> : tensor<1x4xi64>}\n"
      "        : (memref<8xi32>, memref<8xi32>) -> ()\n"
      "    \"crec.all_reduce\"(%a, %b) {reduction = \"min\", replica_groups = dense<[[0], [1], [2], [3]]> : tensor<4x1xi32>}\n"
      "        : (memref<8xi32>, memref<8xi32>) -> ()\n"
      "    \"crec.all_gather\"(%f, %g) {communicator = \"pair\", num_ranks = 2 : i64,\n"
      "                               replica_groups = dense<> : tensor<0x0xi64>} : (memref<16xf16>, memref<32xf16>) -> ()\n"
      "    \"crec.reduce_scatter\"(%t, %s) {reduction = \"max\", num_ranks = 4 : i64}\n"
      "        : (memref<8xbf16>, memref<2xbf16>) -> ()\n"
      "    \"crec.all_to_all\"(%u, %v) {communicator = \"pair\"} : (memref<8xi8>, memref<8xi8>) -> ()\n"
      "    \"crec.collective_permute\"(%w, %x) {communicator = \"pair\",\n"
      "                                       source_target_pairs = dense<[[0, 1], [1, 0]]> : tensor<2x2xi64>}\n"
      "        : (memref<8xf64>, memref<8xf64>) -> ()\n"
      "    \"crec.collective_permute\"(%x, %w) {communicator = \"pair\", source_target_pairs = dense<> : tensor<0x2xi64>}\n"
      "        : (memref<8xf64>, memref<8xf64>) -> ()\n"
      "    return\n  }\n}\n");
  cr_assert_eq(crec_program_communicator_count(p), 2, "one slot per communicator name, in order of appearance");
  const char *name;
  int size;
  EXPECT_OK(crec_program_get_communicator(p, 1, &name, &size));
  cr_assert_str_eq(name, "pair");
  cr_assert_eq(size, 2);

  crec_collective d = collective(p, 0, NULL);
  cr_assert_str_eq(crec_test_command(p, 0).name, "in place");
  cr_assert_eq(d.reduction, CREC_REDUCTION_PROD);
  cr_assert_eq(d.type, CREC_ELEMENT_I32);
  cr_assert(d.num_groups == 1 && d.group_size == 4);
  cr_assert(d.groups[0] == 3 && d.groups[1] == 1 && d.groups[2] == 0 && d.groups[3] == 2, "groups keep their order");
  expect_operand(p, 0, 1, "arg0", 0, 32, CREC_ACCESS_READ_WRITE);
  d = collective(p, 1, NULL);
  cr_assert_eq(d.reduction, CREC_REDUCTION_MIN);
  cr_assert(d.num_groups == 4 && d.group_size == 1, "an i32 table works too");
  cr_assert_eq(d.groups[3], 3);
  d = collective(p, 2, NULL);
  cr_assert_eq(d.kind, CREC_COLLECTIVE_ALL_GATHER);
  cr_assert_eq(d.type, CREC_ELEMENT_F16);
  cr_assert_null(d.groups, "an empty table is one group of every rank");
  d = collective(p, 3, NULL);
  cr_assert_eq(d.kind, CREC_COLLECTIVE_REDUCE_SCATTER);
  cr_assert_eq(d.reduction, CREC_REDUCTION_MAX);
  cr_assert_eq(d.type, CREC_ELEMENT_BF16);
  d = collective(p, 4, NULL);
  cr_assert_eq(d.kind, CREC_COLLECTIVE_ALL_TO_ALL);
  cr_assert_eq(d.type, CREC_ELEMENT_I8);
  d = collective(p, 5, NULL);
  cr_assert_eq(d.type, CREC_ELEMENT_F64);
  cr_assert_eq(d.num_pairs, 2);
  cr_assert(d.pairs[0] == 0 && d.pairs[1] == 1 && d.pairs[2] == 1 && d.pairs[3] == 0);
  d = collective(p, 6, NULL);
  cr_assert_eq(d.num_pairs, 0, "no pairs: recv is zeroed");
  char *text = NULL;
  EXPECT_OK(crec_dump(p, NULL, CREC_DUMP_TEXT, &text, NULL));
  cr_assert(strstr(text, "all_to_all i8 over 'pair'"), "%s", text);
  cr_assert(strstr(text, "reduce_scatter max bf16 over 'world'"), "%s", text);
  crec_free(text);
  crec_program_destroy(p);
}

Test(lower_library, an_async_id_can_start_again_once_done) {
  crec_program *p = crec_test_lower_text(
      "module {\n  func.func @main(%a: memref<8xf32>, %b: memref<8xf32>) {\n"
      "    \"crec.all_reduce\"(%a, %b) {reduction = \"sum\", num_ranks = 1 : i64, async_id = \"x\"}\n"
      "        : (memref<8xf32>, memref<8xf32>) -> ()\n"
      "    \"crec.collective_done\"() {async_id = \"x\", crec.name = \"first done\"} : () -> ()\n"
      "    \"crec.all_reduce\"(%b, %a) {reduction = \"sum\", async_id = \"x\"} : (memref<8xf32>, memref<8xf32>) -> ()\n"
      "    \"crec.collective_done\"() {async_id = \"x\"} : () -> ()\n"
      "    return\n  }\n}\n");
  cr_assert_str_eq(crec_test_command(p, 1).name, "first done");
  cr_assert_eq(crec_test_command(p, 1).start.id, crec_program_command(p, 0).id);
  cr_assert_eq(crec_test_command(p, 3).start.id, crec_program_command(p, 2).id, "the second done finishes the second start");
  crec_program_destroy(p);
}

/* ---- custom calls ---- */

Test(lower_library, custom_call_operands_holes_access_kernels_and_attribute_text) {
  crec_program *p = crec_test_lower_file("custom.mlir");
  crec_command_info c = crec_test_command(p, 0);
  cr_assert_eq(c.kind, CREC_COMMAND_CUSTOM);
  cr_assert_str_eq(c.name, "example.axpb", "named after its target");
  cr_assert_eq(c.num_operands, 2, "holes are not operands");
  crec_custom cu = CREC_CUSTOM_INIT;
  EXPECT_OK(crec_command_get_custom(p, crec_program_command(p, 0), &cu));
  cr_assert_str_eq(cu.target, "example.axpb");
  cr_assert_eq(cu.num_operands, 3);
  crec_test_expect_range(p, cu.operands[0].range, "dst", 0, 1024);
  cr_assert_eq(cu.operands[0].access, CREC_ACCESS_WRITE);
  cr_assert_eq(cu.operands[1].range.buffer.id, 0, "slot 1 is a hole");
  crec_test_expect_range(p, cu.operands[2].range, "src", 0, 1024);
  cr_assert_eq(cu.operands[2].access, CREC_ACCESS_READ);
  cr_assert_eq(cu.num_kernels, 1);
  crec_kernel_info k;
  EXPECT_OK(crec_kernel_get_info(p, cu.kernels[0], &k));
  cr_assert_str_eq(k.entry, "axpb");
  const char *attrs = "{a = 3.000000e+00 : f32, b = 5.000000e-01 : f32}";
  cr_assert_eq(cu.attributes_size, strlen(attrs) + 1, "the text and its NUL");
  cr_assert_str_eq(cu.attributes, attrs);
  char *j = crec_test_json(p);
  cr_assert_str_eq(j,
                   "{\"buffers\":["
                   "{\"name\":\"src\",\"kind\":\"argument\",\"size\":1024,\"element\":\"f32\",\"dynamic\":false},"
                   "{\"name\":\"dst\",\"kind\":\"argument\",\"size\":1024,\"element\":\"f32\",\"dynamic\":false}],"
                   "\"scalars\":[],"
                   "\"regions\":[{\"id\":0,\"parent\":null,\"role\":\"program\",\"index\":0}],"
                   "\"commands\":[{\"id\":0,\"kind\":\"custom\",\"name\":\"example.axpb\",\"region\":0,\"deps\":[],"
                   "\"custom\":{\"target\":\"example.axpb\",\"kernels\":1,\"attribute_bytes\":49},\"operands\":["
                   "{\"buffer\":\"dst\",\"offset\":0,\"end\":1024,\"access\":\"write\"},"
                   "{\"buffer\":\"src\",\"offset\":0,\"end\":1024,\"access\":\"read\"}]}]}\n");
  crec_free(j);
  crec_program_destroy(p);
}

Test(lower_library, custom_call_defaults_read_write_and_sorts_its_attributes) {
  crec_program *p = crec_test_lower_text(
      "module {\n  func.func @main(%a: memref<4x4xf32>, %b: memref<?xi8> {crec.name = \"dyn\"}) {\n"
      "    %v = memref.subview %a[1, 0] [2, 4] [1, 1] : memref<4x4xf32> to memref<2x4xf32, strided<[4, 1], offset: 4>>\n"
      "    \"crec.custom_call\"(%v, %b) {target = \"t\", zeta = [1, 2], alpha = {k = \"v\"}, holes = array<i64: 2, 0>}\n"
      "        : (memref<2x4xf32, strided<[4, 1], offset: 4>>, memref<?xi8>) -> ()\n"
      "    \"crec.custom_call\"() {target = \"none\", crec.name = \"bare\"} : () -> ()\n"
      "    return\n  }\n}\n");
  crec_custom cu = CREC_CUSTOM_INIT;
  EXPECT_OK(crec_command_get_custom(p, crec_program_command(p, 0), &cu));
  cr_assert_eq(cu.num_operands, 4);
  cr_assert_eq(cu.operands[0].range.buffer.id, 0);
  crec_test_expect_range(p, cu.operands[1].range, "arg0", 16, 32);
  cr_assert_eq(cu.operands[1].access, CREC_ACCESS_READ_WRITE, "access defaults to read-write");
  cr_assert_eq(cu.operands[2].range.buffer.id, 0);
  crec_test_expect_range(p, cu.operands[3].range, "dyn", 0, CREC_WHOLE);
  cr_assert_eq(cu.num_kernels, 0);
  cr_assert_str_eq(cu.attributes, "{alpha = {k = \"v\"}, zeta = [1, 2]}");
  EXPECT_OK(crec_command_get_custom(p, crec_program_command(p, 1), &cu));
  cr_assert_str_eq(crec_test_command(p, 1).name, "bare");
  cr_assert_eq(cu.num_operands, 0);
  cr_assert_str_eq(cu.attributes, "{}", "no attributes for the handler: an empty dictionary");
  cr_assert_eq(cu.attributes_size, 3);
  crec_program_destroy(p);
}

Test(lower_library, custom_call_access_orders_it_against_other_commands) {
  /* a reader of x after a custom call that only reads x waits for nothing; one that
   * may write x (read-write by default) waits for both readers before it, and the
   * next reader waits for it */
  crec_program *p = crec_test_lower_text(
      "module {\n  func.func @main(%x: memref<16xf32>, %y: memref<16xf32>, %z: memref<16xf32>) {\n"
      "    \"crec.custom_call\"(%x) {target = \"reads\", access = [\"r\"]} : (memref<16xf32>) -> ()\n"
      "    gpu.memcpy %y, %x : memref<16xf32>, memref<16xf32>\n"
      "    \"crec.custom_call\"(%x) {target = \"default\"} : (memref<16xf32>) -> ()\n"
      "    gpu.memcpy %z, %x : memref<16xf32>, memref<16xf32>\n"
      "    return\n  }\n}\n");
  char *j = crec_test_json(p);
  cr_assert(strstr(j, "{\"id\":1,\"kind\":\"memcpy\",\"name\":\"memcpy\",\"region\":0,\"deps\":[],"
                     "\"dst\":{\"buffer\":\"arg1\",\"offset\":0,\"end\":64},"
                     "\"src\":{\"buffer\":\"arg0\",\"offset\":0,\"end\":64},\"bytes\":64}"),
            "%s", j);
  cr_assert(strstr(j, "{\"id\":2,\"kind\":\"custom\",\"name\":\"default\",\"region\":0,\"deps\":[0,1],"
                     "\"custom\":{\"target\":\"default\",\"kernels\":0,\"attribute_bytes\":3},"
                     "\"operands\":[{\"buffer\":\"arg0\",\"offset\":0,\"end\":64,\"access\":\"read-write\"}]}"),
            "%s", j);
  cr_assert(strstr(j, "{\"id\":3,\"kind\":\"memcpy\",\"name\":\"memcpy\",\"region\":0,\"deps\":[2],"
                     "\"dst\":{\"buffer\":\"arg2\",\"offset\":0,\"end\":64},"
                     "\"src\":{\"buffer\":\"arg0\",\"offset\":0,\"end\":64},\"bytes\":64}"),
            "%s", j);
  crec_free(j);
  crec_program_destroy(p);
}

Test(lower_library, replica_and_partition_ids_lower_to_collectives_without_send) {
  crec_program *p = crec_test_lower_file("ids.mlir");
  cr_assert_eq(crec_program_communicator_count(p), 1);
  crec_collective d = collective(p, 0, NULL);
  cr_assert_eq(d.kind, CREC_COLLECTIVE_REPLICA_ID);
  cr_assert_eq(d.type, CREC_ELEMENT_I32);
  cr_assert_eq(d.send.buffer.id, 0, "a replica_id reads nothing");
  cr_assert_null(d.groups, "no replica_groups: every rank its own replica");
  crec_test_expect_range(p, d.recv, "replica", 0, 4);
  d = collective(p, 1, NULL);
  cr_assert_eq(d.kind, CREC_COLLECTIVE_PARTITION_ID);
  crec_test_expect_range(p, d.recv, "partition", 0, 4);
  d = collective(p, 2, NULL);
  cr_assert_eq(d.kind, CREC_COLLECTIVE_REPLICA_ID);
  cr_assert(d.num_groups == 1 && d.group_size == 1 && d.groups[0] == 0, "the device assignment is kept");
  crec_program_destroy(p);
  /* what the ops refuse, at the op */
  crec_program *q = NULL;
  static const char two[] = "module { func.func @main(%a: memref<1xi32>, %b: memref<1xi32>) {\n"
                            "  \"crec.replica_id\"(%a, %b) : (memref<1xi32>, memref<1xi32>) -> ()\n  return } }";
  cr_assert_eq(crec_lower_mlir_string(two, sizeof two - 1, NULL, &q), CREC_ERR_MLIR);
  cr_assert(strstr(crec_last_error(), "takes one memref<1xi32> operand"), "%s", crec_last_error());
  static const char f32[] = "module { func.func @main(%a: memref<1xf32>) {\n"
                            "  \"crec.partition_id\"(%a) {num_ranks = 1 : i64} : (memref<1xf32>) -> ()\n  return } }";
  cr_assert_neq(crec_lower_mlir_string(f32, sizeof f32 - 1, NULL, &q), CREC_OK);
  cr_assert(strstr(crec_last_error(), "writes one i32"), "%s", crec_last_error());
  static const char wide[] = "module { func.func @main(%a: memref<2xi32>) {\n"
                             "  \"crec.replica_id\"(%a) {num_ranks = 1 : i64} : (memref<2xi32>) -> ()\n  return } }";
  cr_assert_neq(crec_lower_mlir_string(wide, sizeof wide - 1, NULL, &q), CREC_OK);
  cr_assert(strstr(crec_last_error(), "holds one i32"), "%s", crec_last_error());
}

/* ---- determinism ---- */

Test(lower_library, lowering_the_library_inputs_twice_gives_identical_dumps) {
  const char *files[] = {"gemm.mlir", "fft.mlir", "cholesky.mlir", "conv.mlir", "collectives.mlir", "custom.mlir", "ids.mlir"};
  for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
    crec_program *a = crec_test_lower_file(files[i]), *b = crec_test_lower_file(files[i]);
    for (int f = 0; f < 2; f++) {
      char *ja = NULL, *jb = NULL;
      EXPECT_OK(crec_dump(a, NULL, f ? CREC_DUMP_TEXT : CREC_DUMP_JSON, &ja, NULL));
      EXPECT_OK(crec_dump(b, NULL, f ? CREC_DUMP_TEXT : CREC_DUMP_JSON, &jb, NULL));
      cr_assert_str_eq(ja, jb, "%s lowered twice differs", files[i]);
      crec_free(ja);
      crec_free(jb);
    }
    crec_program_destroy(a);
    crec_program_destroy(b);
  }
}
