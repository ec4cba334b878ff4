// Thread block clusters of 4 x 4 blocks over a 16 x 16 grid (sm_90): 16 blocks
// a cluster, more than the 8 CUDA calls portable, so crec allows the kernel
// non-portable cluster sizes when it loads it. Each block writes what it reads
// of its cluster: its size (gpu.cluster_dim_blocks, which MLIR 19 does not lower
// for NVVM, so crec reads %cluster_nctaid itself) and its place in the grid of
// clusters (gpu.cluster_id): out[by][bx] = 1000 dx + 100 dy + 10 cx + cy.
// RUN: crec run --quiet %s | FileCheck %s
module attributes {gpu.container_module} {
  func.func private @printMemrefI32(memref<*xi32>)
  func.func @main() {
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c16 = arith.constant 16 : index
    %out = memref.alloc() : memref<16x16xi32>
    gpu.launch clusters(%cx, %cy, %cz) in (%ncx = %c4, %ncy = %c4, %ncz = %c1)
               blocks(%bx, %by, %bz) in (%gx = %c16, %gy = %c16, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
      %dx = gpu.cluster_dim_blocks x
      %dy = gpu.cluster_dim_blocks y
      %ix = gpu.cluster_id x
      %iy = gpu.cluster_id y
      %c10 = arith.constant 10 : index
      %c100 = arith.constant 100 : index
      %c1000 = arith.constant 1000 : index
      %a = arith.muli %dx, %c1000 : index
      %b = arith.muli %dy, %c100 : index
      %c = arith.muli %ix, %c10 : index
      %ab = arith.addi %a, %b : index
      %abc = arith.addi %ab, %c : index
      %v = arith.addi %abc, %iy : index
      %w = arith.index_cast %v : index to i32
      memref.store %w, %out[%by, %bx] : memref<16x16xi32>
      gpu.terminator
    }
    %u = memref.cast %out : memref<16x16xi32> to memref<*xi32>
    // CHECK: [4400,   4400,   4400,   4400,   4410,   4410,   4410,   4410,   4420,
    call @printMemrefI32(%u) : (memref<*xi32>) -> ()
    return
  }
}
