// Independent branches that run concurrently. Four branches each compute a
// polynomial of x (1024 floats) into their own temporary; nothing orders them
// but the bytes they touch, and they share none (all four only read x), so
// the graph has no edge between them and the GPU runs them side by side. A
// last kernel joins them:
//
//   a = 2x, a += 1        b = x * x, b += 1
//   c = 3x, c += 2        d = -3x, d += -3        y = a + b + c + d = (x + 1)^2
//
//   crec run examples/branches.mlir --input x=iota --check
//   crec dump examples/branches.mlir --format html -o branches.html
module attributes {gpu.container_module} {
  gpu.module @kernels {
    // dst[i] = s * src[i]
    gpu.func @scale(%dst: memref<1024xf32>, %src: memref<1024xf32>, %s: f32) kernel {
      %i = gpu.global_id x
      %v = memref.load %src[%i] : memref<1024xf32>
      %r = arith.mulf %s, %v : f32
      memref.store %r, %dst[%i] : memref<1024xf32>
      gpu.return
    }
    // dst[i] = src[i] * src[i]
    gpu.func @square(%dst: memref<1024xf32>, %src: memref<1024xf32>) kernel {
      %i = gpu.global_id x
      %v = memref.load %src[%i] : memref<1024xf32>
      %r = arith.mulf %v, %v : f32
      memref.store %r, %dst[%i] : memref<1024xf32>
      gpu.return
    }
    // x[i] += s
    gpu.func @add(%x: memref<1024xf32>, %s: f32) kernel {
      %i = gpu.global_id x
      %v = memref.load %x[%i] : memref<1024xf32>
      %r = arith.addf %v, %s : f32
      memref.store %r, %x[%i] : memref<1024xf32>
      gpu.return
    }
    // y[i] = a[i] + b[i] + c[i] + d[i]
    gpu.func @sum4(%y: memref<1024xf32>, %a: memref<1024xf32>, %b: memref<1024xf32>, %c: memref<1024xf32>,
                   %d: memref<1024xf32>) kernel {
      %i = gpu.global_id x
      %va = memref.load %a[%i] : memref<1024xf32>
      %vb = memref.load %b[%i] : memref<1024xf32>
      %vc = memref.load %c[%i] : memref<1024xf32>
      %vd = memref.load %d[%i] : memref<1024xf32>
      %ab = arith.addf %va, %vb : f32
      %abc = arith.addf %ab, %vc : f32
      %r = arith.addf %abc, %vd : f32
      memref.store %r, %y[%i] : memref<1024xf32>
      gpu.return
    }
  }
  func.func @main(%x: memref<1024xf32> {crec.name = "x"}, %y: memref<1024xf32> {crec.name = "y"}) {
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c256 = arith.constant 256 : index
    %one = arith.constant 1.0 : f32
    %two = arith.constant 2.0 : f32
    %three = arith.constant 3.0 : f32
    %minus_three = arith.constant -3.0 : f32
    %a = memref.alloc() {crec.name = "a"} : memref<1024xf32>
    %b = memref.alloc() {crec.name = "b"} : memref<1024xf32>
    %c = memref.alloc() {crec.name = "c"} : memref<1024xf32>
    %d = memref.alloc() {crec.name = "d"} : memref<1024xf32>
    // branch a
    gpu.launch_func @kernels::@scale blocks in (%c4, %c1, %c1) threads in (%c256, %c1, %c1)
        args(%a : memref<1024xf32>, %x : memref<1024xf32>, %two : f32) {crec.name = "a = 2x"}
    gpu.launch_func @kernels::@add blocks in (%c4, %c1, %c1) threads in (%c256, %c1, %c1)
        args(%a : memref<1024xf32>, %one : f32) {crec.name = "a += 1"}
    // branch b
    gpu.launch_func @kernels::@square blocks in (%c4, %c1, %c1) threads in (%c256, %c1, %c1)
        args(%b : memref<1024xf32>, %x : memref<1024xf32>) {crec.name = "b = x * x"}
    gpu.launch_func @kernels::@add blocks in (%c4, %c1, %c1) threads in (%c256, %c1, %c1)
        args(%b : memref<1024xf32>, %one : f32) {crec.name = "b += 1"}
    // branch c
    gpu.launch_func @kernels::@scale blocks in (%c4, %c1, %c1) threads in (%c256, %c1, %c1)
        args(%c : memref<1024xf32>, %x : memref<1024xf32>, %three : f32) {crec.name = "c = 3x"}
    gpu.launch_func @kernels::@add blocks in (%c4, %c1, %c1) threads in (%c256, %c1, %c1)
        args(%c : memref<1024xf32>, %two : f32) {crec.name = "c += 2"}
    // branch d
    gpu.launch_func @kernels::@scale blocks in (%c4, %c1, %c1) threads in (%c256, %c1, %c1)
        args(%d : memref<1024xf32>, %x : memref<1024xf32>, %minus_three : f32) {crec.name = "d = -3x"}
    gpu.launch_func @kernels::@add blocks in (%c4, %c1, %c1) threads in (%c256, %c1, %c1)
        args(%d : memref<1024xf32>, %minus_three : f32) {crec.name = "d += -3"}
    // the join
    gpu.launch_func @kernels::@sum4 blocks in (%c4, %c1, %c1) threads in (%c256, %c1, %c1)
        args(%y : memref<1024xf32>, %a : memref<1024xf32>, %b : memref<1024xf32>, %c : memref<1024xf32>,
             %d : memref<1024xf32>) {crec.name = "y = a + b + c + d"}
    memref.dealloc %a : memref<1024xf32>
    memref.dealloc %b : memref<1024xf32>
    memref.dealloc %c : memref<1024xf32>
    memref.dealloc %d : memref<1024xf32>
    return
  }
}
