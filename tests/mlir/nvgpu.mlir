// y = 2x over 32 floats, x staged through shared memory with the nvgpu
// dialect's asynchronous copies (cp.async, sm_80 and later), the way upstream's
// sm80 and sm90 tests move data: each of 8 threads copies 4 floats into the
// tile and waits for its copy group; after a barrier it doubles the 4 floats
// its neighbour copied. crec compiles nvgpu ops in kernels as MLIR 19's
// gpu-lower-to-nvvm-pipeline does (convert-nvgpu-to-nvvm).
// RUN: crec run --quiet %s | FileCheck %s
module {
  func.func private @printMemrefF32(memref<*xf32>)
  func.func @main() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %c32 = arith.constant 32 : index
    %x = memref.alloc() : memref<32xf32>
    %y = memref.alloc() : memref<32xf32>
    scf.for %i = %c0 to %c32 step %c1 {
      %v = arith.index_cast %i : index to i32
      %f = arith.sitofp %v : i32 to f32
      memref.store %f, %x[%i] : memref<32xf32>
    }
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1)
               workgroup(%tile : memref<32xf32, #gpu.address_space<workgroup>>) {
      %mine = arith.muli %tx, %c4 : index
      %copy = nvgpu.device_async_copy %x[%mine], %tile[%mine], 4
          : memref<32xf32> to memref<32xf32, #gpu.address_space<workgroup>>
      %group = nvgpu.device_async_create_group %copy
      nvgpu.device_async_wait %group
      gpu.barrier
      %next = arith.addi %tx, %c1 : index
      %neighbour = arith.remui %next, %c8 : index
      %base = arith.muli %neighbour, %c4 : index
      scf.for %k = %c0 to %c4 step %c1 {
        %j = arith.addi %base, %k : index
        %v = memref.load %tile[%j] : memref<32xf32, #gpu.address_space<workgroup>>
        %w = arith.addf %v, %v : f32
        memref.store %w, %y[%j] : memref<32xf32>
      }
      gpu.terminator
    }
    %u = memref.cast %y : memref<32xf32> to memref<*xf32>
    // CHECK: [0,  2,  4,  6,  8,  10,  12,  14,  16,  18,  20,  22,  24,  26,  28,  30,  32,  34,  36,  38,  40,  42,  44,  46,  48,  50,  52,  54,  56,  58,  60,  62]
    call @printMemrefF32(%u) : (memref<*xf32>) -> ()
    return
  }
}
