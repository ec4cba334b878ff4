// y = 2x + b over 256 floats, with its kernel written the way MLIR's own GPU
// integration tests write kernels: an inline gpu.launch whose body uses values
// of the host function (x, y, b and the constant 2). crec outlines it into a
// gpu.module kernel (MLIR's gpu-kernel-outlining) before lowering.
module {
  func.func @main(%x: memref<256xf32> {crec.name = "x"}, %y: memref<256xf32> {crec.name = "y"},
                  %b: f32 {crec.name = "b"}) {
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c128 = arith.constant 128 : index
    %two = arith.constant 2.0 : f32
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c2, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
      %base = arith.muli %bx, %sx : index
      %i = arith.addi %base, %tx : index
      %v = memref.load %x[%i] : memref<256xf32>
      %w = arith.mulf %v, %two : f32
      %r = arith.addf %w, %b : f32
      memref.store %r, %y[%i] : memref<256xf32>
      gpu.terminator
    }
    return
  }
}
