// The async dialect, as upstream's async.mlir uses it: one region copies x to
// the device and yields the copy, a second (after the first's token) scales
// the copy by 10 in a kernel, and the host awaits the copy and brings it back.
// crec runs each async.execute region in place, in program order, and drops
// the awaits: its commands are ordered by the bytes they touch, so the DAG
// keeps the order the tokens give (copy, kernel, copy back).
// RUN: crec run --quiet %s | FileCheck %s
module {
  func.func private @printMemrefI32(memref<*xi32>)
  func.func @main() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %ten = arith.constant 10 : i32
    %x = memref.alloc() : memref<4xi32>
    scf.for %i = %c0 to %c4 step %c1 {
      %i1 = arith.addi %i, %c1 : index
      %v = arith.index_cast %i1 : index to i32
      memref.store %v, %x[%i] : memref<4xi32>
    }
    %copied, %copy = async.execute () -> !async.value<memref<4xi32>> {
      %d = gpu.alloc () : memref<4xi32>
      gpu.memcpy %d, %x : memref<4xi32>, memref<4xi32>
      async.yield %d : memref<4xi32>
    }
    %scaled = async.execute [%copied] (%copy as %d : !async.value<memref<4xi32>>) {
      gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
                 threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
        %v = memref.load %d[%tx] : memref<4xi32>
        %w = arith.muli %v, %ten : i32
        memref.store %w, %d[%tx] : memref<4xi32>
        gpu.terminator
      }
      async.yield
    }
    async.await %scaled : !async.token
    %d = async.await %copy : !async.value<memref<4xi32>>
    gpu.memcpy %x, %d : memref<4xi32>, memref<4xi32>
    gpu.dealloc %d : memref<4xi32>
    %u = memref.cast %x : memref<4xi32> to memref<*xi32>
    // CHECK: [10,  20,  30,  40]
    call @printMemrefI32(%u) : (memref<*xi32>) -> ()
    return
  }
}
