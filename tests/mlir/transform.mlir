// res += lhs * rhs (16x4 times 4x8, f32) by one warp with tensor cores: the
// kernel's linalg.matmul is rewritten into nvgpu.mma.sync (tf32) by the
// transform schedule at the end of the file, which MLIR's transform
// interpreter applies (as "mlir-opt -transform-interpreter" does for upstream's
// transform-mma-sync tests) before crec lowers the program; the schedule itself
// is then dropped. lhs[i][k] = k + 1, rhs[k][j] = j and res[i][j] = i, so that
// res becomes i + 10 j.
// RUN: crec run --quiet %s | FileCheck %s
module {
  func.func private @printMemrefF32(memref<*xf32>)
  func.func @main() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    %lhs = memref.alloc() : memref<16x4xf32>
    %rhs = memref.alloc() : memref<4x8xf32>
    %res = memref.alloc() : memref<16x8xf32>
    scf.for %i = %c0 to %c16 step %c1 {
      %fi = arith.index_cast %i : index to i32
      %vi = arith.sitofp %fi : i32 to f32
      scf.for %k = %c0 to %c4 step %c1 {
        %k1 = arith.addi %k, %c1 : index
        %fk = arith.index_cast %k1 : index to i32
        %vk = arith.sitofp %fk : i32 to f32
        memref.store %vk, %lhs[%i, %k] : memref<16x4xf32>
      }
      scf.for %j = %c0 to %c8 step %c1 {
        memref.store %vi, %res[%i, %j] : memref<16x8xf32>
      }
    }
    scf.for %k = %c0 to %c4 step %c1 {
      scf.for %j = %c0 to %c8 step %c1 {
        %fj = arith.index_cast %j : index to i32
        %vj = arith.sitofp %fj : i32 to f32
        memref.store %vj, %rhs[%k, %j] : memref<4x8xf32>
      }
    }
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
      linalg.matmul ins(%lhs, %rhs : memref<16x4xf32>, memref<4x8xf32>) outs(%res : memref<16x8xf32>)
      gpu.terminator
    }
    %u = memref.cast %res : memref<16x8xf32> to memref<*xf32>
    // CHECK: [0,   10,   20,   30,   40,   50,   60,   70],
    // CHECK-NEXT: [1,   11,   21,   31,   41,   51,   61,   71],
    // CHECK: [15,   25,   35,   45,   55,   65,   75,   85]]
    call @printMemrefF32(%u) : (memref<*xf32>) -> ()
    return
  }
  module attributes {transform.with_named_sequence} {
    transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
      %mm = transform.structured.match ops{["linalg.matmul"]} in %root : (!transform.any_op) -> !transform.any_op
      transform.nvgpu.rewrite_matmul_as_mma_sync %mm : (!transform.any_op) -> ()
      transform.yield
    }
  }
}
