/* Builds a program against an installed crec and prints its JSON dump. */
#include <crec/crec.h>
#include <stdio.h>

int main(void) {
  crec_program *p;
  crec_buffer x;
  if (crec_program_create(&p) || crec_program_add_argument(p, "x", 64, NULL, &x)) {
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
