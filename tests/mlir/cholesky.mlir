// Cholesky factorizations through cuSOLVER, with XLA's meaning: the last two
// dimensions are n x n symmetric positive definite matrices, the ones before
// them a batch, and lower = true (the default) reads the lower triangle and
// writes L there, A = L·Lᵀ. On memrefs the factorization is in place:
//  - 3 matrices of 16x16 f32 copied first (memref.copy), so that %a keeps A,
//    then factored in the copy, their info (one i32 per matrix) in %info;
//  - one 8x8 f64 matrix factored as A = Uᵀ·U in its upper triangle
//    (lower = false), with a 64 KiB workspace and no info operand: its info
//    goes to a temporary of the program, "upper.info".
module {
  func.func @main(%a: memref<3x16x16xf32> {crec.name = "a"}, %l: memref<3x16x16xf32> {crec.name = "l"},
                  %info: memref<3xi32> {crec.name = "info"}, %b: memref<8x8xf64> {crec.name = "b"}) {
    memref.copy %a, %l : memref<3x16x16xf32> to memref<3x16x16xf32>
    "crec.cholesky"(%l, %info) {crec.name = "chol"} : (memref<3x16x16xf32>, memref<3xi32>) -> ()
    "crec.cholesky"(%b) {crec.name = "upper", lower = false, workspace_bytes = 65536 : i64}
        : (memref<8x8xf64>) -> ()
    return
  }
}
