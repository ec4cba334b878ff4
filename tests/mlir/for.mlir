// Loops around launches, written as MLIR's GPU tests write them: scf.for with
// constant bounds in the entry function, around inline gpu.launch kernels.
//  - The first loop's body does not use its induction variable: it becomes one
//    device loop (a while command whose iterations a small kernel counts on the
//    device), adding 1 to x ten times.
//  - The second loop's kernel takes the induction variable: the loop is unrolled
//    into four launches, each passing its own row, which write
//    y[row][t] = 100 * row + t.
module {
  func.func @main(%x: memref<256xf32> {crec.name = "x"}, %y: memref<4x64xf32> {crec.name = "y"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    %c10 = arith.constant 10 : index
    %c64 = arith.constant 64 : index
    %c100 = arith.constant 100 : index
    %c128 = arith.constant 128 : index
    %one = arith.constant 1.0 : f32
    scf.for %it = %c0 to %c10 step %c1 {
      gpu.launch blocks(%bx, %by, %bz) in (%gx = %c2, %gy = %c1, %gz = %c1)
                 threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
        %base = arith.muli %bx, %sx : index
        %i = arith.addi %base, %tx : index
        %v = memref.load %x[%i] : memref<256xf32>
        %w = arith.addf %v, %one : f32
        memref.store %w, %x[%i] : memref<256xf32>
        gpu.terminator
      }
    }
    scf.for %row = %c0 to %c4 step %c1 {
      gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
                 threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
        %r = arith.muli %row, %c100 : index
        %v = arith.addi %r, %tx : index
        %vi = arith.index_cast %v : index to i32
        %f = arith.sitofp %vi : i32 to f32
        memref.store %f, %y[%row, %tx] : memref<4x64xf32>
        gpu.terminator
      }
    }
    return
  }
}
