// Host scalar arithmetic: arith and index ops on scalar arguments that feed
// launch dims and kernel scalars are gathered into one host function, compiled
// to native code (LLVM ORC) and run before each execution whose scalars changed.
// Constant expressions fold at lowering time.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @scale(%x: memref<?xf32>, %n: i32, %s: f32) kernel {
      %i = gpu.global_id x
      %ni = arith.index_cast %n : i32 to index
      %in = arith.cmpi ult, %i, %ni : index
      scf.if %in {
        %v = memref.load %x[%i] : memref<?xf32>
        %w = arith.mulf %v, %s : f32
        memref.store %w, %x[%i] : memref<?xf32>
      }
      gpu.return
    }
  }
  func.func @main(%x: memref<?xf32> {crec.name = "x"}, %rows: index {crec.name = "rows"},
                  %cols: index {crec.name = "cols"}, %alpha: f32 {crec.name = "alpha"}) {
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c128 = arith.constant 128 : index
    %c64 = arith.constant 64 : index
    // n = rows * cols; grid = ceildiv(n, 2 * 64) (2 * 64 folds to 128)
    %n = index.mul %rows, %cols
    %per = arith.muli %c2, %c64 : index
    %blocks = index.ceildivu %n, %per
    // the kernel takes n as i32 and alpha doubled
    %n32 = arith.index_cast %n : index to i32
    %twice = arith.addf %alpha, %alpha : f32
    // at least one block even when n is 0
    %pos = arith.cmpi ugt, %blocks, %c1 : index
    %grid = arith.select %pos, %blocks, %c1 : index
    gpu.launch_func @kernels::@scale blocks in (%grid, %c1, %c1) threads in (%c128, %c1, %c1)
        args(%x : memref<?xf32>, %n32 : i32, %twice : f32)
    return
  }
}
