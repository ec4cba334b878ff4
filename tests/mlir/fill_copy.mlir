// Fills and copies of device memory as linalg and the gpu dialect write them:
// gpu.alloc makes a temporary; linalg.fill with a constant is a memset (0.5 as
// 4-byte elements, 7 and 9 as 2-byte ones); linalg.copy and memref.copy are
// memcpys, here of a whole argument and into a subview. Then
// y = x + 0.5, x = y, flags = 32 sevens then 32 nines.
module {
  func.func @main(%x: memref<256xf32> {crec.name = "x"}, %y: memref<256xf32> {crec.name = "y"},
                  %flags: memref<64xi16> {crec.name = "flags"}) {
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c128 = arith.constant 128 : index
    %half = arith.constant 0.5 : f32
    %t0 = gpu.wait async
    %buf, %t1 = gpu.alloc async [%t0] () : memref<256xf32>
    linalg.fill ins(%half : f32) outs(%buf : memref<256xf32>)
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c2, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
      %base = arith.muli %bx, %sx : index
      %i = arith.addi %base, %tx : index
      %a = memref.load %x[%i] : memref<256xf32>
      %b = memref.load %buf[%i] : memref<256xf32>
      %s = arith.addf %a, %b : f32
      memref.store %s, %y[%i] : memref<256xf32>
      gpu.terminator
    }
    %t2 = gpu.dealloc async [%t1] %buf : memref<256xf32>
    linalg.copy ins(%y : memref<256xf32>) outs(%x : memref<256xf32>)
    %seven = arith.constant 7 : i16
    %nine = arith.constant 9 : i16
    linalg.fill ins(%seven : i16) outs(%flags : memref<64xi16>)
    %scratch = gpu.alloc () : memref<32xi16>
    linalg.fill ins(%nine : i16) outs(%scratch : memref<32xi16>)
    %hi = memref.subview %flags[32] [32] [1] : memref<64xi16> to memref<32xi16, strided<[1], offset: 32>>
    memref.copy %scratch, %hi : memref<32xi16> to memref<32xi16, strided<[1], offset: 32>>
    gpu.dealloc %scratch : memref<32xi16>
    return
  }
}
