// A program whose kernel comes from an nvcc-built image (crec.image): RMS
// normalization of the 64 rows of a 64 x 1024 matrix, scaled by a weight per
// column, written in CUDA C++ (examples/image.cu) because it wants shared
// memory and rsqrtf. The build compiles image.cu to build/examples/image.ptx
// and copies this file next to it, so run the copy in the build tree:
//
//   crec run build/examples/image.mlir --input x=random:1 --input w=fill:1 --check
//
// The module only declares the kernel (MLIR 19 wants a body on gpu.func: an
// empty one); crec.image is found relative to this file, and crec.access says
// that the first pointer is written and the others read.
module attributes {gpu.container_module} {
  gpu.module @cuda attributes {crec.image = "image.ptx"} {
    gpu.func @rmsnorm(%y: memref<64x1024xf32>, %x: memref<64x1024xf32>, %w: memref<1024xf32>, %eps: f32,
                      %cols: i32) kernel attributes {crec.access = ["w", "r", "r"]} {
      gpu.return
    }
  }
  func.func @main(%x: memref<64x1024xf32> {crec.name = "x"}, %w: memref<1024xf32> {crec.name = "w"},
                  %y: memref<64x1024xf32> {crec.name = "y"}) {
    %c1 = arith.constant 1 : index
    %rows = arith.constant 64 : index
    %c256 = arith.constant 256 : index
    %eps = arith.constant 1.0e-6 : f32
    %cols = arith.constant 1024 : i32
    gpu.launch_func @cuda::@rmsnorm blocks in (%rows, %c1, %c1) threads in (%c256, %c1, %c1)
        args(%y : memref<64x1024xf32>, %x : memref<64x1024xf32>, %w : memref<1024xf32>, %eps : f32, %cols : i32)
        {crec.name = "y = rmsnorm(x) * w"}
    return
  }
}
