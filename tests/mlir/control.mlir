// Device-side control flow. Each condition is a memref.load from device memory:
//  - scf.while: count a device counter down; its 'before' region runs the step
//    kernel and loads the i8 flag it writes ('arith.cmpi ne, 0');
//  - scf.if on a loaded i1, with an else branch;
//  - scf.index_switch on a loaded i32 (arith.index_cast), with cases 0 and 5.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @step(%counter: memref<i32>, %flag: memref<i8>) kernel {
      %c = memref.load %counter[] : memref<i32>
      %c0 = arith.constant 0 : i32
      %c1 = arith.constant 1 : i32
      %pos = arith.cmpi sgt, %c, %c0 : i32
      %d = arith.subi %c, %c1 : i32
      %n = arith.select %pos, %d, %c0 : i32
      memref.store %n, %counter[] : memref<i32>
      %more = arith.cmpi ne, %n, %c0 : i32
      %f = arith.extui %more : i1 to i8
      memref.store %f, %flag[] : memref<i8>
      gpu.return
    }
    gpu.func @add(%x: memref<64xf32>, %v: f32) kernel {
      %i = gpu.thread_id x
      %a = memref.load %x[%i] : memref<64xf32>
      %b = arith.addf %a, %v : f32
      memref.store %b, %x[%i] : memref<64xf32>
      gpu.return
    }
  }
  func.func @main(%counter: memref<i32> {crec.name = "counter"}, %flag: memref<i8> {crec.name = "flag"},
                  %cond: memref<2xi1> {crec.name = "cond"}, %which: memref<i32> {crec.name = "which"},
                  %x: memref<64xf32> {crec.name = "x"}) {
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %one = arith.constant 1.0 : f32
    %ten = arith.constant 10.0 : f32
    %hundred = arith.constant 100.0 : f32
    scf.while : () -> () {
      gpu.launch_func @kernels::@step blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
          args(%counter : memref<i32>, %flag : memref<i8>)
      %f = memref.load %flag[] : memref<i8>
      %c0i8 = arith.constant 0 : i8
      %go = arith.cmpi ne, %f, %c0i8 : i8
      scf.condition(%go)
    } do {
      gpu.launch_func @kernels::@add blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1)
          args(%x : memref<64xf32>, %one : f32)
      scf.yield
    }
    %p = memref.load %cond[%c1] : memref<2xi1>
    scf.if %p {
      gpu.launch_func @kernels::@add blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1)
          args(%x : memref<64xf32>, %ten : f32)
    } else {
      gpu.launch_func @kernels::@add blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1)
          args(%x : memref<64xf32>, %hundred : f32)
    }
    %w = memref.load %which[] : memref<i32>
    %idx = arith.index_cast %w : i32 to index
    scf.index_switch %idx
    case 0 {
      gpu.launch_func @kernels::@add blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1)
          args(%x : memref<64xf32>, %one : f32)
      scf.yield
    }
    case 5 {
      "crec.barrier"() : () -> ()
      scf.yield
    }
    default {
      gpu.launch_func @kernels::@add blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1)
          args(%x : memref<64xf32>, %ten : f32)
      scf.yield
    }
    return
  }
}
