// Host code around a kernel, written the way MLIR's own GPU integration tests
// write it: the host fills a memref.alloc in an scf.for, the kernel (an inline
// gpu.launch) doubles it through unified addressing, and the host prints it
// with the runner utilities' printMemrefI32 and vector.print. crec makes each
// run of host ops one host node (JIT-compiled with ORC) and the alloc a host
// temporary.
// RUN: crec run --quiet %s | FileCheck %s
module {
  func.func private @printMemrefI32(memref<*xi32>) attributes { llvm.emit_c_interface }
  func.func @main() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c13 = arith.constant 13 : index
    %data = memref.alloc() : memref<13xi32>
    scf.for %i = %c0 to %c13 step %c1 {
      %v = arith.index_cast %i : index to i32
      memref.store %v, %data[%i] : memref<13xi32>
    }
    %cast = memref.cast %data : memref<13xi32> to memref<*xi32>
    gpu.host_register %cast : memref<*xi32>
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c13, %sy = %c1, %sz = %c1) {
      %v = memref.load %data[%tx] : memref<13xi32>
      %d = arith.addi %v, %v : i32
      memref.store %d, %data[%tx] : memref<13xi32>
      gpu.terminator
    }
    // CHECK: Unranked Memref base@ = {{.*}} rank = 1 offset = 0 sizes = [13] strides = [1] data =
    // CHECK-NEXT: [0,  2,  4,  6,  8,  10,  12,  14,  16,  18,  20,  22,  24]
    call @printMemrefI32(%cast) : (memref<*xi32>) -> ()
    %last = memref.load %data[%c0] : memref<13xi32>
    %seven = arith.constant 7 : i32
    %sum = arith.addi %last, %seven : i32
    // CHECK-NEXT: 7
    vector.print %sum : i32
    return
  }
}
