// A switch dispatch decided on the device: scf.index_switch on the i32 in
// device memory `mode` picks what is done to x (1024 floats):
//
//   mode 0: y = max(x, 0)     mode 1: y = x * x     mode 2: y = -x
//   any other mode (the default case): y = x (a copy)
//
// The switch runs as a CUDA conditional SWITCH node (one IF node per branch on
// drivers older than CUDA 12.8): a kernel could write `mode` just before it,
// and replaying with another mode updates nothing in the graph.
//
//   crec run examples/switch.mlir --input x=random:1 --input mode=fill:0 --check
//   crec run examples/switch.mlir --input x=random:1 --input mode=fill:2 --check
module attributes {gpu.container_module} {
  gpu.module @kernels {
    // y[i] = max(x[i], 0)
    gpu.func @relu(%y: memref<1024xf32>, %x: memref<1024xf32>) kernel {
      %i = gpu.global_id x
      %zero = arith.constant 0.0 : f32
      %v = memref.load %x[%i] : memref<1024xf32>
      %pos = arith.cmpf ogt, %v, %zero : f32
      %r = arith.select %pos, %v, %zero : f32
      memref.store %r, %y[%i] : memref<1024xf32>
      gpu.return
    }
    // y[i] = x[i] * x[i]
    gpu.func @square(%y: memref<1024xf32>, %x: memref<1024xf32>) kernel {
      %i = gpu.global_id x
      %v = memref.load %x[%i] : memref<1024xf32>
      %r = arith.mulf %v, %v : f32
      memref.store %r, %y[%i] : memref<1024xf32>
      gpu.return
    }
    // y[i] = -x[i]
    gpu.func @negate(%y: memref<1024xf32>, %x: memref<1024xf32>) kernel {
      %i = gpu.global_id x
      %v = memref.load %x[%i] : memref<1024xf32>
      %r = arith.negf %v : f32
      memref.store %r, %y[%i] : memref<1024xf32>
      gpu.return
    }
  }
  func.func @main(%mode: memref<i32> {crec.name = "mode"}, %x: memref<1024xf32> {crec.name = "x"},
                  %y: memref<1024xf32> {crec.name = "y"}) {
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c256 = arith.constant 256 : index
    %m = memref.load %mode[] : memref<i32>
    %which = arith.index_cast %m : i32 to index
    scf.index_switch %which {crec.name = "by mode"}
    case 0 {
      gpu.launch_func @kernels::@relu blocks in (%c4, %c1, %c1) threads in (%c256, %c1, %c1)
          args(%y : memref<1024xf32>, %x : memref<1024xf32>) {crec.name = "y = max(x, 0)"}
      scf.yield
    }
    case 1 {
      gpu.launch_func @kernels::@square blocks in (%c4, %c1, %c1) threads in (%c256, %c1, %c1)
          args(%y : memref<1024xf32>, %x : memref<1024xf32>) {crec.name = "y = x * x"}
      scf.yield
    }
    case 2 {
      gpu.launch_func @kernels::@negate blocks in (%c4, %c1, %c1) threads in (%c256, %c1, %c1)
          args(%y : memref<1024xf32>, %x : memref<1024xf32>) {crec.name = "y = -x"}
      scf.yield
    }
    default {
      gpu.memcpy %y, %x : memref<1024xf32>, memref<1024xf32> {crec.name = "y = x"}
      scf.yield
    }
    return
  }
}
