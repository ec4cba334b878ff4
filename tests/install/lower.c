/* Lowers MLIR against an installed crec and prints the program's JSON dump.
 * Built twice (tests/install/CMakeLists.txt): over libcrec.so, which opens the
 * front end installed beside it, and over libcrec.a with libcrec-mlir.a linked in. */
#include <crec/crec.h>
#include <stdio.h>
#include <string.h>

int main(void) {
  static const char text[] = "module {\n"
                             "  func.func @main(%x: memref<16xf32>) {\n"
                             "    %c = arith.constant 0.0 : f32\n"
                             "    linalg.fill ins(%c : f32) outs(%x : memref<16xf32>)\n"
                             "    return\n"
                             "  }\n"
                             "}\n";
  crec_program *p;
  if (crec_lower_mlir_string(text, strlen(text), NULL, &p)) {
    fprintf(stderr, "%s\n", crec_last_error());
    return 1;
  }
  char *json;
  if (crec_dump(p, NULL, CREC_DUMP_JSON, &json, NULL)) return 1;
  printf("crec %s: %s", crec_version(), json);
  crec_free(json);
  crec_program_destroy(p);
  return 0;
}
