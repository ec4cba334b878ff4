// Allocations whose type has dynamic sizes that the text fixes, as upstream
// tests write them: main allocates the device copy with a constant size, and a
// helper allocates its scratch with the sizes of the matrix it is given
// (memref.dim of a static memref, once the call is inlined). crec makes each a
// temporary of that size: a static allocation and a memref.cast to the type
// the program uses, as MLIR's canonicalizer rewrites them. The kernel squares
// x[i][j] = 4i + j; the helper prints the matrix as floats.
// RUN: crec run --quiet %s | FileCheck %s
module {
  func.func private @printMemrefF32(memref<*xf32>)
  func.func @print_as_f32(%m: memref<3x4xi32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %rows = memref.dim %m, %c0 : memref<3x4xi32>
    %cols = memref.dim %m, %c1 : memref<3x4xi32>
    %f = memref.alloc(%rows, %cols) : memref<?x?xf32>
    scf.for %i = %c0 to %rows step %c1 {
      scf.for %j = %c0 to %cols step %c1 {
        %v = memref.load %m[%i, %j] : memref<3x4xi32>
        %w = arith.sitofp %v : i32 to f32
        memref.store %w, %f[%i, %j] : memref<?x?xf32>
      }
    }
    %u = memref.cast %f : memref<?x?xf32> to memref<*xf32>
    call @printMemrefF32(%u) : (memref<*xf32>) -> ()
    memref.dealloc %f : memref<?x?xf32>
    return
  }
  func.func @main() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %n = arith.constant 12 : index
    %x = memref.alloc() : memref<3x4xi32>
    scf.for %i = %c0 to %c3 step %c1 {
      scf.for %j = %c0 to %c4 step %c1 {
        %r = arith.muli %i, %c4 : index
        %k = arith.addi %r, %j : index
        %v = arith.index_cast %k : index to i32
        memref.store %v, %x[%i, %j] : memref<3x4xi32>
      }
    }
    %flat = memref.reinterpret_cast %x to offset: [0], sizes: [12], strides: [1] : memref<3x4xi32> to memref<12xi32>
    %d = gpu.alloc(%n) : memref<?xi32>
    gpu.memcpy %d, %flat : memref<?xi32>, memref<12xi32>
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %n, %sy = %c1, %sz = %c1) {
      %v = memref.load %d[%tx] : memref<?xi32>
      %s = arith.muli %v, %v : i32
      memref.store %s, %d[%tx] : memref<?xi32>
      gpu.terminator
    }
    gpu.memcpy %flat, %d : memref<12xi32>, memref<?xi32>
    gpu.dealloc %d : memref<?xi32>
    // CHECK: [0,   1,   4,   9],
    // CHECK-NEXT: [16,   25,   36,   49],
    // CHECK-NEXT: [64,   81,   100,   121]]
    call @print_as_f32(%x) : (memref<3x4xi32>) -> ()
    return
  }
}
