/* Programs written the way MLIR's own GPU tests (mlir/test/Integration/GPU/CUDA)
 * and the compilers that emit such MLIR write them, lowered as they are: each
 * checked through the inspection API for what the lowering made of it. Their
 * GPU runs are in gpu_lower.c. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

TestSuite(lower_upstream, .init = crec_test_require_mlir, .fini = crec_test_leak_check);

static crec_buffer_info buffer_of(const crec_program *p, crec_buffer b) {
  crec_buffer_info info;
  EXPECT_OK(crec_buffer_get_info(p, b, &info));
  return info;
}

/* An inline gpu.launch becomes one launch of an outlined kernel named after its
 * function, the values its body uses from the host function its arguments:
 * buffers with the access the body makes, the bound scalar, the host constant. */
Test(lower_upstream, an_inline_gpu_launch_is_outlined_into_a_kernel) {
  crec_program *p = crec_test_lower_file("inline_launch.mlir");
  cr_assert_eq(crec_program_command_count(p), 1);
  cr_assert_eq(crec_program_kernel_count(p), 1);
  crec_command_info c = CREC_COMMAND_INFO_INIT;
  EXPECT_OK(crec_command_get_info(p, crec_program_command(p, 0), &c));
  cr_assert_eq(c.kind, CREC_COMMAND_LAUNCH);
  crec_kernel_info k;
  EXPECT_OK(crec_kernel_get_info(p, c.kernel, &k));
  cr_assert_str_eq(k.entry, "main_kernel");
  cr_assert_eq(c.grid[0].value, 2);
  cr_assert_eq(c.block[0].value, 128);
  cr_assert_eq(c.grid[1].value, 1);
  cr_assert_eq(c.block[2].value, 1);
  cr_assert_eq(c.num_args, 4);
  /* gpu-kernel-outlining orders the arguments by first use in the body */
  crec_arg x = crec_test_arg(p, 0, 0), two = crec_test_arg(p, 0, 1), b = crec_test_arg(p, 0, 2), y = crec_test_arg(p, 0, 3);
  cr_assert_eq(x.kind, CREC_ARG_BUFFER);
  cr_assert_str_eq(buffer_of(p, x.range.buffer).name, "x");
  cr_assert_eq(x.access, CREC_ACCESS_READ);
  cr_assert_eq(two.kind, CREC_ARG_IMMEDIATE);
  cr_assert_eq(two.size, 4);
  cr_assert_eq(two.value.f32, 2.0f);
  cr_assert_eq(b.kind, CREC_ARG_SCALAR);
  crec_scalar_info bi;
  EXPECT_OK(crec_scalar_get_info(p, b.scalar, &bi));
  cr_assert_str_eq(bi.name, "b");
  cr_assert_eq(y.kind, CREC_ARG_BUFFER);
  cr_assert_str_eq(buffer_of(p, y.range.buffer).name, "y");
  cr_assert_eq(y.access, CREC_ACCESS_WRITE);
  crec_module_info m;
  EXPECT_OK(crec_module_get_info(p, crec_program_module(p, 0), &m));
  cr_assert(strstr(m.image, ".entry main_kernel") != NULL, "the outlined kernel was not compiled");
  crec_program_destroy(p);
}

/* A module without gpu.container_module, and two launches in one function: each
 * gets its own kernel, in program order, the second ordered after the first
 * (it reads what the first wrote, and writes what the first read). */
Test(lower_upstream, two_inline_launches_get_two_kernels_in_order) {
  static const char text[] =
      "module {\n"
      "  func.func @f(%x: memref<64xf32> {crec.name = \"x\"}, %t: memref<64xf32> {crec.name = \"t\"}) {\n"
      "    %c1 = arith.constant 1 : index\n"
      "    %c64 = arith.constant 64 : index\n"
      "    gpu.launch blocks(%a, %b, %c) in (%d = %c1, %e = %c1, %f = %c1)\n"
      "               threads(%i, %j, %k) in (%l = %c64, %m = %c1, %n = %c1) {\n"
      "      %v = memref.load %x[%i] : memref<64xf32>\n"
      "      %w = arith.addf %v, %v : f32\n"
      "      memref.store %w, %t[%i] : memref<64xf32>\n"
      "      gpu.terminator\n"
      "    }\n"
      "    gpu.launch blocks(%a, %b, %c) in (%d = %c1, %e = %c1, %f = %c1)\n"
      "               threads(%i, %j, %k) in (%l = %c64, %m = %c1, %n = %c1) {\n"
      "      %v = memref.load %t[%i] : memref<64xf32>\n"
      "      memref.store %v, %x[%i] : memref<64xf32>\n"
      "      gpu.terminator\n"
      "    }\n"
      "    return\n"
      "  }\n"
      "}\n";
  crec_lower_options o = CREC_LOWER_OPTIONS_INIT;
  o.entry = "f";
  crec_program *p = NULL;
  EXPECT_OK(crec_lower_mlir_string(text, sizeof text - 1, &o, &p));
  cr_assert_eq(crec_program_command_count(p), 2);
  cr_assert_eq(crec_program_kernel_count(p), 2);
  crec_command_info c0 = CREC_COMMAND_INFO_INIT, c1 = CREC_COMMAND_INFO_INIT;
  EXPECT_OK(crec_command_get_info(p, crec_program_command(p, 0), &c0));
  EXPECT_OK(crec_command_get_info(p, crec_program_command(p, 1), &c1));
  crec_kernel_info k0, k1;
  EXPECT_OK(crec_kernel_get_info(p, c0.kernel, &k0));
  EXPECT_OK(crec_kernel_get_info(p, c1.kernel, &k1));
  /* outlining names each kernel after the function, in a module of its own */
  cr_assert_str_eq(k0.entry, "f_kernel");
  cr_assert_str_eq(k1.entry, "f_kernel");
  crec_module_info m0, m1;
  EXPECT_OK(crec_module_get_info(p, k0.module, &m0));
  EXPECT_OK(crec_module_get_info(p, k1.module, &m1));
  cr_assert_str_eq(m0.name, "f_kernel");
  cr_assert_str_eq(m1.name, "f_kernel_0");
  crec_plan *plan = NULL;
  EXPECT_OK(crec_plan_create(p, NULL, &plan));
  const crec_command *deps = NULL;
  size_t nd = 0;
  EXPECT_OK(crec_plan_get_deps(plan, crec_program_command(p, 1), &deps, &nd));
  cr_assert_eq(nd, 1, "the second launch has %zu dependencies; it must wait for the first", nd);
  cr_assert_eq(deps[0].id, crec_program_command(p, 0).id);
  crec_plan_destroy(plan);
  crec_program_destroy(p);
}

static crec_program *lower_text(const char *text, crec_status want) {
  crec_program *p = NULL;
  EXPECT_STATUS(crec_lower_mlir_string(text, strlen(text), NULL, &p), want);
  return p;
}

/* What MLIR's tests do before a launch and after it: a cast to an unranked
 * memref registered with the host (nothing to do for crec's device buffers), a
 * cast back to a dynamic rank-1 memref that the kernel takes as a descriptor. */
Test(lower_upstream, unranked_casts_and_host_register_lower_to_the_same_buffer) {
  crec_program *p = lower_text(
      "func.func @main(%x: memref<13xi32> {crec.name = \"x\"}) {\n"
      "  %u = memref.cast %x : memref<13xi32> to memref<*xi32>\n"
      "  gpu.host_register %u : memref<*xi32>\n"
      "  %d = memref.cast %u : memref<*xi32> to memref<?xi32>\n"
      "  %c0 = arith.constant 0 : index\n"
      "  %c1 = arith.constant 1 : index\n"
      "  %n = memref.dim %d, %c0 : memref<?xi32>\n"
      "  gpu.launch blocks(%a, %b, %c) in (%e = %c1, %f = %c1, %g = %c1)\n"
      "             threads(%i, %j, %k) in (%l = %n, %m = %c1, %o = %c1) {\n"
      "    %v = arith.index_cast %i : index to i32\n"
      "    memref.store %v, %d[%i] : memref<?xi32>\n"
      "    gpu.terminator\n"
      "  }\n"
      "  gpu.host_unregister %u : memref<*xi32>\n"
      "  return\n"
      "}\n",
      CREC_OK);
  cr_assert_eq(crec_program_command_count(p), 1);
  crec_command_info c = CREC_COMMAND_INFO_INIT;
  EXPECT_OK(crec_command_get_info(p, crec_program_command(p, 0), &c));
  cr_assert_eq(c.block[0].value, 13, "the block size is the dimension of x (13), not %llu",
               (unsigned long long)c.block[0].value);
  /* a dynamic memref passes as a descriptor: allocated and aligned pointers first, both x */
  crec_arg a0 = crec_test_arg(p, 0, 0), a1 = crec_test_arg(p, 0, 1);
  cr_assert_eq(a0.kind, CREC_ARG_BUFFER);
  cr_assert_eq(a1.kind, CREC_ARG_BUFFER);
  cr_assert_str_eq(buffer_of(p, a0.range.buffer).name, "x");
  cr_assert_str_eq(buffer_of(p, a1.range.buffer).name, "x");
  cr_assert_eq(a1.access, CREC_ACCESS_WRITE);
  crec_program_destroy(p);
}

/* Calls the entry cannot make name the callee. */
Test(lower_upstream, calls_are_refused_naming_the_callee) {
  lower_text("func.func @main() {\n"
             "  call @helper() : () -> ()\n"
             "  return\n"
             "}\n"
             "func.func private @helper()\n",
             CREC_ERR_UNSUPPORTED);
  EXPECT_ERROR_MENTIONS("a call to @helper, which the module only declares");
}

/* Calls to functions of the module are inlined before lowering (MLIR's inliner):
 * two calls of a helper holding an inline gpu.launch are two launches of two
 * outlined kernels, in call order, with each call's operands; the grid comes
 * from a helper that returns a value. */
Test(lower_upstream, calls_to_functions_of_the_module_are_inlined) {
  crec_program *p = crec_test_lower_file("call.mlir");
  cr_assert_eq(crec_program_command_count(p), 2);
  cr_assert_eq(crec_program_kernel_count(p), 2);
  static const float scale[2] = {2.0f, 3.0f};
  for (int i = 0; i < 2; i++) {
    crec_command_info c = CREC_COMMAND_INFO_INIT;
    EXPECT_OK(crec_command_get_info(p, crec_program_command(p, (size_t)i), &c));
    cr_assert_eq(c.kind, CREC_COMMAND_LAUNCH);
    crec_kernel_info k;
    EXPECT_OK(crec_kernel_get_info(p, c.kernel, &k));
    cr_assert_str_eq(k.entry, "main_kernel", "call %d launches '%s'", i, k.entry);
    cr_assert_eq(c.grid[0].value, 2, "ceildiv(128, 64) is 2, not %llu", (unsigned long long)c.grid[0].value);
    cr_assert_eq(c.block[0].value, 64);
    /* a descriptor (x, x, 0, 128, 1), then a and b */
    cr_assert_eq(c.num_args, 7);
    crec_arg d = crec_test_arg(p, (size_t)i, 0), size = crec_test_arg(p, (size_t)i, 3);
    cr_assert_str_eq(buffer_of(p, d.range.buffer).name, "x");
    cr_assert_eq(d.access, CREC_ACCESS_READ_WRITE);
    cr_assert_eq(size.value.i64, 128, "the cast keeps x's size known");
    crec_arg a = crec_test_arg(p, (size_t)i, 5), b = crec_test_arg(p, (size_t)i, 6);
    cr_assert_eq(a.kind, CREC_ARG_IMMEDIATE);
    cr_assert_eq(a.value.f32, scale[i]);
    cr_assert_eq(b.kind, i == 0 ? CREC_ARG_SCALAR : CREC_ARG_IMMEDIATE);
    if (i == 1) cr_assert_eq(b.value.f32, 1.0f);
  }
  crec_plan *plan = NULL;
  EXPECT_OK(crec_plan_create(p, NULL, &plan));
  const crec_command *deps = NULL;
  size_t nd = 0;
  EXPECT_OK(crec_plan_get_deps(plan, crec_program_command(p, 1), &deps, &nd));
  cr_assert_eq(nd, 1, "the second call's launch must wait for the first");
  crec_plan_destroy(plan);
  crec_program_destroy(p);
}

/* A private entry survives inlining (the inliner erases private functions nobody
 * calls), and a private helper inlined into it leaves its commands. */
Test(lower_upstream, a_private_entry_keeps_its_inlined_calls) {
  static const char text[] = "func.func private @zero(%x: memref<4xf32>) {\n"
                             "  %z = arith.constant 0.0 : f32\n"
                             "  gpu.memset %x, %z : memref<4xf32>, f32\n"
                             "  return\n"
                             "}\n"
                             "func.func private @f(%x: memref<4xf32> {crec.name = \"x\"}) {\n"
                             "  call @zero(%x) : (memref<4xf32>) -> ()\n"
                             "  return\n"
                             "}\n";
  crec_lower_options o = CREC_LOWER_OPTIONS_INIT;
  o.entry = "f";
  crec_program *p = NULL;
  EXPECT_OK(crec_lower_mlir_string(text, sizeof text - 1, &o, &p));
  cr_assert_eq(crec_program_command_count(p), 1);
  crec_command_info c = CREC_COMMAND_INFO_INIT;
  EXPECT_OK(crec_command_get_info(p, crec_program_command(p, 0), &c));
  cr_assert_eq(c.kind, CREC_COMMAND_MEMSET);
  crec_program_destroy(p);
}

/* Calls the inliner keeps are refused at the call, saying why. */
Test(lower_upstream, calls_that_cannot_be_inlined_say_why) {
  lower_text("func.func @helper(%x: memref<4xf32>) {\n"
             "  \"crec.barrier\"() : () -> ()\n"
             "  return\n"
             "}\n"
             "func.func @main(%x: memref<4xf32>) {\n"
             "  call @helper(%x) : (memref<4xf32>) -> ()\n"
             "  return\n"
             "}\n",
             CREC_ERR_UNSUPPORTED);
  EXPECT_ERROR_MENTIONS(":6:3: 'func.call': a call to @helper, which MLIR's inliner did not inline");
  EXPECT_ERROR_MENTIONS("'crec.barrier' (at <string>:2:3)");
  lower_text("func.func @r(%x: memref<4xf32>) {\n"
             "  call @r(%x) : (memref<4xf32>) -> ()\n"
             "  return\n"
             "}\n"
             "func.func @main(%x: memref<4xf32>) {\n"
             "  call @r(%x) : (memref<4xf32>) -> ()\n"
             "  return\n"
             "}\n",
             CREC_ERR_UNSUPPORTED);
  EXPECT_ERROR_MENTIONS("a call to @r, which MLIR's inliner did not inline (a recursive call");
  /* an error in an inlined body is at the op in the callee */
  lower_text("func.func @stack(%x: memref<4xf32>) {\n"
             "  %t = memref.alloca() : memref<4xf32>\n"
             "  gpu.memcpy %x, %t : memref<4xf32>, memref<4xf32>\n"
             "  return\n"
             "}\n"
             "func.func @main(%x: memref<4xf32>) {\n"
             "  call @stack(%x) : (memref<4xf32>) -> ()\n"
             "  return\n"
             "}\n",
             CREC_ERR_UNSUPPORTED);
  EXPECT_ERROR_MENTIONS("<string>:2:8: 'memref.alloca'");
}

/* ---- scf.for ---- */

/* The region command `c` is in, and its role. */
static crec_region_role role_of(const crec_program *p, const crec_command_info *c) {
  crec_region_info r;
  EXPECT_OK(crec_region_get_info(p, c->region, &r));
  return r.role;
}

/* A loop whose body does not use its induction variable is a device loop: a
 * memset zeroes its counter, the while's condition region counts (the trip count
 * an immediate of the counter kernel), and the body is lowered once; a loop whose
 * kernel takes the induction variable is unrolled, one launch per value. */
Test(lower_upstream, scf_for_is_a_device_loop_or_unrolled_when_kernels_take_its_index) {
  crec_program *p = crec_test_lower_file("for.mlir");
  cr_assert_eq(crec_program_command_count(p), 8);
  crec_command_info start = crec_test_command(p, 0), loop = crec_test_command(p, 1), step = crec_test_command(p, 2),
                    body = crec_test_command(p, 3);
  cr_assert_eq(start.kind, CREC_COMMAND_MEMSET);
  cr_assert_str_eq(start.name, "for0.start");
  crec_test_expect_range(p, start.dst, "for0.counter", 0, 8);
  cr_assert_eq(start.memset_value, 0);
  cr_assert_eq(loop.kind, CREC_COMMAND_WHILE);
  cr_assert_str_eq(loop.name, "for0");
  crec_test_expect_range(p, loop.predicate, "for0.counter", 8, 1);
  uint64_t limit = 0;
  EXPECT_OK(crec_program_get_loop_limit(p, crec_program_command(p, 1), &limit));
  cr_assert_eq(limit, CREC_LOOP_UNLIMITED, "the counter ends the loop: no iteration limit applies");
  cr_assert_eq(step.kind, CREC_COMMAND_LAUNCH);
  cr_assert_eq(role_of(p, &step), CREC_REGION_COND);
  crec_kernel_info k;
  EXPECT_OK(crec_kernel_get_info(p, step.kernel, &k));
  cr_assert_str_eq(k.entry, "crec_for_step");
  crec_arg counter = crec_test_arg(p, 2, 0), more = crec_test_arg(p, 2, 1), trips = crec_test_arg(p, 2, 2);
  crec_test_expect_range(p, counter.range, "for0.counter", 0, 8);
  cr_assert_eq(counter.access, CREC_ACCESS_READ_WRITE);
  crec_test_expect_range(p, more.range, "for0.counter", 8, 1);
  cr_assert_eq(more.access, CREC_ACCESS_WRITE);
  cr_assert_eq(trips.kind, CREC_ARG_IMMEDIATE);
  cr_assert_eq(trips.value.i64, 10);
  cr_assert_eq(body.kind, CREC_COMMAND_LAUNCH);
  cr_assert_eq(role_of(p, &body), CREC_REGION_BODY);
  for (int row = 0; row < 4; row++) {
    crec_command_info c = crec_test_command(p, 4 + (size_t)row);
    cr_assert_eq(c.kind, CREC_COMMAND_LAUNCH);
    cr_assert_eq(role_of(p, &c), CREC_REGION_PROGRAM);
    crec_arg r = crec_test_arg(p, 4 + (size_t)row, 0);
    cr_assert_eq(r.kind, CREC_ARG_IMMEDIATE);
    cr_assert_eq(r.value.i64, row, "unrolled copy %d passes row %lld", row, (long long)r.value.i64);
  }
  crec_program_destroy(p);
}

static const char for_head[] =
    "module attributes {gpu.container_module} {\n"
    "  gpu.module @k {\n"
    "    gpu.func @add(%x: memref<64xf32>, %v: f32) kernel {\n"
    "      %i = gpu.thread_id x\n"
    "      %a = memref.load %x[%i] : memref<64xf32>\n"
    "      %b = arith.addf %a, %v : f32\n"
    "      memref.store %b, %x[%i] : memref<64xf32>\n"
    "      gpu.return\n"
    "    }\n"
    "    gpu.func @at(%x: memref<64xf32>, %i: index) kernel {\n"
    "      %v = arith.constant 1.0 : f32\n"
    "      memref.store %v, %x[%i] : memref<64xf32>\n"
    "      gpu.return\n"
    "    }\n"
    "  }\n"
    "  func.func @main(%x: memref<64xf32> {crec.name = \"x\"}) {\n"
    "    %c0 = arith.constant 0 : index\n"
    "    %c1 = arith.constant 1 : index\n"
    "    %c3 = arith.constant 3 : index\n"
    "    %c5 = arith.constant 5 : index\n"
    "    %c10 = arith.constant 10 : index\n"
    "    %c40 = arith.constant 40 : index\n"
    "    %c64 = arith.constant 64 : index\n"
    "    %c2000 = arith.constant 2000 : index\n"
    "    %one = arith.constant 1.0 : f32\n";

static crec_program *lower_for(const char *body, crec_status want) {
  char text[4096];
  snprintf(text, sizeof text, "%s%s    return\n  }\n}\n", for_head, body);
  return lower_text(text, want);
}

#define ADD "gpu.launch_func @k::@add blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1) args(%x : memref<64xf32>, %one : f32)\n"
#define AT(i) "gpu.launch_func @k::@at blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<64xf32>, " i " : index)\n"

/* The trip count is ceildiv(upper - lower, step), or none; a single trip, or a
 * body without commands, is the body lowered once, without a loop. */
Test(lower_upstream, scf_for_trip_counts) {
  crec_program *p = lower_for("    scf.for %i = %c1 to %c10 step %c3 {\n      " ADD "    }\n", CREC_OK);
  cr_assert_eq(crec_program_command_count(p), 4);
  cr_assert_eq(crec_test_arg(p, 2, 2).value.i64, 3, "1, 4, 7: three trips");
  crec_program_destroy(p);
  p = lower_for("    scf.for %i = %c5 to %c1 step %c1 {\n      " ADD "    }\n"
                "    scf.for %i = %c5 to %c5 step %c3 {\n      " ADD "    }\n", CREC_OK);
  cr_assert_eq(crec_program_command_count(p), 0, "no trips, no commands");
  crec_program_destroy(p);
  p = lower_for("    scf.for %i = %c3 to %c5 step %c3 {\n      " AT("%i") "    }\n", CREC_OK);
  cr_assert_eq(crec_program_command_count(p), 1, "one trip is the body, once");
  cr_assert_eq(crec_test_arg(p, 0, 1).value.i64, 3);
  crec_program_destroy(p);
  p = lower_for("    scf.for %i = %c0 to %c2000 step %c1 {\n      %j = arith.addi %i, %c1 : index\n    }\n", CREC_OK);
  cr_assert_eq(crec_program_command_count(p), 0, "host arithmetic alone needs no loop");
  crec_program_destroy(p);
}

/* Unrolled copies lower the body's values again for each index (a view at the
 * index, host arithmetic on it); loops nest, each device loop with its own
 * counter, an inner one started again by each outer iteration. */
Test(lower_upstream, scf_for_nests_and_unrolls_values_of_the_index) {
  crec_program *p = lower_for("    scf.for %i = %c0 to %c3 step %c1 {\n"
                              "      %j = arith.muli %i, %c10 : index\n"
                              "      " AT("%j") "    }\n",
                              CREC_OK);
  cr_assert_eq(crec_program_command_count(p), 3);
  for (int i = 0; i < 3; i++) cr_assert_eq(crec_test_arg(p, (size_t)i, 1).value.i64, 10 * i);
  crec_program_destroy(p);
  p = lower_for("    scf.for %i = %c0 to %c3 step %c1 {\n"
                "      scf.for %j = %c0 to %c5 step %c1 {\n        " ADD "      }\n"
                "      " ADD "    }\n",
                CREC_OK);
  /* outer: start, while, step; its body: inner start, inner while (step, add), add */
  cr_assert_eq(crec_program_command_count(p), 8);
  crec_command_info outer = crec_test_command(p, 1), inner_start = crec_test_command(p, 3),
                    inner = crec_test_command(p, 4);
  cr_assert_str_eq(outer.name, "for0");
  cr_assert_str_eq(inner.name, "for1");
  cr_assert_eq(role_of(p, &inner_start), CREC_REGION_BODY);
  crec_test_expect_range(p, inner.predicate, "for1.counter", 8, 1);
  cr_assert_eq(crec_test_arg(p, 2, 2).value.i64, 3);
  cr_assert_eq(crec_test_arg(p, 5, 2).value.i64, 5);
  crec_program_destroy(p);
  /* a device loop inside an unrolled one: one inner loop per copy */
  p = lower_for("    scf.for %i = %c0 to %c3 step %c1 {\n"
                "      " AT("%i") "      scf.for %j = %c0 to %c5 step %c1 {\n        " ADD "      }\n"
                "    }\n",
                CREC_OK);
  cr_assert_eq(crec_program_command_count(p), 3 * 5);
  crec_program_destroy(p);
}

/* What scf.for cannot be says so at the loop. */
Test(lower_upstream, scf_for_errors_name_what_is_missing) {
  lower_for("    scf.for %i = %c0 to %c2000 step %c1 {\n      " AT("%i") "    }\n", CREC_ERR_UNSUPPORTED);
  EXPECT_ERROR_MENTIONS("<string>:26:5: 'scf.for': the body uses the induction variable");
  EXPECT_ERROR_MENTIONS("2000 iterations make more than the 1024 copies");
  lower_for("    scf.for %i = %c0 to %c40 step %c1 {\n      scf.for %j = %c0 to %c40 step %c1 {\n"
            "        " AT("%j") "      }\n      " AT("%i") "    }\n",
            CREC_ERR_UNSUPPORTED);
  EXPECT_ERROR_MENTIONS("<string>:27:7: 'scf.for'");
  EXPECT_ERROR_MENTIONS("40 iterations (inside unrolled loops)");
  lower_for("    %s = scf.for %i = %c0 to %c3 step %c1 iter_args(%a = %one) -> (f32) {\n"
            "      " ADD "      scf.yield %a : f32\n    }\n",
            CREC_ERR_UNSUPPORTED);
  EXPECT_ERROR_MENTIONS("loop-carried values (iter_args)");
  /* (a bound known only when the program runs: scf_for_with_a_bound_known_when_the_program_runs_...) */
  lower_text("func.func @main(%x: memref<4xf32>, %n: index) {\n"
             "  %c0 = arith.constant 0 : index\n"
             "  %c1 = arith.constant 1 : index\n"
             "  scf.for %i = %c0 to %c1 step %n {\n"
             "  }\n"
             "  return\n"
             "}\n",
             CREC_ERR_UNSUPPORTED);
  EXPECT_ERROR_MENTIONS("its step is computed when the program runs");
  lower_text("func.func @main() {\n"
             "  %lo = arith.constant -9223372036854775808 : i64\n"
             "  %hi = arith.constant 9223372036854775807 : i64\n"
             "  %c1 = arith.constant 1 : i64\n"
             "  scf.for %i = %lo to %hi step %c1 : i64 {\n"
             "  }\n"
             "  return\n"
             "}\n",
             CREC_ERR_OUT_OF_RANGE);
  EXPECT_ERROR_MENTIONS("<string>:5:3: 'scf.for': 18446744073709551615 iterations are more than the counter's");
}

/* ---- fills and copies: linalg.fill, linalg.copy, memref.copy, gpu.alloc ---- */

/* gpu.alloc makes temporaries; linalg.fill with a constant is a memset of the
 * value's bytes in elements of its size; linalg.copy and memref.copy are memcpys. */
Test(lower_upstream, linalg_fill_and_copies_are_memsets_and_memcpys) {
  crec_program *p = crec_test_lower_file("fill_copy.mlir");
  cr_assert_eq(crec_program_command_count(p), 6);
  crec_command_info c[6];
  for (size_t i = 0; i < 6; i++) c[i] = crec_test_command(p, i);
  cr_assert_eq(c[0].kind, CREC_COMMAND_MEMSET);
  crec_test_expect_range(p, c[0].dst, "tmp0", 0, 1024);
  cr_assert_eq(c[0].memset_value, 0x3f000000u, "0.5f is 0x3f000000, not 0x%x", c[0].memset_value);
  cr_assert_eq(c[0].memset_element_size, 4);
  crec_buffer_info tmp0 = buffer_of(p, c[0].dst.buffer);
  cr_assert_eq(tmp0.kind, CREC_BUFFER_TEMPORARY, "gpu.alloc is a temporary");
  cr_assert_eq(c[1].kind, CREC_COMMAND_LAUNCH);
  cr_assert_eq(c[2].kind, CREC_COMMAND_MEMCPY, "linalg.copy is a memcpy");
  crec_test_expect_range(p, c[2].dst, "x", 0, 1024);
  crec_test_expect_range(p, c[2].src, "y", 0, 1024);
  cr_assert_eq(c[3].kind, CREC_COMMAND_MEMSET);
  crec_test_expect_range(p, c[3].dst, "flags", 0, 128);
  cr_assert_eq(c[3].memset_value, 7);
  cr_assert_eq(c[3].memset_element_size, 2);
  cr_assert_eq(c[4].kind, CREC_COMMAND_MEMSET);
  crec_test_expect_range(p, c[4].dst, "tmp1", 0, 64);
  cr_assert_eq(c[4].memset_value, 9);
  cr_assert_eq(c[5].kind, CREC_COMMAND_MEMCPY, "memref.copy into a subview is a memcpy");
  crec_test_expect_range(p, c[5].dst, "flags", 64, 64);
  crec_test_expect_range(p, c[5].src, "tmp1", 0, 64);
  crec_program_destroy(p);
}

/* A fill or copy that is not a byte pattern or a byte copy says why, at the op. */
Test(lower_upstream, fills_and_copies_crec_cannot_make_say_why) {
  lower_text("func.func @main(%x: memref<4xf64>) {\n"
             "  %c = arith.constant 1.0 : f64\n"
             "  linalg.fill ins(%c : f64) outs(%x : memref<4xf64>)\n"
             "  return\n"
             "}\n",
             CREC_ERR_UNSUPPORTED);
  EXPECT_ERROR_MENTIONS("<string>:3:3: 'linalg.fill': an 8-byte fill value is supported only when its two 4-byte halves");
  crec_program *p = lower_text("func.func @main(%x: memref<4xf64>) {\n"
                               "  %c = arith.constant 0.0 : f64\n"
                               "  linalg.fill ins(%c : f64) outs(%x : memref<4xf64>)\n"
                               "  return\n"
                               "}\n",
                               CREC_OK);
  cr_assert_eq(crec_test_command(p, 0).memset_element_size, 4, "0.0 as f64 is a 4-byte fill of zeros");
  crec_program_destroy(p);
  lower_text("func.func @main(%x: memref<4xf32>, %v: f32) {\n"
             "  linalg.fill ins(%v : f32) outs(%x : memref<4xf32>)\n"
             "  return\n"
             "}\n",
             CREC_ERR_UNSUPPORTED);
  EXPECT_ERROR_MENTIONS("'linalg.fill': the fill value must be a constant");
  lower_text("func.func @main(%x: memref<4xf16>) {\n"
             "  %c = arith.constant 1.0 : f32\n"
             "  linalg.fill ins(%c : f32) outs(%x : memref<4xf16>)\n"
             "  return\n"
             "}\n",
             CREC_ERR_UNSUPPORTED);
  EXPECT_ERROR_MENTIONS("a fill of f16 elements with a f32 value converts it");
  lower_text("func.func @main(%x: memref<4xf16>, %y: memref<4xf32>) {\n"
             "  linalg.copy ins(%y : memref<4xf32>) outs(%x : memref<4xf16>)\n"
             "  return\n"
             "}\n",
             CREC_ERR_UNSUPPORTED);
  EXPECT_ERROR_MENTIONS("<string>:2:3: 'linalg.copy': a copy from f32 to f16 elements converts them");
  lower_text("func.func @main(%x: memref<4x4xf32>, %y: memref<4x2xf32>) {\n"
             "  %s = memref.subview %x[0, 0] [4, 2] [1, 1] : memref<4x4xf32> to memref<4x2xf32, strided<[4, 1]>>\n"
             "  linalg.copy ins(%s : memref<4x2xf32, strided<[4, 1]>>) outs(%y : memref<4x2xf32>)\n"
             "  return\n"
             "}\n",
             CREC_ERR_UNSUPPORTED);
  EXPECT_ERROR_MENTIONS("'linalg.copy': the source is not contiguous");
  lower_text("func.func @main(%n: index) {\n"
             "  %m = gpu.alloc (%n) : memref<?xf32>\n"
             "  return\n"
             "}\n",
             CREC_ERR_UNSUPPORTED);
  EXPECT_ERROR_MENTIONS("'gpu.alloc': a temporary needs a static shape");
}

/* gpu.alloc host_shared is a host temporary, whether host code touches it or not. */
Test(lower_upstream, a_host_shared_allocation_is_a_host_temporary) {
  crec_program *p = lower_text("func.func @main() {\n"
                               "  %m = gpu.alloc host_shared () : memref<4xf32>\n"
                               "  %c = arith.constant 0.0 : f32\n"
                               "  %i = arith.constant 1 : index\n"
                               "  memref.store %c, %m[%i] : memref<4xf32>\n"
                               "  return\n"
                               "}\n",
                               CREC_OK);
  crec_buffer_info b = buffer_of(p, crec_program_buffer(p, 0));
  cr_assert_eq(b.memory, CREC_MEMORY_HOST);
  cr_assert_eq(crec_test_command(p, 0).kind, CREC_COMMAND_HOST);
  crec_program_destroy(p);
}

/* ---- host code ---- */

/* Runs host callback `index` of `p` with `memory` for its one operand, its
 * output captured; returns what it printed (owned by the caller). */
static char *run_host_callback(const crec_program *p, size_t index, void *memory) {
  crec_host_callback cb = CREC_HOST_CALLBACK_INIT;
  EXPECT_OK(crec_command_get_host_callback(p, crec_program_command(p, index), &cb));
  cr_assert_not_null(cb.fn_buffers, "host code is given its buffers' addresses");
  cr_assert_eq(cb.num_operands, 1);
  crec_test_capture out;
  crec_test_capture_begin(&out);
  void *addresses[1] = {memory};
  cb.fn_buffers(cb.user, addresses, 1);
  return crec_test_capture_end(&out);
}

/* The host code of an upstream-style program becomes host callbacks around the
 * launch, ordered by what they touch, and the allocation it touches a host
 * temporary that the kernel reads and writes through unified addressing. */
Test(lower_upstream, host_code_becomes_host_callbacks_around_the_kernel) {
  crec_program *p = crec_test_lower_file("host_code.mlir");
  cr_assert_eq(crec_program_command_count(p), 3);
  crec_command_kind kinds[3] = {CREC_COMMAND_HOST, CREC_COMMAND_LAUNCH, CREC_COMMAND_HOST};
  crec_access access[3] = {CREC_ACCESS_WRITE, CREC_ACCESS_READ_WRITE, CREC_ACCESS_READ};
  for (size_t i = 0; i < 3; i++) {
    crec_command_info c = CREC_COMMAND_INFO_INIT;
    EXPECT_OK(crec_command_get_info(p, crec_program_command(p, i), &c));
    cr_assert_eq(c.kind, kinds[i], "command %zu is a %s", i, crec_command_kind_name(c.kind));
    if (c.kind == CREC_COMMAND_HOST) {
      crec_host_callback cb = CREC_HOST_CALLBACK_INIT;
      EXPECT_OK(crec_command_get_host_callback(p, crec_program_command(p, i), &cb));
      cr_assert_eq(cb.operands[0].access, access[i], "host command %zu's access", i);
    } else {
      cr_assert_eq(crec_test_arg(p, i, 0).access, access[i]);
    }
  }
  crec_buffer_info b = buffer_of(p, crec_program_buffer(p, 0));
  cr_assert_eq(b.kind, CREC_BUFFER_TEMPORARY);
  cr_assert_eq(b.memory, CREC_MEMORY_HOST);
  cr_assert_eq(b.size, 13 * 4);
  crec_plan *plan = NULL;
  EXPECT_OK(crec_plan_create(p, NULL, &plan));
  cr_assert_eq(crec_plan_host_arena_bytes(plan), 52);
  cr_assert_eq(crec_plan_arena_bytes(plan), 0);
  for (size_t i = 1; i < 3; i++) {
    const crec_command *deps;
    size_t n;
    EXPECT_OK(crec_plan_get_deps(plan, crec_program_command(p, i), &deps, &n));
    cr_assert(n == 1 && deps[0].id == crec_program_command(p, i - 1).id, "command %zu waits for the one before", i);
  }
  crec_plan_destroy(plan);
  crec_program_destroy(p);
}

/* The host code itself, run here on the CPU: the first callback fills the
 * buffer, the second prints it the way mlir-runner's printMemrefI32 and
 * vector.print do (the kernel's doubling done by hand in between). */
Test(lower_upstream, host_code_runs_compiled_and_prints_what_mlir_runner_prints) {
  crec_program *p = crec_test_lower_file("host_code.mlir");
  int32_t data[13];
  memset(data, 0x55, sizeof data);
  char *out = run_host_callback(p, 0, data);
  cr_assert_str_eq(out, "", "the fill prints nothing");
  free(out);
  for (int i = 0; i < 13; i++) {
    cr_assert_eq(data[i], i, "the host loop stored %d at %d", data[i], i);
    data[i] *= 2;
  }
  out = run_host_callback(p, 2, data);
  char expect[512];
  snprintf(expect, sizeof expect,
           "Unranked Memref base@ = %p rank = 1 offset = 0 sizes = [13] strides = [1] data = \n"
           "[0,  2,  4,  6,  8,  10,  12,  14,  16,  18,  20,  22,  24]\n7\n",
           (void *)data);
  cr_assert_str_eq(out, expect);
  free(out);
  crec_program_destroy(p);
}

/* A loop that only reads host memory but yields a value (a count, as
 * upstream's sm90 GEMM verifies its result) is host code with the print that
 * uses it, after device work: device loops yield nothing. */
Test(lower_upstream, a_host_loop_that_yields_a_value_runs_with_the_code_that_uses_it) {
  crec_program *p = crec_test_lower_text("func.func @main() {\n"
                                         "  %c0 = arith.constant 0 : index\n"
                                         "  %c1 = arith.constant 1 : index\n"
                                         "  %c4 = arith.constant 4 : index\n"
                                         "  %z = arith.constant 0 : i32\n"
                                         "  %a = memref.alloc() : memref<4xi32>\n"
                                         "  %d = gpu.alloc () : memref<4xi32>\n"
                                         "  gpu.memset %d, %z : memref<4xi32>, i32\n"
                                         "  gpu.memcpy %a, %d : memref<4xi32>, memref<4xi32>\n"
                                         "  %sum = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %z) -> (i32) {\n"
                                         "    %v = memref.load %a[%i] : memref<4xi32>\n"
                                         "    %one = arith.constant 1 : i32\n"
                                         "    %w = arith.addi %v, %one : i32\n"
                                         "    %n = arith.addi %acc, %w : i32\n"
                                         "    scf.yield %n : i32\n"
                                         "  }\n"
                                         "  vector.print %sum : i32\n"
                                         "  return\n"
                                         "}\n");
  size_t n = crec_program_command_count(p);
  cr_assert_eq(crec_test_command(p, n - 1).kind, CREC_COMMAND_HOST, "the loop and the print are not one host node");
  int32_t data[4] = {0, 0, 0, 0};
  char *out = run_host_callback(p, n - 1, data);
  cr_assert_str_eq(out, "4\n", "the loop counted %s", out);
  free(out);
  crec_program_destroy(p);
}

/* A linalg op on memory that host code fills and prints is host code too (an
 * upstream sm90 test computes its reference product so): one host node, whose
 * product is the one linalg defines. */
Test(lower_upstream, a_linalg_matmul_on_host_memory_runs_as_host_code) {
  crec_program *p = crec_test_lower_text("func.func @main() {\n"
                                         "  %c0 = arith.constant 0 : index\n"
                                         "  %c1 = arith.constant 1 : index\n"
                                         "  %c2 = arith.constant 2 : index\n"
                                         "  %a = memref.alloc() : memref<2x2xf32>\n"
                                         "  %b = memref.alloc() : memref<2x2xf32>\n"
                                         "  %c = memref.alloc() : memref<2x2xf32>\n"
                                         "  scf.for %i = %c0 to %c2 step %c1 {\n"
                                         "    scf.for %j = %c0 to %c2 step %c1 {\n"
                                         "      %k = arith.muli %i, %c2 : index\n"
                                         "      %l = arith.addi %k, %j : index\n"
                                         "      %m = arith.addi %l, %c1 : index\n"
                                         "      %n = arith.index_cast %m : index to i32\n"
                                         "      %v = arith.sitofp %n : i32 to f32\n"
                                         "      memref.store %v, %a[%i, %j] : memref<2x2xf32>\n"
                                         "      %e = arith.cmpi eq, %i, %j : index\n"
                                         "      %two = arith.constant 2.0 : f32\n"
                                         "      %zero = arith.constant 0.0 : f32\n"
                                         "      %w = arith.select %e, %two, %zero : f32\n"
                                         "      memref.store %w, %b[%i, %j] : memref<2x2xf32>\n"
                                         "      memref.store %zero, %c[%i, %j] : memref<2x2xf32>\n"
                                         "    }\n"
                                         "  }\n"
                                         "  %d = gpu.alloc () : memref<2x2xf32>\n"
                                         "  gpu.memcpy %d, %a : memref<2x2xf32>, memref<2x2xf32>\n"
                                         "  linalg.matmul ins(%a, %b : memref<2x2xf32>, memref<2x2xf32>) outs(%c : memref<2x2xf32>)\n"
                                         "  %r = memref.load %c[%c1, %c1] : memref<2x2xf32>\n"
                                         "  vector.print %r : f32\n"
                                         "  return\n"
                                         "}\n");
  size_t n = crec_program_command_count(p);
  for (size_t i = 0; i < n; i++)
    cr_assert_neq(crec_test_command(p, i).kind, CREC_COMMAND_GEMM, "command %zu is a device GEMM", i);
  cr_assert_eq(crec_test_command(p, n - 1).kind, CREC_COMMAND_HOST);
  float a[4] = {1, 2, 3, 4}, b[4] = {2, 0, 0, 2}, c[4] = {0, 0, 0, 0};
  /* its operands are the allocations tmp0 (a), tmp1 (b) and tmp2 (c), in some order */
  crec_host_callback cb = CREC_HOST_CALLBACK_INIT;
  EXPECT_OK(crec_command_get_host_callback(p, crec_program_command(p, n - 1), &cb));
  cr_assert_eq(cb.num_operands, 3);
  void *addresses[3];
  for (size_t i = 0; i < 3; i++) {
    crec_buffer_info bi;
    EXPECT_OK(crec_buffer_get_info(p, cb.operands[i].range.buffer, &bi));
    addresses[i] = strcmp(bi.name, "tmp0") == 0 ? (void *)a : strcmp(bi.name, "tmp1") == 0 ? (void *)b : (void *)c;
  }
  crec_test_capture cap;
  crec_test_capture_begin(&cap);
  cb.fn_buffers(cb.user, addresses, 3);
  char *out = crec_test_capture_end(&cap);
  cr_assert_str_eq(out, "8\n", "C[1][1] of A * 2I: %s", out);
  free(out);
  crec_program_destroy(p);
}

/* A system with only MLIR's runtime package has the runner utilities under
 * their versioned names alone (libmlir_c_runner_utils.so.19.1): host code
 * finds them there too, and says where it looked when they are not there. */
Test(lower_upstream, host_code_finds_the_runner_utilities_by_their_versioned_names) {
  char dir[] = "/tmp/crec-runtime-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  /* (and the one they both need) */
  static const char *const names[3] = {"libmlir_c_runner_utils.so", "libmlir_runner_utils.so",
                                       "libmlir_float16_utils.so"};
  char real[3][4096], link[3][4200];
  for (int i = 0; i < 3; i++) {
    char dev[1200];
    snprintf(dev, sizeof dev, "%s/%s", CREC_TEST_MLIR_LIBDIR, names[i]);
    cr_assert_not_null(realpath(dev, real[i]), "no %s", dev);
    const char *base = strrchr(real[i], '/') + 1;
    cr_assert(strncmp(base, names[i], strlen(names[i])) == 0 && base[strlen(names[i])] == '.',
              "%s is not a versioned name of %s", base, names[i]);
    snprintf(link[i], sizeof link[i], "%s/%s", dir, base);
    cr_assert_eq(symlink(real[i], link[i]), 0);
  }
  setenv("CREC_MLIR_RUNTIME_DIR", dir, 1);
  crec_program *p = crec_test_lower_file("host_code.mlir");
  int32_t data[13] = {0};
  char *out = run_host_callback(p, 2, data);
  cr_assert(strstr(out, "[0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0]\n7\n"), "printed: %s", out);
  free(out);
  crec_program_destroy(p);
  for (int i = 0; i < 3; i++) unlink(link[i]);
  rmdir(dir);
  /* an empty folder: the first call that needs them says where it looked */
  cr_assert_not_null(mkdtemp(strcpy(dir, "/tmp/crec-runtime-XXXXXX")));
  setenv("CREC_MLIR_RUNTIME_DIR", dir, 1);
  p = NULL;
  char path[1200];
  snprintf(path, sizeof path, "%shost_code.mlir", crec_test_mlir_dir());
  EXPECT_STATUS(crec_lower_mlir_file(path, NULL, &p), CREC_ERR_UNSUPPORTED);
  EXPECT_ERROR_MENTIONS("MLIR's runner utilities");
  EXPECT_ERROR_MENTIONS(dir);
  EXPECT_ERROR_MENTIONS("the folder CREC_MLIR_RUNTIME_DIR names");
  cr_assert_null(p);
  rmdir(dir);
  unsetenv("CREC_MLIR_RUNTIME_DIR");
}

/* Whether PTX `image` has a global byte array holding exactly `s` (PTX writes
 * a string's bytes in decimal, leaving out its terminating zero). */
static bool ptx_has_string(const char *image, const char *s) {
  char want[1024];
  size_t n = (size_t)snprintf(want, sizeof want, "] = {");
  for (const unsigned char *c = (const unsigned char *)s; *c && n < sizeof want - 8; c++)
    n += (size_t)snprintf(want + n, sizeof want - n, "%s%u", c == (const unsigned char *)s ? "" : ", ", *c);
  snprintf(want + n, sizeof want - n, "};");
  return strstr(image, want) != NULL;
}

/* A cf.assert in a kernel (MLIR 19's own lowering puts its message where the
 * kernel cannot reach it) compiles as CUDA's assert() does: a call of the PTX
 * system call __assertfail with the message, the file and line, and the
 * function: the named location's name, else the kernel's. */
Test(lower_upstream, an_assert_in_a_kernel_calls_assertfail_with_its_message_and_place) {
  crec_program *p = crec_test_lower_file("assert.mlir");
  crec_module_info m;
  EXPECT_OK(crec_module_get_info(p, crec_program_module(p, 0), &m));
  const char *ptx = m.image;
  cr_assert(strstr(ptx, ".extern .func __assertfail") != NULL, "no __assertfail declared:\n%s", ptx);
  bool called = false;
  for (const char *c = strstr(ptx, "call.uni"); c && !called; c = strstr(c + 1, "call.uni")) {
    const char *callee = c + 8 + strspn(c + 8, " \t\n");
    called = strncmp(callee, "__assertfail", 12) == 0;
  }
  cr_assert(called, "__assertfail is never called:\n%s", ptx);
  cr_assert(ptx_has_string(ptx, "v is below the limit") && ptx_has_string(ptx, "v is over the limit"),
            "the messages are not in the PTX:\n%s", ptx);
  /* the second assert's named location; the first has the file's own place and the kernel's name */
  cr_assert(ptx_has_string(ptx, "bounds.cu") && ptx_has_string(ptx, "check_bounds"), "no bounds.cu, check_bounds:\n%s",
            ptx);
  cr_assert(ptx_has_string(ptx, "bounds"), "the kernel's name is not the first assert's function:\n%s", ptx);
  char file[1200];
  snprintf(file, sizeof file, "%sassert.mlir", crec_test_mlir_dir());
  cr_assert(ptx_has_string(ptx, file), "the first assert's file is not %s:\n%s", file, ptx);
  crec_program_destroy(p);
}

/* An assert's place from the other forms a location takes: a call-site chain
 * gives its innermost callee's file, line and name; a fused location its first
 * file; a location without a file the lowered text's name (line 0) and the
 * kernel. A message keeps every byte (quotes, a backslash, a newline, UTF-8). */
Test(lower_upstream, an_assert_takes_its_place_from_any_location_and_keeps_its_message_whole) {
  static const char text[] =
      "module attributes {gpu.container_module} {\n"
      "gpu.module @k {\n"
      "  gpu.func @check(%c: i1) kernel {\n"
      "    cf.assert %c, \"chained\" loc(callsite(callsite(\"inner\"(\"inner.cu\":7:9) at \"mid.cu\":10:8) at \"outer.cu\":11:12))\n"
      "    cf.assert %c, \"fused\" loc(fused[\"first.cu\":3:1, \"second.cu\":4:1])\n"
      "    cf.assert %c, \"nowhere\" loc(unknown)\n"
      "    cf.assert %c, \"say \\22hi\\22 \\5C \\0A caf\\C3\\A9\"\n"
      "    gpu.return\n"
      "  }\n"
      "}\n"
      "func.func @main() {\n"
      "  %c1 = arith.constant 1 : index\n"
      "  %t = arith.constant 1 : i1\n"
      "  gpu.launch_func @k::@check blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%t : i1)\n"
      "  return\n"
      "}\n"
      "}\n";
  crec_lower_options o = CREC_LOWER_OPTIONS_INIT;
  o.filename = "places.mlir";
  crec_program *p = NULL;
  EXPECT_OK(crec_lower_mlir_string(text, sizeof text - 1, &o, &p));
  crec_module_info m;
  EXPECT_OK(crec_module_get_info(p, crec_program_module(p, 0), &m));
  const char *ptx = m.image;
  static const char *const strings[] = {"chained", "inner.cu", "inner", "fused", "first.cu", "nowhere",
                                        "places.mlir", "check", "say \"hi\" \\ \n caf\xc3\xa9"};
  for (size_t i = 0; i < sizeof strings / sizeof *strings; i++)
    cr_assert(ptx_has_string(ptx, strings[i]), "no string '%s' in the PTX:\n%s", strings[i], ptx);
  cr_assert(!ptx_has_string(ptx, "outer.cu") && !ptx_has_string(ptx, "mid.cu") && !ptx_has_string(ptx, "second.cu"),
            "a caller's or a later file was taken:\n%s", ptx);
  crec_program_destroy(p);
}

/* The text dump of `p` (freed by the caller). */
static char *text_dump(const crec_program *p) {
  char *d = NULL;
  EXPECT_OK(crec_dump(p, NULL, CREC_DUMP_TEXT, &d, NULL));
  return d;
}

/* nvgpu.tma.create.descriptor: a 128-byte temporary that a command of the
 * built-in "crec.tensor_map" handler writes from the tensor's address (read,
 * so after the tensor's writers), with the tensor's dims, byte strides and box
 * innermost first; the kernel gets the temporary as one pointer, between two
 * "crec.tensor_map_use" commands that order it against the tensor's other
 * commands and keep the tensor's bytes its own until it is done. */
Test(lower_upstream, a_tma_descriptor_is_encoded_from_its_tensor_and_ordered_around_its_kernel) {
  crec_program *p = crec_test_lower_file("tma.mlir");
  size_t n = crec_program_command_count(p), tma = n, launch = n;
  for (size_t i = 0; i < n; i++) {
    crec_command_info c = crec_test_command(p, i);
    if (c.kind == CREC_COMMAND_CUSTOM && strcmp(c.name, "x.tma") == 0) tma = i;
    if (c.kind == CREC_COMMAND_LAUNCH && strcmp(c.name, "main_kernel") == 0) launch = i;
  }
  cr_assert(tma < n && launch < n && tma < launch, "no descriptor command before the launch");
  crec_custom cu = CREC_CUSTOM_INIT;
  EXPECT_OK(crec_command_get_custom(p, crec_program_command(p, tma), &cu));
  cr_assert_str_eq(cu.target, "crec.tensor_map");
  cr_assert_eq(cu.num_operands, 2);
  crec_test_expect_range(p, cu.operands[0].range, "x", 0, 4096);
  cr_assert_eq(cu.operands[0].access, CREC_ACCESS_READ);
  crec_test_expect_range(p, cu.operands[1].range, "x.tma", 0, 128);
  cr_assert_eq(cu.operands[1].access, CREC_ACCESS_WRITE);
  crec_kernel_info k;
  cr_assert_eq(cu.num_kernels, 1);
  EXPECT_OK(crec_kernel_get_info(p, cu.kernels[0], &k));
  cr_assert_str_eq(k.entry, "crec_store_tensor_map");
  char *d = text_dump(p);
  cr_assert(strstr(d, "TMA descriptor: f32, rank 2, dims 32x32, strides 128 B, box 32x32, swizzle none, L2 "
                      "promotion none, out-of-bounds fill zero, interleave none"),
            "%s", d);
  crec_free(d);
  /* the launch passes the descriptor's temporary, read */
  crec_command_info l = crec_test_command(p, launch);
  bool passed = false;
  for (size_t i = 0; i < l.num_args; i++) {
    crec_arg a;
    EXPECT_OK(crec_command_get_arg(p, crec_program_command(p, launch), i, &a));
    if (a.kind == CREC_ARG_BUFFER && a.range.buffer.id == cu.operands[1].range.buffer.id)
      passed = a.access == CREC_ACCESS_READ;
  }
  cr_assert(passed, "the launch does not read x.tma");
  for (int side = -1; side <= 1; side += 2) {
    crec_custom use = CREC_CUSTOM_INIT;
    EXPECT_OK(crec_command_get_custom(p, crec_program_command(p, launch + side), &use));
    cr_assert_str_eq(use.target, "crec.tensor_map_use", "command %zu", launch + side);
    crec_test_expect_range(p, use.operands[0].range, "x", 0, 4096);
    cr_assert_eq(use.operands[0].access, CREC_ACCESS_READ_WRITE);
    crec_test_expect_range(p, use.operands[1].range, "x.tma", 0, 128);
  }
  /* the kernel takes a pointer where the descriptor is, and copies with TMA */
  crec_module_info m;
  EXPECT_OK(crec_module_get_info(p, k.module, &m));
  EXPECT_OK(crec_kernel_get_info(p, l.kernel, &k));
  EXPECT_OK(crec_module_get_info(p, k.module, &m));
  cr_assert(strstr(m.image, "cp.async.bulk.tensor.2d") != NULL, "no TMA copy in:\n%s", (const char *)m.image);
  /* the copy's shared side is 1024-byte aligned (128 at least, 1024 for a 128-byte swizzle) */
  cr_assert(strstr(m.image, ".shared .align 1024 .b8 tile[4096];") != NULL, "tile is not aligned for TMA:\n%s",
            (const char *)m.image);
  /* the kernel first acquires the descriptor, which crec rewrites in place when x
   * moves, through the tensor-map proxy (PTX 8.3; TMA itself is 8.0, which the
   * driver's JIT refuses in 7.8, LLVM 19's default for sm_90) */
  cr_assert(strstr(m.image, "fence.proxy.tensormap::generic.acquire.gpu [") != NULL, "no acquire:\n%s",
            (const char *)m.image);
  cr_assert(strstr(m.image, "\n.version 8.3\n") != NULL, "not PTX 8.3:\n%.200s", (const char *)m.image);
  crec_program_destroy(p);
}

/* The descriptor type's swizzle, L2 promotion and out-of-bounds fill, f16 data,
 * and a box that is not the whole tensor: dims, strides and box innermost first. */
Test(lower_upstream, a_tma_descriptor_takes_its_type_s_parameters_and_reverses_dims) {
  static const char text[] =
      "!desc = !nvgpu.tensormap.descriptor<tensor = memref<32x64xf16, 3>, swizzle = swizzle_128b, "
      "l2promo = l2promo_256b, oob = nan, interleave = none>\n"
      "func.func @main(%x: memref<64x128xf16> {crec.name = \"x\"}) {\n"
      "  %c32 = arith.constant 32 : index\n"
      "  %c64 = arith.constant 64 : index\n"
      "  %u = memref.cast %x : memref<64x128xf16> to memref<*xf16>\n"
      "  %d = nvgpu.tma.create.descriptor %u box[%c32, %c64] : memref<*xf16> -> !desc\n"
      "  return\n"
      "}\n";
  crec_program *p = crec_test_lower_text(text);
  char *d = text_dump(p);
  cr_assert(strstr(d, "TMA descriptor: f16, rank 2, dims 128x64, strides 256 B, box 64x32, swizzle 128B, L2 "
                      "promotion 256B, out-of-bounds fill NaN, interleave none"),
            "%s", d);
  crec_free(d);
  crec_program_destroy(p);
}

/* What a descriptor cannot be made of is refused at the op, saying why. */
Test(lower_upstream, a_tma_descriptor_of_a_box_crec_cannot_know_is_refused_at_the_op) {
  static const char head[] =
      "!desc = !nvgpu.tensormap.descriptor<tensor = memref<8x8xf32, 3>, swizzle = none, l2promo = none, oob = zero, "
      "interleave = none>\n";
  char text[2048];
  snprintf(text, sizeof text,
           "%sfunc.func @main(%%x: memref<64x64xf32>, %%n: index) {\n"
           "  %%c8 = arith.constant 8 : index\n"
           "  %%u = memref.cast %%x : memref<64x64xf32> to memref<*xf32>\n"
           "  %%d = nvgpu.tma.create.descriptor %%u box[%%n, %%c8] : memref<*xf32> -> !desc\n"
           "  return\n"
           "}\n",
           head);
  lower_text(text, CREC_ERR_UNSUPPORTED);
  EXPECT_ERROR_MENTIONS(":5:8: 'nvgpu.tma.create.descriptor': box dimension 0 is not a constant from 1 to 256");
  snprintf(text, sizeof text,
           "%sfunc.func @main(%%x: memref<64x64xf32, strided<[1, 64]>>) {\n"
           "  %%c8 = arith.constant 8 : index\n"
           "  %%u = memref.cast %%x : memref<64x64xf32, strided<[1, 64]>> to memref<*xf32>\n"
           "  %%d = nvgpu.tma.create.descriptor %%u box[%%c8, %%c8] : memref<*xf32> -> !desc\n"
           "  return\n"
           "}\n",
           head);
  lower_text(text, CREC_ERR_UNSUPPORTED);
  EXPECT_ERROR_MENTIONS("the tensor's innermost stride is 64 elements");
}

/* A gpu.all_reduce without `uniform` (as older upstream tests write it): in the
 * kernel's single block every thread reaches it, so it compiles as uniform;
 * inside a branch it is refused at the op, saying why. */
static const char *reduce_kernel(const char *body) {
  static char text[2048];
  snprintf(text, sizeof text,
           "module attributes {gpu.container_module} {\n"
           "gpu.module @k {\n"
           "  gpu.func @red(%%out: memref<1xi32>, %%c: i1) kernel {\n"
           "    %%x = gpu.thread_id x\n"
           "    %%v = arith.index_cast %%x : index to i32\n"
           "    %%i0 = arith.constant 0 : index\n"
           "%s"
           "    gpu.return\n"
           "  }\n"
           "}\n"
           "func.func @main(%%out: memref<1xi32>) {\n"
           "  %%c1 = arith.constant 1 : index\n"
           "  %%t = arith.constant 1 : i1\n"
           "  gpu.launch_func @k::@red blocks in (%%c1, %%c1, %%c1) threads in (%%c1, %%c1, %%c1)\n"
           "      args(%%out : memref<1xi32>, %%t : i1)\n"
           "  return\n"
           "}\n"
           "}\n",
           body);
  return text;
}

Test(lower_upstream, an_all_reduce_every_thread_reaches_compiles_as_uniform) {
  crec_program *p = crec_test_lower_text(reduce_kernel("    %r = gpu.all_reduce xor %v {} : (i32) -> (i32)\n"
                                                       "    memref.store %r, %out[%i0] : memref<1xi32>\n"));
  cr_assert_eq(crec_program_kernel_count(p), 1);
  crec_program_destroy(p);
  lower_text(reduce_kernel("    scf.if %c {\n"
                           "      %r = gpu.all_reduce xor %v {} : (i32) -> (i32)\n"
                           "      memref.store %r, %out[%i0] : memref<1xi32>\n"
                           "    }\n"),
             CREC_ERR_UNSUPPORTED);
  EXPECT_ERROR_MENTIONS(":8:12: 'gpu.all_reduce': a gpu.all_reduce that is not `uniform`, inside a branch");
}

/* Host code on an entry argument works on a copy in a host temporary
 * "<arg>.host": copied in before each segment, and back after one that writes.
 * Here a store into x, then a print of x: the print's copy-in follows the
 * store's copy-back. */
Test(lower_upstream, host_code_on_an_entry_argument_works_on_a_copy) {
  crec_program *p = crec_test_lower_text("func.func @main(%x: memref<4xi32> {crec.name = \"x\"}) {\n"
                                         "  %c0 = arith.constant 0 : index\n"
                                         "  %v = arith.constant 7 : i32\n"
                                         "  memref.store %v, %x[%c0] : memref<4xi32>\n"
                                         "  gpu.memset %x, %v : memref<4xi32>, i32\n"
                                         "  %u = memref.cast %x : memref<4xi32> to memref<*xi32>\n"
                                         "  call @printMemrefI32(%u) : (memref<*xi32>) -> ()\n"
                                         "  return\n"
                                         "}\n"
                                         "func.func private @printMemrefI32(memref<*xi32>)\n");
  static const crec_command_kind kinds[] = {CREC_COMMAND_MEMCPY, CREC_COMMAND_HOST, CREC_COMMAND_MEMCPY,
                                            CREC_COMMAND_MEMSET, CREC_COMMAND_MEMCPY, CREC_COMMAND_HOST};
  static const char *const names[] = {"x.host.in", NULL, "x.host.out", NULL, "x.host.in", NULL};
  cr_assert_eq(crec_program_command_count(p), 6);
  for (size_t i = 0; i < 6; i++) {
    crec_command_info c = crec_test_command(p, i);
    cr_assert_eq(c.kind, kinds[i], "command %zu is a %s", i, crec_command_kind_name(c.kind));
    if (names[i]) cr_assert_str_eq(c.name, names[i]);
  }
  crec_test_expect_range(p, crec_test_command(p, 0).dst, "x.host", 0, 16);
  crec_test_expect_range(p, crec_test_command(p, 0).src, "x", 0, 16);
  crec_test_expect_range(p, crec_test_command(p, 2).dst, "x", 0, 16);
  crec_buffer h;
  EXPECT_OK(crec_program_find_buffer(p, "x.host", &h));
  crec_buffer_info bi = buffer_of(p, h);
  cr_assert_eq(bi.memory, CREC_MEMORY_HOST);
  cr_assert_eq(bi.kind, CREC_BUFFER_TEMPORARY);
  /* the second segment, run here on its copy, prints it */
  int32_t copy[4] = {5, 6, 7, 8};
  char *out = run_host_callback(p, 5, copy);
  cr_assert(strstr(out, "[5,  6,  7,  8]"), "printed: %s", out);
  free(out);
  crec_program_destroy(p);
}

/* A fill of memory host code touches (a host temporary) is host code, in the
 * one host node with the print that follows it: memset nodes write device
 * memory only. Upstream's tests fill their buffers with linalg.fill before
 * printing. */
Test(lower_upstream, a_fill_of_host_memory_is_a_host_callback) {
  crec_program *p = crec_test_lower_text("func.func @main() {\n"
                                         "  %t = memref.alloc() : memref<5xi32>\n"
                                         "  %v = arith.constant 258 : i32\n"
                                         "  linalg.fill ins(%v : i32) outs(%t : memref<5xi32>)\n"
                                         "  %u = memref.cast %t : memref<5xi32> to memref<*xi32>\n"
                                         "  call @printMemrefI32(%u) : (memref<*xi32>) -> ()\n"
                                         "  return\n"
                                         "}\n"
                                         "func.func private @printMemrefI32(memref<*xi32>)\n");
  cr_assert_eq(crec_program_command_count(p), 1);
  cr_assert_eq(crec_test_command(p, 0).kind, CREC_COMMAND_HOST, "the fill and the print");
  int32_t mem[5] = {0};
  char *out = run_host_callback(p, 0, mem);
  for (int i = 0; i < 5; i++) cr_assert_eq(mem[i], 258, "element %d: %d", i, mem[i]);
  cr_assert(strstr(out, "[258,  258,  258,  258,  258]"), "printed: %s", out);
  free(out);
  crec_program_destroy(p);
}

/* An scf.for whose upper bound is a bound scalar (tests/mlir/for_scalar.mlir)
 * is a device loop whose trip count, max(ceildiv(ub - lb, step), 0), a host
 * function computes before each execution; a body that uses the induction
 * variable is refused (it would need unrolling). */
Test(lower_upstream, scf_for_with_a_bound_known_when_the_program_runs_is_a_device_loop) {
  crec_program *p = crec_test_lower_file("for_scalar.mlir");
  cr_assert_eq(crec_program_command_count(p), 4, "the counter's reset, the loop, its step and its body");
  cr_assert_eq(crec_test_command(p, 0).kind, CREC_COMMAND_MEMSET);
  cr_assert_eq(crec_test_command(p, 1).kind, CREC_COMMAND_WHILE);
  cr_assert_eq(crec_program_host_function_count(p), 1);
  crec_host_function_info hf;
  EXPECT_OK(crec_program_get_host_function(p, 0, &hf));
  cr_assert_eq(hf.num_inputs, 1);
  cr_assert_eq(hf.num_outputs, 1);
  static const int64_t n[] = {-3, 1, 2, 6, 7}, want[] = {0, 0, 1, 3, 3};
  for (size_t i = 0; i < 5; i++) {
    crec_value in, out;
    in.i64 = n[i];
    out.i64 = -1;
    cr_assert_eq(hf.fn(hf.user, &in, &out), 0);
    cr_assert_eq(out.i64, want[i], "n = %lld: %lld trips, %lld expected", (long long)n[i], (long long)out.i64,
                 (long long)want[i]);
  }
  crec_program_destroy(p);
  /* the body takes the index (a view's offset) */
  lower_text("func.func @main(%x: memref<8xi32>, %n: index) {\n"
             "  %c0 = arith.constant 0 : index\n"
             "  %c1 = arith.constant 1 : index\n"
             "  %v = arith.constant 0 : i32\n"
             "  scf.for %i = %c0 to %n step %c1 {\n"
             "    %s = memref.subview %x[%i] [1] [1] : memref<8xi32> to memref<1xi32, strided<[1], offset: ?>>\n"
             "    gpu.memset %s, %v : memref<1xi32, strided<[1], offset: ?>>, i32\n"
             "  }\n"
             "  return\n"
             "}\n",
             CREC_ERR_UNSUPPORTED);
  EXPECT_ERROR_MENTIONS("whose body uses the induction variable: crec unrolls such bodies");
}

/* nvgpu ops in a kernel (upstream's sm80 and sm90 tests use them) compile as
 * MLIR 19's gpu-lower-to-nvvm-pipeline compiles them: here cp.async copies of x
 * into shared memory. The access analysis follows them: x is read, y written. */
Test(lower_upstream, nvgpu_ops_in_kernels_compile_as_mlir_19s_pipeline_does) {
  crec_program *p = crec_test_lower_file("nvgpu.mlir");
  static const crec_command_kind kinds[] = {CREC_COMMAND_HOST, CREC_COMMAND_LAUNCH, CREC_COMMAND_HOST};
  cr_assert_eq(crec_program_command_count(p), 3);
  for (size_t i = 0; i < 3; i++)
    cr_assert_eq(crec_test_command(p, i).kind, kinds[i], "command %zu is a %s", i,
                 crec_command_kind_name(crec_test_command(p, i).kind));
  crec_command_info launch = crec_test_command(p, 1);
  cr_assert_eq(launch.block[0].value, 8);
  bool seen_x = false, seen_y = false;
  for (size_t i = 0; i < launch.num_args; i++) {
    crec_arg a = crec_test_arg(p, 1, i);
    if (a.kind != CREC_ARG_BUFFER) continue;
    const char *name = buffer_of(p, a.range.buffer).name;
    if (strcmp(name, "tmp0") == 0) {
      seen_x = true;
      cr_assert_eq(a.access, CREC_ACCESS_READ, "x is only copied from");
    }
    if (strcmp(name, "tmp1") == 0) {
      seen_y = true;
      cr_assert_eq(a.access, CREC_ACCESS_WRITE, "y is only stored to");
    }
  }
  cr_assert(seen_x && seen_y);
  crec_module_info m;
  EXPECT_OK(crec_module_get_info(p, crec_program_module(p, 0), &m));
  cr_assert(strstr(m.image, "cp.async.ca.shared.global") != NULL, "no cp.async in:\n%s", (const char *)m.image);
  cr_assert(strstr(m.image, "cp.async.wait_group 0;") != NULL);
  crec_program_destroy(p);
}

/* gpu.cluster_dim_blocks, which MLIR 19's convert-gpu-to-nvvm leaves illegal,
 * reads the cluster's size from %cluster_nctaid; the launch keeps its cluster
 * dims (4 x 4 x 1 over a 16 x 16 grid). */
Test(lower_upstream, cluster_dims_in_kernels_read_the_nvvm_registers) {
  crec_program *p = crec_test_lower_file("cluster.mlir");
  crec_command_info launch = {0};
  bool found = false;
  for (size_t i = 0; i < crec_program_command_count(p) && !found; i++)
    if (crec_test_command(p, i).kind == CREC_COMMAND_LAUNCH) launch = crec_test_command(p, i), found = true;
  cr_assert(found, "no launch");
  cr_assert(launch.grid[0].value == 16 && launch.grid[1].value == 16, "grid %llu x %llu",
            (unsigned long long)launch.grid[0].value, (unsigned long long)launch.grid[1].value);
  crec_kernel_info k;
  EXPECT_OK(crec_kernel_get_info(p, launch.kernel, &k));
  cr_assert(k.cluster[0] == 4 && k.cluster[1] == 4 && k.cluster[2] == 1, "cluster %u x %u x %u", k.cluster[0],
            k.cluster[1], k.cluster[2]);
  crec_module_info m;
  EXPECT_OK(crec_module_get_info(p, k.module, &m));
  cr_assert(strstr(m.image, "%cluster_nctaid.x") && strstr(m.image, "%cluster_nctaid.y"),
            "the cluster's size is not read from %%cluster_nctaid:\n%s", (const char *)m.image);
  cr_assert(strstr(m.image, "%clusterid.x") != NULL, "no %%clusterid:\n%s", (const char *)m.image);
  crec_program_destroy(p);
}

/* A zero-sized workgroup memref.global names dynamic shared memory: it compiles
 * to an `.extern .shared` array, where the dynamic region starts, not to a
 * one-byte variable of the kernel laid out among its static ones (which the
 * region would then overrun, as LLVM 19 leaves it). */
Test(lower_upstream, a_zero_sized_workgroup_global_is_the_start_of_dynamic_shared_memory) {
  crec_program *p = crec_test_lower_file("dynamic_shared.mlir");
  crec_command_info l = crec_test_command(p, 0);
  cr_assert_eq(l.kind, CREC_COMMAND_LAUNCH);
  crec_kernel_info k;
  crec_module_info m;
  EXPECT_OK(crec_kernel_get_info(p, l.kernel, &k));
  EXPECT_OK(crec_module_get_info(p, k.module, &m));
  cr_assert(strstr(m.image, "\n.extern .shared .align 16 .b8 dyn[];\n") != NULL, "dyn is not extern:\n%s",
            (const char *)m.image);
  cr_assert_null(strstr(m.image, "dyn has been demoted"), "%s", (const char *)m.image);
  cr_assert(strstr(m.image, ".shared .align 16 .b8 fixed[128];") != NULL, "the static array is lost:\n%s",
            (const char *)m.image);
  /* sm_90 code is PTX 8.0 (TMA's version), 8.3 only where a kernel acquires a descriptor */
  cr_assert(strstr(m.image, "\n.version 8.0\n") != NULL, "not PTX 8.0:\n%.200s", (const char *)m.image);
  crec_program_destroy(p);
}

/* A kernel with wgmma instructions compiles for sm_90a when the chip is sm_90
 * (an H100 or H200 runs sm_90a code); for an older chip it is refused at the op
 * that needs sm_90a. */
static const char wgmma_fence[] =
    "module attributes {gpu.container_module} {\n"
    "gpu.module @k {\n"
    "  gpu.func @fence(%x: memref<4xf32>) kernel {\n"
    "    nvvm.wgmma.fence.aligned\n"
    "    %i = gpu.thread_id x\n"
    "    %v = memref.load %x[%i] : memref<4xf32>\n"
    "    memref.store %v, %x[%i] : memref<4xf32>\n"
    "    gpu.return\n"
    "  }\n"
    "}\n"
    "func.func @main(%x: memref<4xf32> {crec.name = \"x\"}) {\n"
    "  %c1 = arith.constant 1 : index\n"
    "  %c4 = arith.constant 4 : index\n"
    "  gpu.launch_func @k::@fence blocks in (%c1, %c1, %c1) threads in (%c4, %c1, %c1) args(%x : memref<4xf32>)\n"
    "  return\n"
    "}\n"
    "}\n";

Test(lower_upstream, a_kernel_with_wgmma_compiles_for_sm_90a_and_is_refused_below) {
  crec_lower_options o = CREC_LOWER_OPTIONS_INIT;
  o.chip = "sm_90";
  crec_program *p = NULL;
  EXPECT_OK(crec_lower_mlir_string(wgmma_fence, strlen(wgmma_fence), &o, &p));
  crec_module_info m;
  EXPECT_OK(crec_module_get_info(p, crec_program_module(p, 0), &m));
  cr_assert(strstr(m.image, ".target sm_90a\n") != NULL, "not compiled for sm_90a:\n%s", (const char *)m.image);
  cr_assert(strstr(m.image, "wgmma.fence.sync.aligned;") != NULL);
  crec_program_destroy(p);
  p = NULL;
  o.chip = "sm_80";
  EXPECT_STATUS(crec_lower_mlir_string(wgmma_fence, strlen(wgmma_fence), &o, &p), CREC_ERR_UNSUPPORTED);
  cr_assert_null(p);
  EXPECT_ERROR_MENTIONS(":4:5: 'nvvm.wgmma.fence.aligned': it compiles to wgmma or setmaxnreg instructions, which "
                        "only sm_90a has, but the target chip is sm_80");
}

/* An inline gpu.launch that uses a host-made descriptor (here to prefetch it):
 * crec outlines it with a descriptor parameter, which compiles as the pointer
 * upstream lowers it to. */
Test(lower_upstream, a_kernel_taking_a_host_made_descriptor_compiles_it_as_a_pointer) {
  crec_program *p = lower_text(
      "func.func @main(%x: memref<64x64xf16>) {\n"
      "  %c64 = arith.constant 64 : index\n"
      "  %c1 = arith.constant 1 : index\n"
      "  %u = memref.cast %x : memref<64x64xf16> to memref<*xf16>\n"
      "  %d = nvgpu.tma.create.descriptor %u box[%c64, %c64] : memref<*xf16> -> !nvgpu.tensormap.descriptor<"
      "tensor = memref<64x64xf16, 3>, swizzle = none, l2promo = none, oob = zero, interleave = none>\n"
      "  gpu.launch blocks(%a, %b, %c) in (%e = %c1, %f = %c1, %g = %c1)\n"
      "             threads(%i, %j, %k) in (%l = %c1, %m = %c1, %n = %c1) {\n"
      "    nvgpu.tma.prefetch.descriptor %d : !nvgpu.tensormap.descriptor<tensor = memref<64x64xf16, 3>, "
      "swizzle = none, l2promo = none, oob = zero, interleave = none>\n"
      "    gpu.terminator\n"
      "  }\n"
      "  return\n"
      "}\n",
      CREC_OK);
  size_t n = crec_program_command_count(p);
  bool found = false;
  for (size_t i = 0; i < n && !found; i++) {
    crec_command_info c = crec_test_command(p, i);
    if (c.kind != CREC_COMMAND_LAUNCH || strcmp(c.name, "crec_store_tensor_map") == 0) continue;
    crec_kernel_info k;
    crec_module_info m;
    EXPECT_OK(crec_kernel_get_info(p, c.kernel, &k));
    EXPECT_OK(crec_module_get_info(p, k.module, &m));
    cr_assert(strstr(m.image, "prefetch.tensormap") != NULL, "no prefetch in:\n%s", (const char *)m.image);
    cr_assert(strstr(m.image, ".param .u64") != NULL, "the descriptor is not a pointer parameter:\n%s",
              (const char *)m.image);
    found = true;
  }
  cr_assert(found, "no launch of the kernel");
  crec_program_destroy(p);
}

/* A transform schedule (@__transform_main) is applied by MLIR's transform
 * interpreter before crec lowers the program, and then dropped: here it
 * rewrites the kernel's linalg.matmul into nvgpu.mma.sync, which compiles to
 * tensor-core instructions. */
Test(lower_upstream, a_transform_schedule_is_applied_then_dropped) {
  crec_program *p = crec_test_lower_file("transform.mlir");
  static const crec_command_kind kinds[] = {CREC_COMMAND_HOST, CREC_COMMAND_LAUNCH, CREC_COMMAND_HOST};
  cr_assert_eq(crec_program_command_count(p), 3);
  for (size_t i = 0; i < 3; i++) cr_assert_eq(crec_test_command(p, i).kind, kinds[i], "command %zu", i);
  static const crec_access access[] = {CREC_ACCESS_READ, CREC_ACCESS_READ, CREC_ACCESS_READ_WRITE};
  cr_assert_eq(crec_test_command(p, 1).num_args, 3);
  for (size_t i = 0; i < 3; i++) cr_assert_eq(crec_test_arg(p, 1, i).access, access[i], "argument %zu", i);
  cr_assert_eq(crec_program_kernel_count(p), 1);
  crec_module_info m;
  EXPECT_OK(crec_module_get_info(p, crec_program_module(p, 0), &m));
  cr_assert(strstr(m.image, "mma.sync.aligned.m16n8k4.row.col.f32.tf32.tf32.f32") != NULL,
            "the matmul was not rewritten into mma.sync:\n%s", (const char *)m.image);
  crec_program_destroy(p);
}

/* The older form of a schedule, a top-level transform.sequence that only MLIR's
 * test interpreter runs, is refused at it, saying which form crec runs; a
 * schedule that fails is reported with MLIR's own message. */
Test(lower_upstream, schedules_crec_cannot_apply_say_why) {
  lower_text("func.func @main() {\n"
             "  return\n"
             "}\n"
             "transform.sequence failures(propagate) {\n"
             "^bb1(%root: !transform.any_op):\n"
             "  transform.yield\n"
             "}\n",
             CREC_ERR_UNSUPPORTED);
  EXPECT_ERROR_MENTIONS(":4:1: 'transform.sequence': a top-level transform.sequence is a schedule only MLIR's test "
                        "interpreter runs");
  EXPECT_ERROR_MENTIONS("'transform.named_sequence @__transform_main'");
  lower_text("module attributes {transform.with_named_sequence} {\n"
             "  func.func @main() {\n"
             "    return\n"
             "  }\n"
             "  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {\n"
             "    %f = transform.structured.match ops{[\"func.func\"]} in %root : (!transform.any_op) -> !transform.any_op\n"
             "    transform.nvgpu.rewrite_matmul_as_mma_sync %f : (!transform.any_op) -> ()\n"
             "    transform.yield\n"
             "  }\n"
             "}\n",
             CREC_ERR_MLIR);
  EXPECT_ERROR_MENTIONS(":7:5: transform applied to the wrong op kind");
}

/* Allocations of dynamic type whose sizes the text fixes (a constant; memref.dim
 * of a static memref in an inlined helper) are temporaries of those sizes; the
 * kernel taking one as a descriptor is given the constant size. */
Test(lower_upstream, allocations_of_sizes_the_text_fixes_are_temporaries_of_those_sizes) {
  crec_program *p = crec_test_lower_file("known_sizes.mlir");
  cr_assert_eq(crec_program_buffer_count(p), 3);
  static const crec_memory memory[] = {CREC_MEMORY_HOST, CREC_MEMORY_DEVICE, CREC_MEMORY_HOST};
  for (size_t i = 0; i < 3; i++) {
    crec_buffer_info b = buffer_of(p, crec_program_buffer(p, i));
    cr_assert_eq(b.kind, CREC_BUFFER_TEMPORARY, "buffer %zu", i);
    cr_assert_eq(b.size, 48, "buffer %zu is %" PRIu64 " bytes", i, b.size);
    cr_assert_eq(b.memory, memory[i], "buffer %zu", i);
  }
  static const crec_command_kind kinds[] = {CREC_COMMAND_HOST, CREC_COMMAND_MEMCPY, CREC_COMMAND_LAUNCH,
                                            CREC_COMMAND_MEMCPY, CREC_COMMAND_HOST};
  cr_assert_eq(crec_program_command_count(p), 5);
  for (size_t i = 0; i < 5; i++) cr_assert_eq(crec_test_command(p, i).kind, kinds[i], "command %zu", i);
  /* the descriptor of memref<?xi32>: two pointers, offset 0, size 12, stride 1 */
  crec_command_info launch = crec_test_command(p, 2);
  cr_assert_eq(launch.num_args, 5);
  crec_arg size = crec_test_arg(p, 2, 3);
  cr_assert_eq(size.kind, CREC_ARG_IMMEDIATE);
  cr_assert_eq(size.value.i64, 12);
  crec_program_destroy(p);
}

/* gpu.alloc async with a constant size keeps its token for what follows; an
 * allocation sized by a scalar known only when the program runs is refused. */
Test(lower_upstream, allocations_of_sizes_known_only_at_run_time_stay_refused) {
  crec_program *p = lower_text("func.func @main() {\n"
                               "  %c4 = arith.constant 4 : index\n"
                               "  %t0 = gpu.wait async\n"
                               "  %m, %t1 = gpu.alloc async [%t0] (%c4) : memref<?xf32>\n"
                               "  %zero = arith.constant 0.0 : f32\n"
                               "  %t2 = gpu.memset async [%t1] %m, %zero : memref<?xf32>, f32\n"
                               "  %t3 = gpu.dealloc async [%t2] %m : memref<?xf32>\n"
                               "  gpu.wait [%t3]\n"
                               "  return\n"
                               "}\n",
                               CREC_OK);
  cr_assert_eq(buffer_of(p, crec_program_buffer(p, 0)).size, 16);
  cr_assert_eq(crec_test_command(p, 0).kind, CREC_COMMAND_MEMSET);
  cr_assert_eq(crec_test_command(p, 0).bytes, 16);
  crec_program_destroy(p);
  lower_text("func.func @main(%n: index) {\n"
             "  %m = memref.alloc(%n) : memref<?xf32>\n"
             "  memref.dealloc %m : memref<?xf32>\n"
             "  return\n"
             "}\n",
             CREC_ERR_UNSUPPORTED);
  EXPECT_ERROR_MENTIONS(":2:8: 'memref.alloc': a temporary needs a static shape");
}

/* async.execute regions run in place, in program order, their body arguments
 * the values the regions that made them yielded, and awaits dropped: the copy
 * to the device, the kernel and the copy back, each after the one before it. */
Test(lower_upstream, async_execute_regions_run_in_place_in_program_order) {
  crec_program *p = crec_test_lower_file("async.mlir");
  static const crec_command_kind kinds[] = {CREC_COMMAND_HOST, CREC_COMMAND_MEMCPY, CREC_COMMAND_LAUNCH,
                                            CREC_COMMAND_MEMCPY, CREC_COMMAND_HOST};
  cr_assert_eq(crec_program_command_count(p), 5);
  for (size_t i = 0; i < 5; i++) cr_assert_eq(crec_test_command(p, i).kind, kinds[i], "command %zu", i);
  crec_test_expect_range(p, crec_test_command(p, 1).dst, "tmp1", 0, 16);
  crec_test_expect_range(p, crec_test_command(p, 1).src, "tmp0", 0, 16);
  crec_arg d = crec_test_arg(p, 2, 0);
  cr_assert_eq(d.kind, CREC_ARG_BUFFER);
  cr_assert_str_eq(buffer_of(p, d.range.buffer).name, "tmp1", "the kernel takes the value the first region yielded");
  cr_assert_eq(d.access, CREC_ACCESS_READ_WRITE);
  crec_test_expect_range(p, crec_test_command(p, 3).dst, "tmp0", 0, 16);
  crec_test_expect_range(p, crec_test_command(p, 3).src, "tmp1", 0, 16);
  crec_program_destroy(p);
}

/* Other async ops (groups), and an async value that is not one an execute of
 * the entry made, are refused at them, saying why. */
Test(lower_upstream, async_ops_crec_does_not_run_in_place_say_why) {
  lower_text("func.func @main() {\n"
             "  %c1 = arith.constant 1 : index\n"
             "  %g = async.create_group %c1 : !async.group\n"
             "  return\n"
             "}\n",
             CREC_ERR_UNSUPPORTED);
  EXPECT_ERROR_MENTIONS(":3:8: 'async.create_group': crec runs async.execute regions in place and drops their awaits");
  lower_text("func.func @main(%v: !async.value<i32>) {\n"
             "  %t = async.execute (%v as %x : !async.value<i32>) {\n"
             "    async.yield\n"
             "  }\n"
             "  return\n"
             "}\n",
             CREC_ERR_UNSUPPORTED);
  EXPECT_ERROR_MENTIONS(":2:8: 'async.execute': body operand 0 is not an async value an async.execute of the entry made");
}
