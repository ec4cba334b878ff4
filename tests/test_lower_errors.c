/* Bad input to the MLIR front end: each case fails with a specific status and
 * a one-line message carrying "file:line:col", the op and the reason; nothing
 * is returned and nothing leaks. */
#include <stdio.h>
#include <string.h>

#include "common.h"

/* Skips the suite when crec was built without MLIR (CREC_WITH_MLIR=OFF). */
static void require_mlir(void) {
  crec_lower_cache_stats st = CREC_LOWER_CACHE_STATS_INIT;
  if (crec_lower_cache_get_stats(&st) == CREC_ERR_UNSUPPORTED) cr_skip_test("%s", crec_last_error());
}
TestSuite(lower_errors, .init = require_mlir);

/* the inputs staged in the build tree, next to the images nvcc built */
#define MLIR_DIR CREC_TEST_MLIR_DIR

#define HEAD "module attributes {gpu.container_module} {\n"

static void expect_error(const char *text, crec_status status, const char *location, const char *reason) {
  crec_lower_options o = CREC_LOWER_OPTIONS_INIT;
  o.filename = "bad.mlir";
  o.base_dir = MLIR_DIR;
  crec_program *p = (crec_program *)&o; /* must be reset to NULL */
  int64_t live = crec_debug_live_objects();
  crec_status s = crec_lower_mlir_string(text, strlen(text), &o, &p);
  const char *e = crec_last_error();
  cr_assert_eq(s, status, "status %s, expected %s: %s", crec_status_name(s), crec_status_name(status), e);
  cr_assert_null(p, "a failed lowering returns no program");
  cr_assert_eq(crec_debug_live_objects(), live, "a failed lowering leaks");
  cr_assert(strncmp(e, "crec_lower_mlir_string: ", 24) == 0, "message '%s' does not name the function", e);
  cr_assert(strstr(e, location) != NULL, "message '%s' lacks the location '%s'", e, location);
  cr_assert(strstr(e, reason) != NULL, "message '%s' lacks the reason '%s'", e, reason);
  cr_assert(strchr(e, '\n') == NULL, "message '%s' spans several lines", e);
}

/* ---- the eight kinds the issue lists ---- */

Test(lower_errors, malformed_mlir) {
  expect_error("module {\n  func.func @main() {\n    %x = arith.constant : i32\n    return\n  }\n}\n", CREC_ERR_MLIR,
               "bad.mlir:3:", "expected");
  expect_error("module {\n  func.func @main() {\n", CREC_ERR_MLIR, "bad.mlir:2:", "expected");
  expect_error("module {\n  func.func @main() {\n    \"gpu.lauch_func\"() : () -> ()\n    return\n  }\n}\n",
               CREC_ERR_MLIR, "bad.mlir:3:5", "gpu.lauch_func");
}

Test(lower_errors, failing_verifier) {
  expect_error(HEAD "  gpu.module @k { gpu.func @f(%x: memref<4xf32>) kernel { gpu.return } }\n"
               "  func.func @main(%y: memref<8xf32>) {\n    %c1 = arith.constant 1 : index\n"
               "    gpu.launch_func @k::@f blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%y : memref<8xf32>)\n"
               "    return\n  }\n}\n",
               CREC_ERR_MLIR, "bad.mlir:5:5", "'gpu.launch_func' op type of function argument 0 does not match");
  expect_error("module {\n  func.func @main(%a: i32) {\n    %b = \"arith.addi\"(%a) : (i32) -> i32\n    return\n  }\n}\n",
               CREC_ERR_MLIR, "bad.mlir:3:10", "'arith.addi' op");
}

Test(lower_errors, unsupported_op) {
  expect_error("module {\n  func.func @main() {\n    %c0 = arith.constant 0 : index\n"
               "    scf.for %i = %c0 to %c0 step %c0 {\n    }\n    return\n  }\n}\n",
               CREC_ERR_UNSUPPORTED, "bad.mlir:4:5", "'scf.for': unsupported op in the entry function");
  expect_error("module {\n  func.func @main(%a: f32) {\n    %b = math.sqrt %a : f32\n    return\n  }\n}\n",
               CREC_ERR_UNSUPPORTED, "bad.mlir:3:10", "'math.sqrt'");
  /* only crec.* ops may be unregistered: MLIR itself would refuse the others */
  expect_error("module {\n  func.func @main() {\n    \"other.op\"() : () -> ()\n    return\n  }\n}\n",
               CREC_ERR_MLIR, "bad.mlir:3:5",
               "'other.op': unregistered operation: the dialect 'other' is not known to MLIR (only crec.* ops may be "
               "written without a registered dialect)");
}

Test(lower_errors, kernel_not_found) {
  expect_error(HEAD "  gpu.module @k { gpu.func @f() kernel { gpu.return } }\n"
               "  func.func @main() {\n    %c1 = arith.constant 1 : index\n"
               "    gpu.launch_func @k::@g blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)\n    return\n  }\n}\n",
               CREC_ERR_NOT_FOUND, "bad.mlir:5:5", "kernel function '@k::@g' is undefined");
  expect_error(HEAD "  gpu.module @cuda attributes {crec.image = \"kernels.ptx\"} {\n"
               "    gpu.func @nope() kernel { gpu.return }\n  }\n"
               "  func.func @main() {\n    %c1 = arith.constant 1 : index\n"
               "    gpu.launch_func @cuda::@nope blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)\n    return\n  }\n}\n",
               CREC_ERR_NOT_FOUND, "bad.mlir:3:5", "kernel 'nope' is not in the ptx image of @cuda");
  expect_error(HEAD "  gpu.module @cuda attributes {crec.image = \"kernels.cubin\"} {\n"
               "    gpu.func @nope() kernel { gpu.return }\n  }\n"
               "  func.func @main() {\n    %c1 = arith.constant 1 : index\n"
               "    gpu.launch_func @cuda::@nope blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)\n    return\n  }\n}\n",
               CREC_ERR_NOT_FOUND, "bad.mlir:3:5", "kernel 'nope' is not in the cubin image of @cuda");
  expect_error("module {\n  func.func @foo() { return }\n}\n", CREC_ERR_NOT_FOUND, "bad.mlir:1:1",
               "entry function 'main' not found (functions in the module: 'foo')");
}

Test(lower_errors, launch_operands_do_not_match_the_kernel) {
  /* the image's axpy takes (ptr, ptr, f32, i32): an i64 is one byte count off */
  expect_error(HEAD "  gpu.module @cuda attributes {crec.image = \"kernels.ptx\"} {\n"
               "    gpu.func @axpy(%y: memref<4xf32>, %x: memref<4xf32>, %a: f32, %n: i64) kernel { gpu.return }\n  }\n"
               "  func.func @main(%y: memref<4xf32>, %x: memref<4xf32>, %a: f32, %n: i64) {\n"
               "    %c1 = arith.constant 1 : index\n"
               "    gpu.launch_func @cuda::@axpy blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)\n"
               "        args(%y : memref<4xf32>, %x : memref<4xf32>, %a : f32, %n : i64)\n    return\n  }\n}\n",
               CREC_ERR_MLIR, "bad.mlir:7:5",
               "the launch operands do not match kernel 'axpy' of @cuda: its compiled signature takes 4 parameters "
               "(bytes: 8,8,4,4), the 4 operands pass 4 as C pointers (bytes: 8,8,4,8)");
  expect_error(HEAD "  gpu.module @cuda attributes {crec.image = \"kernels.cubin\"} {\n"
               "    gpu.func @step(%c: memref<i32>) kernel { gpu.return }\n  }\n"
               "  func.func @main(%c: memref<i32>) {\n    %c1 = arith.constant 1 : index\n"
               "    gpu.launch_func @cuda::@step blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%c : memref<i32>)\n"
               "    return\n  }\n}\n",
               CREC_ERR_MLIR, "bad.mlir:7:5", "its compiled signature takes 2 parameters (bytes: 8,8), the 1 operands pass 1");
  /* gpu.binary: one memref is neither 1 (bare) nor 3 (descriptor) parameters */
  expect_error(HEAD "  gpu.binary @b [#gpu.object<#nvvm.target<chip = \"sm_90\">, assembly = \".version 7.8\\0A.target sm_90\\0A"
               ".address_size 64\\0A.visible .entry k(.param .u64 a, .param .u64 b)\\0A{ ret; }\\0A\">]\n"
               "  func.func @main(%x: memref<i32>) {\n    %c1 = arith.constant 1 : index\n"
               "    gpu.launch_func @b::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<i32>)\n"
               "    return\n  }\n}\n",
               CREC_ERR_MLIR, "bad.mlir:5:5", "do not match kernel 'k' of @b: its compiled signature takes 2 parameters");
}

Test(lower_errors, crec_image_missing_or_not_an_image) {
  expect_error(HEAD "  gpu.module @cuda attributes {crec.image = \"no/such/file.ptx\"} {\n"
               "    gpu.func @fill() kernel { gpu.return }\n  }\n"
               "  func.func @main() {\n    %c1 = arith.constant 1 : index\n"
               "    gpu.launch_func @cuda::@fill blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)\n    return\n  }\n}\n",
               CREC_ERR_IO, "bad.mlir:2:3", "crec.image 'no/such/file.ptx' (" MLIR_DIR "/no/such/file.ptx) cannot be opened");
  expect_error(HEAD "  gpu.module @cuda attributes {crec.image = \"saxpy.mlir\"} {\n"
               "    gpu.func @fill() kernel { gpu.return }\n  }\n"
               "  func.func @main() {\n    %c1 = arith.constant 1 : index\n"
               "    gpu.launch_func @cuda::@fill blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)\n    return\n  }\n}\n",
               CREC_ERR_MLIR, "bad.mlir:2:3", "crec.image 'saxpy.mlir' (" MLIR_DIR "/saxpy.mlir) is not a PTX, cubin or fatbin image");
  expect_error(HEAD "  gpu.module @cuda attributes {crec.image = \"kernels.ptx\"} {\n"
               "    gpu.func @fill() kernel {\n      %c = arith.constant 1 : index\n      gpu.return\n    }\n  }\n"
               "  func.func @main() {\n    %c1 = arith.constant 1 : index\n"
               "    gpu.launch_func @cuda::@fill blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)\n    return\n  }\n}\n",
               CREC_ERR_MLIR, "bad.mlir:3:5", "holds only declarations");
}

Test(lower_errors, dynamic_offset_where_a_static_one_is_needed) {
  expect_error("module {\n  func.func @main(%m: memref<64xf32>, %d: memref<4xf32>, %n: index) {\n"
               "    %v = memref.subview %m[%n] [4] [1] : memref<64xf32> to memref<4xf32, strided<[1], offset: ?>>\n"
               "    gpu.memcpy %d, %v : memref<4xf32>, memref<4xf32, strided<[1], offset: ?>>\n    return\n  }\n}\n",
               CREC_ERR_MLIR, "bad.mlir:3:10", "'memref.subview': offset 0 is dynamic where a static one is needed");
  expect_error("module {\n  func.func @main(%m: memref<64xi8>, %n: index) {\n"
               "    %v = memref.view %m[%n][] : memref<64xi8> to memref<4xf32>\n    return\n  }\n}\n",
               CREC_ERR_MLIR, "bad.mlir:3:10", "'memref.view': the byte shift is dynamic where a static one is needed");
  expect_error("module {\n  func.func @main(%m: memref<64xf32>, %n: index) {\n"
               "    %v = memref.reinterpret_cast %m to offset: [%n], sizes: [4], strides: [1]\n"
               "        : memref<64xf32> to memref<4xf32, strided<[1], offset: ?>>\n    return\n  }\n}\n",
               CREC_ERR_MLIR, "bad.mlir:3:10", "'memref.reinterpret_cast': the offset is dynamic where a static one is needed");
  expect_error("module {\n  func.func @main(%m: memref<4xi1>, %n: index) {\n"
               "    %p = memref.load %m[%n] : memref<4xi1>\n    scf.if %p {\n    }\n    return\n  }\n}\n",
               CREC_ERR_UNSUPPORTED, "bad.mlir:3:10", "'memref.load': index 0 is not a constant");
}

Test(lower_errors, host_op_reading_device_memory) {
  expect_error("module {\n  func.func @main(%m: memref<i32>) {\n"
               "    %v = memref.load %m[] : memref<i32>\n    %c1 = arith.constant 1 : i32\n"
               "    %w = arith.addi %v, %c1 : i32\n    return\n  }\n}\n",
               CREC_ERR_MLIR, "bad.mlir:5:10",
               "'arith.addi': reads a value loaded from device memory (the memref.load at bad.mlir:3:10)");
  expect_error(HEAD "  gpu.module @k { gpu.func @f(%n: i32) kernel { gpu.return } }\n"
               "  func.func @main(%m: memref<i32>) {\n    %c1 = arith.constant 1 : index\n"
               "    %v = memref.load %m[] : memref<i32>\n"
               "    gpu.launch_func @k::@f blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%v : i32)\n"
               "    return\n  }\n}\n",
               CREC_ERR_MLIR, "bad.mlir:6:5", "'gpu.launch_func': reads a value loaded from device memory");
  expect_error("module {\n  func.func @main(%m: memref<i32>, %d: memref<64xi32>) {\n"
               "    %v = memref.load %m[] : memref<i32>\n    %i = arith.index_cast %v : i32 to index\n"
               "    %s = memref.subview %d[0] [%i] [1] : memref<64xi32> to memref<?xi32, strided<[1]>>\n    return\n  }\n}\n",
               CREC_ERR_MLIR, "bad.mlir:5:10", "'memref.subview': reads a value loaded from device memory");
}

/* ---- more of what a user gets wrong ---- */

Test(lower_errors, entry_signature) {
  expect_error("module {\n  func.func @main(%a: i32) -> i32 { return %a : i32 }\n}\n", CREC_ERR_UNSUPPORTED,
               "bad.mlir:2:3", "the entry function returns values");
  expect_error("module {\n  func.func @main(%a: i16) { return }\n}\n", CREC_ERR_UNSUPPORTED, "bad.mlir:2:3",
               "argument 0 ('arg0') has type i16; scalar arguments are index, i32, i64, f32 or f64");
  expect_error("module {\n  func.func @main(%a: memref<?x?xf32> {crec.name = \"m\"}) { return }\n}\n",
               CREC_ERR_UNSUPPORTED, "bad.mlir:2:3", "argument 0 ('m') has 2 dynamic dims");
  expect_error("module {\n  func.func @main(%a: memref<*xf32>) { return }\n}\n", CREC_ERR_UNSUPPORTED,
               "bad.mlir:2:3", "unranked memrefs are not supported");
  expect_error("module {\n  func.func @main(%a: memref<4xf32> {crec.memory = \"shared\"}) { return }\n}\n",
               CREC_ERR_MLIR, "bad.mlir:2:3", "crec.memory is 'shared'");
  expect_error("module {\n  func.func @main(%a: memref<4xf32> {crec.name = \"x\"}, %b: memref<4xf32> {crec.name = \"x\"}) "
               "{ return }\n}\n",
               CREC_ERR_DUPLICATE_NAME, "bad.mlir:2:3", "a buffer named 'x' already exists");
  expect_error("module {\n  func.func private @main(%a: i32)\n}\n", CREC_ERR_MLIR, "bad.mlir:2:3",
               "is a declaration without a body");
}

Test(lower_errors, memory_misuse) {
  expect_error("module {\n  func.func @main(%n: index) {\n    %t = memref.alloc(%n) : memref<?xf32>\n    return\n  }\n}\n",
               CREC_ERR_UNSUPPORTED, "bad.mlir:3:10", "a temporary needs a static shape");
  expect_error("module {\n  func.func @main() {\n    %t = memref.alloca() : memref<4xf32>\n    return\n  }\n}\n",
               CREC_ERR_UNSUPPORTED, "bad.mlir:3:10", "stack allocations live on the host");
  expect_error("module {\n  func.func @main(%m: memref<i32>) {\n    %c = arith.constant 1 : i32\n"
               "    memref.store %c, %m[] : memref<i32>\n    return\n  }\n}\n",
               CREC_ERR_UNSUPPORTED, "bad.mlir:4:5", "cannot store to device memory");
  expect_error("module {\n  func.func @main(%d: memref<4xf32>) {\n    %t = memref.alloc() : memref<4xf32>\n"
               "    memref.dealloc %t : memref<4xf32>\n    gpu.memcpy %d, %t : memref<4xf32>, memref<4xf32>\n    return\n  }\n}\n",
               CREC_ERR_MLIR, "bad.mlir:5:5", "uses 'tmp0' after it was deallocated at bad.mlir:4:5");
  expect_error("module {\n  func.func @main(%d: memref<4xf32>) {\n    memref.dealloc %d : memref<4xf32>\n    return\n  }\n}\n",
               CREC_ERR_MLIR, "bad.mlir:3:5", "'arg0' is an argument buffer, not an allocation of the entry");
  expect_error("module {\n  memref.global @g : memref<4xf32> = dense<0.0>\n"
               "  func.func @main() {\n    %g = memref.get_global @g : memref<4xf32>\n    return\n  }\n}\n",
               CREC_ERR_UNSUPPORTED, "bad.mlir:2:3", "only constant globals are supported");
  expect_error("module {\n  func.func @main(%m: memref<8x8xf32>, %d: memref<2x2xf32>) {\n"
               "    %v = memref.subview %m[0, 0] [2, 2] [1, 1] : memref<8x8xf32> to memref<2x2xf32, strided<[8, 1]>>\n"
               "    gpu.memcpy %d, %v : memref<2x2xf32>, memref<2x2xf32, strided<[8, 1]>>\n    return\n  }\n}\n",
               CREC_ERR_UNSUPPORTED, "bad.mlir:4:5", "the source is not contiguous");
  expect_error("module {\n  func.func @main(%d: memref<4xf32>, %v: f32) {\n"
               "    gpu.memset %d, %v : memref<4xf32>, f32\n    return\n  }\n}\n",
               CREC_ERR_UNSUPPORTED, "bad.mlir:3:5", "the fill value must be a constant");
  expect_error("module {\n  func.func @main(%d: memref<4xi64>) {\n    %v = arith.constant 4294967296 : i64\n"
               "    gpu.memset %d, %v : memref<4xi64>, i64\n    return\n  }\n}\n",
               CREC_ERR_UNSUPPORTED, "bad.mlir:4:5", "two 4-byte halves are equal");
}

Test(lower_errors, conditions_crec_cannot_read_on_the_device) {
  expect_error("module {\n  func.func @main(%p: memref<i1>) {\n    %v = memref.load %p[] : memref<i1>\n"
               "    scf.while : () -> () {\n      scf.condition(%v)\n    } do {\n      scf.yield\n    }\n    return\n  }\n}\n",
               CREC_ERR_UNSUPPORTED, "bad.mlir:5:7", "must be loaded inside the 'before' region");
  expect_error("module {\n  func.func @main(%p: memref<i8>) {\n    %z = arith.constant 0 : i8\n"
               "    %v = memref.load %p[] : memref<i8>\n    %b = arith.cmpi ne, %v, %z : i8\n"
               "    gpu.memset %p, %z : memref<i8>, i8\n    scf.if %b {\n    }\n    return\n  }\n}\n",
               CREC_ERR_UNSUPPORTED, "bad.mlir:7:5",
               "the condition loaded at bad.mlir:4:10 is overwritten by 'gpu.memset' at bad.mlir:6:5");
  expect_error("module {\n  func.func @main(%p: memref<i32>) {\n    %z = arith.constant 0 : i32\n"
               "    %v = memref.load %p[] : memref<i32>\n    %b = arith.cmpi eq, %v, %z : i32\n    scf.if %b {\n    }\n"
               "    return\n  }\n}\n",
               CREC_ERR_UNSUPPORTED, "bad.mlir:5:10", "may only be tested with 'arith.cmpi ne, %x, 0'");
  expect_error("module {\n  func.func @main(%a: i32) {\n    %z = arith.constant 0 : i32\n    %b = arith.cmpi ne, %a, %z : i32\n"
               "    scf.if %b {\n    }\n    return\n  }\n}\n",
               CREC_ERR_UNSUPPORTED, "bad.mlir:5:5", "the condition must be a memref.load from device memory");
  expect_error("module {\n  func.func @main(%p: memref<i8>) {\n    %v = memref.load %p[] : memref<i8>\n"
               "    %i = arith.index_cast %v : i8 to index\n    scf.index_switch %i\n    default {\n      scf.yield\n    }\n"
               "    return\n  }\n}\n",
               CREC_ERR_UNSUPPORTED, "bad.mlir:5:5", "the index must be a loaded i32, i64 or index");
  expect_error("module {\n  func.func @main(%p: memref<i32>) {\n    %v = memref.load %p[] : memref<i32>\n"
               "    %i = arith.index_cast %v : i32 to index\n    scf.index_switch %i\n    case 4294967296 {\n      scf.yield\n    }\n"
               "    default {\n      scf.yield\n    }\n    return\n  }\n}\n",
               CREC_ERR_OUT_OF_RANGE, "bad.mlir:5:5", "case value 4294967296 does not fit");
  expect_error("module {\n  func.func @main(%p: memref<i1>) {\n    %v = memref.load %p[] : memref<i1>\n"
               "    %r = scf.if %v -> (i32) {\n      %a = arith.constant 1 : i32\n      scf.yield %a : i32\n    } else {\n"
               "      %b = arith.constant 2 : i32\n      scf.yield %b : i32\n    }\n    return\n  }\n}\n",
               CREC_ERR_UNSUPPORTED, "bad.mlir:4:10", "scf.if with results is not supported");
}

Test(lower_errors, launches) {
  expect_error(HEAD "  gpu.module @k { gpu.func @f() kernel { gpu.return } }\n"
               "  func.func @main() {\n    %c0 = arith.constant 0 : index\n    %c1 = arith.constant 1 : index\n"
               "    gpu.launch_func @k::@f blocks in (%c0, %c1, %c1) threads in (%c1, %c1, %c1)\n    return\n  }\n}\n",
               CREC_ERR_OUT_OF_RANGE, "bad.mlir:6:5", "'gpu.launch_func': grid size x is 0");
  expect_error(HEAD "  gpu.module @k { gpu.func @f() kernel { gpu.return } }\n"
               "  func.func @main() {\n    %c1 = arith.constant 1 : index\n    %c2048 = arith.constant 2048 : index\n"
               "    gpu.launch_func @k::@f blocks in (%c1, %c1, %c1) threads in (%c2048, %c1, %c1)\n    return\n  }\n}\n",
               CREC_ERR_OUT_OF_RANGE, "bad.mlir:6:5", "crec_program_add_launch: argument 'launch.block.x' is 2048");
  expect_error(HEAD "  gpu.module @k { gpu.func @f(%x: i16) kernel { gpu.return } }\n"
               "  func.func @main(%n: i32) {\n    %c1 = arith.constant 1 : index\n    %x = arith.trunci %n : i32 to i16\n"
               "    gpu.launch_func @k::@f blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : i16)\n"
               "    return\n  }\n}\n",
               CREC_ERR_UNSUPPORTED, "bad.mlir:6:5", "the kernel parameter takes 2 bytes");
  expect_error(HEAD "  gpu.module @k {\n    gpu.func @f() kernel {\n      \"foo.bar\"() : () -> ()\n      gpu.return\n    }\n  }\n"
               "  func.func @main() {\n    %c1 = arith.constant 1 : index\n"
               "    gpu.launch_func @k::@f blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)\n    return\n  }\n}\n",
               CREC_ERR_MLIR, "bad.mlir:4:7", "foo.bar");
  expect_error("module {\n  func.func @main() {\n    %c1 = arith.constant 1 : index\n    %c0 = arith.constant 0 : index\n"
               "    %q = arith.divui %c1, %c0 : index\n    return\n  }\n}\n",
               CREC_ERR_MLIR, "bad.mlir:5:10", "'arith.divui': division by zero");
  expect_error(HEAD "  gpu.binary @b [#gpu.object<#rocdl.target<chip = \"gfx90a\">, bin = \"x\">]\n"
               "  func.func @main() {\n    %c1 = arith.constant 1 : index\n"
               "    gpu.launch_func @b::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)\n    return\n  }\n}\n",
               CREC_ERR_NOT_FOUND, "bad.mlir:2:3", "gpu.binary @b has no object usable on sm_90");
}

Test(lower_errors, crec_access_must_fit_the_declaration) {
  crec_lower_options o = CREC_LOWER_OPTIONS_INIT;
  o.filename = "bad.mlir";
  o.base_dir = MLIR_DIR;
  o.entry = "other";
  const char *text = HEAD "  gpu.module @cuda attributes {crec.image = \"kernels.ptx\"} {\n"
                     "    gpu.func @fill(%y: memref<4xf32>, %v: f32, %n: i32) kernel attributes {crec.access = [\"r\", \"w\"]} {\n"
                     "      gpu.return\n    }\n  }\n"
                     "  func.func @other(%y: memref<4xf32>, %v: f32, %n: i32) {\n    %c1 = arith.constant 1 : index\n"
                     "    gpu.launch_func @cuda::@fill blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)\n"
                     "        args(%y : memref<4xf32>, %v : f32, %n : i32)\n    return\n  }\n}\n";
  crec_program *p = NULL;
  EXPECT_STATUS(crec_lower_mlir_string(text, strlen(text), &o, &p), CREC_ERR_MLIR);
  EXPECT_ERROR_MENTIONS("bad.mlir:3:5");
  EXPECT_ERROR_MENTIONS("crec.access has 2 entries; expected one per memref argument (1) or per argument (3)");
  cr_assert_null(p);
}

Test(lower_errors, arguments_and_options) {
  crec_program *p = NULL;
  EXPECT_STATUS(crec_lower_mlir_string(NULL, 0, NULL, &p), CREC_ERR_NULL_POINTER);
  EXPECT_ERROR_MENTIONS("argument 'text' is NULL");
  EXPECT_STATUS(crec_lower_mlir_string("module {}", 9, NULL, NULL), CREC_ERR_NULL_POINTER);
  EXPECT_STATUS(crec_lower_mlir_file(NULL, NULL, &p), CREC_ERR_NULL_POINTER);
  EXPECT_STATUS(crec_lower_mlir_file(MLIR_DIR "no-such.mlir", NULL, &p), CREC_ERR_IO);
  EXPECT_ERROR_MENTIONS("no-such.mlir: cannot open: No such file or directory");
  cr_assert_null(p);
  crec_lower_options o = CREC_LOWER_OPTIONS_INIT;
  o.chip = "gfx90a";
  EXPECT_STATUS(crec_lower_mlir_string("module {}", 9, &o, &p), CREC_ERR_INVALID_ARGUMENT);
  EXPECT_ERROR_MENTIONS("chip 'gfx90a' is not of the form sm_NN");
  o.chip = NULL;
  o.struct_size = 8;
  EXPECT_STATUS(crec_lower_mlir_string("module {}", 9, &o, &p), CREC_ERR_INVALID_ARGUMENT);
  EXPECT_ERROR_MENTIONS("struct_size 8 is smaller than");
  /* a chip LLVM 19 cannot compile for is refused where a kernel needs compiling */
  o.struct_size = sizeof o;
  o.chip = "sm_100";
  EXPECT_STATUS(crec_lower_mlir_file(MLIR_DIR "saxpy.mlir", &o, &p), CREC_ERR_UNSUPPORTED);
  EXPECT_ERROR_MENTIONS("saxpy.mlir:4:3: 'gpu.module': LLVM 19 cannot compile for sm_100");
  EXPECT_OK(crec_lower_mlir_file(MLIR_DIR "copies.mlir", &o, &p)); /* nothing to compile */
  crec_program_destroy(p);
  o.chip = NULL;
  crec_lower_cache_stats st = {0};
  EXPECT_STATUS(crec_lower_cache_get_stats(&st), CREC_ERR_INVALID_ARGUMENT);
  EXPECT_STATUS(crec_lower_cache_get_stats(NULL), CREC_ERR_NULL_POINTER);
  /* a text that is not NUL-terminated is read up to its length */
  const char text[] = "module {\n  func.func @main() { return }\n}\nGARBAGE";
  EXPECT_OK(crec_lower_mlir_string(text, sizeof text - 1 - 7, NULL, &p));
  crec_program_destroy(p);
}

Test(lower_errors, allocation_failures_unwind_cleanly) {
  /* every host allocation of a lowering fails in turn: a clean status, no leak, no crash */
  char path[] = MLIR_DIR "control.mlir";
  crec_program *p = NULL;
  EXPECT_OK(crec_lower_mlir_file(path, NULL, &p)); /* warm the kernel cache: compilation is not crec's allocation */
  crec_program_destroy(p);
  int64_t live = crec_debug_live_objects();
  crec_debug_fail_after(CREC_FAULT_ALLOC, 0);
  uint64_t total;
  {
    crec_debug_fail_after(CREC_FAULT_ALLOC, UINT64_MAX);
    EXPECT_OK(crec_lower_mlir_file(path, NULL, &p));
    total = crec_debug_count(CREC_FAULT_ALLOC);
    crec_debug_fail_after(CREC_FAULT_ALLOC, 0);
    crec_program_destroy(p);
  }
  cr_assert_gt(total, 50);
  for (uint64_t n = 1; n <= total; n++) {
    p = NULL;
    crec_debug_fail_after(CREC_FAULT_ALLOC, n);
    crec_status s = crec_lower_mlir_file(path, NULL, &p);
    crec_debug_fail_after(CREC_FAULT_ALLOC, 0);
    if (s == CREC_OK) {
      crec_program_destroy(p);
      continue;
    }
    cr_assert_null(p);
    cr_assert(s == CREC_ERR_OUT_OF_MEMORY, "allocation %llu: %s: %s", (unsigned long long)n, crec_status_name(s),
              crec_last_error());
    cr_assert_eq(crec_debug_live_objects(), live, "allocation %llu: a failed lowering leaks", (unsigned long long)n);
  }
}
