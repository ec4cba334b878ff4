// A TMA load, written as MLIR's sm90 tests write one: the host fills the
// argument x (32 x 32 f32, x[i][j] = 32 i + j), makes a TMA descriptor of it
// (nvgpu.tma.create.descriptor, box 32 x 32, no swizzle), and a kernel's first
// thread copies the whole tile into shared memory with nvgpu.tma.async.load
// while the block waits on an mbarrier; then each thread writes a column of
// y = 2 x. crec encodes the descriptor from x's address at record and again at
// each replay that binds another x (the built-in "crec.tensor_map" command),
// so crec run --check, which rotates x and y over three buffer sets, replays
// as the eager run computes. Needs sm_90.
// RUN: crec run --quiet %s | FileCheck %s
!tensor = memref<32x32xf32>
!shared = memref<32x32xf32, #gpu.address_space<workgroup>>
!desc = !nvgpu.tensormap.descriptor<tensor = !shared, swizzle = none, l2promo = none, oob = zero, interleave = none>
!barrier = !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>>
module attributes {gpu.container_module} {
  memref.global "private" @tile : !shared
  func.func private @printMemrefF32(memref<*xf32>) attributes { llvm.emit_c_interface }
  func.func @main(%x: !tensor {crec.name = "x"}, %y: !tensor {crec.name = "y"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %c4096 = arith.constant 4096 : index
    scf.for %i = %c0 to %c32 step %c1 {
      scf.for %j = %c0 to %c32 step %c1 {
        %row = arith.muli %i, %c32 : index
        %k = arith.addi %row, %j : index
        %ki = arith.index_cast %k : index to i32
        %v = arith.sitofp %ki : i32 to f32
        memref.store %v, %x[%i, %j] : !tensor
      }
    }
    %u = memref.cast %x : !tensor to memref<*xf32>
    %d = nvgpu.tma.create.descriptor %u box[%c32, %c32] {crec.name = "x.tma"} : memref<*xf32> -> !desc
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
      %t = memref.get_global @tile : !shared
      %bar = nvgpu.mbarrier.create -> !barrier
      %first = arith.cmpi eq, %tx, %c0 : index
      scf.if %first {
        nvgpu.mbarrier.init %bar[%c0], %sx : !barrier
      }
      gpu.barrier
      scf.if %first {
        nvgpu.tma.async.load %d[%c0, %c0], %bar[%c0] to %t : !desc, !barrier -> !shared
        nvgpu.mbarrier.arrive.expect_tx %bar[%c0], %c4096 : !barrier
      } else {
        nvgpu.mbarrier.arrive.expect_tx %bar[%c0], %c0 : !barrier
      }
      %phase = arith.constant 0 : i1
      %ticks = arith.constant 10000000 : index
      nvgpu.mbarrier.try_wait.parity %bar[%c0], %phase, %ticks : !barrier
      %two = arith.constant 2.0 : f32
      scf.for %r = %c0 to %c32 step %c1 {
        %v = memref.load %t[%r, %tx] : !shared
        %w = arith.mulf %v, %two : f32
        memref.store %w, %y[%r, %tx] : !tensor
      }
      gpu.terminator
    }
    %yu = memref.cast %y : !tensor to memref<*xf32>
    // CHECK: Unranked Memref base@ = {{.*}} rank = 2 offset = 0 sizes = [32, 32] strides = [32, 1] data =
    // CHECK-NEXT: {{\[\[}}0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34, 36, 38, 40, 42, 44, 46, 48, 50, 52, 54, 56, 58, 60, 62],
    // CHECK-NEXT: [64, 66, 68,
    // CHECK: [1984, 1986, 1988, 1990, 1992, 1994, 1996, 1998, 2000, 2002, 2004, 2006, 2008, 2010, 2012, 2014, 2016, 2018, 2020, 2022, 2024, 2026, 2028, 2030, 2032, 2034, 2036, 2038, 2040, 2042, 2044, 2046]]
    call @printMemrefF32(%yu) : (memref<*xf32>) -> ()
    return
  }
}
