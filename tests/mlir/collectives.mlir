// Collectives over the communicator slot "world" of num_ranks ranks, bound at
// each execution (crec_bindings.communicators). On one rank:
//  - an async all_reduce (NCCL) whose done comes after the other two, which
//    overlap it (they read x too, and write elsewhere);
//  - an all_gather whose groups hold one rank each: a copy, no NCCL call;
//  - a collective_permute from rank 0 to itself: a copy as well.
module {
  func.func @main(%x: memref<256xf32> {crec.name = "x"}, %sum: memref<256xf32> {crec.name = "sum"},
                  %gathered: memref<256xf32> {crec.name = "gathered"},
                  %ids: memref<64xi32> {crec.name = "ids"}, %moved: memref<64xi32> {crec.name = "moved"}) {
    "crec.all_reduce"(%x, %sum) {reduction = "sum", num_ranks = 1 : i64, async_id = "grad"}
        : (memref<256xf32>, memref<256xf32>) -> ()
    "crec.all_gather"(%x, %gathered) {replica_groups = dense<[[0]]> : tensor<1x1xi64>}
        : (memref<256xf32>, memref<256xf32>) -> ()
    "crec.collective_permute"(%ids, %moved) {source_target_pairs = dense<[[0, 0]]> : tensor<1x2xi64>}
        : (memref<64xi32>, memref<64xi32>) -> ()
    "crec.collective_done"() {async_id = "grad"} : () -> ()
    return
  }
}
