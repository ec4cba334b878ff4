// Convolutions through cuDNN. linalg's convolutions accumulate into their
// output (out += conv) while cuDNN's overwrite it, so crec lowers one only
// right after a zero fill of its whole output; "crec.conv" overwrites:
//  - NHWC activations and linalg's HWCF filter (which crec transposes into the
//    workspace), stride 2, after a linalg.fill of 0;
//  - a depthwise convolution of 4 channels in f16 (one group per channel),
//    dilation 2, after a gpu.memset of 0;
//  - "crec.conv": a forward pass with padding 1, a bias and a ReLU fused, then
//    its two backward passes, XLA's [lo, hi] padding on one of them.
module {
  func.func @main(%x: memref<2x9x9x3xf32> {crec.name = "x"}, %w: memref<3x3x3x8xf32> {crec.name = "w"},
                  %y: memref<2x4x4x8xf32> {crec.name = "y"}, %img: memref<1x4x12x12xf16> {crec.name = "img"},
                  %k: memref<4x3x3xf16> {crec.name = "k"}, %edges: memref<1x4x8x8xf16> {crec.name = "edges"},
                  %a: memref<2x3x16x16xf32> {crec.name = "a"}, %f: memref<8x3x3x3xf32> {crec.name = "f"},
                  %b: memref<8xf32> {crec.name = "b"}, %out: memref<2x8x16x16xf32> {crec.name = "out"},
                  %da: memref<2x3x16x16xf32> {crec.name = "da"}, %df: memref<8x3x3x3xf32> {crec.name = "df"}) {
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%y : memref<2x4x4x8xf32>)
    linalg.conv_2d_nhwc_hwcf {crec.name = "stem", strides = dense<2> : tensor<2xi64>}
        ins(%x, %w : memref<2x9x9x3xf32>, memref<3x3x3x8xf32>) outs(%y : memref<2x4x4x8xf32>)
    %zero16 = arith.constant 0.0 : f16
    gpu.memset %edges, %zero16 : memref<1x4x8x8xf16>, f16
    linalg.depthwise_conv_2d_nchw_chw {crec.name = "depthwise", dilations = dense<[2, 2]> : tensor<2xi64>}
        ins(%img, %k : memref<1x4x12x12xf16>, memref<4x3x3xf16>) outs(%edges : memref<1x4x8x8xf16>)
    "crec.conv"(%a, %f, %out, %b) {crec.name = "forward", padding = [1, 1], activation = "relu"}
        : (memref<2x3x16x16xf32>, memref<8x3x3x3xf32>, memref<2x8x16x16xf32>, memref<8xf32>) -> ()
    "crec.conv"(%da, %f, %out) {crec.name = "dgrad", kind = "backward_data", padding = [[1, 1], [1, 1]]}
        : (memref<2x3x16x16xf32>, memref<8x3x3x3xf32>, memref<2x8x16x16xf32>) -> ()
    "crec.conv"(%a, %df, %out) {crec.name = "wgrad", kind = "backward_filter", padding = [1, 1],
                                algorithm = "search", workspace_bytes = 1048576 : i64}
        : (memref<2x3x16x16xf32>, memref<8x3x3x3xf32>, memref<2x8x16x16xf32>) -> ()
    return
  }
}
