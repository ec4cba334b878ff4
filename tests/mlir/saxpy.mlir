// y = a * x + y over 1024 floats: one kernel compiled from its gpu.func body.
// Static shapes: the kernel takes bare pointers.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @saxpy(%x: memref<1024xf32>, %y: memref<1024xf32>, %a: f32) kernel {
      %i = gpu.global_id x
      %xi = memref.load %x[%i] : memref<1024xf32>
      %yi = memref.load %y[%i] : memref<1024xf32>
      %ax = arith.mulf %a, %xi : f32
      %r = arith.addf %ax, %yi : f32
      memref.store %r, %y[%i] : memref<1024xf32>
      gpu.return
    }
  }
  func.func @main(%x: memref<1024xf32> {crec.name = "x"}, %y: memref<1024xf32> {crec.name = "y"},
                  %a: f32 {crec.name = "a"}) {
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c256 = arith.constant 256 : index
    gpu.launch_func @kernels::@saxpy blocks in (%c4, %c1, %c1) threads in (%c256, %c1, %c1)
        args(%x : memref<1024xf32>, %y : memref<1024xf32>, %a : f32)
    return
  }
}
