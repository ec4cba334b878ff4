/* The MLIR front end, construct by construct: each input under tests/mlir/ is
 * lowered and the program checked through the introspection API and its JSON
 * dump (commands, regions, buffers, dependency edges). */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "common.h"

TestSuite(lower, .init = crec_test_require_mlir);

/* the inputs staged in the build tree, next to the images nvcc built */
#define MLIR_DIR CREC_TEST_MLIR_DIR

static void expect_json(const crec_program *p, const char *expected) {
  char *j = crec_test_json(p);
  cr_assert_str_eq(j, expected);
  crec_free(j);
}

static crec_buffer_info buffer(const crec_program *p, const char *name) {
  crec_buffer b;
  crec_buffer_info info;
  EXPECT_OK(crec_program_find_buffer(p, name, &b));
  EXPECT_OK(crec_buffer_get_info(p, b, &info));
  return info;
}

static crec_scalar scalar(const crec_program *p, const char *name) {
  crec_scalar s;
  EXPECT_OK(crec_program_find_scalar(p, name, &s));
  return s;
}

static void expect_buffer_arg(const crec_program *p, size_t cmd, size_t index, const char *name, uint64_t offset,
                              uint64_t size, crec_access access) {
  crec_arg a = crec_test_arg(p, cmd, index);
  cr_assert_eq(a.kind, CREC_ARG_BUFFER, "arg %zu of command %zu is not a buffer", index, cmd);
  crec_test_expect_range(p, a.range, name, offset, size);
  cr_assert_eq(a.access, access, "arg %zu of command %zu: access %d, expected %d", index, cmd, a.access, access);
}

static void expect_scalar_arg(const crec_program *p, size_t cmd, size_t index, const char *name) {
  crec_arg a = crec_test_arg(p, cmd, index);
  cr_assert_eq(a.kind, CREC_ARG_SCALAR, "arg %zu of command %zu is not a scalar", index, cmd);
  cr_assert_eq(a.scalar.id, scalar(p, name).id, "arg %zu of command %zu is not scalar '%s'", index, cmd, name);
}

static void expect_imm_i64(const crec_program *p, size_t cmd, size_t index, int64_t v) {
  crec_arg a = crec_test_arg(p, cmd, index);
  cr_assert_eq(a.kind, CREC_ARG_IMMEDIATE);
  cr_assert_eq(a.size, 8);
  cr_assert_eq(a.value.i64, v, "arg %zu of command %zu is %lld, expected %lld", index, cmd, (long long)a.value.i64,
               (long long)v);
}

/* Runs the program's host function with inputs given by name. */
static void run_host(const crec_program *p, const char *const *in_names, const crec_value *in_values, size_t n,
                     crec_value *out, size_t *num_out, int expect_rc) {
  cr_assert_eq(crec_program_host_function_count(p), 1);
  crec_host_function_info h;
  EXPECT_OK(crec_program_get_host_function(p, 0, &h));
  crec_value inputs[16] = {0};
  cr_assert_leq(h.num_inputs, 16);
  for (size_t i = 0; i < h.num_inputs; i++) {
    crec_scalar_info si;
    EXPECT_OK(crec_scalar_get_info(p, h.inputs[i], &si));
    size_t k = 0;
    while (k < n && strcmp(in_names[k], si.name) != 0) k++;
    cr_assert_lt(k, n, "no value given for host input '%s'", si.name);
    inputs[i] = in_values[k];
  }
  int rc = h.fn(h.user, inputs, out);
  cr_assert_eq(rc != 0, expect_rc != 0, "host function returned %d", rc);
  *num_out = h.num_outputs;
}

/* The value the host function computes for derived scalar `name`. */
static crec_value host_output(const crec_program *p, const crec_value *out, const char *name) {
  crec_host_function_info h;
  EXPECT_OK(crec_program_get_host_function(p, 0, &h));
  crec_scalar s = scalar(p, name);
  for (size_t i = 0; i < h.num_outputs; i++)
    if (h.outputs[i].id == s.id) return out[i];
  cr_assert_fail("'%s' is not an output of the host function", name);
  crec_value none = {0};
  return none;
}

/* ---- kernels compiled from gpu.module bodies ---- */

Test(lower, saxpy_static_kernel_takes_bare_pointers) {
  crec_program *p = crec_test_lower_file("saxpy.mlir");
  cr_assert_eq(crec_program_argument_count(p), 2);
  crec_buffer_info x = buffer(p, "x");
  cr_assert_eq(x.kind, CREC_BUFFER_ARGUMENT);
  cr_assert_eq(x.size, 4096);
  cr_assert_eq(x.element, CREC_ELEMENT_F32);
  cr_assert_eq(x.dynamic_size, 0);
  cr_assert_eq(x.argument_index, 0);
  cr_assert_eq(buffer(p, "y").argument_index, 1);
  cr_assert_eq(crec_program_bound_scalar_count(p), 1);
  crec_scalar_info a;
  EXPECT_OK(crec_scalar_get_info(p, scalar(p, "a"), &a));
  cr_assert_eq(a.type, CREC_TYPE_F32);
  cr_assert_eq(a.kind, CREC_SCALAR_BOUND);

  cr_assert_eq(crec_program_module_count(p), 1);
  crec_module_info m;
  EXPECT_OK(crec_module_get_info(p, crec_program_module(p, 0), &m));
  cr_assert_eq(m.format, CREC_IMAGE_PTX);
  cr_assert_str_eq(m.name, "kernels");
  cr_assert(strstr(m.image, ".entry saxpy") != NULL, "the compiled PTX has no saxpy entry");
  cr_assert(strstr(m.image, ".target sm_") != NULL);
  cr_assert_eq(strlen(m.image), m.size, "the PTX size counts a trailing NUL");

  crec_command_info c = crec_test_command(p, 0);
  cr_assert_eq(c.kind, CREC_COMMAND_LAUNCH);
  crec_kernel_info k;
  EXPECT_OK(crec_kernel_get_info(p, c.kernel, &k));
  cr_assert_str_eq(k.entry, "saxpy");
  cr_assert_eq(c.grid[0].value, 4);
  cr_assert_eq(c.grid[0].scalar.id, 0);
  cr_assert_eq(c.block[0].value, 256);
  cr_assert_eq(c.grid[1].value, 1);
  /* one pointer per memref, then the scalar; access inferred from the body */
  cr_assert_eq(c.num_args, 3);
  expect_buffer_arg(p, 0, 0, "x", 0, 4096, CREC_ACCESS_READ);
  expect_buffer_arg(p, 0, 1, "y", 0, 4096, CREC_ACCESS_READ_WRITE);
  expect_scalar_arg(p, 0, 2, "a");
  expect_json(p,
              "{\"buffers\":["
              "{\"name\":\"x\",\"kind\":\"argument\",\"size\":4096,\"element\":\"f32\",\"dynamic\":false},"
              "{\"name\":\"y\",\"kind\":\"argument\",\"size\":4096,\"element\":\"f32\",\"dynamic\":false}],"
              "\"scalars\":[{\"name\":\"a\",\"type\":\"f32\",\"kind\":\"bound\"}],"
              "\"regions\":[{\"id\":0,\"parent\":null,\"role\":\"program\",\"index\":0}],"
              "\"commands\":[{\"id\":0,\"kind\":\"launch\",\"name\":\"saxpy\",\"region\":0,\"deps\":[],"
              "\"kernel\":{\"entry\":\"saxpy\",\"module\":\"kernels\",\"format\":\"ptx\"},\"grid\":[4,1,1],"
              "\"block\":[256,1,1],\"shared\":0,\"args\":["
              "{\"kind\":\"buffer\",\"buffer\":\"x\",\"offset\":0,\"end\":4096,\"access\":\"read\"},"
              "{\"kind\":\"buffer\",\"buffer\":\"y\",\"offset\":0,\"end\":4096,\"access\":\"read-write\"},"
              "{\"kind\":\"scalar\",\"name\":\"a\",\"type\":\"f32\"}]}]}\n");
  crec_program_destroy(p);
}

Test(lower, dynamic_memrefs_take_descriptors_and_sizes_from_the_binding) {
  crec_program *p = crec_test_lower_file("dynamic.mlir");
  crec_buffer_info x = buffer(p, "x");
  cr_assert_eq(x.dynamic_size, 1);
  cr_assert_eq(x.element, CREC_ELEMENT_F32);
  crec_scalar_info bytes;
  EXPECT_OK(crec_scalar_get_info(p, scalar(p, "x.bytes"), &bytes));
  cr_assert_eq(bytes.kind, CREC_SCALAR_SIZE);
  cr_assert_eq(crec_program_bound_scalar_count(p), 0);

  crec_command_info c = crec_test_command(p, 0);
  /* memref<?xf32>: allocated, aligned, offset, size, stride; twice; then n */
  cr_assert_eq(c.num_args, 11);
  expect_buffer_arg(p, 0, 0, "x", 0, CREC_WHOLE, CREC_ACCESS_READ);
  expect_buffer_arg(p, 0, 1, "x", 0, CREC_WHOLE, CREC_ACCESS_READ);
  expect_imm_i64(p, 0, 2, 0);
  expect_scalar_arg(p, 0, 3, "dim(x, 0)");
  expect_imm_i64(p, 0, 4, 1);
  expect_buffer_arg(p, 0, 5, "y", 0, CREC_WHOLE, CREC_ACCESS_WRITE);
  expect_scalar_arg(p, 0, 8, "dim(y, 0)");
  expect_scalar_arg(p, 0, 10, "dim(x, 0)");
  cr_assert_eq(c.grid[0].scalar.id, scalar(p, "ceildivui(dim(x, 0), 256)").id);
  cr_assert_eq(c.block[0].value, 256);

  /* the host function: n = bytes / 4, grid = ceildiv(n, 256) */
  const char *names[] = {"x.bytes", "y.bytes"};
  crec_value in[2] = {{.i64 = 4000}, {.i64 = 4004}}, out[8];
  size_t nout;
  run_host(p, names, in, 2, out, &nout, 0);
  cr_assert_eq(nout, 3);
  cr_assert_eq(host_output(p, out, "dim(x, 0)").i64, 1000);
  cr_assert_eq(host_output(p, out, "dim(y, 0)").i64, 1001);
  cr_assert_eq(host_output(p, out, "ceildivui(dim(x, 0), 256)").i64, 4);
  in[0].i64 = 4 * 257;
  run_host(p, names, in, 2, out, &nout, 0);
  cr_assert_eq(host_output(p, out, "ceildivui(dim(x, 0), 256)").i64, 2);
  crec_program_destroy(p);
}

Test(lower, host_arithmetic_is_jit_compiled_and_constants_fold) {
  crec_program *p = crec_test_lower_file("host.mlir");
  crec_command_info c = crec_test_command(p, 0);
  cr_assert_eq(c.block[0].value, 128, "arith.muli of constants folds to a fixed dim");
  cr_assert_neq(c.grid[0].scalar.id, 0, "the grid comes from a derived scalar");
  crec_scalar_info g;
  EXPECT_OK(crec_scalar_get_info(p, c.grid[0].scalar, &g));
  cr_assert_eq(g.kind, CREC_SCALAR_DERIVED);
  cr_assert_eq(g.type, CREC_TYPE_I64);
  /* kernel scalars: n as i32 and 2 * alpha as f32 */
  crec_arg n32 = crec_test_arg(p, 0, 5), twice = crec_test_arg(p, 0, 6);
  cr_assert_eq(n32.kind, CREC_ARG_SCALAR);
  crec_scalar_info si;
  EXPECT_OK(crec_scalar_get_info(p, n32.scalar, &si));
  cr_assert_eq(si.type, CREC_TYPE_I32);
  EXPECT_OK(crec_scalar_get_info(p, twice.scalar, &si));
  cr_assert_eq(si.type, CREC_TYPE_F32);

  const char *names[] = {"x.bytes", "rows", "cols", "alpha"};
  crec_value in[4] = {{.i64 = 1200}, {.i64 = 3}, {.i64 = 100}, {.f32 = 1.5f}}, out[8];
  size_t nout;
  run_host(p, names, in, 4, out, &nout, 0);
  crec_host_function_info h;
  EXPECT_OK(crec_program_get_host_function(p, 0, &h));
  for (size_t i = 0; i < h.num_outputs; i++) {
    crec_scalar_info o;
    EXPECT_OK(crec_scalar_get_info(p, h.outputs[i], &o));
    if (h.outputs[i].id == c.grid[0].scalar.id) cr_assert_eq(out[i].i64, 3, "ceildiv(300, 128)");
    if (h.outputs[i].id == n32.scalar.id) cr_assert_eq(out[i].i32, 300);
    if (h.outputs[i].id == twice.scalar.id) cr_assert_float_eq(out[i].f32, 3.0f, 1e-6);
  }
  /* n = 0 still launches one block (arith.select) */
  in[1].i64 = 0;
  run_host(p, names, in, 4, out, &nout, 0);
  for (size_t i = 0; i < h.num_outputs; i++)
    if (h.outputs[i].id == c.grid[0].scalar.id) cr_assert_eq(out[i].i64, 1);
  crec_program_destroy(p);
}

Test(lower, host_division_by_zero_fails_the_host_function_instead_of_trapping) {
  crec_program *p = crec_test_lower_text(
      "module attributes {gpu.container_module} {\n"
      "  gpu.module @k { gpu.func @f(%n: index) kernel { gpu.return } }\n"
      "  func.func @main(%a: index {crec.name = \"a\"}, %b: index {crec.name = \"b\"}) {\n"
      "    %c1 = arith.constant 1 : index\n"
      "    %q = arith.divsi %a, %b : index\n"
      "    %r = arith.remui %a, %b : index\n"
      "    %s = arith.addi %q, %r : index\n"
      "    gpu.launch_func @k::@f blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%s : index)\n"
      "    return\n  }\n}\n");
  const char *names[] = {"a", "b"};
  crec_value in[2] = {{.i64 = 17}, {.i64 = 5}}, out[4];
  size_t nout;
  run_host(p, names, in, 2, out, &nout, 0);
  cr_assert_eq(out[0].i64, 3 + 2);
  in[1].i64 = 0;
  run_host(p, names, in, 2, out, &nout, 1);
  in[0].i64 = INT64_MIN;
  in[1].i64 = -1;
  run_host(p, names, in, 2, out, &nout, 1);
  crec_program_destroy(p);
}

Test(lower, float_and_narrow_integer_constants_become_immediates_of_the_parameter_size) {
  crec_program *p = crec_test_lower_text(
      "module attributes {gpu.container_module} {\n"
      "  gpu.module @k { gpu.func @f(%a: f32, %b: f64, %c: i32, %d: i64, %e: i16, %g: index) kernel { gpu.return } }\n"
      "  func.func @main() {\n"
      "    %c1 = arith.constant 1 : index\n"
      "    %a = arith.constant 2.5 : f32\n    %b = arith.constant -0.25 : f64\n"
      "    %c = arith.constant -7 : i32\n    %d = arith.constant 1099511627776 : i64\n"
      "    %e = arith.constant 513 : i16\n    %g = arith.constant 12 : index\n"
      "    gpu.launch_func @k::@f blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)\n"
      "        args(%a : f32, %b : f64, %c : i32, %d : i64, %e : i16, %g : index)\n"
      "    return\n  }\n}\n");
  crec_command_info c = crec_test_command(p, 0);
  cr_assert_eq(c.num_args, 6);
  crec_arg a = crec_test_arg(p, 0, 0), b = crec_test_arg(p, 0, 1), ci = crec_test_arg(p, 0, 2), d = crec_test_arg(p, 0, 3), e = crec_test_arg(p, 0, 4), g = crec_test_arg(p, 0, 5);
  cr_assert_eq(a.size, 4);
  cr_assert_float_eq(a.value.f32, 2.5f, 0);
  cr_assert_eq(b.size, 8);
  cr_assert_float_eq(b.value.f64, -0.25, 0);
  cr_assert_eq(ci.size, 4);
  cr_assert_eq(ci.value.i32, -7);
  cr_assert_eq(d.value.i64, 1099511627776LL);
  cr_assert_eq(e.size, 2, "an i16 parameter gets 2 bytes");
  cr_assert_eq(e.value.bytes[0], 1);
  cr_assert_eq(e.value.bytes[1], 2);
  cr_assert_eq(g.size, 8);
  cr_assert_eq(g.value.i64, 12);
  crec_program_destroy(p);
}

/* ---- copies, fills, tokens ---- */

Test(lower, copies_fills_and_tokens) {
  crec_program *p = crec_test_lower_file("copies.mlir");
  cr_assert_eq(buffer(p, "host").memory, CREC_MEMORY_HOST);
  cr_assert_eq(buffer(p, "dst").memory, CREC_MEMORY_DEVICE);
  cr_assert_eq(crec_program_command_count(p), 4);
  crec_command_info set = crec_test_command(p, 0);
  cr_assert_eq(set.kind, CREC_COMMAND_MEMSET);
  crec_test_expect_range(p, set.dst, "dst", 0, 1024);
  cr_assert_eq(set.memset_value, 0);
  cr_assert_eq(set.memset_element_size, 4);
  crec_command_info cp = crec_test_command(p, 1);
  cr_assert_eq(cp.kind, CREC_COMMAND_MEMCPY);
  crec_test_expect_range(p, cp.dst, "dst", 0, 1024);
  crec_test_expect_range(p, cp.src, "src", 0, 1024);
  crec_command_info h2d = crec_test_command(p, 2);
  crec_test_expect_range(p, h2d.src, "host", 0, 1024);
  crec_test_expect_range(p, h2d.dst, "src", 0, 1024);
  crec_command_info copy = crec_test_command(p, 3);
  crec_test_expect_range(p, copy.src, "dst", 0, 1024);
  crec_test_expect_range(p, copy.dst, "src", 0, 1024);
  /* tokens add nothing: the chain comes from the buffers alone */
  expect_json(p,
              "{\"buffers\":["
              "{\"name\":\"src\",\"kind\":\"argument\",\"size\":1024,\"element\":\"f32\",\"dynamic\":false},"
              "{\"name\":\"host\",\"kind\":\"argument\",\"size\":1024,\"element\":\"f32\",\"dynamic\":false,\"memory\":\"host\"},"
              "{\"name\":\"dst\",\"kind\":\"argument\",\"size\":1024,\"element\":\"f32\",\"dynamic\":false}],"
              "\"scalars\":[],"
              "\"regions\":[{\"id\":0,\"parent\":null,\"role\":\"program\",\"index\":0}],"
              "\"commands\":[{\"id\":0,\"kind\":\"memset\",\"name\":\"memset\",\"region\":0,\"deps\":[],"
              "\"dst\":{\"buffer\":\"dst\",\"offset\":0,\"end\":1024},"
              "\"bytes\":1024,\"value\":\"0x0\",\"element_size\":4},"
              "{\"id\":1,\"kind\":\"memcpy\",\"name\":\"memcpy\",\"region\":0,\"deps\":[0],"
              "\"dst\":{\"buffer\":\"dst\",\"offset\":0,\"end\":1024},"
              "\"src\":{\"buffer\":\"src\",\"offset\":0,\"end\":1024},\"bytes\":1024},"
              "{\"id\":2,\"kind\":\"memcpy\",\"name\":\"memcpy\",\"region\":0,\"deps\":[1],"
              "\"dst\":{\"buffer\":\"src\",\"offset\":0,\"end\":1024},"
              "\"src\":{\"buffer\":\"host\",\"offset\":0,\"end\":1024},\"bytes\":1024},"
              "{\"id\":3,\"kind\":\"memcpy\",\"name\":\"memcpy\",\"region\":0,\"deps\":[2],"
              "\"dst\":{\"buffer\":\"src\",\"offset\":0,\"end\":1024},"
              "\"src\":{\"buffer\":\"dst\",\"offset\":0,\"end\":1024},\"bytes\":1024}]}\n");
  crec_program_destroy(p);
}

Test(lower, async_tokens_do_not_order_independent_commands) {
  crec_program *p = crec_test_lower_text(
      "module {\n  func.func @main(%a: memref<64xi32>, %b: memref<64xi32>) {\n"
      "    %z = arith.constant 0 : i32\n    %one = arith.constant 1 : i32\n"
      "    %t0 = gpu.memset async %a, %z : memref<64xi32>, i32\n"
      "    %t1 = gpu.memset async [%t0] %b, %one : memref<64xi32>, i32\n"
      "    gpu.wait [%t0, %t1]\n    return\n  }\n}\n");
  crec_plan *plan = NULL;
  EXPECT_OK(crec_plan_create(p, NULL, &plan));
  const crec_command *deps;
  size_t n;
  EXPECT_OK(crec_plan_get_deps(plan, crec_program_command(p, 1), &deps, &n));
  cr_assert_eq(n, 0, "a token alone does not make the second fill wait");
  cr_assert_eq(crec_test_command(p, 1).memset_value, 1);
  crec_plan_destroy(plan);
  crec_program_destroy(p);
}

Test(lower, memset_patterns_by_element_type) {
  crec_program *p = crec_test_lower_text(
      "module {\n  func.func @main(%a: memref<8xf32>, %b: memref<8xi16>, %c: memref<8xi8>, %d: memref<8xf64>) {\n"
      "    %f = arith.constant 1.0 : f32\n    %h = arith.constant -2 : i16\n    %i = arith.constant 7 : i8\n"
      "    %z = arith.constant 0.0 : f64\n"
      "    gpu.memset %a, %f : memref<8xf32>, f32\n    gpu.memset %b, %h : memref<8xi16>, i16\n"
      "    gpu.memset %c, %i : memref<8xi8>, i8\n    gpu.memset %d, %z : memref<8xf64>, f64\n"
      "    return\n  }\n}\n");
  crec_command_info a = crec_test_command(p, 0), b = crec_test_command(p, 1), c = crec_test_command(p, 2), d = crec_test_command(p, 3);
  cr_assert_eq(a.memset_value, 0x3f800000u);
  cr_assert_eq(a.memset_element_size, 4);
  cr_assert_eq(b.memset_value, 0xfffeu);
  cr_assert_eq(b.memset_element_size, 2);
  cr_assert_eq(c.memset_value, 7);
  cr_assert_eq(c.memset_element_size, 1);
  cr_assert_eq(d.memset_value, 0);
  cr_assert_eq(d.memset_element_size, 4, "an f64 zero is a 4-byte fill");
  crec_test_expect_range(p, d.dst, "arg3", 0, 64);
  crec_program_destroy(p);
}

/* ---- memory ---- */

Test(lower, temporaries_constants_and_views) {
  crec_program *p = crec_test_lower_file("memory.mlir");
  crec_buffer_info table = buffer(p, "table");
  cr_assert_eq(table.kind, CREC_BUFFER_CONSTANT);
  cr_assert_eq(table.size, 16);
  const float expect[4] = {1, 2, 3, 4};
  cr_assert_arr_eq(table.data, expect, sizeof expect);
  crec_buffer_info scratch = buffer(p, "scratch"), tmp1 = buffer(p, "tmp1");
  cr_assert_eq(scratch.kind, CREC_BUFFER_TEMPORARY);
  cr_assert_eq(scratch.size, 16);
  cr_assert_eq(tmp1.kind, CREC_BUFFER_TEMPORARY);
  cr_assert_eq(tmp1.size, 64);

  expect_buffer_arg(p, 0, 0, "scratch", 0, 16, CREC_ACCESS_WRITE);
  expect_buffer_arg(p, 0, 1, "table", 0, 16, CREC_ACCESS_READ);
  /* reinterpret_cast at offset 0: the first 4 floats of out */
  expect_buffer_arg(p, 1, 0, "out", 0, 16, CREC_ACCESS_WRITE);
  /* subview at 8 floats: bytes 32..48 */
  crec_command_info part = crec_test_command(p, 2);
  cr_assert_eq(part.kind, CREC_COMMAND_MEMCPY);
  crec_test_expect_range(p, part.dst, "out", 32, 16);
  crec_test_expect_range(p, part.src, "scratch", 0, 16);
  /* memref.view at byte 16 of a byte buffer */
  expect_buffer_arg(p, 3, 0, "tmp1", 16, 16, CREC_ACCESS_WRITE);
  crec_command_info tail = crec_test_command(p, 4);
  crec_test_expect_range(p, tail.dst, "out", 48, 16);
  crec_test_expect_range(p, tail.src, "tmp1", 16, 16);

  /* scratch dies before tmp1 is born: they share the arena */
  crec_plan *plan = NULL;
  EXPECT_OK(crec_plan_create(p, NULL, &plan));
  size_t first, last;
  crec_buffer sb, tb;
  EXPECT_OK(crec_program_find_buffer(p, "scratch", &sb));
  EXPECT_OK(crec_program_find_buffer(p, "tmp1", &tb));
  EXPECT_OK(crec_plan_get_lifetime(plan, sb, &first, &last));
  cr_assert_eq(first, 0);
  cr_assert_eq(last, 2);
  cr_assert_eq(crec_plan_arena_bytes(plan), 64);
  crec_plan_destroy(plan);
  expect_json(p,
              "{\"buffers\":["
              "{\"name\":\"out\",\"kind\":\"argument\",\"size\":64,\"element\":\"f32\",\"dynamic\":false},"
              "{\"name\":\"table\",\"kind\":\"constant\",\"size\":16,\"element\":\"bytes\",\"dynamic\":false},"
              "{\"name\":\"scratch\",\"kind\":\"temporary\",\"size\":16,\"element\":\"bytes\",\"dynamic\":false,"
              "\"arena_offset\":0,\"live\":[0,2]},"
              "{\"name\":\"tmp1\",\"kind\":\"temporary\",\"size\":64,\"element\":\"bytes\",\"dynamic\":false,"
              "\"arena_offset\":0,\"live\":[3,4]}],"
              "\"scalars\":[],"
              "\"regions\":[{\"id\":0,\"parent\":null,\"role\":\"program\",\"index\":0}],"
              "\"commands\":[{\"id\":0,\"kind\":\"launch\",\"name\":\"scale\",\"region\":0,\"deps\":[],"
              "\"kernel\":{\"entry\":\"scale\",\"module\":\"kernels\",\"format\":\"ptx\"},\"grid\":[1,1,1],"
              "\"block\":[4,1,1],\"shared\":0,\"args\":["
              "{\"kind\":\"buffer\",\"buffer\":\"scratch\",\"offset\":0,\"end\":16,\"access\":\"write\"},"
              "{\"kind\":\"buffer\",\"buffer\":\"table\",\"offset\":0,\"end\":16,\"access\":\"read\"}]},"
              "{\"id\":1,\"kind\":\"launch\",\"name\":\"scale\",\"region\":0,\"deps\":[0],"
              "\"kernel\":{\"entry\":\"scale\",\"module\":\"kernels\",\"format\":\"ptx\"},\"grid\":[1,1,1],"
              "\"block\":[4,1,1],\"shared\":0,\"args\":["
              "{\"kind\":\"buffer\",\"buffer\":\"out\",\"offset\":0,\"end\":16,\"access\":\"write\"},"
              "{\"kind\":\"buffer\",\"buffer\":\"scratch\",\"offset\":0,\"end\":16,\"access\":\"read\"}]},"
              "{\"id\":2,\"kind\":\"memcpy\",\"name\":\"memcpy\",\"region\":0,\"deps\":[0],"
              "\"dst\":{\"buffer\":\"out\",\"offset\":32,\"end\":48},"
              "\"src\":{\"buffer\":\"scratch\",\"offset\":0,\"end\":16},\"bytes\":16},"
              "{\"id\":3,\"kind\":\"launch\",\"name\":\"scale\",\"region\":0,\"deps\":[],"
              "\"kernel\":{\"entry\":\"scale\",\"module\":\"kernels\",\"format\":\"ptx\"},\"grid\":[1,1,1],"
              "\"block\":[4,1,1],\"shared\":0,\"args\":["
              "{\"kind\":\"buffer\",\"buffer\":\"tmp1\",\"offset\":16,\"end\":32,\"access\":\"write\"},"
              "{\"kind\":\"buffer\",\"buffer\":\"table\",\"offset\":0,\"end\":16,\"access\":\"read\"}]},"
              "{\"id\":4,\"kind\":\"memcpy\",\"name\":\"memcpy\",\"region\":0,\"deps\":[3],"
              "\"dst\":{\"buffer\":\"out\",\"offset\":48,\"end\":64},"
              "\"src\":{\"buffer\":\"tmp1\",\"offset\":16,\"end\":32},\"bytes\":16}]}\n");
  crec_program_destroy(p);
}

Test(lower, bare_pointer_with_a_layout_offset_points_at_the_aligned_pointer) {
  crec_program *p = crec_test_lower_text(
      "module attributes {gpu.container_module} {\n"
      "  gpu.module @k {\n"
      "    gpu.func @f(%x: memref<4xf32, strided<[1], offset: 8>>) kernel {\n"
      "      %i = gpu.thread_id x\n      %c = arith.constant 1.0 : f32\n"
      "      memref.store %c, %x[%i] : memref<4xf32, strided<[1], offset: 8>>\n      gpu.return\n    }\n  }\n"
      "  func.func @main(%out: memref<16xf32>) {\n    %c1 = arith.constant 1 : index\n"
      "    %v = memref.subview %out[8] [4] [1] : memref<16xf32> to memref<4xf32, strided<[1], offset: 8>>\n"
      "    gpu.launch_func @k::@f blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)\n"
      "        args(%v : memref<4xf32, strided<[1], offset: 8>>)\n    return\n  }\n}\n");
  /* the kernel adds the offset itself: the pointer is the buffer's start, the
   * declared bytes run through the view's end */
  expect_buffer_arg(p, 0, 0, "arg0", 0, 48, CREC_ACCESS_WRITE);
  crec_program_destroy(p);
}

Test(lower, subviews_in_two_dims_and_rank_reduction) {
  crec_program *p = crec_test_lower_text(
      "module {\n  func.func @main(%m: memref<8x16xf32>, %row: memref<16xf32>, %blk: memref<2x4xf32>) {\n"
      "    %r = memref.subview %m[3, 0] [1, 16] [1, 1] : memref<8x16xf32> to memref<16xf32, strided<[1], offset: 48>>\n"
      "    gpu.memcpy %row, %r : memref<16xf32>, memref<16xf32, strided<[1], offset: 48>>\n"
      "    %rows = memref.subview %m[2, 0] [2, 16] [1, 1] : memref<8x16xf32> to memref<2x16xf32, strided<[16, 1], offset: 32>>\n"
      "    %z = arith.constant 0.0 : f32\n"
      "    gpu.memset %rows, %z : memref<2x16xf32, strided<[16, 1], offset: 32>>, f32\n"
      "    return\n  }\n}\n");
  crec_command_info row = crec_test_command(p, 0);
  crec_test_expect_range(p, row.src, "arg0", 3 * 64, 64);
  crec_command_info rows = crec_test_command(p, 1);
  crec_test_expect_range(p, rows.dst, "arg0", 2 * 64, 128);
  crec_program_destroy(p);
}

Test(lower, gpu_alloc_and_splat_and_i1_globals) {
  crec_program *p = crec_test_lower_text(
      "module {\n"
      "  memref.global \"private\" constant @ones : memref<3xi32> = dense<1>\n"
      "  memref.global \"private\" constant @bits : memref<4xi1> = dense<[true, false, true, true]>\n"
      "  func.func @main() {\n"
      "    %t = gpu.alloc () : memref<3xi32>\n"
      "    %o = memref.get_global @ones : memref<3xi32>\n"
      "    gpu.memcpy %t, %o : memref<3xi32>, memref<3xi32>\n"
      "    %b = memref.get_global @bits : memref<4xi1>\n"
      "    %u = memref.alloc() : memref<4xi1>\n"
      "    gpu.memcpy %u, %b : memref<4xi1>, memref<4xi1>\n"
      "    gpu.dealloc %t : memref<3xi32>\n    return\n  }\n}\n");
  crec_buffer_info ones = buffer(p, "ones"), bits = buffer(p, "bits");
  const int32_t want_ones[3] = {1, 1, 1};
  const uint8_t want_bits[4] = {1, 0, 1, 1};
  cr_assert_arr_eq(ones.data, want_ones, sizeof want_ones);
  cr_assert_eq(bits.size, 4, "i1 elements take a byte each");
  cr_assert_arr_eq(bits.data, want_bits, sizeof want_bits);
  cr_assert_eq(buffer(p, "tmp0").kind, CREC_BUFFER_TEMPORARY);
  cr_assert_eq(buffer(p, "tmp0").size, 12);
  crec_program_destroy(p);
}

/* ---- control flow ---- */

Test(lower, while_if_and_switch_become_device_control_flow) {
  crec_program *p = crec_test_lower_file("control.mlir");
  cr_assert_eq(crec_program_region_count(p), 8);
  crec_command_info w = crec_test_command(p, 0);
  cr_assert_eq(w.kind, CREC_COMMAND_WHILE);
  crec_test_expect_range(p, w.predicate, "flag", 0, 1);
  cr_assert_eq(w.num_regions, 2);
  crec_region cond = crec_command_region(p, crec_program_command(p, 0), 0);
  crec_region body = crec_command_region(p, crec_program_command(p, 0), 1);
  crec_region_info ci, bi;
  EXPECT_OK(crec_region_get_info(p, cond, &ci));
  EXPECT_OK(crec_region_get_info(p, body, &bi));
  cr_assert_eq(ci.role, CREC_REGION_COND);
  cr_assert_eq(ci.num_commands, 1);
  cr_assert_eq(bi.role, CREC_REGION_BODY);
  crec_command_info step = crec_test_command(p, 1);
  cr_assert_eq(step.region.id, cond.id, "the step kernel runs in the cond region");
  expect_buffer_arg(p, 1, 0, "counter", 0, 4, CREC_ACCESS_READ_WRITE);
  expect_buffer_arg(p, 1, 1, "flag", 0, 1, CREC_ACCESS_WRITE);
  cr_assert_eq(crec_test_command(p, 2).region.id, body.id);

  crec_command_info i = crec_test_command(p, 3);
  cr_assert_eq(i.kind, CREC_COMMAND_IF);
  crec_test_expect_range(p, i.predicate, "cond", 1, 1);
  crec_arg ten = crec_test_arg(p, 4, 1), hundred = crec_test_arg(p, 5, 1);
  cr_assert_float_eq(ten.value.f32, 10.0f, 0);
  cr_assert_float_eq(hundred.value.f32, 100.0f, 0);

  crec_command_info s = crec_test_command(p, 6);
  cr_assert_eq(s.kind, CREC_COMMAND_SWITCH);
  crec_test_expect_range(p, s.predicate, "which", 0, 4);
  cr_assert_eq(s.num_regions, 3);
  cr_assert_not_null(s.case_values);
  cr_assert_eq(s.case_values[0], 0);
  cr_assert_eq(s.case_values[1], 5);
  cr_assert_eq(crec_test_command(p, 8).kind, CREC_COMMAND_BARRIER);
  crec_region_info b1;
  EXPECT_OK(crec_region_get_info(p, crec_test_command(p, 8).region, &b1));
  cr_assert_eq(b1.role, CREC_REGION_BRANCH);
  cr_assert_eq(b1.index_in_parent, 1);
  /* the default region is crec's last branch */
  crec_region_info b2;
  EXPECT_OK(crec_region_get_info(p, crec_test_command(p, 9).region, &b2));
  cr_assert_eq(b2.index_in_parent, 2);
  cr_assert_float_eq(crec_test_arg(p, 9, 1).value.f32, 10.0f, 0);
  expect_json(p,
              "{\"buffers\":["
              "{\"name\":\"counter\",\"kind\":\"argument\",\"size\":4,\"element\":\"i32\",\"dynamic\":false},"
              "{\"name\":\"flag\",\"kind\":\"argument\",\"size\":1,\"element\":\"i8\",\"dynamic\":false},"
              "{\"name\":\"cond\",\"kind\":\"argument\",\"size\":2,\"element\":\"i8\",\"dynamic\":false},"
              "{\"name\":\"which\",\"kind\":\"argument\",\"size\":4,\"element\":\"i32\",\"dynamic\":false},"
              "{\"name\":\"x\",\"kind\":\"argument\",\"size\":256,\"element\":\"f32\",\"dynamic\":false}],"
              "\"scalars\":[],"
              "\"regions\":[{\"id\":0,\"parent\":null,\"role\":\"program\",\"index\":0},"
              "{\"id\":1,\"parent\":0,\"role\":\"cond\",\"index\":0},"
              "{\"id\":2,\"parent\":0,\"role\":\"body\",\"index\":1},"
              "{\"id\":3,\"parent\":3,\"role\":\"then\",\"index\":0},"
              "{\"id\":4,\"parent\":3,\"role\":\"else\",\"index\":1},"
              "{\"id\":5,\"parent\":6,\"role\":\"branch\",\"index\":0},"
              "{\"id\":6,\"parent\":6,\"role\":\"branch\",\"index\":1},"
              "{\"id\":7,\"parent\":6,\"role\":\"branch\",\"index\":2}],"
              "\"commands\":[{\"id\":0,\"kind\":\"while\",\"name\":\"while\",\"region\":0,\"deps\":[],"
              "\"predicate\":{\"buffer\":\"flag\",\"offset\":0,\"end\":1},"
              "\"regions\":[1,2]},"
              "{\"id\":1,\"kind\":\"launch\",\"name\":\"step\",\"region\":1,\"deps\":[],"
              "\"kernel\":{\"entry\":\"step\",\"module\":\"kernels\",\"format\":\"ptx\"},\"grid\":[1,1,1],"
              "\"block\":[1,1,1],\"shared\":0,\"args\":["
              "{\"kind\":\"buffer\",\"buffer\":\"counter\",\"offset\":0,\"end\":4,\"access\":\"read-write\"},"
              "{\"kind\":\"buffer\",\"buffer\":\"flag\",\"offset\":0,\"end\":1,\"access\":\"write\"}]},"
              "{\"id\":2,\"kind\":\"launch\",\"name\":\"add\",\"region\":2,\"deps\":[],"
              "\"kernel\":{\"entry\":\"add\",\"module\":\"kernels\",\"format\":\"ptx\"},\"grid\":[1,1,1],"
              "\"block\":[64,1,1],\"shared\":0,\"args\":["
              "{\"kind\":\"buffer\",\"buffer\":\"x\",\"offset\":0,\"end\":256,\"access\":\"read-write\"},"
              "{\"kind\":\"immediate\",\"type\":\"f32\",\"value\":\"1\"}]},"
              "{\"id\":3,\"kind\":\"if\",\"name\":\"if\",\"region\":0,\"deps\":[0],"
              "\"predicate\":{\"buffer\":\"cond\",\"offset\":1,\"end\":2},"
              "\"regions\":[3,4]},"
              "{\"id\":4,\"kind\":\"launch\",\"name\":\"add\",\"region\":3,\"deps\":[],"
              "\"kernel\":{\"entry\":\"add\",\"module\":\"kernels\",\"format\":\"ptx\"},\"grid\":[1,1,1],"
              "\"block\":[64,1,1],\"shared\":0,\"args\":["
              "{\"kind\":\"buffer\",\"buffer\":\"x\",\"offset\":0,\"end\":256,\"access\":\"read-write\"},"
              "{\"kind\":\"immediate\",\"type\":\"f32\",\"value\":\"10\"}]},"
              "{\"id\":5,\"kind\":\"launch\",\"name\":\"add\",\"region\":4,\"deps\":[],"
              "\"kernel\":{\"entry\":\"add\",\"module\":\"kernels\",\"format\":\"ptx\"},\"grid\":[1,1,1],"
              "\"block\":[64,1,1],\"shared\":0,\"args\":["
              "{\"kind\":\"buffer\",\"buffer\":\"x\",\"offset\":0,\"end\":256,\"access\":\"read-write\"},"
              "{\"kind\":\"immediate\",\"type\":\"f32\",\"value\":\"100\"}]},"
              "{\"id\":6,\"kind\":\"switch\",\"name\":\"switch\",\"region\":0,\"deps\":[3],"
              "\"predicate\":{\"buffer\":\"which\",\"offset\":0,\"end\":4},\"cases\":[0,5],"
              "\"regions\":[5,6,7]},"
              "{\"id\":7,\"kind\":\"launch\",\"name\":\"add\",\"region\":5,\"deps\":[],"
              "\"kernel\":{\"entry\":\"add\",\"module\":\"kernels\",\"format\":\"ptx\"},\"grid\":[1,1,1],"
              "\"block\":[64,1,1],\"shared\":0,\"args\":["
              "{\"kind\":\"buffer\",\"buffer\":\"x\",\"offset\":0,\"end\":256,\"access\":\"read-write\"},"
              "{\"kind\":\"immediate\",\"type\":\"f32\",\"value\":\"1\"}]},"
              "{\"id\":8,\"kind\":\"barrier\",\"name\":\"barrier\",\"region\":6,\"deps\":[]},"
              "{\"id\":9,\"kind\":\"launch\",\"name\":\"add\",\"region\":7,\"deps\":[],"
              "\"kernel\":{\"entry\":\"add\",\"module\":\"kernels\",\"format\":\"ptx\"},\"grid\":[1,1,1],"
              "\"block\":[64,1,1],\"shared\":0,\"args\":["
              "{\"kind\":\"buffer\",\"buffer\":\"x\",\"offset\":0,\"end\":256,\"access\":\"read-write\"},"
              "{\"kind\":\"immediate\",\"type\":\"f32\",\"value\":\"10\"}]}]}\n");
  crec_program_destroy(p);
}

Test(lower, predicates_through_trunci_and_nested_regions) {
  crec_program *p = crec_test_lower_text(
      "module {\n  func.func @main(%f: memref<4xi32>, %g: memref<i64>, %a: memref<16xi8>) {\n"
      "    %c2 = arith.constant 2 : index\n    %z = arith.constant 0 : i8\n"
      "    %v = memref.load %f[%c2] : memref<4xi32>\n    %b = arith.trunci %v : i32 to i1\n"
      "    scf.if %b {\n"
      "      %w = memref.load %g[] : memref<i64>\n      %i = arith.index_cast %w : i64 to index\n"
      "      scf.index_switch %i\n      case 3 {\n        gpu.memset %a, %z : memref<16xi8>, i8\n        scf.yield\n      }\n"
      "      default {\n        scf.yield\n      }\n"
      "    }\n    return\n  }\n}\n");
  crec_command_info i = crec_test_command(p, 0), s = crec_test_command(p, 1), set = crec_test_command(p, 2);
  cr_assert_eq(i.kind, CREC_COMMAND_IF);
  crec_test_expect_range(p, i.predicate, "arg0", 8, 1);
  cr_assert_eq(s.kind, CREC_COMMAND_SWITCH);
  crec_test_expect_range(p, s.predicate, "arg1", 0, 4);
  cr_assert_eq(s.case_values[0], 3);
  crec_region_info r;
  EXPECT_OK(crec_region_get_info(p, s.region, &r));
  cr_assert_eq(r.role, CREC_REGION_THEN);
  cr_assert_eq(set.kind, CREC_COMMAND_MEMSET);
  crec_region_info e;
  EXPECT_OK(crec_region_get_info(p, crec_command_region(p, crec_program_command(p, 0), 1), &e));
  cr_assert_eq(e.num_commands, 0, "an scf.if without else has an empty else region");
  crec_program_destroy(p);
}

Test(lower, barrier_orders_independent_commands) {
  crec_program *p = crec_test_lower_text(
      "module {\n  func.func @main(%a: memref<64xi32>, %b: memref<64xi32>) {\n"
      "    %z = arith.constant 0 : i32\n"
      "    gpu.memset %a, %z : memref<64xi32>, i32\n"
      "    \"crec.barrier\"() {crec.name = \"fence\"} : () -> ()\n"
      "    gpu.memset %b, %z : memref<64xi32>, i32\n    return\n  }\n}\n");
  crec_command_info b = crec_test_command(p, 1);
  cr_assert_eq(b.kind, CREC_COMMAND_BARRIER);
  cr_assert_str_eq(b.name, "fence");
  crec_plan *plan = NULL;
  EXPECT_OK(crec_plan_create(p, NULL, &plan));
  const crec_command *deps;
  size_t n;
  EXPECT_OK(crec_plan_get_deps(plan, crec_program_command(p, 2), &deps, &n));
  cr_assert_eq(n, 1);
  cr_assert_eq(deps[0].id, crec_program_command(p, 1).id, "the second fill waits for the barrier");
  crec_plan_destroy(plan);
  crec_program_destroy(p);
}

/* ---- external kernels ---- */

Test(lower, crec_image_declarations_use_the_c_abi_and_crec_access) {
  crec_program *p = crec_test_lower_file("image.mlir");
  cr_assert_eq(crec_program_module_count(p), 1);
  crec_module_info m;
  EXPECT_OK(crec_module_get_info(p, crec_program_module(p, 0), &m));
  cr_assert_eq(m.format, CREC_IMAGE_PTX);
  cr_assert_str_eq(m.name, "cuda");
  cr_assert(strstr(m.image, ".entry axpy") != NULL);
  crec_command_info fill = crec_test_command(p, 0), axpy = crec_test_command(p, 1);
  crec_kernel_info k;
  EXPECT_OK(crec_kernel_get_info(p, fill.kernel, &k));
  cr_assert_str_eq(k.entry, "fill");
  cr_assert_eq(fill.num_args, 3);
  expect_buffer_arg(p, 0, 0, "y", 0, CREC_WHOLE, CREC_ACCESS_WRITE);
  cr_assert_eq(axpy.num_args, 4, "C ABI: one pointer per memref");
  expect_buffer_arg(p, 1, 0, "y", 0, CREC_WHOLE, CREC_ACCESS_READ_WRITE);
  expect_buffer_arg(p, 1, 1, "x", 0, CREC_WHOLE, CREC_ACCESS_READ);
  expect_scalar_arg(p, 1, 2, "a");
  expect_scalar_arg(p, 1, 3, "n");
  cr_assert_eq(axpy.grid[0].scalar.id, scalar(p, "ceildivsi(n, 128)").id);
  crec_program_destroy(p);
}

Test(lower, crec_image_without_access_is_read_write_and_crec_entry_renames) {
  crec_program *p = crec_test_lower_text(
      "module attributes {gpu.container_module} {\n"
      "  gpu.module @cuda attributes {crec.image = \"kernels.ptx\"} {\n"
      "    gpu.func @set_all(%y: memref<8xf32>, %v: f32, %n: i32) kernel attributes {crec.entry = \"fill\"} {\n"
      "      gpu.return\n    }\n  }\n"
      "  func.func @main(%y: memref<8xf32>) {\n    %c1 = arith.constant 1 : index\n"
      "    %v = arith.constant 3.0 : f32\n    %n = arith.constant 8 : i32\n"
      "    gpu.launch_func @cuda::@set_all blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)\n"
      "        args(%y : memref<8xf32>, %v : f32, %n : i32)\n    return\n  }\n}\n");
  crec_kernel_info k;
  EXPECT_OK(crec_kernel_get_info(p, crec_test_command(p, 0).kernel, &k));
  cr_assert_str_eq(k.entry, "fill");
  expect_buffer_arg(p, 0, 0, "arg0", 0, 32, CREC_ACCESS_READ_WRITE);
  crec_program_destroy(p);
}

Test(lower, gpu_binary_kernels_get_the_convention_their_ptx_expects) {
  crec_program *p = crec_test_lower_file("binary.mlir");
  crec_module_info m;
  EXPECT_OK(crec_module_get_info(p, crec_program_module(p, 0), &m));
  cr_assert_str_eq(m.name, "prebuilt");
  cr_assert_eq(m.format, CREC_IMAGE_PTX);
  /* memref<256xi32> as a descriptor: 5 parameters */
  crec_command_info inc = crec_test_command(p, 0);
  cr_assert_eq(inc.num_args, 5);
  expect_buffer_arg(p, 0, 0, "x", 0, 1024, CREC_ACCESS_READ_WRITE);
  expect_imm_i64(p, 0, 2, 0);
  expect_imm_i64(p, 0, 3, 256);
  expect_imm_i64(p, 0, 4, 1);
  crec_command_info copy = crec_test_command(p, 1);
  cr_assert_eq(copy.num_args, 11);
  expect_scalar_arg(p, 1, 3, "dim(y, 0)");
  expect_imm_i64(p, 1, 8, 256); /* memref.cast keeps the static size of x */
  crec_program_destroy(p);
}

Test(lower, gpu_binary_picks_the_object_for_the_chip) {
  const char *fmt =
      "module attributes {gpu.container_module} {\n"
      "  gpu.binary @b [#gpu.object<#nvvm.target<chip = \"sm_80\">, assembly = \"%s\">,\n"
      "                 #gpu.object<#nvvm.target<chip = \"sm_90\">, assembly = \"%s\">]\n"
      "  func.func @main(%%x: memref<4xi32>) {\n    %%c1 = arith.constant 1 : index\n"
      "    gpu.launch_func @b::@k blocks in (%%c1, %%c1, %%c1) threads in (%%c1, %%c1, %%c1) args(%%x : memref<4xi32>)\n"
      "    return\n  }\n}\n";
  const char *ptx80 = ".version 7.0\\0A.target sm_80\\0A.address_size 64\\0A.visible .entry k(.param .u64 p)\\0A{ ret; }\\0A";
  const char *ptx90 = ".version 7.8\\0A.target sm_90\\0A.address_size 64\\0A.visible .entry k(.param .u64 p)\\0A{ ret; }\\0A";
  char text[4096];
  snprintf(text, sizeof text, fmt, ptx80, ptx90);
  crec_lower_options o = CREC_LOWER_OPTIONS_INIT;
  crec_program *p = NULL;
  o.chip = "sm_90";
  EXPECT_OK(crec_lower_mlir_string(text, strlen(text), &o, &p));
  crec_module_info m;
  EXPECT_OK(crec_module_get_info(p, crec_program_module(p, 0), &m));
  cr_assert(strstr(m.image, ".target sm_90") != NULL);
  cr_assert_eq(crec_test_command(p, 0).num_args, 1, "one .u64 parameter: a bare pointer");
  crec_program_destroy(p);
  o.chip = "sm_86";
  EXPECT_OK(crec_lower_mlir_string(text, strlen(text), &o, &p));
  EXPECT_OK(crec_module_get_info(p, crec_program_module(p, 0), &m));
  cr_assert(strstr(m.image, ".target sm_80") != NULL, "older PTX is chosen for a chip without its own object");
  crec_program_destroy(p);
}

Test(lower, images_in_cubin_and_fatbin_form) {
  /* kernels.cu built by nvcc as a cubin and a fatbin (sm_90 code plus PTX) */
  const char *forms[] = {"kernels.cubin", "kernels.fatbin"};
  const crec_image_format want[] = {CREC_IMAGE_CUBIN, CREC_IMAGE_FATBIN};
  for (int f = 0; f < 2; f++) {
    char text[2048];
    snprintf(text, sizeof text,
             "module attributes {gpu.container_module} {\n"
             "  gpu.module @cuda attributes {crec.image = \"%s\"} {\n"
             "    func.func private @axpy(memref<16xf32>, memref<16xf32>, f32, i32) attributes {gpu.kernel}\n  }\n"
             "  func.func @main(%%y: memref<16xf32>, %%x: memref<16xf32>, %%a: f32, %%n: i32) {\n"
             "    %%c1 = arith.constant 1 : index\n"
             "    gpu.launch_func @cuda::@axpy blocks in (%%c1, %%c1, %%c1) threads in (%%c1, %%c1, %%c1)\n"
             "        args(%%y : memref<16xf32>, %%x : memref<16xf32>, %%a : f32, %%n : i32)\n    return\n  }\n}\n",
             forms[f]);
    crec_lower_options o = CREC_LOWER_OPTIONS_INIT;
    o.base_dir = MLIR_DIR;
    crec_program *p = NULL;
    EXPECT_OK(crec_lower_mlir_string(text, strlen(text), &o, &p));
    crec_module_info m;
    EXPECT_OK(crec_module_get_info(p, crec_program_module(p, 0), &m));
    cr_assert_eq(m.format, want[f], "%s", forms[f]);
    cr_assert_eq(crec_test_command(p, 0).num_args, 4);
    crec_program_destroy(p);
  }
}

/* ---- names, options, determinism, cache ---- */

Test(lower, default_names_and_crec_name_on_ops) {
  crec_program *p = crec_test_lower_text(
      "module {\n  func.func @main(%a: memref<4xi32>, %n: i32, %b: memref<4xi32> {crec.name = \"bee\"}) {\n"
      "    gpu.memcpy %b, %a : memref<4xi32>, memref<4xi32> {crec.name = \"copy a to b\"}\n    return\n  }\n}\n");
  cr_assert_eq(buffer(p, "arg0").argument_index, 0);
  crec_scalar n = scalar(p, "arg1");
  crec_scalar_info si;
  EXPECT_OK(crec_scalar_get_info(p, n, &si));
  cr_assert_eq(si.type, CREC_TYPE_I32);
  cr_assert_eq(buffer(p, "bee").argument_index, 1);
  cr_assert_str_eq(crec_test_command(p, 0).name, "copy a to b");
  crec_program_destroy(p);
}

Test(lower, entry_option_and_chip_option) {
  const char *text =
      "module attributes {gpu.container_module} {\n"
      "  gpu.module @k { gpu.func @f(%x: memref<4xf32>) kernel { gpu.return } }\n"
      "  func.func @main() { return }\n"
      "  func.func @other(%x: memref<4xf32>) {\n    %c1 = arith.constant 1 : index\n"
      "    gpu.launch_func @k::@f blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<4xf32>)\n"
      "    return\n  }\n}\n";
  crec_lower_options o = CREC_LOWER_OPTIONS_INIT;
  o.entry = "other";
  o.chip = "sm_80";
  crec_program *p = NULL;
  EXPECT_OK(crec_lower_mlir_string(text, strlen(text), &o, &p));
  cr_assert_eq(crec_program_command_count(p), 1);
  crec_module_info m;
  EXPECT_OK(crec_module_get_info(p, crec_program_module(p, 0), &m));
  cr_assert(strstr(m.image, ".target sm_80") != NULL, "the chip option sets the PTX target");
  crec_program_destroy(p);
  o.entry = NULL;
  EXPECT_OK(crec_lower_mlir_string(text, strlen(text), &o, &p));
  cr_assert_eq(crec_program_command_count(p), 0, "the default entry is main");
  crec_program_destroy(p);
}

Test(lower, lowering_twice_gives_identical_programs) {
  const char *files[] = {"saxpy.mlir", "dynamic.mlir", "copies.mlir", "memory.mlir", "control.mlir",
                         "image.mlir", "binary.mlir", "host.mlir"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    crec_program *a = crec_test_lower_file(files[i]), *b = crec_test_lower_file(files[i]);
    for (int f = 0; f < 2; f++) {
      char *ja = NULL, *jb = NULL;
      EXPECT_OK(crec_dump(a, NULL, f ? CREC_DUMP_TEXT : CREC_DUMP_JSON, &ja, NULL));
      EXPECT_OK(crec_dump(b, NULL, f ? CREC_DUMP_TEXT : CREC_DUMP_JSON, &jb, NULL));
      cr_assert_str_eq(ja, jb, "%s lowers differently the second time", files[i]);
      crec_free(ja);
      crec_free(jb);
    }
    for (size_t m = 0; m < crec_program_module_count(a); m++) {
      crec_module_info ma, mb;
      EXPECT_OK(crec_module_get_info(a, crec_program_module(a, m), &ma));
      EXPECT_OK(crec_module_get_info(b, crec_program_module(b, m), &mb));
      cr_assert_eq(ma.size, mb.size);
      cr_assert_arr_eq(ma.image, mb.image, ma.size, "%s: module images differ", files[i]);
    }
    crec_program_destroy(a);
    crec_program_destroy(b);
  }
}

Test(lower, second_lowering_compiles_nothing) {
  crec_lower_cache_stats before = CREC_LOWER_CACHE_STATS_INIT, mid = CREC_LOWER_CACHE_STATS_INIT,
                         after = CREC_LOWER_CACHE_STATS_INIT;
  crec_lower_cache_clear();
  EXPECT_OK(crec_lower_cache_get_stats(&before));
  crec_program *a = crec_test_lower_file("control.mlir");
  EXPECT_OK(crec_lower_cache_get_stats(&mid));
  cr_assert_eq(mid.compilations, before.compilations + 1, "the first lowering compiles the gpu.module");
  cr_assert_eq(mid.entries, 1);
  crec_program *b = crec_test_lower_file("control.mlir");
  EXPECT_OK(crec_lower_cache_get_stats(&after));
  cr_assert_eq(after.compilations, mid.compilations, "the second lowering compiled again");
  cr_assert_eq(after.hits, mid.hits + 1);
  /* another chip is another compilation */
  crec_lower_options o = CREC_LOWER_OPTIONS_INIT;
  o.chip = "sm_80";
  crec_program *c = NULL;
  EXPECT_OK(crec_lower_mlir_file(MLIR_DIR "control.mlir", &o, &c));
  EXPECT_OK(crec_lower_cache_get_stats(&after));
  cr_assert_eq(after.compilations, mid.compilations + 1);
  crec_lower_cache_clear();
  EXPECT_OK(crec_lower_cache_get_stats(&after));
  cr_assert_eq(after.entries, 0);
  cr_assert_eq(after.bytes, 0);
  crec_program_destroy(a);
  crec_program_destroy(b);
  crec_program_destroy(c);
}

static int diag_count, warn_count;
static char diag_seen[1024], warn_seen[1024];
static void on_diag(void *user, const char *severity, const char *location, const char *message) {
  (void)user;
  if (strcmp(severity, "error") == 0 && !diag_count++)
    snprintf(diag_seen, sizeof diag_seen, "%s|%s", location, message);
  if (strcmp(severity, "warning") == 0 && !warn_count++)
    snprintf(warn_seen, sizeof warn_seen, "%s|%s", location, message);
}

Test(lower, wide_conditions_get_a_warning_about_the_first_byte) {
  crec_lower_options o = CREC_LOWER_OPTIONS_INIT;
  o.diagnostic = on_diag;
  o.filename = "w.mlir";
  const char *wide = "module {\n  func.func @main(%p: memref<i32>) {\n    %z = arith.constant 0 : i32\n"
                     "    %v = memref.load %p[] : memref<i32>\n    %b = arith.cmpi ne, %v, %z : i32\n"
                     "    scf.if %b {\n    }\n    return\n  }\n}\n";
  const char *narrow = "module {\n  func.func @main(%p: memref<i1>) {\n"
                       "    %v = memref.load %p[] : memref<i1>\n    scf.if %v {\n    }\n    return\n  }\n}\n";
  crec_program *p = NULL;
  warn_count = 0;
  EXPECT_OK(crec_lower_mlir_string(wide, strlen(wide), &o, &p));
  crec_program_destroy(p);
  cr_assert_eq(warn_count, 1);
  cr_assert_str_eq(warn_seen, "w.mlir:6:5|crec tests the first byte of this loaded i32: the condition is exact when "
                              "the value is 0 or 1");
  warn_count = 0;
  EXPECT_OK(crec_lower_mlir_string(narrow, strlen(narrow), &o, &p));
  crec_program_destroy(p);
  cr_assert_eq(warn_count, 0, "an i1 condition is exact");
}

Test(lower, diagnostics_reach_the_callback) {
  const char *text = "module {\n  func.func @main() {\n    scf.for %i = 0 to 1 step 1 {\n    }\n    return\n  }\n}\n";
  crec_lower_options o = CREC_LOWER_OPTIONS_INIT;
  o.diagnostic = on_diag;
  o.filename = "diag.mlir";
  crec_program *p = NULL;
  diag_count = 0;
  crec_status s = crec_lower_mlir_string(text, strlen(text), &o, &p);
  cr_assert_neq(s, CREC_OK);
  cr_assert_eq(diag_count, 1);
  cr_assert(strncmp(diag_seen, "diag.mlir:3:", 12) == 0, "diagnostic: %s", diag_seen);
  const char *parse_err = "module {\n  func.func @main() {\n    %x = arith.constant : i32\n  }\n}\n";
  diag_count = 0;
  s = crec_lower_mlir_string(parse_err, strlen(parse_err), &o, &p);
  cr_assert_eq(s, CREC_ERR_MLIR);
  cr_assert_eq(diag_count, 1);
  cr_assert(strncmp(diag_seen, "diag.mlir:3:", 12) == 0, "diagnostic: %s", diag_seen);
}

Test(lower, live_objects_balance) {
  int64_t live = crec_debug_live_objects();
  crec_program *p = crec_test_lower_file("control.mlir");
  cr_assert_eq(crec_debug_live_objects(), live + 1);
  crec_program_destroy(p);
  cr_assert_eq(crec_debug_live_objects(), live);
  crec_program *q = NULL;
  const char *bad = "module {\n  func.func @main(%a: memref<?x?xf32>) { return }\n}\n";
  cr_assert_neq(crec_lower_mlir_string(bad, strlen(bad), NULL, &q), CREC_OK);
  cr_assert_null(q);
  cr_assert_eq(crec_debug_live_objects(), live, "a failed lowering leaks its program");
}

Test(lower, gpu_binary_crec_access_and_crec_abi) {
  const char *fmt =
      "module attributes {gpu.container_module} {\n"
      "  gpu.binary @b {crec.access = {k = [\"w\"]}%s} [#gpu.object<#nvvm.target<chip = \"sm_90\">, assembly = "
      "\".version 7.8\\0A.target sm_90\\0A.address_size 64\\0A.visible .entry k(.param .u64 p)\\0A{ ret; }\\0A\">]\n"
      "  func.func @main(%%x: memref<16xi32>) {\n    %%c1 = arith.constant 1 : index\n"
      "    %%v = memref.subview %%x[4] [4] [1] : memref<16xi32> to memref<4xi32, strided<[1], offset: 4>>\n"
      "    gpu.launch_func @b::@k blocks in (%%c1, %%c1, %%c1) threads in (%%c1, %%c1, %%c1)\n"
      "        args(%%v : memref<4xi32, strided<[1], offset: 4>>)\n    return\n  }\n}\n";
  char text[2048];
  crec_program *p;
  snprintf(text, sizeof text, fmt, "");
  p = crec_test_lower_text(text);
  /* one .u64 parameter for one memref: bare pointers, at the aligned pointer */
  expect_buffer_arg(p, 0, 0, "arg0", 0, 32, CREC_ACCESS_WRITE);
  crec_program_destroy(p);
  snprintf(text, sizeof text, fmt, ", crec.abi = \"c\"");
  p = crec_test_lower_text(text);
  /* the C ABI points at the first element: exactly the view's bytes */
  expect_buffer_arg(p, 0, 0, "arg0", 16, 16, CREC_ACCESS_WRITE);
  crec_program_destroy(p);
}

Test(lower, clusters_dynamic_shared_memory_and_argument_options) {
  crec_program *p = crec_test_lower_text(
      "module attributes {gpu.container_module} {\n"
      "  gpu.module @k { gpu.func @tile(%x: memref<1024xf32>) kernel { gpu.return } }\n"
      "  func.func @main(%x: memref<1024xf32> {crec.alignment = 256, crec.memory = \"device\"}, %smem: i32,\n"
      "                  %h: memref<8xi8> {crec.memory = \"host\"}) {\n"
      "    %c1 = arith.constant 1 : index\n    %c2 = arith.constant 2 : index\n"
      "    %c4 = arith.constant 4 : index\n    %s = arith.constant 65536 : i32\n"
      "    gpu.launch_func @k::@tile clusters in (%c2, %c1, %c1) blocks in (%c4, %c1, %c1) threads in (%c4, %c1, %c1)\n"
      "        dynamic_shared_memory_size %s args(%x : memref<1024xf32>)\n"
      "    gpu.launch_func @k::@tile blocks in (%c4, %c1, %c1) threads in (%c4, %c1, %c1)\n"
      "        dynamic_shared_memory_size %smem args(%x : memref<1024xf32>) {crec.shared_bytes = 100000 : i64}\n"
      "    return\n  }\n}\n");
  crec_command_info a = crec_test_command(p, 0), b = crec_test_command(p, 1);
  crec_kernel_info ka, kb;
  EXPECT_OK(crec_kernel_get_info(p, a.kernel, &ka));
  EXPECT_OK(crec_kernel_get_info(p, b.kernel, &kb));
  cr_assert_eq(ka.cluster[0], 2);
  cr_assert_eq(ka.cluster[1], 1);
  cr_assert_eq(ka.shared_bytes, 65536);
  cr_assert_eq(a.grid[0].value, 4, "clusters do not shift the grid operands");
  cr_assert_eq(a.shared_bytes.value, 65536);
  cr_assert_eq(kb.cluster[0], 0);
  cr_assert_eq(kb.shared_bytes, 100000);
  cr_assert_eq(b.shared_bytes.scalar.id, scalar(p, "arg1").id);
  cr_assert_eq(buffer(p, "arg0").alignment, 256);
  cr_assert_eq(buffer(p, "arg2").memory, CREC_MEMORY_HOST);
  cr_assert_eq(buffer(p, "arg2").element, CREC_ELEMENT_I8);
  crec_program_destroy(p);
}

/* Lowerings on several threads at once: each has its own MLIR context; the
 * compilation cache and the JIT are shared. */
typedef struct lower_job {
  const char *file;
  char *json;
} lower_job;

static void *lower_thread(void *arg) {
  lower_job *j = arg;
  char path[1024];
  snprintf(path, sizeof path, "%s%s", MLIR_DIR, j->file);
  crec_program *p = NULL;
  if (crec_lower_mlir_file(path, NULL, &p) == CREC_OK) {
    crec_dump(p, NULL, CREC_DUMP_JSON, &j->json, NULL);
    crec_program_destroy(p);
  }
  return NULL;
}

Test(lower, lowerings_on_four_threads_at_once) {
  crec_lower_cache_clear();
  const char *files[4] = {"control.mlir", "host.mlir", "control.mlir", "dynamic.mlir"};
  lower_job jobs[4];
  pthread_t threads[4];
  for (int i = 0; i < 4; i++) {
    jobs[i].file = files[i];
    jobs[i].json = NULL;
    cr_assert_eq(pthread_create(&threads[i], NULL, lower_thread, &jobs[i]), 0);
  }
  for (int i = 0; i < 4; i++) pthread_join(threads[i], NULL);
  for (int i = 0; i < 4; i++) {
    cr_assert_not_null(jobs[i].json, "thread %d failed to lower %s", i, files[i]);
    crec_program *p = crec_test_lower_file(files[i]);
    char *j = crec_test_json(p);
    cr_assert_str_eq(jobs[i].json, j, "%s lowered on a thread differs", files[i]);
    crec_free(j);
    crec_free(jobs[i].json);
    crec_program_destroy(p);
  }
}

Test(lower, a_widened_bound_scalar_is_used_as_a_dim_directly) {
  crec_program *p = crec_test_lower_text(
      "module attributes {gpu.container_module} {\n  gpu.module @k { gpu.func @f() kernel { gpu.return } }\n"
      "  func.func @main(%n: i32 {crec.name = \"n\"}, %m: index {crec.name = \"m\"}) {\n"
      "    %c1 = arith.constant 1 : index\n    %g = arith.index_cast %n : i32 to index\n"
      "    %t = arith.index_cast %m : index to i32\n    %h = arith.index_cast %t : i32 to index\n"
      "    gpu.launch_func @k::@f blocks in (%g, %h, %c1) threads in (%c1, %c1, %c1)\n    return\n  }\n}\n");
  crec_command_info c = crec_test_command(p, 0);
  cr_assert_eq(c.grid[0].scalar.id, scalar(p, "n").id, "index_cast of n is n");
  crec_scalar_info si;
  EXPECT_OK(crec_scalar_get_info(p, c.grid[1].scalar, &si));
  cr_assert_eq(si.kind, CREC_SCALAR_DERIVED, "a truncating cast is computed, not peeled");
  crec_program_destroy(p);
}

/* ---- warnings: reads of temporary bytes that nothing wrote before ---- */

/* Every warning of one lowering, as "location|message" lines. */
static char undefined_seen[8192];
static void on_each_warning(void *user, const char *severity, const char *location, const char *message) {
  (void)user;
  if (strcmp(severity, "warning") != 0) return;
  size_t n = strlen(undefined_seen);
  snprintf(undefined_seen + n, sizeof undefined_seen - n, "%s|%s\n", location, message);
}

/* Lowers `text` as "u.mlir" and returns its warnings; the program goes to `*out` (NULL: destroyed). */
static const char *lower_warnings(const char *text, crec_program **out) {
  crec_lower_options o = CREC_LOWER_OPTIONS_INIT;
  o.diagnostic = on_each_warning;
  o.filename = "u.mlir";
  o.base_dir = MLIR_DIR;
  o.chip = "sm_90";
  undefined_seen[0] = '\0';
  crec_program *p = NULL;
  EXPECT_OK(crec_lower_mlir_string(text, strlen(text), &o, &p));
  if (out) *out = p;
  else crec_program_destroy(p);
  return undefined_seen;
}

/* A TMA descriptor of a fresh allocation reads its address, not its bytes: no
 * warning (a kernel may store into the tensor through it). */
Test(lower, a_tma_descriptor_of_a_fresh_alloc_does_not_warn) {
  const char *text =
      "!desc = !nvgpu.tensormap.descriptor<tensor = memref<8x8xf32, 3>, swizzle = none, l2promo = none, oob = zero, "
      "interleave = none>\n"
      "func.func @main() {\n"
      "  %c1 = arith.constant 1 : index\n"
      "  %c8 = arith.constant 8 : index\n"
      "  %t = gpu.alloc () : memref<8x8xf32>\n"
      "  %u = memref.cast %t : memref<8x8xf32> to memref<*xf32>\n"
      "  %d = nvgpu.tma.create.descriptor %u box[%c8, %c8] : memref<*xf32> -> !desc\n"
      "  gpu.launch blocks(%a, %b, %c) in (%e = %c1, %f = %c1, %g = %c1) threads(%i, %j, %k) in (%l = %c1, %m = %c1, "
      "%n = %c1) {\n"
      "    nvgpu.tma.prefetch.descriptor %d : !desc\n"
      "    gpu.terminator\n"
      "  }\n"
      "  return\n"
      "}\n";
  cr_assert_str_eq(lower_warnings(text, NULL), "");
}

Test(lower, matmul_into_a_fresh_alloc_warns_at_the_op) {
  const char *text = "module {\n"
                     "  func.func @main(%a: memref<4x4xf32> {crec.name = \"a\"}, %b: memref<4x4xf32> {crec.name = \"b\"},\n"
                     "                  %y: memref<4x4xf32> {crec.name = \"y\"}) {\n"
                     "    %t = memref.alloc() : memref<4x4xf32>\n"
                     "    linalg.matmul ins(%a, %b : memref<4x4xf32>, memref<4x4xf32>) outs(%t : memref<4x4xf32>)\n"
                     "    memref.copy %t, %y : memref<4x4xf32> to memref<4x4xf32>\n"
                     "    return\n"
                     "  }\n"
                     "}\n";
  crec_program *p = NULL;
  cr_assert_str_eq(lower_warnings(text, &p),
                   "u.mlir:5:5|linalg.matmul accumulates into 'tmp0', which nothing wrote before: its bytes are "
                   "undefined (zero it first with gpu.memset)\n");
  /* the program keeps the C API's form of it */
  cr_assert_eq(crec_program_warning_count(p), 1);
  crec_warning_info w;
  EXPECT_OK(crec_program_get_warning(p, 0, &w));
  cr_assert_str_eq(w.message, "command 0 ('gemm') accumulates into 'tmp0', which nothing wrote before: its bytes "
                              "are undefined (zero it first with crec_program_add_memset)");
  crec_program_destroy(p);
  /* zeroed first, as docs/mlir.md says */
  const char *fixed = "module {\n"
                      "  func.func @main(%a: memref<4x4xf32> {crec.name = \"a\"}, %b: memref<4x4xf32> {crec.name = \"b\"},\n"
                      "                  %y: memref<4x4xf32> {crec.name = \"y\"}) {\n"
                      "    %zero = arith.constant 0.0 : f32\n"
                      "    %t = memref.alloc() : memref<4x4xf32>\n"
                      "    gpu.memset %t, %zero : memref<4x4xf32>, f32\n"
                      "    linalg.matmul ins(%a, %b : memref<4x4xf32>, memref<4x4xf32>) outs(%t : memref<4x4xf32>)\n"
                      "    memref.copy %t, %y : memref<4x4xf32> to memref<4x4xf32>\n"
                      "    return\n"
                      "  }\n"
                      "}\n";
  cr_assert_str_eq(lower_warnings(fixed, &p), "");
  cr_assert_eq(crec_program_warning_count(p), 0);
  crec_program_destroy(p);
}

/* Kernels for the tests below: @fill stores into its argument, @copy loads x and stores y. */
#define UNDEFINED_KERNELS                                                                          \
  "module attributes {gpu.container_module} {\n"                                                   \
  "  gpu.module @k {\n"                                                                            \
  "    gpu.func @fill(%x: memref<16xf32>) kernel {\n"                                              \
  "      %i = gpu.thread_id x\n"                                                                   \
  "      %one = arith.constant 1.0 : f32\n"                                                        \
  "      memref.store %one, %x[%i] : memref<16xf32>\n"                                             \
  "      gpu.return\n"                                                                             \
  "    }\n"                                                                                        \
  "    gpu.func @copy(%x: memref<16xf32>, %y: memref<16xf32>) kernel {\n"                          \
  "      %i = gpu.thread_id x\n"                                                                   \
  "      %v = memref.load %x[%i] : memref<16xf32>\n"                                               \
  "      memref.store %v, %y[%i] : memref<16xf32>\n"                                               \
  "      gpu.return\n"                                                                             \
  "    }\n"                                                                                        \
  "  }\n"                                                                                          \
  "  memref.global \"private\" constant @w : memref<16xf32> = dense<2.0>\n"
/* its line count, for locations */
#define UNDEFINED_KERNEL_LINES 16
#define LAUNCH(kernel, args) \
  "    gpu.launch_func @k::@" kernel " blocks in (%c1, %c1, %c1) threads in (%c16, %c1, %c1) args(" args ")\n"

Test(lower, a_kernel_reading_a_fresh_alloc_warns_at_the_launch) {
  const char *text = UNDEFINED_KERNELS
      "  func.func @main(%y: memref<16xf32> {crec.name = \"y\"}) {\n"
      "    %c1 = arith.constant 1 : index\n"
      "    %c16 = arith.constant 16 : index\n"
      "    %t = memref.alloc() {crec.name = \"scratch\"} : memref<32xf32>\n"
      "    %lo = memref.subview %t[0] [16] [1] : memref<32xf32> to memref<16xf32>\n"
      "    %hi = memref.subview %t[16] [16] [1] : memref<32xf32> to memref<16xf32, strided<[1], offset: 16>>\n"
      "    %h = memref.cast %hi : memref<16xf32, strided<[1], offset: 16>> to memref<16xf32, strided<[1], offset: ?>>\n"
      LAUNCH("fill", "%lo : memref<16xf32>")
      LAUNCH("copy", "%lo : memref<16xf32>, %y : memref<16xf32>")
      "    memref.copy %h, %y : memref<16xf32, strided<[1], offset: ?>> to memref<16xf32>\n"
      "    return\n"
      "  }\n"
      "}\n";
  char want[600];
  snprintf(want, sizeof want,
           "u.mlir:%d:5|memref.copy reads bytes [64, 128) of 'scratch', which nothing wrote before: its bytes are "
           "undefined (write it first, e.g. zero it with gpu.memset)\n",
           UNDEFINED_KERNEL_LINES + 10);
  cr_assert_str_eq(lower_warnings(text, NULL), want, "the launch reads the half @fill wrote; the copy the other");
  const char *unwritten = UNDEFINED_KERNELS
      "  func.func @main(%y: memref<16xf32> {crec.name = \"y\"}) {\n"
      "    %c1 = arith.constant 1 : index\n"
      "    %c16 = arith.constant 16 : index\n"
      "    %t = memref.alloc() {crec.name = \"scratch\"} : memref<16xf32>\n"
      LAUNCH("copy", "%t : memref<16xf32>, %y : memref<16xf32>")
      "    return\n"
      "  }\n"
      "}\n";
  snprintf(want, sizeof want,
           "u.mlir:%d:5|gpu.launch_func reads 'scratch', which nothing wrote before: its bytes are undefined (write "
           "it first, e.g. zero it with gpu.memset)\n",
           UNDEFINED_KERNEL_LINES + 5);
  cr_assert_str_eq(lower_warnings(unwritten, NULL), want);
}

Test(lower, a_condition_loaded_from_a_fresh_alloc_warns_at_the_if) {
  const char *text = "module {\n"
                     "  func.func @main() {\n"
                     "    %f = memref.alloc() {crec.name = \"flag\"} : memref<i1>\n"
                     "    %v = memref.load %f[] : memref<i1>\n"
                     "    scf.if %v {\n"
                     "    }\n"
                     "    return\n"
                     "  }\n"
                     "}\n";
  cr_assert_str_eq(lower_warnings(text, NULL),
                   "u.mlir:5:5|scf.if reads its condition from 'flag', which nothing wrote before: its bytes are "
                   "undefined (write it first, e.g. zero it with gpu.memset)\n");
}

/* What must not warn: a fill first, a write in an earlier loop's body, writes in
 * both branches, arguments, constants; and what a loop's first iteration reads. */
Test(lower, reads_of_written_arguments_and_constants_do_not_warn) {
  const char *text = UNDEFINED_KERNELS
      "  func.func @main(%x: memref<16xf32> {crec.name = \"x\"}, %y: memref<16xf32> {crec.name = \"y\"},\n"
      "                  %p: memref<i1> {crec.name = \"p\"}) {\n"
      "    %c1 = arith.constant 1 : index\n"
      "    %c16 = arith.constant 16 : index\n"
      "    %zero = arith.constant 0.0 : f32\n"
      "    %a = memref.alloc() {crec.name = \"filled\"} : memref<16xf32>\n"
      "    gpu.memset %a, %zero : memref<16xf32>, f32\n"
      LAUNCH("copy", "%a : memref<16xf32>, %y : memref<16xf32>")
      "    %b = memref.alloc() {crec.name = \"looped\"} : memref<16xf32>\n"
      "    scf.while : () -> () {\n"
      "      %go = memref.load %p[] : memref<i1>\n"
      "      scf.condition(%go)\n"
      "    } do {\n"
      "  " LAUNCH("fill", "%b : memref<16xf32>")
      "      scf.yield\n"
      "    }\n"
      LAUNCH("copy", "%b : memref<16xf32>, %y : memref<16xf32>")
      "    %c = memref.alloc() {crec.name = \"branched\"} : memref<16xf32>\n"
      "    %q = memref.load %p[] : memref<i1>\n"
      "    scf.if %q {\n"
      "  " LAUNCH("fill", "%c : memref<16xf32>")
      "    } else {\n"
      "      gpu.memset %c, %zero : memref<16xf32>, f32\n"
      "    }\n"
      LAUNCH("copy", "%c : memref<16xf32>, %y : memref<16xf32>")
      LAUNCH("copy", "%x : memref<16xf32>, %y : memref<16xf32>")
      "    %w = memref.get_global @w : memref<16xf32>\n"
      LAUNCH("copy", "%w : memref<16xf32>, %y : memref<16xf32>")
      "    return\n"
      "  }\n"
      "}\n";
  crec_program *p = NULL;
  cr_assert_str_eq(lower_warnings(text, &p), "");
  cr_assert_eq(crec_program_warning_count(p), 0);
  crec_program_destroy(p);
  /* in a loop's body, a read before the write runs first, in the first iteration */
  const char *first = UNDEFINED_KERNELS
      "  func.func @main(%y: memref<16xf32> {crec.name = \"y\"}, %p: memref<i1> {crec.name = \"p\"}) {\n"
      "    %c1 = arith.constant 1 : index\n"
      "    %c16 = arith.constant 16 : index\n"
      "    %b = memref.alloc() {crec.name = \"carried\"} : memref<16xf32>\n"
      "    scf.while : () -> () {\n"
      "      %go = memref.load %p[] : memref<i1>\n"
      "      scf.condition(%go)\n"
      "    } do {\n"
      "  " LAUNCH("copy", "%b : memref<16xf32>, %y : memref<16xf32>")
      "  " LAUNCH("fill", "%b : memref<16xf32>")
      "      scf.yield\n"
      "    }\n"
      "    return\n"
      "  }\n"
      "}\n";
  char want[600];
  snprintf(want, sizeof want,
           "u.mlir:%d:7|gpu.launch_func reads 'carried', which nothing wrote before: its bytes are undefined (write "
           "it first, e.g. zero it with gpu.memset)\n",
           UNDEFINED_KERNEL_LINES + 9);
  cr_assert_str_eq(lower_warnings(first, NULL), want);
}

/* A kernel whose accesses the front end cannot see is assumed to read and write
 * each memref: such an assumed read is not reported (the program still lists it). */
Test(lower, assumed_kernel_reads_are_not_reported) {
  const char *assumed =
      "module attributes {gpu.container_module} {\n"
      "  gpu.module @cuda attributes {crec.image = \"kernels.ptx\"} {\n"
      "    func.func private @fill(memref<16xf32>, f32, i32) attributes {gpu.kernel}\n"
      "  }\n"
      "  func.func @main() {\n"
      "    %c1 = arith.constant 1 : index\n"
      "    %n = arith.constant 16 : i32\n"
      "    %zero = arith.constant 0.0 : f32\n"
      "    %t = memref.alloc() : memref<16xf32>\n"
      "    gpu.launch_func @cuda::@fill blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)\n"
      "        args(%t : memref<16xf32>, %zero : f32, %n : i32)\n"
      "    return\n"
      "  }\n"
      "}\n";
  crec_program *p = NULL;
  cr_assert_str_eq(lower_warnings(assumed, &p), "");
  cr_assert_eq(crec_program_warning_count(p), 1, "the program declares the access read-write");
  crec_program_destroy(p);
  /* declared, the read is the user's word */
  char declared[2048];
  snprintf(declared, sizeof declared, "%s", assumed);
  char *at = strstr(declared, "{gpu.kernel}");
  cr_assert_not_null(at);
  const char *tail = strstr(assumed, "{gpu.kernel}") + strlen("{gpu.kernel}");
  snprintf(at, sizeof declared - (size_t)(at - declared), "{gpu.kernel, crec.access = [\"rw\"]}%s", tail);
  cr_assert_str_eq(lower_warnings(declared, NULL),
                   "u.mlir:10:5|gpu.launch_func reads and writes 'tmp0', which nothing wrote before: its bytes are "
                   "undefined (zero it first with gpu.memset)\n");
}

/* Host code that stores into a temporary before it reads it (a loop that fills
 * it, then a print) reads its own bytes: no warning. One that prints first
 * reads what nothing wrote, and warns at its first op. */
Test(lower, host_code_reading_what_it_stored_first_does_not_warn) {
  static const char fill_then_print[] =
      "func.func private @printMemrefF32(memref<*xf32>)\n"
      "func.func @main() {\n"
      "  %c0 = arith.constant 0 : index\n"
      "  %c1 = arith.constant 1 : index\n"
      "  %c4 = arith.constant 4 : index\n"
      "  %one = arith.constant 1.0 : f32\n"
      "  %t = memref.alloc() : memref<4xf32>\n"
      "  %n = memref.dim %t, %c0 : memref<4xf32>\n"
      "  scf.for %i = %c0 to %n step %c1 {\n"
      "    memref.store %one, %t[%i] : memref<4xf32>\n"
      "  }\n"
      "  %u = memref.cast %t : memref<4xf32> to memref<*xf32>\n"
      "  call @printMemrefF32(%u) : (memref<*xf32>) -> ()\n"
      "  return\n"
      "}\n";
  crec_program *p = NULL;
  cr_assert_str_eq(lower_warnings(fill_then_print, &p), "");
  cr_assert_eq(crec_program_command_count(p), 1);
  crec_program_destroy(p);
  static const char print_then_fill[] =
      "func.func private @printMemrefF32(memref<*xf32>)\n"
      "func.func @main() {\n"
      "  %c0 = arith.constant 0 : index\n"
      "  %one = arith.constant 1.0 : f32\n"
      "  %t = memref.alloc() : memref<4xf32>\n"
      "  %u = memref.cast %t : memref<4xf32> to memref<*xf32>\n"
      "  call @printMemrefF32(%u) : (memref<*xf32>) -> ()\n"
      "  memref.store %one, %t[%c0] : memref<4xf32>\n"
      "  return\n"
      "}\n";
  cr_assert_str_eq(lower_warnings(print_then_fill, NULL),
                   "u.mlir:7:3|func.call reads and writes 'tmp0', which nothing wrote before: its bytes are "
                   "undefined (zero it first with gpu.memset)\n");
}

/* No input of the suites and no example reads undefined bytes. */
Test(lower, the_shipped_programs_read_no_undefined_bytes) {
  static const char *const files[] = {"binary.mlir", "collectives.mlir", "control.mlir", "copies.mlir",
                                      "custom.mlir", "dynamic.mlir", "gemm.mlir", "host.mlir",
                                      "image.mlir", "memory.mlir", "saxpy.mlir"};
  static const char *const examples[] = {"branches.mlir", "chain.mlir", "dynamic.mlir", "jacobi.mlir", "switch.mlir"};
  for (size_t i = 0; i < sizeof files / sizeof *files + sizeof examples / sizeof *examples; i++) {
    char path[1024];
    bool ex = i >= sizeof files / sizeof *files;
    if (ex) snprintf(path, sizeof path, "%s/examples/%s", CREC_SOURCE_DIR, examples[i - sizeof files / sizeof *files]);
    else snprintf(path, sizeof path, "%s%s", MLIR_DIR, files[i]);
    crec_lower_options o = CREC_LOWER_OPTIONS_INIT;
    o.diagnostic = on_each_warning;
    o.chip = "sm_90";
    undefined_seen[0] = '\0';
    crec_program *p = NULL;
    EXPECT_OK(crec_lower_mlir_file(path, &o, &p));
    cr_assert_null(strstr(undefined_seen, "nothing wrote before"), "%s: %s", path, undefined_seen);
    cr_assert_eq(crec_program_warning_count(p), 0, "%s: %zu warnings", path, crec_program_warning_count(p));
    crec_program_destroy(p);
  }
}

/* {crec.early_start} on gpu.launch_func: the launch gets CREC_LAUNCH_EARLY_START,
 * where its kernel's PTX waits (here through inline assembly). */
Test(lower, early_start_attribute_marks_the_launch) {
  crec_program *p = crec_test_lower_text(
      "module attributes {gpu.container_module} {\n"
      "  gpu.module @k {\n"
      "    gpu.func @step(%x: memref<128xf32>) kernel {\n"
      "      llvm.inline_asm has_side_effects \"griddepcontrol.wait;\", \"\" : () -> ()\n"
      "      %i = gpu.thread_id x\n"
      "      %v = memref.load %x[%i] : memref<128xf32>\n"
      "      %w = arith.addf %v, %v : f32\n"
      "      memref.store %w, %x[%i] : memref<128xf32>\n"
      "      gpu.return\n"
      "    }\n"
      "  }\n"
      "  func.func @main(%x: memref<128xf32> {crec.name = \"x\"}) {\n"
      "    %c1 = arith.constant 1 : index\n"
      "    %c128 = arith.constant 128 : index\n"
      "    gpu.launch_func @k::@step blocks in (%c1, %c1, %c1) threads in (%c128, %c1, %c1) args(%x : memref<128xf32>)\n"
      "    gpu.launch_func @k::@step blocks in (%c1, %c1, %c1) threads in (%c128, %c1, %c1) args(%x : memref<128xf32>)"
      " {crec.early_start}\n"
      "    return\n"
      "  }\n"
      "}\n");
  cr_assert_eq(crec_program_command_count(p), 2);
  crec_command_info first = CREC_COMMAND_INFO_INIT, second = CREC_COMMAND_INFO_INIT;
  EXPECT_OK(crec_command_get_info(p, crec_program_command(p, 0), &first));
  EXPECT_OK(crec_command_get_info(p, crec_program_command(p, 1), &second));
  cr_expect_eq(first.launch_flags, 0);
  cr_expect_eq(second.launch_flags, CREC_LAUNCH_EARLY_START);
  crec_program_destroy(p);
}

/* {crec.early_start} on a gpu.module, or crec_lower_options.early_start: crec puts
 * griddepcontrol.wait at the entry of the module's kernels and marks their launches,
 * where the chip is sm_90 or later; for sm_80 neither. */
static crec_program *lower_early(const char *module_attr, int option, const char *chip) {
  char text[2048];
  snprintf(text, sizeof text,
           "module attributes {gpu.container_module} {\n"
           "  gpu.module @k %s {\n"
           "    gpu.func @scale(%%x: memref<128xf32>) kernel {\n"
           "      %%i = gpu.thread_id x\n"
           "      %%v = memref.load %%x[%%i] : memref<128xf32>\n"
           "      %%w = arith.addf %%v, %%v : f32\n"
           "      memref.store %%w, %%x[%%i] : memref<128xf32>\n"
           "      gpu.return\n"
           "    }\n"
           "  }\n"
           "  func.func @main(%%x: memref<128xf32> {crec.name = \"x\"}) {\n"
           "    %%c1 = arith.constant 1 : index\n"
           "    %%c128 = arith.constant 128 : index\n"
           "    gpu.launch_func @k::@scale blocks in (%%c1, %%c1, %%c1) threads in (%%c128, %%c1, %%c1) args(%%x : memref<128xf32>)\n"
           "    gpu.launch_func @k::@scale blocks in (%%c1, %%c1, %%c1) threads in (%%c128, %%c1, %%c1) args(%%x : memref<128xf32>)\n"
           "    return\n"
           "  }\n"
           "}\n",
           module_attr);
  crec_lower_options o = CREC_LOWER_OPTIONS_INIT;
  o.filename = "early.mlir";
  o.chip = chip;
  o.early_start = option;
  crec_program *p = NULL;
  crec_status s = crec_lower_mlir_string(text, strlen(text), &o, &p);
  cr_assert_eq(s, CREC_OK, "%s: %s", crec_status_name(s), crec_last_error());
  return p;
}

static void expect_early(crec_program *p, bool early, const char *what) {
  crec_module_info m;
  EXPECT_OK(crec_module_get_info(p, crec_program_module(p, 0), &m));
  cr_expect_eq(strstr(m.image, "griddepcontrol.wait") != NULL, early, "%s: the PTX %s the wait", what,
               early ? "lacks" : "has");
  for (size_t i = 0; i < 2; i++) {
    crec_command_info c = CREC_COMMAND_INFO_INIT;
    EXPECT_OK(crec_command_get_info(p, crec_program_command(p, i), &c));
    cr_expect_eq(c.launch_flags, early ? CREC_LAUNCH_EARLY_START : 0u, "%s: launch %zu", what, i);
  }
  crec_program_destroy(p);
}

Test(lower, early_start_modules_wait_at_kernel_entry_from_sm_90) {
  expect_early(lower_early("attributes {crec.early_start}", 0, "sm_90"), true, "the module's attribute, sm_90");
  expect_early(lower_early("", 1, "sm_90"), true, "the option, sm_90");
  expect_early(lower_early("attributes {crec.early_start}", 0, "sm_80"), false, "the module's attribute, sm_80");
  expect_early(lower_early("", 0, "sm_90"), false, "neither");
}
