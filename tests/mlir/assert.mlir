// cf.assert in a kernel, as CUDA's assert() works: a failing thread prints
// "FILE:LINE: FUNCTION: block: [x,y,z], thread: [x,y,z] Assertion `MESSAGE`
// failed." on standard error and stops the kernel. FILE, LINE and FUNCTION come from the
// assert's location (a named location gives FUNCTION; without one it is the
// kernel's name, and FILE:LINE the assert's place in this file). Each of the
// two threads passes the first assert, prints, and fails the second; crec run
// exits 3 and nothing after the failed assert runs.
// RUN: crec run --quiet %s 2>&1 | FileCheck %s
// CHECK-DAG: thread 0: v = 5
// CHECK-DAG: thread 1: v = 6
// CHECK-DAG: bounds.cu:42: check_bounds: block: [0,0,0], thread: [0,0,0] Assertion `v is over the limit` failed.
// CHECK-DAG: bounds.cu:42: check_bounds: block: [0,0,0], thread: [1,0,0] Assertion `v is over the limit` failed.
// CHECK-NOT: after the failed assertion
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @bounds(%limit: index) kernel {
      %t = gpu.thread_id x
      %c5 = arith.constant 5 : index
      %v = arith.addi %t, %c5 : index
      %below = arith.cmpi ult, %v, %limit : index
      cf.assert %below, "v is below the limit"
      gpu.printf "thread %lld: v = %lld\n" %t, %v : index, index
      %over = arith.cmpi ugt, %v, %limit : index
      cf.assert %over, "v is over the limit" loc("check_bounds"("bounds.cu":42:3))
      gpu.printf "thread %lld: after the failed assertion\n" %t : index
      gpu.return
    }
  }
  func.func @main() {
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c10 = arith.constant 10 : index
    gpu.launch_func @kernels::@bounds blocks in (%c1, %c1, %c1) threads in (%c2, %c1, %c1) args(%c10 : index)
    return
  }
}
