// Memory: a temporary (memref.alloc / memref.dealloc), a constant table
// (memref.global + memref.get_global), and views with static offsets that
// become byte ranges of their buffer: memref.subview, memref.view,
// memref.reinterpret_cast.
module attributes {gpu.container_module} {
  memref.global "private" constant @table : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>
  gpu.module @kernels {
    gpu.func @scale(%dst: memref<4xf32>, %src: memref<4xf32>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %src[%i] : memref<4xf32>
      %w = arith.mulf %v, %v : f32
      memref.store %w, %dst[%i] : memref<4xf32>
      gpu.return
    }
  }
  func.func @main(%out: memref<16xf32> {crec.name = "out"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c16 = arith.constant 16 : index
    %table = memref.get_global @table : memref<4xf32>
    %tmp = memref.alloc() {crec.name = "scratch"} : memref<4xf32>
    // scratch = table^2
    gpu.launch_func @kernels::@scale blocks in (%c1, %c1, %c1) threads in (%c4, %c1, %c1)
        args(%tmp : memref<4xf32>, %table : memref<4xf32>)
    // out[0..4) = scratch^2 through a reinterpret_cast; out[8..12) = scratch
    // through a subview (its layout carries offset 8)
    %part = memref.subview %out[8] [4] [1] : memref<16xf32> to memref<4xf32, strided<[1], offset: 8>>
    %flat = memref.reinterpret_cast %out to offset: [0], sizes: [4], strides: [1]
        : memref<16xf32> to memref<4xf32>
    gpu.launch_func @kernels::@scale blocks in (%c1, %c1, %c1) threads in (%c4, %c1, %c1)
        args(%flat : memref<4xf32>, %tmp : memref<4xf32>)
    gpu.memcpy %part, %tmp : memref<4xf32, strided<[1], offset: 8>>, memref<4xf32>
    memref.dealloc %tmp : memref<4xf32>
    // bytes 16..32 of a byte buffer seen as 4 floats
    %bytes = memref.alloc() : memref<64xi8>
    %view = memref.view %bytes[%c16][] : memref<64xi8> to memref<4xf32>
    gpu.launch_func @kernels::@scale blocks in (%c1, %c1, %c1) threads in (%c4, %c1, %c1)
        args(%view : memref<4xf32>, %table : memref<4xf32>)
    %tail = memref.subview %out[12] [4] [1] : memref<16xf32> to memref<4xf32, strided<[1], offset: 12>>
    gpu.memcpy %tail, %view : memref<4xf32, strided<[1], offset: 12>>, memref<4xf32>
    return
  }
}
