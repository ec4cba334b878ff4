/* A small program built with the C API: y = 2x + x through a temporary.
 * Prints the program's text dump and its JSON. */
#include <stdio.h>

#include "crec/crec.h"

extern const unsigned char example_kernels_ptx[];
extern const size_t example_kernels_ptx_size;

#define CHECK(call)                                                               \
  do {                                                                            \
    crec_status s_ = (call);                                                      \
    if (s_ != CREC_OK) {                                                          \
      fprintf(stderr, "chain: %s: %s\n", crec_status_name(s_), crec_last_error()); \
      crec_program_destroy(p);                                                    \
      return 2;                                                                   \
    }                                                                             \
  } while (0)

int main(void) {
  enum { N = 1024 };
  crec_program *p = NULL;
  crec_module m;
  crec_kernel scale, add;
  crec_buffer x, y, t;
  crec_command c;
  CHECK(crec_program_create(&p));
  CHECK(crec_program_add_module(p, "kernels", CREC_IMAGE_PTX, example_kernels_ptx,
                                example_kernels_ptx_size, &m));
  CHECK(crec_program_add_kernel(p, m, "scale", NULL, &scale));
  CHECK(crec_program_add_kernel(p, m, "add", NULL, &add));
  CHECK(crec_program_add_argument(p, "x", N * sizeof(float), NULL, &x));
  CHECK(crec_program_add_argument(p, "y", N * sizeof(float), NULL, &y));
  CHECK(crec_program_add_temporary(p, "t", N * sizeof(float), &t));

  crec_arg scale_args[] = {crec_arg_buffer(crec_range_whole(t), CREC_ACCESS_WRITE),
                           crec_arg_buffer(crec_range_whole(x), CREC_ACCESS_READ),
                           crec_arg_f32(2.0f), crec_arg_i32(N)};
  crec_launch l = CREC_LAUNCH_INIT;
  l.kernel = scale;
  l.grid[0] = crec_dim_of(N / 256);
  l.block[0] = crec_dim_of(256);
  l.args = scale_args;
  l.num_args = 4;
  CHECK(crec_program_add_launch(p, crec_program_body(p), "t = 2x", &l, &c));

  crec_arg add_args[] = {crec_arg_buffer(crec_range_whole(y), CREC_ACCESS_WRITE),
                         crec_arg_buffer(crec_range_whole(t), CREC_ACCESS_READ),
                         crec_arg_buffer(crec_range_whole(x), CREC_ACCESS_READ), crec_arg_i32(N)};
  l.kernel = add;
  l.args = add_args;
  CHECK(crec_program_add_launch(p, crec_program_body(p), "y = t + x", &l, &c));

  char *text = NULL;
  CHECK(crec_dump(p, NULL, CREC_DUMP_TEXT, &text, NULL));
  fputs(text, stdout);
  crec_free(text);
  CHECK(crec_dump(p, NULL, CREC_DUMP_JSON, &text, NULL));
  fputs(text, stdout);
  crec_free(text);
  crec_program_destroy(p);
  return 0;
}
