// Jacobi iterations whose loop condition is computed on the device. Solves
// A x = b for the 256 x 256 tridiagonal matrix A with 4 on the diagonal and -1
// next to it, starting from x = 0, until the largest residual |b - A x| is
// below `tol` (or after 1000 sweeps).
//
// scf.while runs as a CUDA conditional WHILE node: its 'before' region (the
// condition) launches `residual`, which writes the largest residual and the
// flag `more`; the condition is the memref.load of that flag. The 'after'
// region (the body) is one sweep into a temporary and a copy back. The host
// never waits for the flag: the whole solve is one graph launch.
//
// With b = 1, x converges to about 0.5 in the middle (0.366 at the ends) in
// about 14 sweeps for tol = 1e-4:
//
//   crec run examples/jacobi.mlir --input b=fill:1 --scalar tol=1e-4 --check
module attributes {gpu.container_module} {
  gpu.module @kernels {
    // xn[i] = (b[i] + x[i-1] + x[i+1]) / 4 (x[-1] = x[256] = 0); thread 0 counts the sweep.
    gpu.func @sweep(%xn: memref<256xf32>, %x: memref<256xf32>, %b: memref<256xf32>, %sweeps: memref<i32>) kernel {
      %i = gpu.global_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c255 = arith.constant 255 : index
      %zero = arith.constant 0.0 : f32
      %quarter = arith.constant 0.25 : f32
      %has_left = arith.cmpi ugt, %i, %c0 : index
      %left = scf.if %has_left -> (f32) {
        %j = arith.subi %i, %c1 : index
        %v = memref.load %x[%j] : memref<256xf32>
        scf.yield %v : f32
      } else {
        scf.yield %zero : f32
      }
      %has_right = arith.cmpi ult, %i, %c255 : index
      %right = scf.if %has_right -> (f32) {
        %j = arith.addi %i, %c1 : index
        %v = memref.load %x[%j] : memref<256xf32>
        scf.yield %v : f32
      } else {
        scf.yield %zero : f32
      }
      %bi = memref.load %b[%i] : memref<256xf32>
      %s0 = arith.addf %bi, %left : f32
      %s1 = arith.addf %s0, %right : f32
      %r = arith.mulf %s1, %quarter : f32
      memref.store %r, %xn[%i] : memref<256xf32>
      %first = arith.cmpi eq, %i, %c0 : index
      scf.if %first {
        %k = memref.load %sweeps[] : memref<i32>
        %one = arith.constant 1 : i32
        %k1 = arith.addi %k, %one : i32
        memref.store %k1, %sweeps[] : memref<i32>
      }
      gpu.return
    }
    // One thread: res = max |b - A x|; more = res >= tol and fewer than 1000 sweeps ran.
    gpu.func @residual(%x: memref<256xf32>, %b: memref<256xf32>, %tol: f32, %sweeps: memref<i32>,
                       %res: memref<f32>, %more: memref<i8>) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c255 = arith.constant 255 : index
      %c256 = arith.constant 256 : index
      %zero = arith.constant 0.0 : f32
      %four = arith.constant 4.0 : f32
      %max = scf.for %i = %c0 to %c256 step %c1 iter_args(%acc = %zero) -> (f32) {
        %has_left = arith.cmpi ugt, %i, %c0 : index
        %left = scf.if %has_left -> (f32) {
          %j = arith.subi %i, %c1 : index
          %v = memref.load %x[%j] : memref<256xf32>
          scf.yield %v : f32
        } else {
          scf.yield %zero : f32
        }
        %has_right = arith.cmpi ult, %i, %c255 : index
        %right = scf.if %has_right -> (f32) {
          %j = arith.addi %i, %c1 : index
          %v = memref.load %x[%j] : memref<256xf32>
          scf.yield %v : f32
        } else {
          scf.yield %zero : f32
        }
        %xi = memref.load %x[%i] : memref<256xf32>
        %bi = memref.load %b[%i] : memref<256xf32>
        %d = arith.mulf %four, %xi : f32
        %ax0 = arith.subf %d, %left : f32
        %ax = arith.subf %ax0, %right : f32
        %r = arith.subf %bi, %ax : f32
        %neg = arith.negf %r : f32
        %is_neg = arith.cmpf olt, %r, %zero : f32
        %abs = arith.select %is_neg, %neg, %r : f32
        %bigger = arith.cmpf ogt, %abs, %acc : f32
        %next = arith.select %bigger, %abs, %acc : f32
        scf.yield %next : f32
      }
      memref.store %max, %res[] : memref<f32>
      %k = memref.load %sweeps[] : memref<i32>
      %cap = arith.constant 1000 : i32
      %under_cap = arith.cmpi slt, %k, %cap : i32
      %too_big = arith.cmpf oge, %max, %tol : f32
      %go = arith.andi %too_big, %under_cap : i1
      %flag = arith.extui %go : i1 to i8
      memref.store %flag, %more[] : memref<i8>
      gpu.return
    }
  }
  func.func @main(%b: memref<256xf32> {crec.name = "b"}, %x: memref<256xf32> {crec.name = "x"},
                  %sweeps: memref<i32> {crec.name = "sweeps"}, %res: memref<f32> {crec.name = "residual"},
                  %tol: f32 {crec.name = "tol"}) {
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %zero = arith.constant 0.0 : f32
    %zero_i32 = arith.constant 0 : i32
    %zero_i8 = arith.constant 0 : i8
    %more = memref.alloc() {crec.name = "more"} : memref<i8>
    %xn = memref.alloc() {crec.name = "x_next"} : memref<256xf32>
    gpu.memset %x, %zero : memref<256xf32>, f32 {crec.name = "x = 0"}
    gpu.memset %sweeps, %zero_i32 : memref<i32>, i32 {crec.name = "sweeps = 0"}
    scf.while : () -> () {
      gpu.launch_func @kernels::@residual blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
          args(%x : memref<256xf32>, %b : memref<256xf32>, %tol : f32, %sweeps : memref<i32>,
               %res : memref<f32>, %more : memref<i8>) {crec.name = "residual, more"}
      %f = memref.load %more[] : memref<i8>
      %go = arith.cmpi ne, %f, %zero_i8 : i8
      scf.condition(%go)
    } do {
      gpu.launch_func @kernels::@sweep blocks in (%c1, %c1, %c1) threads in (%c256, %c1, %c1)
          args(%xn : memref<256xf32>, %x : memref<256xf32>, %b : memref<256xf32>, %sweeps : memref<i32>)
          {crec.name = "x_next = sweep(x)"}
      gpu.memcpy %x, %xn : memref<256xf32>, memref<256xf32> {crec.name = "x = x_next"}
      scf.yield
    } attributes {crec.name = "while more"}
    memref.dealloc %xn : memref<256xf32>
    memref.dealloc %more : memref<i8>
    return
  }
}
