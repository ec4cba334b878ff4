// A chain of elementwise kernels over 4096 floats, each written in MLIR: crec
// compiles the gpu.func bodies to PTX. With x[i] = i, y[i] = (2i + 1)^2.
//
//   t = 2 * x      u = t + 1      y = u * u
//
// t and u are temporaries (memref.alloc): crec places them in one arena that
// the recorded graph owns. Each kernel reads what the one before it wrote, so
// the graph is a chain of three kernel nodes.
//
//   crec run examples/chain.mlir --input x=iota --check
//   crec bench examples/chain.mlir
//   crec dump examples/chain.mlir --format html -o chain.html
module attributes {gpu.container_module} {
  gpu.module @kernels {
    // dst[i] = a * src[i]
    gpu.func @scale(%dst: memref<4096xf32>, %src: memref<4096xf32>, %a: f32) kernel {
      %i = gpu.global_id x
      %v = memref.load %src[%i] : memref<4096xf32>
      %r = arith.mulf %a, %v : f32
      memref.store %r, %dst[%i] : memref<4096xf32>
      gpu.return
    }
    // dst[i] = src[i] + b
    gpu.func @shift(%dst: memref<4096xf32>, %src: memref<4096xf32>, %b: f32) kernel {
      %i = gpu.global_id x
      %v = memref.load %src[%i] : memref<4096xf32>
      %r = arith.addf %v, %b : f32
      memref.store %r, %dst[%i] : memref<4096xf32>
      gpu.return
    }
    // dst[i] = src[i] * src[i]
    gpu.func @square(%dst: memref<4096xf32>, %src: memref<4096xf32>) kernel {
      %i = gpu.global_id x
      %v = memref.load %src[%i] : memref<4096xf32>
      %r = arith.mulf %v, %v : f32
      memref.store %r, %dst[%i] : memref<4096xf32>
      gpu.return
    }
  }
  func.func @main(%x: memref<4096xf32> {crec.name = "x"}, %y: memref<4096xf32> {crec.name = "y"}) {
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %c256 = arith.constant 256 : index
    %two = arith.constant 2.0 : f32
    %one = arith.constant 1.0 : f32
    %t = memref.alloc() {crec.name = "t"} : memref<4096xf32>
    %u = memref.alloc() {crec.name = "u"} : memref<4096xf32>
    gpu.launch_func @kernels::@scale blocks in (%c16, %c1, %c1) threads in (%c256, %c1, %c1)
        args(%t : memref<4096xf32>, %x : memref<4096xf32>, %two : f32) {crec.name = "t = 2x"}
    gpu.launch_func @kernels::@shift blocks in (%c16, %c1, %c1) threads in (%c256, %c1, %c1)
        args(%u : memref<4096xf32>, %t : memref<4096xf32>, %one : f32) {crec.name = "u = t + 1"}
    gpu.launch_func @kernels::@square blocks in (%c16, %c1, %c1) threads in (%c256, %c1, %c1)
        args(%y : memref<4096xf32>, %u : memref<4096xf32>) {crec.name = "y = u * u"}
    memref.dealloc %t : memref<4096xf32>
    memref.dealloc %u : memref<4096xf32>
    return
  }
}
