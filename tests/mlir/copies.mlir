// Copies and fills: gpu.memset, gpu.memcpy (device to device, and from a pinned
// host argument), memref.copy. Async tokens and gpu.wait are accepted but order
// nothing: crec orders commands by the bytes they touch.
module attributes {gpu.container_module} {
  func.func @main(%src: memref<256xf32> {crec.name = "src"},
                  %host: memref<256xf32> {crec.name = "host", crec.memory = "host"},
                  %dst: memref<256xf32> {crec.name = "dst"}) {
    %zero = arith.constant 0.0 : f32
    %t0 = gpu.wait async
    %t1 = gpu.memset async [%t0] %dst, %zero : memref<256xf32>, f32
    %t2 = gpu.memcpy async [%t1] %dst, %src : memref<256xf32>, memref<256xf32>
    gpu.wait [%t2]
    gpu.memcpy %src, %host : memref<256xf32>, memref<256xf32>
    memref.copy %dst, %src : memref<256xf32> to memref<256xf32>
    return
  }
}
