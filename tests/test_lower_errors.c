/* Bad input to the MLIR front end: each case fails with a specific status and
 * a one-line message carrying "file:line:col", the op and the reason; nothing
 * is returned and nothing leaks. */
#include <stdio.h>
#include <string.h>

#include "common.h"

TestSuite(lower_errors, .init = crec_test_require_mlir);

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
  expect_error("module {\n  func.func @main(%n: index) {\n    %c0 = arith.constant 0 : index\n"
               "    scf.for %i = %c0 to %c0 step %n {\n    }\n    return\n  }\n}\n",
               CREC_ERR_UNSUPPORTED, "bad.mlir:4:5",
               "'scf.for': scf.for in the entry function is not lowered yet with a trip count unknown at lowering: "
               "its step is computed when the program runs");
  expect_error("module {\n  func.func @main() {\n    %t = tensor.empty() : tensor<4xf32>\n    return\n  }\n}\n",
               CREC_ERR_UNSUPPORTED, "bad.mlir:3:10", "'tensor.empty': unsupported op in the entry function");
  expect_error("module {\n  func.func @main(%a: f32) {\n    %b = math.sqrt %a : f32\n    return\n  }\n}\n",
               CREC_ERR_UNSUPPORTED, "bad.mlir:3:10", "'math.sqrt'");
  /* only crec.* ops may be unregistered: MLIR itself would refuse the others */
  expect_error("module {\n  func.func @main() {\n    \"other.op\"() : () -> ()\n    return\n  }\n}\n",
               CREC_ERR_MLIR, "bad.mlir:3:5",
               "'other.op': unregistered operation: the dialect 'other' is not known to MLIR (only crec.* ops may be "
               "written without a registered dialect)");
  expect_error("module {\n  func.func @main() {\n    \"crec.gemmm\"() : () -> ()\n    return\n  }\n}\n",
               CREC_ERR_UNSUPPORTED, "bad.mlir:3:5", "'crec.gemmm': unknown crec op (crec lowers crec.barrier, crec.gemm");
  expect_error("module {\n  func.func @main(%a: memref<4x4xf32>) {\n"
               "    linalg.matmul_transpose_b ins(%a, %a : memref<4x4xf32>, memref<4x4xf32>) outs(%a : memref<4x4xf32>)\n"
               "    return\n  }\n}\n",
               CREC_ERR_UNSUPPORTED, "bad.mlir:3:5",
               "'linalg.matmul_transpose_b': crec lowers linalg.matmul, linalg.batch_matmul, linalg.fill, linalg.copy and the "
               "convolutions linalg.conv_{1,2,3}d,");
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
  expect_error("module {\n  func.func @main(%m: memref<?xi32>) {\n    %c = arith.constant 1 : i32\n"
               "    %i = arith.constant 0 : index\n    memref.store %c, %m[%i] : memref<?xi32>\n    return\n  }\n}\n",
               CREC_ERR_UNSUPPORTED, "bad.mlir:5:5", "host code touches 'arg0', a dynamic-size argument");
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

/* Fails every host allocation of lowering `name` in turn: a clean status, no leak, no crash. */
static void allocation_failures(const char *name) {
  char path[1024];
  snprintf(path, sizeof path, "%s%s", MLIR_DIR, name);
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
    cr_assert(s == CREC_ERR_OUT_OF_MEMORY, "%s, allocation %llu: %s: %s", name, (unsigned long long)n,
              crec_status_name(s), crec_last_error());
    cr_assert_eq(crec_debug_live_objects(), live, "%s, allocation %llu: a failed lowering leaks", name,
                 (unsigned long long)n);
  }
}

Test(lower_errors, allocation_failures_unwind_cleanly) { allocation_failures("control.mlir"); }

Test(lower_errors, allocation_failures_in_library_ops_unwind_cleanly) {
  allocation_failures("gemm.mlir");
  allocation_failures("collectives.mlir");
  allocation_failures("custom.mlir");
}

/* ---- library ops (linalg.matmul, crec.gemm, collectives, custom calls) ---- */

/* An entry taking `args` whose body starts on line 3, column 5. */
#define MAIN(args, body) "module {\n  func.func @main(" args ") {\n" body "    return\n  }\n}\n"
#define T4x8 "memref<4x8xf32>"
#define T8x3 "memref<8x3xf32>"
#define T4x3 "memref<4x3xf32>"
#define GEMM_ARGS "%a: " T4x8 ", %b: " T8x3 ", %d: " T4x3
#define GEMM_TYPES "(" T4x8 ", " T8x3 ", " T4x3

Test(lower_errors, gemm_shapes_types_and_layouts) {
  /* linalg's own verifier catches static shape mismatches */
  expect_error(MAIN("%a: " T4x8 ", %b: memref<9x3xf32>, %d: " T4x3,
                    "    linalg.matmul ins(%a, %b : " T4x8 ", memref<9x3xf32>) outs(%d : " T4x3 ")\n"),
               CREC_ERR_MLIR, "bad.mlir:3:5", "'linalg.matmul' op inferred input/output operand #1 has shape's dimension #0 to be 8, but found 9");
  /* crec.gemm's are the builder's */
  expect_error(MAIN("%a: " T4x8 ", %b: memref<9x3xf32>, %d: " T4x3,
                    "    \"crec.gemm\"(%a, %b, %d) : (" T4x8 ", memref<9x3xf32>, " T4x3 ") -> ()\n"),
               CREC_ERR_INVALID_ARGUMENT, "bad.mlir:3:5",
               "'crec.gemm': crec_program_add_gemm: gemm 'gemm': shape mismatch: op(A) is 4x8 but op(B) is 9x3");
  expect_error(MAIN(GEMM_ARGS ", %bias: memref<4xf32>",
                    "    \"crec.gemm\"(%a, %b, %d, %bias) {epilogue = \"bias\"} : " GEMM_TYPES ", memref<4xf32>) -> ()\n"),
               CREC_ERR_INVALID_ARGUMENT, "bad.mlir:3:5", "shape mismatch: the bias has 4 elements but d has 3 columns");
  expect_error(MAIN("%a: memref<2x4x8xf32>, %b: memref<3x8x3xf32>, %d: memref<2x4x3xf32>",
                    "    \"crec.gemm\"(%a, %b, %d) : (memref<2x4x8xf32>, memref<3x8x3xf32>, memref<2x4x3xf32>) -> ()\n"),
               CREC_ERR_INVALID_ARGUMENT, "bad.mlir:3:5", "shape mismatch: 'b' holds a batch of 3 matrices but 'a' 2");
  expect_error(MAIN("%a: memref<2x4x8xf32>, %b: " T8x3 ", %d: memref<2x4x3xf32>",
                    "    \"crec.gemm\"(%a, %b, %d) : (memref<2x4x8xf32>, " T8x3 ", memref<2x4x3xf32>) -> ()\n"),
               CREC_ERR_INVALID_ARGUMENT, "bad.mlir:3:5", "shape mismatch: 'b' has rank 2 but 'a' rank 3");
  expect_error(MAIN("%a: memref<8xf32>, %b: " T8x3 ", %d: " T4x3,
                    "    \"crec.gemm\"(%a, %b, %d) : (memref<8xf32>, " T8x3 ", " T4x3 ") -> ()\n"),
               CREC_ERR_MLIR, "bad.mlir:3:5", "'a' has rank 1; a GEMM operand is a matrix (rank 2) or a batch");
  /* element types */
  expect_error(MAIN("%a: memref<4x8xf32>, %b: memref<8x3xf32>, %d: memref<4x3xf16>",
                    "    linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x3xf32>) outs(%d : memref<4x3xf16>)\n"),
               CREC_ERR_UNSUPPORTED, "bad.mlir:3:5",
               "mixed element types (A f32, B f32, C f16): crec's GEMM reads A and B of one type, and writes C of "
               "that type, or f32 from f16 or bf16");
  expect_error(MAIN("%a: memref<4x8xf16>, %b: memref<8x3xbf16>, %d: " T4x3,
                    "    linalg.matmul ins(%a, %b : memref<4x8xf16>, memref<8x3xbf16>) outs(%d : " T4x3 ")\n"),
               CREC_ERR_UNSUPPORTED, "bad.mlir:3:5", "mixed element types (A f16, B bf16, C f32)");
  expect_error(MAIN("%a: memref<4x8xi32>, %b: memref<8x3xi32>, %d: memref<4x3xi32>",
                    "    linalg.matmul ins(%a, %b : memref<4x8xi32>, memref<8x3xi32>) outs(%d : memref<4x3xi32>)\n"),
               CREC_ERR_UNSUPPORTED, "bad.mlir:3:5", "A has i32 elements; a GEMM takes f32, f16 or bf16");
  /* layouts: column-major, overlapping rows, a broadcast batch, dynamic sizes */
  expect_error(MAIN("%a: memref<4x8xf32, strided<[1, 4]>>, %b: " T8x3 ", %d: " T4x3,
                    "    linalg.matmul ins(%a, %b : memref<4x8xf32, strided<[1, 4]>>, " T8x3 ") outs(%d : " T4x3 ")\n"),
               CREC_ERR_UNSUPPORTED, "bad.mlir:3:5",
               "'linalg.matmul': non-identity layout: A has strides [1, 4]; its innermost stride must be 1 (row-major)");
  expect_error(MAIN("%m: memref<64xf32>, %b: " T8x3 ", %d: " T4x3,
                    "    %a = memref.reinterpret_cast %m to offset: [0], sizes: [4, 8], strides: [4, 1]\n"
                    "        : memref<64xf32> to memref<4x8xf32, strided<[4, 1]>>\n"
                    "    linalg.matmul ins(%a, %b : memref<4x8xf32, strided<[4, 1]>>, " T8x3 ") outs(%d : " T4x3 ")\n"),
               CREC_ERR_UNSUPPORTED, "bad.mlir:5:5",
               "non-identity layout: A has strides [4, 1]; its row stride must be at least its number of columns");
  expect_error(MAIN("%m: memref<64xf32>, %b: memref<2x8x3xf32>, %d: memref<2x4x3xf32>",
                    "    %a = memref.reinterpret_cast %m to offset: [32], sizes: [2, 4, 8], strides: [-32, 8, 1]\n"
                    "        : memref<64xf32> to memref<2x4x8xf32, strided<[-32, 8, 1], offset: 32>>\n"
                    "    linalg.batch_matmul ins(%a, %b : memref<2x4x8xf32, strided<[-32, 8, 1], offset: 32>>,\n"
                    "                                     memref<2x8x3xf32>) outs(%d : memref<2x4x3xf32>)\n"),
               CREC_ERR_UNSUPPORTED, "bad.mlir:5:5", "A has strides [-32, 8, 1]; its batch stride must be positive");
  expect_error(MAIN("%a: memref<?x8xf32>, %b: " T8x3 ", %d: memref<?x3xf32>",
                    "    linalg.matmul ins(%a, %b : memref<?x8xf32>, " T8x3 ") outs(%d : memref<?x3xf32>)\n"),
               CREC_ERR_UNSUPPORTED, "bad.mlir:3:5", "A has a dynamic size; a GEMM needs static shapes and strides");
  expect_error(MAIN(GEMM_ARGS ", %n: i32",
                    "    \"crec.gemm\"(%a, %b, %n) : (" T4x8 ", " T8x3 ", i32) -> ()\n"),
               CREC_ERR_UNSUPPORTED, "bad.mlir:3:5", "'d' has type i32; it must be a memref");
  expect_error(MAIN(GEMM_ARGS,
                    "    %t = memref.alloc() : " T4x3 "\n    memref.dealloc %t : " T4x3 "\n"
                    "    \"crec.gemm\"(%a, %b, %t) : " GEMM_TYPES ") -> ()\n"),
               CREC_ERR_MLIR, "bad.mlir:5:5", "uses 'tmp0' after it was deallocated at bad.mlir:4:5");
}

Test(lower_errors, crec_gemm_attributes_and_operand_counts) {
  expect_error(MAIN(GEMM_ARGS, "    \"crec.gemm\"(%a, %b, %d) {tranpose_a} : " GEMM_TYPES ") -> ()\n"), CREC_ERR_MLIR,
               "bad.mlir:3:5",
               "'crec.gemm': unknown attribute 'tranpose_a' (it takes transpose_a, transpose_b, alpha, beta, has_c, "
               "epilogue, workspace_bytes, crec.name)");
  expect_error(MAIN(GEMM_ARGS, "    \"crec.gemm\"(%a, %b, %d) {epilogue = \"gelu\"} : " GEMM_TYPES ") -> ()\n"),
               CREC_ERR_MLIR, "bad.mlir:3:5", "unknown epilogue 'gelu' (none, bias, relu or bias_relu)");
  expect_error(MAIN(GEMM_ARGS, "    \"crec.gemm\"(%a, %b, %d) {epilogue = \"bias_relu\"} : " GEMM_TYPES ") -> ()\n"),
               CREC_ERR_MLIR, "bad.mlir:3:5", "takes 4 operands with these attributes (a, b, d, bias (the epilogue)), but has 3");
  expect_error(MAIN(GEMM_ARGS, "    \"crec.gemm\"(%a, %b, %d, %d) : " GEMM_TYPES ", " T4x3 ") -> ()\n"), CREC_ERR_MLIR,
               "bad.mlir:3:5", "takes 3 operands with these attributes (a, b, d), but has 4");
  expect_error(MAIN(GEMM_ARGS, "    \"crec.gemm\"(%a, %b, %d) {transpose_a = 1 : i32} : " GEMM_TYPES ") -> ()\n"),
               CREC_ERR_MLIR, "bad.mlir:3:5", "transpose_a must be a unit attribute (written 'transpose_a' alone) or a bool");
  expect_error(MAIN(GEMM_ARGS, "    \"crec.gemm\"(%a, %b, %d) {alpha = \"two\"} : " GEMM_TYPES ") -> ()\n"), CREC_ERR_MLIR,
               "bad.mlir:3:5", "alpha must be a number, like 'alpha = 2.0 : f64'");
  expect_error(MAIN(GEMM_ARGS, "    \"crec.gemm\"(%a, %b, %d) {workspace_bytes = -1 : i64} : " GEMM_TYPES ") -> ()\n"),
               CREC_ERR_MLIR, "bad.mlir:3:5", "workspace_bytes is -1");
  expect_error(MAIN(GEMM_ARGS, "    %r = \"crec.gemm\"(%a, %b, %d) : " GEMM_TYPES ") -> i32\n"), CREC_ERR_MLIR,
               "bad.mlir:3:10", "takes no results or regions");
}

#define V8 "memref<8xf32>"
#define COLL(op, attrs) "    \"crec." op "\"(%x, %y) " attrs " : (" V8 ", " V8 ") -> ()\n"

Test(lower_errors, collective_attributes) {
  expect_error(MAIN("%x: " V8 ", %y: " V8, COLL("all_reduce", "{reduction = \"avg\", num_ranks = 1 : i64}")),
               CREC_ERR_MLIR, "bad.mlir:3:5", "'crec.all_reduce': unknown reduction 'avg' (sum, prod, min or max)");
  expect_error(MAIN("%x: " V8 ", %y: " V8, COLL("reduce_scatter", "{num_ranks = 1 : i64}")), CREC_ERR_MLIR,
               "bad.mlir:3:5", "needs a reduction: reduction = \"sum\", \"prod\", \"min\" or \"max\"");
  expect_error(MAIN("%x: " V8 ", %y: " V8, COLL("all_gather", "{reduction = \"sum\", num_ranks = 1 : i64}")),
               CREC_ERR_MLIR, "bad.mlir:3:5",
               "unknown attribute 'reduction' (it takes communicator, num_ranks, replica_groups, async_id, crec.name)");
  expect_error(MAIN("%x: " V8 ", %y: " V8, COLL("all_reduce", "{reduction = \"sum\"}")), CREC_ERR_MLIR, "bad.mlir:3:5",
               "communicator 'world' appears here first: give its size with num_ranks = N : i64");
  expect_error(MAIN("%x: " V8 ", %y: " V8,
                    COLL("all_reduce", "{reduction = \"sum\", num_ranks = 2 : i64}")
                    COLL("all_reduce", "{reduction = \"max\", num_ranks = 4 : i64}")),
               CREC_ERR_MLIR, "bad.mlir:4:5",
               "num_ranks is 4, but communicator 'world' has 2 ranks (num_ranks at bad.mlir:3:5)");
  expect_error(MAIN("%x: " V8 ", %y: " V8, COLL("all_reduce", "{reduction = \"sum\", num_ranks = 0 : i64}")),
               CREC_ERR_MLIR, "bad.mlir:3:5", "num_ranks is 0; a communicator has 1 to 65536 ranks");
  expect_error(MAIN("%x: " V8 ", %y: memref<8xi32>",
                    "    \"crec.all_to_all\"(%x, %y) {num_ranks = 1 : i64} : (" V8 ", memref<8xi32>) -> ()\n"),
               CREC_ERR_MLIR, "bad.mlir:3:5", "send has f32 elements but recv i32");
  expect_error(MAIN("%x: " V8, "    \"crec.all_reduce\"(%x) {reduction = \"sum\", num_ranks = 1 : i64} : (" V8 ") -> ()\n"),
               CREC_ERR_MLIR, "bad.mlir:3:5", "takes two memref operands, send and recv, but has 1");
  expect_error(MAIN("%x: memref<4x4xf32>, %y: " V8,
                    "    %s = memref.subview %x[0, 0] [2, 4] [2, 1] : memref<4x4xf32> to memref<2x4xf32, strided<[8, 1]>>\n"
                    "    \"crec.all_gather\"(%s, %y) {num_ranks = 1 : i64} : (memref<2x4xf32, strided<[8, 1]>>, " V8 ") -> ()\n"),
               CREC_ERR_UNSUPPORTED, "bad.mlir:4:5", "send is not a dense memref; collectives move dense byte ranges");
  /* the builder's shape check */
  expect_error(MAIN("%x: " V8 ", %y: memref<12xf32>",
                    "    \"crec.all_gather\"(%x, %y) {num_ranks = 1 : i64} : (" V8 ", memref<12xf32>) -> ()\n"),
               CREC_ERR_INVALID_ARGUMENT, "bad.mlir:3:5", "shape mismatch: send holds 8 and recv 12 f32 elements");
}

Test(lower_errors, collective_groups_and_pairs) {
  expect_error(MAIN("%x: " V8 ", %y: " V8,
                    COLL("all_reduce", "{reduction = \"sum\", num_ranks = 2 : i64, replica_groups = dense<[0, 1]> : tensor<2xi64>}")),
               CREC_ERR_MLIR, "bad.mlir:3:5",
               "replica_groups must be a table of ranks like dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>");
  expect_error(MAIN("%x: " V8 ", %y: " V8,
                    COLL("all_reduce", "{reduction = \"sum\", num_ranks = 2 : i64, replica_groups = [[0, 1]]}")),
               CREC_ERR_MLIR, "bad.mlir:3:5", "replica_groups must be a table of ranks");
  expect_error(MAIN("%x: " V8 ", %y: " V8,
                    COLL("all_reduce", "{reduction = \"sum\", num_ranks = 2 : i64, replica_groups = dense<[[0, 0]]> : tensor<1x2xi64>}")),
               CREC_ERR_INVALID_ARGUMENT, "bad.mlir:3:5", "rank 0 is in more than one group");
  expect_error(MAIN("%x: " V8 ", %y: " V8,
                    COLL("all_reduce", "{reduction = \"sum\", num_ranks = 2 : i64, replica_groups = dense<[[0, 2]]> : tensor<1x2xi64>}")),
               CREC_ERR_INVALID_ARGUMENT, "bad.mlir:3:5", "group 0 names rank 2, outside communicator 'world' of 2 ranks");
  expect_error(MAIN("%x: " V8 ", %y: " V8,
                    COLL("all_reduce", "{reduction = \"sum\", num_ranks = 4 : i64, replica_groups = dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>}")),
               CREC_ERR_UNSUPPORTED, "bad.mlir:3:5", "groups of 2 out of 4 ranks need NCCL sub-communicators");
  expect_error(MAIN("%x: " V8 ", %y: " V8,
                    COLL("all_reduce", "{reduction = \"sum\", num_ranks = 2 : i64, replica_groups = dense<[[0, 4294967296]]> : tensor<1x2xi64>}")),
               CREC_ERR_MLIR, "bad.mlir:3:5", "replica_groups: rank 4294967296 (row 0) does not fit 32 bits");
  expect_error(MAIN("%x: " V8 ", %y: " V8, COLL("collective_permute", "{num_ranks = 2 : i64}")), CREC_ERR_MLIR,
               "bad.mlir:3:5", "needs source_target_pairs = dense<[[source, target], ...]> : tensor<Px2xi64>");
  expect_error(MAIN("%x: " V8 ", %y: " V8,
                    COLL("collective_permute", "{num_ranks = 2 : i64, source_target_pairs = dense<[[0, 1, 1]]> : tensor<1x3xi64>}")),
               CREC_ERR_MLIR, "bad.mlir:3:5", "source_target_pairs must be a table of ranks like dense<[[0, 1], [1, 0]]>");
  expect_error(MAIN("%x: " V8 ", %y: " V8,
                    COLL("collective_permute", "{num_ranks = 2 : i64, source_target_pairs = dense<[[0, 1], [1, 1]]> : tensor<2x2xi64>}")),
               CREC_ERR_INVALID_ARGUMENT, "bad.mlir:3:5", "rank 1 is the target of pairs 0 and 1");
  expect_error(MAIN("%x: " V8 ", %y: " V8,
                    COLL("collective_permute", "{num_ranks = 2 : i64, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>}")),
               CREC_ERR_MLIR, "bad.mlir:3:5", "unknown attribute 'replica_groups'");
}

Test(lower_errors, async_starts_and_dones_must_pair_up) {
  expect_error(MAIN("", "    \"crec.collective_done\"() {async_id = \"x\"} : () -> ()\n"), CREC_ERR_MLIR, "bad.mlir:3:5",
               "'crec.collective_done': no collective with async_id 'x' was started before it");
  expect_error(MAIN("%x: " V8 ", %y: " V8,
                    COLL("all_reduce", "{reduction = \"sum\", num_ranks = 1 : i64, async_id = \"x\"}")),
               CREC_ERR_MLIR, "bad.mlir:3:5",
               "'crec.all_reduce': the async collective started here (async_id 'x') has no \"crec.collective_done\"");
  expect_error(MAIN("%x: " V8 ", %y: " V8 ", %z: " V8,
                    COLL("all_reduce", "{reduction = \"sum\", num_ranks = 1 : i64, async_id = \"x\"}")
                    "    \"crec.all_gather\"(%x, %z) {async_id = \"x\"} : (" V8 ", " V8 ") -> ()\n"),
               CREC_ERR_MLIR, "bad.mlir:4:5", "async_id 'x' is still in flight (started at bad.mlir:3:5, not yet done)");
  expect_error(MAIN("%x: " V8 ", %y: " V8,
                    COLL("all_reduce", "{reduction = \"sum\", num_ranks = 1 : i64, async_id = \"x\"}")
                    "    \"crec.collective_done\"() {async_id = \"x\"} : () -> ()\n"
                    "    \"crec.collective_done\"() {async_id = \"x\"} : () -> ()\n"),
               CREC_ERR_MLIR, "bad.mlir:5:5", "the collective with async_id 'x' (started at bad.mlir:3:5) is already done");
  expect_error(MAIN("", "    \"crec.collective_done\"() : () -> ()\n"), CREC_ERR_MLIR, "bad.mlir:3:5",
               "needs the async_id of the collective it finishes");
  /* a done in another region than its start: the builder's rule */
  expect_error(MAIN("%x: " V8 ", %y: " V8 ", %p: memref<i1>",
                    COLL("all_reduce", "{reduction = \"sum\", num_ranks = 1 : i64, async_id = \"x\"}")
                    "    %c = memref.load %p[] : memref<i1>\n"
                    "    scf.if %c {\n      \"crec.collective_done\"() {async_id = \"x\"} : () -> ()\n    }\n"),
               CREC_ERR_INVALID_ARGUMENT, "bad.mlir:6:7", "must be in the region of its start");
}

#define CC_TYPES "(" V8 ", " V8 ") -> ()\n"

Test(lower_errors, custom_call_operands_and_attributes) {
  expect_error(MAIN("%x: " V8 ", %y: " V8, "    \"crec.custom_call\"(%x, %y) : " CC_TYPES), CREC_ERR_MLIR, "bad.mlir:3:5",
               "'crec.custom_call': needs target = \"name\"");
  expect_error(MAIN("%x: " V8 ", %y: " V8, "    \"crec.custom_call\"(%x, %y) {target = 7 : i64} : " CC_TYPES),
               CREC_ERR_MLIR, "bad.mlir:3:5", "target must be a string");
  expect_error(MAIN("%x: " V8 ", %y: " V8,
                    "    \"crec.custom_call\"(%x, %y) {target = \"t\", holes = array<i64: 3>} : " CC_TYPES),
               CREC_ERR_MLIR, "bad.mlir:3:5", "holes: slot 3 is not one of the 3 operand slots (2 operands and 1 holes)");
  expect_error(MAIN("%x: " V8 ", %y: " V8,
                    "    \"crec.custom_call\"(%x, %y) {target = \"t\", holes = array<i64: 1, 1>} : " CC_TYPES),
               CREC_ERR_MLIR, "bad.mlir:3:5", "holes: slot 1 is listed twice");
  expect_error(MAIN("%x: " V8 ", %y: " V8,
                    "    \"crec.custom_call\"(%x, %y) {target = \"t\", holes = [1]} : " CC_TYPES),
               CREC_ERR_MLIR, "bad.mlir:3:5", "holes must be an array of operand slots, like array<i64: 1, 3>");
  expect_error(MAIN("%x: " V8 ", %y: " V8,
                    "    \"crec.custom_call\"(%x, %y) {target = \"t\", access = [\"r\"]} : " CC_TYPES),
               CREC_ERR_MLIR, "bad.mlir:3:5", "access must be an array of one \"r\", \"w\" or \"rw\" per operand (2)");
  expect_error(MAIN("%x: " V8 ", %y: " V8,
                    "    \"crec.custom_call\"(%x, %y) {target = \"t\", access = [\"r\", \"x\"]} : " CC_TYPES),
               CREC_ERR_MLIR, "bad.mlir:3:5", "access entry 1 is not \"r\", \"w\" or \"rw\"");
  expect_error(MAIN("%x: " V8 ", %n: i32", "    \"crec.custom_call\"(%x, %n) {target = \"t\"} : (" V8 ", i32) -> ()\n"),
               CREC_ERR_UNSUPPORTED, "bad.mlir:3:5", "operand 1 has type i32; it must be a memref");
  expect_error(MAIN("%x: " V8 ", %y: " V8,
                    "    \"crec.custom_call\"(%x, %y) {target = \"t\", kernels = [@k]} : " CC_TYPES),
               CREC_ERR_MLIR, "bad.mlir:3:5", "expected a kernel reference @module::@kernel");
  expect_error(MAIN("%x: " V8 ", %y: " V8,
                    "    \"crec.custom_call\"(%x, %y) {target = \"t\", kernels = @m::@k} : " CC_TYPES),
               CREC_ERR_MLIR, "bad.mlir:3:5", "kernels must be an array of kernel references, like [@module::@kernel]");
  expect_error(MAIN("%x: " V8 ", %y: " V8,
                    "    \"crec.custom_call\"(%x, %y) {target = \"t\", kernels = [@m::@k]} : " CC_TYPES),
               CREC_ERR_NOT_FOUND, "bad.mlir:3:5", "kernel module @m is not a gpu.module or gpu.binary of the module");
  /* a constant written by the handler: the builder's rule */
  expect_error("module {\n  memref.global \"private\" constant @c : " V8 " = dense<1.0>\n"
               "  func.func @main(%x: " V8 ") {\n    %g = memref.get_global @c : " V8 "\n"
               "    \"crec.custom_call\"(%g) {target = \"t\"} : (" V8 ") -> ()\n    return\n  }\n}\n",
               CREC_ERR_INVALID_ARGUMENT, "bad.mlir:5:5", "constant");
}

Test(lower_errors, a_library_op_overwriting_a_loaded_condition) {
  expect_error(MAIN("%p: memref<i32>, %x: memref<1xi32>",
                    "    %z = arith.constant 0 : i32\n    %v = memref.load %p[] : memref<i32>\n"
                    "    %b = arith.cmpi ne, %v, %z : i32\n"
                    "    %q = memref.reinterpret_cast %p to offset: [0], sizes: [1], strides: [1] : memref<i32> to memref<1xi32>\n"
                    "    \"crec.all_reduce\"(%x, %q) {reduction = \"sum\", num_ranks = 1 : i64} : (memref<1xi32>, memref<1xi32>) -> ()\n"
                    "    scf.if %b {\n    }\n"),
               CREC_ERR_UNSUPPORTED, "bad.mlir:8:5",
               "the condition loaded at bad.mlir:4:10 is overwritten by 'crec.all_reduce' at bad.mlir:7:5");
}

/* A library op's workspace is a buffer of the program the front end did not
 * make: a condition in a temporary made after it is still watched. */
Test(lower_errors, a_condition_in_a_temporary_after_a_library_workspace_is_watched) {
  expect_error(MAIN("%s: memref<4xcomplex<f32>>, %t: memref<4xcomplex<f32>>",
                    "    \"crec.fft\"(%s, %t) {fft_type = \"FFT\", fft_length = [4]} : (memref<4xcomplex<f32>>, "
                    "memref<4xcomplex<f32>>) -> ()\n"
                    "    %p = memref.alloc() : memref<i8>\n    %z = arith.constant 0 : i8\n"
                    "    gpu.memset %p, %z : memref<i8>, i8\n"
                    "    %v = memref.load %p[] : memref<i8>\n    %b = arith.cmpi ne, %v, %z : i8\n"
                    "    gpu.memset %p, %z : memref<i8>, i8\n    scf.if %b {\n    }\n"),
               CREC_ERR_UNSUPPORTED, "bad.mlir:10:5",
               "the condition loaded at bad.mlir:7:10 is overwritten by 'gpu.memset' at bad.mlir:9:5");
}

/* Sizes, strides and offsets past 2^60 are refused where they appear: their
 * products and sums overflowed int64_t (undefined behaviour; UBSan aborts). */
Test(lower_errors, sizes_strides_and_offsets_past_2_60) {
  static const char within[] = "sizes, strides and offset within 2^60 bytes";
  expect_error("module {\n  func.func @main(%x: memref<4294967296x4294967296xf32>) {\n    return\n  }\n}\n",
               CREC_ERR_UNSUPPORTED, "bad.mlir:2:3", within);
  expect_error("module {\n  func.func @main(%x: memref<4xf32, strided<[9223372036854775807], offset: 9223372036854775807>>) {\n"
               "    return\n  }\n}\n",
               CREC_ERR_UNSUPPORTED, "bad.mlir:2:3", within);
  /* the lanes of a vector element multiply too */
  expect_error("module {\n  func.func @main(%x: memref<4xvector<4294967297xi8>>) {\n    return\n  }\n}\n",
               CREC_ERR_UNSUPPORTED, "bad.mlir:2:3", "memrefs need int, index or float elements");
  expect_error("module {\n  func.func @main() {\n    %t = memref.alloc() : memref<4294967296x4294967296xf32>\n"
               "    return\n  }\n}\n",
               CREC_ERR_UNSUPPORTED, "bad.mlir:3:10", within);
  expect_error("module {\n  memref.global \"private\" constant @g : memref<4294967296x4294967296xi8> = dense<0>\n"
               "  func.func @main() {\n    %g = memref.get_global @g : memref<4294967296x4294967296xi8>\n"
               "    return\n  }\n}\n",
               CREC_ERR_UNSUPPORTED, "bad.mlir:2:3", "within 2^60 bytes");
  /* views: offsets and strides from the op's constants */
  expect_error("module {\n  func.func @main(%x: memref<16xf32>) {\n    %c = arith.constant 0.0 : f32\n"
               "    %v = memref.subview %x[4611686018427387904] [1] [4611686018427387904] : memref<16xf32> to "
               "memref<1xf32, strided<[4611686018427387904], offset: 4611686018427387904>>\n"
               "    gpu.memset %v, %c : memref<1xf32, strided<[4611686018427387904], offset: 4611686018427387904>>, f32\n"
               "    return\n  }\n}\n",
               CREC_ERR_OUT_OF_RANGE, "bad.mlir:4:10", "exceed 2^60 elements or bytes");
  expect_error("module {\n  func.func @main(%x: memref<64xi8>) {\n    %c = arith.constant 0 : i8\n"
               "    %s = arith.constant 9223372036854775807 : index\n"
               "    %v = memref.view %x[%s][] : memref<64xi8> to memref<4xi8>\n"
               "    gpu.memset %v, %c : memref<4xi8>, i8\n    return\n  }\n}\n",
               CREC_ERR_OUT_OF_RANGE, "bad.mlir:5:10", "exceed 2^60 elements or bytes");
  expect_error("module {\n  func.func @main(%x: memref<16xf32>) {\n    %c = arith.constant 0.0 : f32\n"
               "    %w = memref.reinterpret_cast %x to offset: [0], sizes: [4611686018427387904], strides: "
               "[4611686018427387904] : memref<16xf32> to memref<4611686018427387904xf32, strided<[4611686018427387904]>>\n"
               "    gpu.memset %w, %c : memref<4611686018427387904xf32, strided<[4611686018427387904]>>, f32\n"
               "    return\n  }\n}\n",
               CREC_ERR_UNSUPPORTED, "bad.mlir:4:10", "unsupported result memref type");
  /* a reinterpret_cast whose type is dynamic: the range is checked where it is used */
  expect_error("module {\n  func.func @main(%x: memref<16xf32>) {\n    %c = arith.constant 0.0 : f32\n"
               "    %w = memref.reinterpret_cast %x to offset: [0], sizes: [4611686018427387904], strides: "
               "[4611686018427387904] : memref<16xf32> to memref<?xf32, strided<[?], offset: ?>>\n"
               "    gpu.memset %w, %c : memref<?xf32, strided<[?], offset: ?>>, f32\n"
               "    return\n  }\n}\n",
               CREC_ERR_OUT_OF_RANGE, "bad.mlir:5:5", "exceed 2^60 elements or bytes");
}

/* ---- crec.* attributes on MLIR's own ops (issue 39) ---- */

/* A loop over `flag` whose 'do' region launches @k::@step, with `attrs` on the
 * scf.while (line 12) and `launch_attrs` on the launch (line 17). */
static void loop_with(char *out, size_t size, const char *args, const char *attrs, const char *launch_attrs) {
  snprintf(out, size,
           HEAD "  gpu.module @k {\n"
           "    gpu.func @step(%%flag: memref<i32>) kernel { gpu.return }\n"
           "  }\n"
           "  func.func @main(%%flag: memref<i32> %s) {\n"
           "    %%c1 = arith.constant 1 : index\n"
           "    %%z = arith.constant 0 : i32\n"
           "    scf.while : () -> () {\n"
           "      %%v = memref.load %%flag[] : memref<i32>\n"
           "      %%go = arith.cmpi ne, %%v, %%z : i32\n"
           "      scf.condition(%%go)\n"
           "    } do {\n"
           "      gpu.launch_func @k::@step blocks in (%%c1, %%c1, %%c1) threads in (%%c1, %%c1, %%c1) "
           "args(%%flag : memref<i32>) %s\n"
           "      scf.yield\n"
           "    } %s\n"
           "    return\n  }\n}\n",
           args, launch_attrs, attrs);
}

/* A misspelt crec.* attribute, or one on an op that does not read it, would be
 * ignored (a loop left without its limit): it is an error at its op, naming the
 * attributes that op takes. */
Test(lower_errors, crec_attributes_are_known_and_where_they_apply) {
  char text[2048];
  loop_with(text, sizeof text, "{crec.name = \"flag\"}", "attributes {crec.max_iterations = 5 : i64}", "");
  crec_lower_options o = CREC_LOWER_OPTIONS_INIT;
  crec_program *p = NULL;
  EXPECT_OK(crec_lower_mlir_string(text, strlen(text), &o, &p));
  uint64_t limit = 0;
  EXPECT_OK(crec_program_get_loop_limit(p, crec_program_command(p, 0), &limit));
  cr_assert_eq(limit, 5, "the spelt-right attribute is not read");
  crec_program_destroy(p);

  loop_with(text, sizeof text, "", "attributes {crec.max_iteration = 5 : i64}", "");
  expect_error(text, CREC_ERR_MLIR, "bad.mlir:8:5",
               "'scf.while': unknown attribute 'crec.max_iteration': did you mean 'crec.max_iterations'? (on "
               "scf.while crec reads crec.name and crec.max_iterations)");
  loop_with(text, sizeof text, "", "attributes {crec.frobnicate}", "");
  expect_error(text, CREC_ERR_MLIR, "bad.mlir:8:5",
               "'scf.while': unknown attribute 'crec.frobnicate' (on scf.while crec reads crec.name and "
               "crec.max_iterations)");
  /* a known attribute on an op that does not read it */
  loop_with(text, sizeof text, "", "", "{crec.max_iterations = 5 : i64}");
  expect_error(text, CREC_ERR_MLIR, "bad.mlir:13:7",
               "'gpu.launch_func': attribute 'crec.max_iterations' has no effect here: crec reads it on scf.while (on "
               "gpu.launch_func crec reads crec.name, crec.shared_bytes and crec.early_start)");
  /* an entry argument's */
  loop_with(text, sizeof text, "{crec.nmae = \"flag\"}", "", "");
  expect_error(text, CREC_ERR_MLIR, "bad.mlir:5:3",
               "'func.func': argument 0: unknown attribute 'crec.nmae': did you mean 'crec.name'? (on a function's "
               "arguments crec reads crec.name, crec.memory and crec.alignment)");
  /* crec.entry names a kernel of an image: it means nothing on a host function */
  expect_error("module {\n  func.func @main() attributes {crec.entry = \"f\"} {\n    return\n  }\n}\n", CREC_ERR_MLIR,
               "bad.mlir:2:3",
               "'func.func': attribute 'crec.entry' has no effect here: crec reads it on gpu.func or func.func in a "
               "gpu.module (on func.func crec reads crec.name)");
}

/* {crec.early_start} on a kernel whose compiled PTX has no griddepcontrol.wait is
 * refused, naming the launch; a value on it is refused too. */
Test(lower_errors, early_start_on_a_kernel_that_does_not_wait) {
  static const char *const head = HEAD "  gpu.module @k { gpu.func @f(%x: memref<4xf32>) kernel { gpu.return } }\n"
                                       "  func.func @main(%y: memref<4xf32>) {\n    %c1 = arith.constant 1 : index\n"
                                       "    gpu.launch_func @k::@f blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) "
                                       "args(%y : memref<4xf32>) ";
  char text[1024];
  snprintf(text, sizeof text, "%s{crec.early_start}\n    return\n  }\n}\n", head);
  expect_error(text, CREC_ERR_INVALID_ARGUMENT, "bad.mlir:5:5", "has no griddepcontrol.wait");
  snprintf(text, sizeof text, "%s{crec.early_start = 1}\n    return\n  }\n}\n", head);
  expect_error(text, CREC_ERR_MLIR, "bad.mlir:5:5", "crec.early_start is a unit attribute");
}

/* {crec.early_start} on a module crec does not compile (crec.image) is refused, saying where it belongs. */
Test(lower_errors, early_start_on_an_image_module) {
  expect_error(HEAD "  gpu.module @k attributes {crec.image = \"kernels.ptx\", crec.early_start} {\n"
               "    gpu.func @k_scale(%x: memref<4xf32>) kernel { gpu.return }\n  }\n"
               "  func.func @main(%y: memref<4xf32>) {\n    %c1 = arith.constant 1 : index\n"
               "    gpu.launch_func @k::@k_scale blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%y : memref<4xf32>)\n"
               "    return\n  }\n}\n",
               CREC_ERR_MLIR, "bad.mlir:2:3", "crec.early_start on a module with crec.image");
}
