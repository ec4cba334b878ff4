// Kernels from an nvcc-built image (kernels.cu, compiled to kernels.ptx next to
// this file). The module only declares them; arguments follow the C ABI
// (memrefs are pointers to element 0, scalars by value). crec.access says how
// each memref argument is used; without it crec assumes read-write.
module attributes {gpu.container_module} {
  gpu.module @cuda attributes {crec.image = "kernels.ptx"} {
    gpu.func @axpy(%y: memref<?xf32>, %x: memref<?xf32>, %a: f32, %n: i32) kernel
        attributes {crec.access = ["rw", "r"]} {
      gpu.return
    }
    func.func private @fill(memref<?xf32>, f32, i32) attributes {gpu.kernel, crec.access = ["w"]}
  }
  func.func @main(%x: memref<?xf32> {crec.name = "x"}, %y: memref<?xf32> {crec.name = "y"},
                  %a: f32 {crec.name = "a"}, %n: i32 {crec.name = "n"}) {
    %c1 = arith.constant 1 : index
    %c128 = arith.constant 128 : index
    %n_index = arith.index_cast %n : i32 to index
    %blocks = arith.ceildivsi %n_index, %c128 : index
    %zero = arith.constant 0.0 : f32
    gpu.launch_func @cuda::@fill blocks in (%blocks, %c1, %c1) threads in (%c128, %c1, %c1)
        args(%y : memref<?xf32>, %zero : f32, %n : i32)
    gpu.launch_func @cuda::@axpy blocks in (%blocks, %c1, %c1) threads in (%c128, %c1, %c1)
        args(%y : memref<?xf32>, %x : memref<?xf32>, %a : f32, %n : i32)
    return
  }
}
