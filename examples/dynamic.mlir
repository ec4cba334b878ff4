// A dynamic-size program: x has n elements, n known only when the program
// runs. Each execution binds x with its size; crec derives n = x.bytes / 4 and
// the grid ceildiv(n, 256) with a host function compiled from this file's
// scalar arithmetic (LLVM ORC), and a replay with another n updates the two
// launches in place instead of recording again.
//
//   x = 2x        then        x = x + 1        (with x[i] = i: x[i] = 2i + 1)
//
// The crec tool sizes x with --size x=ELEMENTS (or with a file input):
//
//   crec run examples/dynamic.mlir --size x=1000 --input x=iota --check
//   crec run examples/dynamic.mlir --size x=1000000 --input x=iota --check
module attributes {gpu.container_module} {
  gpu.module @kernels {
    // x[i] = a * x[i] for i < n
    gpu.func @scale(%x: memref<?xf32>, %n: index, %a: f32) kernel {
      %i = gpu.global_id x
      %in = arith.cmpi ult, %i, %n : index
      scf.if %in {
        %v = memref.load %x[%i] : memref<?xf32>
        %r = arith.mulf %a, %v : f32
        memref.store %r, %x[%i] : memref<?xf32>
      }
      gpu.return
    }
    // x[i] = x[i] + b for i < n
    gpu.func @shift(%x: memref<?xf32>, %n: index, %b: f32) kernel {
      %i = gpu.global_id x
      %in = arith.cmpi ult, %i, %n : index
      scf.if %in {
        %v = memref.load %x[%i] : memref<?xf32>
        %r = arith.addf %v, %b : f32
        memref.store %r, %x[%i] : memref<?xf32>
      }
      gpu.return
    }
  }
  func.func @main(%x: memref<?xf32> {crec.name = "x"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %two = arith.constant 2.0 : f32
    %one = arith.constant 1.0 : f32
    %n = memref.dim %x, %c0 : memref<?xf32>
    %blocks = arith.ceildivui %n, %c256 : index
    gpu.launch_func @kernels::@scale blocks in (%blocks, %c1, %c1) threads in (%c256, %c1, %c1)
        args(%x : memref<?xf32>, %n : index, %two : f32) {crec.name = "x = 2x"}
    gpu.launch_func @kernels::@shift blocks in (%blocks, %c1, %c1) threads in (%c256, %c1, %c1)
        args(%x : memref<?xf32>, %n : index, %one : f32) {crec.name = "x = x + 1"}
    return
  }
}
