/* The README's C API example: y = 2x, recorded once, replayed with new buffers. */
#include <stdio.h>

#include "crec/crec.h"

extern const unsigned char example_kernels_ptx[];
extern const size_t example_kernels_ptx_size;

#define TRY(call) if ((call) != CREC_OK) { fprintf(stderr, "%s\n", crec_last_error()); return 1; }

int main(void) {
  enum { N = 1 << 20 };
  crec_program *p;
  crec_module m;
  crec_kernel scale;
  crec_buffer x, y;
  crec_command c;
  TRY(crec_program_create(&p));
  TRY(crec_program_add_module(p, "kernels", CREC_IMAGE_PTX, example_kernels_ptx, example_kernels_ptx_size, &m));
  TRY(crec_program_add_kernel(p, m, "scale", NULL, &scale));
  TRY(crec_program_add_argument(p, "x", N * 4, NULL, &x));
  TRY(crec_program_add_argument(p, "y", N * 4, NULL, &y));
  crec_arg args[] = {crec_arg_buffer(crec_range_whole(y), CREC_ACCESS_WRITE),
                     crec_arg_buffer(crec_range_whole(x), CREC_ACCESS_READ), crec_arg_f32(2.0f), crec_arg_i32(N)};
  crec_launch l = CREC_LAUNCH_INIT;
  l.kernel = scale, l.grid[0] = crec_dim_of(N / 256), l.block[0] = crec_dim_of(256);
  l.args = args, l.num_args = 4;
  TRY(crec_program_add_launch(p, crec_program_body(p), "y = 2x", &l, &c));

  if (!crec_device_available()) { printf("no CUDA device: %s\n", crec_last_error()); return 0; }
  void *buf[4];
  for (int i = 0; i < 4; i++) TRY(crec_device_alloc(0, N * 4, &buf[i]));
  static float host[N];
  for (int i = 0; i < N; i++) host[i] = (float)i;
  TRY(crec_copy(buf[0], host, N * 4));                  /* x = 0, 1, 2, ... in both buffer sets */
  TRY(crec_copy(buf[2], host, N * 4));
  crec_binding b[2] = {{buf[0], N * 4}, {buf[1], N * 4}};
  crec_bindings bindings = CREC_BINDINGS_INIT;
  bindings.buffers = b, bindings.num_buffers = 2;
  crec_exec *e;
  TRY(crec_record(p, &bindings, NULL, &e));             /* build and instantiate the graph once */
  for (int it = 0; it < 100; it++) {
    b[0].ptr = buf[(it % 2) * 2], b[1].ptr = buf[(it % 2) * 2 + 1];
    TRY(crec_exec_replay(e, &bindings, NULL));          /* update changed pointers, launch */
  }
  TRY(crec_stream_synchronize(NULL));
  TRY(crec_copy(host, buf[3], N * 4));                  /* the last replay's y */
  for (int i = 0; i < N; i++)
    if (host[i] != 2.0f * (float)i) { fprintf(stderr, "y[%d] = %g, not %g\n", i, host[i], 2.0 * i); return 1; }
  crec_exec_stats st = CREC_EXEC_STATS_INIT;
  TRY(crec_exec_get_stats(e, &st));
  printf("y = 2x; %llu replays, %llu node updates\n", (unsigned long long)st.replays, (unsigned long long)st.nodes_updated);
  crec_exec_destroy(e);
  for (int i = 0; i < 4; i++) crec_device_free(buf[i]);
  crec_program_destroy(p);
  return 0;
}
