// XLA's ReplicaId and PartitionId: each writes one i32 taken from the rank of the
// communicator bound at each execution (a memset node, never NCCL). Without
// replica_groups every rank is its own replica; with them, the groups are the
// device assignment: a row per replica, a column per partition. On one rank
// (num_ranks = 1) all three write 0.
module {
  func.func @main(%replica: memref<1xi32> {crec.name = "replica"}, %partition: memref<1xi32> {crec.name = "partition"},
                  %assigned: memref<1xi32> {crec.name = "assigned"}) {
    "crec.replica_id"(%replica) {num_ranks = 1 : i64} : (memref<1xi32>) -> ()
    "crec.partition_id"(%partition) : (memref<1xi32>) -> ()
    "crec.replica_id"(%assigned) {replica_groups = dense<[[0]]> : tensor<1x1xi64>} : (memref<1xi32>) -> ()
    return
  }
}
