// An scf.for whose upper bound is a bound scalar (%n): a device loop whose trip
// count, max(ceildiv(n - 1, 2), 0), a host function computes before each
// execution. The body adds 1 to each of x's 4 elements.
module attributes {gpu.container_module} {
gpu.module @k {
  gpu.func @inc(%x: memref<4xi32>) kernel {
    %t = gpu.thread_id x
    %e = memref.load %x[%t] : memref<4xi32>
    %c1 = arith.constant 1 : i32
    %d = arith.addi %e, %c1 : i32
    memref.store %d, %x[%t] : memref<4xi32>
    gpu.return
  }
}
func.func @main(%x: memref<4xi32>, %n: index) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c1 to %n step %c2 {
    gpu.launch_func @k::@inc blocks in (%c1, %c1, %c1) threads in (%c4, %c1, %c1) args(%x : memref<4xi32>)
  }
  return
}
}
