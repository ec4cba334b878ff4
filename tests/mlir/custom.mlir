// A custom call: the handler registered under "example.axpb" (by the program
// that embeds crec) gets dst, a hole (NULL) and src, the kernel @kernels::@axpb
// to launch by index, and the other attributes as text: "{a = ..., b = ...}".
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @axpb(%dst: memref<256xf32>, %src: memref<256xf32>, %a: f32, %b: f32) kernel {
      %i = gpu.global_id x
      %v = memref.load %src[%i] : memref<256xf32>
      %m = arith.mulf %v, %a : f32
      %r = arith.addf %m, %b : f32
      memref.store %r, %dst[%i] : memref<256xf32>
      gpu.return
    }
  }
  func.func @main(%src: memref<256xf32> {crec.name = "src"}, %dst: memref<256xf32> {crec.name = "dst"}) {
    "crec.custom_call"(%dst, %src) {target = "example.axpb", holes = array<i64: 1>, access = ["w", "r"],
                                    kernels = [@kernels::@axpb], a = 3.0 : f32, b = 0.5 : f32}
        : (memref<256xf32>, memref<256xf32>) -> ()
    return
  }
}
