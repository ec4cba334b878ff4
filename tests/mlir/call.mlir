// x = 3 * (2x + b) + 1 over 128 floats, through a helper function called twice,
// the way MLIR's GPU integration tests factor kernels out of main. crec inlines
// each call (MLIR's inliner) before lowering, so the entry is one body; the
// helper's inline gpu.launch is then outlined once per call. The helper takes a
// dynamic memref (a memref.cast of the argument), whose size the cast keeps known,
// and returns the grid it computed with another helper.
module {
  func.func @blocks_for(%n: index, %per: index) -> index {
    %g = arith.ceildivui %n, %per : index
    return %g : index
  }
  func.func @scale_add(%buf: memref<?xf32>, %a: f32, %b: f32) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %n = memref.dim %buf, %c0 : memref<?xf32>
    %grid = func.call @blocks_for(%n, %c64) : (index, index) -> index
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %grid, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
      %base = arith.muli %bx, %sx : index
      %i = arith.addi %base, %tx : index
      %v = memref.load %buf[%i] : memref<?xf32>
      %m = arith.mulf %v, %a : f32
      %r = arith.addf %m, %b : f32
      memref.store %r, %buf[%i] : memref<?xf32>
      gpu.terminator
    }
    return
  }
  func.func @main(%x: memref<128xf32> {crec.name = "x"}, %b: f32 {crec.name = "b"}) {
    %two = arith.constant 2.0 : f32
    %three = arith.constant 3.0 : f32
    %one = arith.constant 1.0 : f32
    %d = memref.cast %x : memref<128xf32> to memref<?xf32>
    call @scale_add(%d, %two, %b) : (memref<?xf32>, f32, f32) -> ()
    call @scale_add(%d, %three, %one) : (memref<?xf32>, f32, f32) -> ()
    return
  }
}
