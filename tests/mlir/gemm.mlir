// Two layers of a small MLP, and a batched product. Library calls record into
// the same graph as the kernels around them:
//  - h = x·w1 by linalg.matmul, which accumulates into its output: h is a
//    temporary zeroed by gpu.memset first; then a kernel adds b1 and applies ReLU;
//  - y = relu(0.5·h·w2ᵀ + b2) by one "crec.gemm": w2 is stored transposed, and
//    the bias and ReLU run in cuBLASLt's epilogue;
//  - z += p·q for each of 3 matrices by linalg.batch_matmul.
// Shapes are not multiples of 8 on purpose.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @bias_relu(%h: memref<20x45xf32>, %b: memref<45xf32>) kernel {
      %row = gpu.block_id x
      %col = gpu.thread_id x
      %v = memref.load %h[%row, %col] : memref<20x45xf32>
      %bias = memref.load %b[%col] : memref<45xf32>
      %s = arith.addf %v, %bias : f32
      %zero = arith.constant 0.0 : f32
      %r = arith.maximumf %s, %zero : f32
      memref.store %r, %h[%row, %col] : memref<20x45xf32>
      gpu.return
    }
  }
  func.func @main(%x: memref<20x37xf32> {crec.name = "x"}, %w1: memref<37x45xf32> {crec.name = "w1"},
                  %b1: memref<45xf32> {crec.name = "b1"}, %w2: memref<13x45xf32> {crec.name = "w2"},
                  %b2: memref<13xf32> {crec.name = "b2"}, %y: memref<20x13xf32> {crec.name = "y"},
                  %p: memref<3x4x5xf32> {crec.name = "p"}, %q: memref<3x5x6xf32> {crec.name = "q"},
                  %z: memref<3x4x6xf32> {crec.name = "z"}) {
    %c1 = arith.constant 1 : index
    %c20 = arith.constant 20 : index
    %c45 = arith.constant 45 : index
    %zero = arith.constant 0.0 : f32
    %h = memref.alloc() {crec.name = "h"} : memref<20x45xf32>
    gpu.memset %h, %zero : memref<20x45xf32>, f32
    linalg.matmul {crec.name = "layer1"} ins(%x, %w1 : memref<20x37xf32>, memref<37x45xf32>)
        outs(%h : memref<20x45xf32>)
    gpu.launch_func @kernels::@bias_relu blocks in (%c20, %c1, %c1) threads in (%c45, %c1, %c1)
        args(%h : memref<20x45xf32>, %b1 : memref<45xf32>)
    "crec.gemm"(%h, %w2, %y, %b2) {crec.name = "layer2", transpose_b, alpha = 0.5 : f64, epilogue = "bias_relu"}
        : (memref<20x45xf32>, memref<13x45xf32>, memref<20x13xf32>, memref<13xf32>) -> ()
    memref.dealloc %h : memref<20x45xf32>
    linalg.batch_matmul ins(%p, %q : memref<3x4x5xf32>, memref<3x5x6xf32>) outs(%z : memref<3x4x6xf32>)
    return
  }
}
