// A temporary read before anything writes it: one warning of crec_program_validate().
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @copy(%dst: memref<256xf32>, %src: memref<256xf32>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %src[%i] : memref<256xf32>
      memref.store %v, %dst[%i] : memref<256xf32>
      gpu.return
    }
  }
  func.func @main(%y: memref<256xf32> {crec.name = "y"}) {
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %t = memref.alloc() {crec.name = "t"} : memref<256xf32>
    gpu.launch_func @kernels::@copy blocks in (%c1, %c1, %c1) threads in (%c256, %c1, %c1)
        args(%y : memref<256xf32>, %t : memref<256xf32>)
    memref.dealloc %t : memref<256xf32>
    return
  }
}
