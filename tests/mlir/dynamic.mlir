// y[i] = 2 * x[i] for n = dim(x, 0) elements, n known only when the program runs.
// Dynamic memrefs: the kernel takes expanded memref descriptors; the grid is
// ceildiv(n, 256), computed by a JIT-compiled host function before each run
// whose bound sizes changed.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @twice(%x: memref<?xf32>, %y: memref<?xf32>, %n: index) kernel {
      %i = gpu.global_id x
      %in = arith.cmpi ult, %i, %n : index
      scf.if %in {
        %v = memref.load %x[%i] : memref<?xf32>
        %w = arith.addf %v, %v : f32
        memref.store %w, %y[%i] : memref<?xf32>
      }
      gpu.return
    }
  }
  func.func @main(%x: memref<?xf32> {crec.name = "x"}, %y: memref<?xf32> {crec.name = "y"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %n = memref.dim %x, %c0 : memref<?xf32>
    %blocks = arith.ceildivui %n, %c256 : index
    gpu.launch_func @kernels::@twice blocks in (%blocks, %c1, %c1) threads in (%c256, %c1, %c1)
        args(%x : memref<?xf32>, %y : memref<?xf32>, %n : index)
    return
  }
}
