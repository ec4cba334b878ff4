// Fourier transforms through cuFFT, with XLA's meaning: fft_length is the
// trailing dimensions of the real side, the dimensions before them are a batch,
// and the inverses are normalized, so each inverse undoes its forward:
//  - 4 real signals of 64 samples to their 33 frequencies (RFFT) in a temporary,
//    and back (IRFFT, scaled by 1/64);
//  - a 2-D FFT of 2 complex images of 8x16, in place, with a 64 KiB workspace,
//    then its inverse (IFFT, scaled by 1/128) into another memref.
module {
  func.func @main(%signal: memref<4x64xf32> {crec.name = "signal"}, %back: memref<4x64xf32> {crec.name = "back"},
                  %image: memref<2x8x16xcomplex<f64>> {crec.name = "image"},
                  %image_back: memref<2x8x16xcomplex<f64>> {crec.name = "image_back"}) {
    %spectrum = memref.alloc() {crec.name = "spectrum"} : memref<4x33xcomplex<f32>>
    "crec.fft"(%signal, %spectrum) {crec.name = "rfft", fft_type = "RFFT", fft_length = [64]}
        : (memref<4x64xf32>, memref<4x33xcomplex<f32>>) -> ()
    "crec.fft"(%spectrum, %back) {crec.name = "irfft", fft_type = "IRFFT", fft_length = array<i64: 64>}
        : (memref<4x33xcomplex<f32>>, memref<4x64xf32>) -> ()
    memref.dealloc %spectrum : memref<4x33xcomplex<f32>>
    "crec.fft"(%image, %image) {crec.name = "fft2", fft_type = "FFT", fft_length = [8, 16],
                                workspace_bytes = 65536 : i64}
        : (memref<2x8x16xcomplex<f64>>, memref<2x8x16xcomplex<f64>>) -> ()
    "crec.fft"(%image, %image_back) {fft_type = "IFFT", fft_length = [8, 16]}
        : (memref<2x8x16xcomplex<f64>>, memref<2x8x16xcomplex<f64>>) -> ()
    return
  }
}
