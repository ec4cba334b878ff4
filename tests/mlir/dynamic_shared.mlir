// Dynamic shared memory named as upstream's sm90 GEMM names it, a zero-sized
// workgroup memref.global, in a kernel that also has a static workgroup array.
// The dynamic region starts after every static variable (crec declares such
// globals `.extern .shared`, as CUDA's `extern __shared__` arrays are), so
// filling it whole leaves the static array as the threads wrote it: each
// thread adds its static element (1000 + t) to its dynamic one (-1).
// RUN: crec run --quiet %s | FileCheck %s
module attributes {gpu.container_module} {
  memref.global "private" @dyn : memref<0xf32, 3> {alignment = 16 : i64}
  memref.global "private" @fixed : memref<32xf32, 3> {alignment = 16 : i64}
  func.func private @printMemrefF32(memref<*xf32>) attributes { llvm.emit_c_interface }
  func.func @main() {
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %bytes = arith.constant 4096 : i32
    %out = memref.alloc() : memref<32xf32>
    %cast = memref.cast %out : memref<32xf32> to memref<*xf32>
    gpu.host_register %cast : memref<*xf32>
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1)
               dynamic_shared_memory_size %bytes {
      %c1024 = arith.constant 1024 : index
      %c32k = arith.constant 32 : index
      %thousand = arith.constant 1000.0 : f32
      %minus1 = arith.constant -1.0 : f32
      %fixed = memref.get_global @fixed : memref<32xf32, 3>
      %dyn0 = memref.get_global @dyn : memref<0xf32, 3>
      %dyn = memref.reinterpret_cast %dyn0 to offset: [0], sizes: [1024], strides: [1]
          : memref<0xf32, 3> to memref<1024xf32, 3>
      %ti = arith.index_cast %tx : index to i32
      %tf = arith.sitofp %ti : i32 to f32
      %mine = arith.addf %tf, %thousand : f32
      memref.store %mine, %fixed[%tx] : memref<32xf32, 3>
      gpu.barrier
      scf.for %i = %tx to %c1024 step %c32k {
        memref.store %minus1, %dyn[%i] : memref<1024xf32, 3>
      }
      gpu.barrier
      %a = memref.load %fixed[%tx] : memref<32xf32, 3>
      %b = memref.load %dyn[%tx] : memref<1024xf32, 3>
      %sum = arith.addf %a, %b : f32
      memref.store %sum, %out[%tx] : memref<32xf32>
      gpu.terminator
    }
    // CHECK: Unranked Memref base@ = {{.*}} rank = 1 offset = 0 sizes = [32] strides = [1] data =
    // CHECK-NEXT: [999,  1000,  1001,  1002,  1003,  1004,  1005,  1006,  1007,  1008,  1009,  1010,  1011,  1012,  1013,  1014,  1015,  1016,  1017,  1018,  1019,  1020,  1021,  1022,  1023,  1024,  1025,  1026,  1027,  1028,  1029,  1030]
    call @printMemrefF32(%cast) : (memref<*xf32>) -> ()
    return
  }
}
