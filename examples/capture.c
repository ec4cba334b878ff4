/* docs/capture.md's example: work issued on a stream by other code (here a
 * "library" function that runs y = 2x through crec's eager executor, as
 * cuBLAS or PyTorch would issue their kernels) is captured twice, imported, and
 * replayed on new buffers: no copies into static inputs, and each replay
 * rewrites only the nodes whose arguments moved. */
#include <stdio.h>

#include "crec/crec.h"

extern const unsigned char example_kernels_ptx[];
extern const size_t example_kernels_ptx_size;

#define TRY(call) if ((call) != CREC_OK) { fprintf(stderr, "%s\n", crec_last_error()); return 1; }

enum { N = 1 << 20 };
static crec_program *library;

/* The library call: issues its work on `stream` for the buffers at `bases`. */
static crec_status library_call(void *user, crec_stream stream, void *const *bases) {
  (void)user;
  crec_binding b[2] = {{bases[0], N * 4}, {bases[1], N * 4}};
  crec_bindings bindings = CREC_BINDINGS_INIT;
  bindings.buffers = b, bindings.num_buffers = 2;
  return crec_run_eager(library, &bindings, stream);
}

int main(void) {
  crec_module m;
  crec_kernel scale;
  crec_buffer x, y;
  crec_command c;
  TRY(crec_program_create(&library));
  TRY(crec_program_add_module(library, "kernels", CREC_IMAGE_PTX, example_kernels_ptx, example_kernels_ptx_size, &m));
  TRY(crec_program_add_kernel(library, m, "scale", NULL, &scale));
  TRY(crec_program_add_argument(library, "x", N * 4, NULL, &x));
  TRY(crec_program_add_argument(library, "y", N * 4, NULL, &y));
  crec_arg args[] = {crec_arg_buffer(crec_range_whole(y), CREC_ACCESS_WRITE),
                     crec_arg_buffer(crec_range_whole(x), CREC_ACCESS_READ), crec_arg_f32(2.0f), crec_arg_i32(N)};
  crec_launch l = CREC_LAUNCH_INIT;
  l.kernel = scale, l.grid[0] = crec_dim_of(N / 256), l.block[0] = crec_dim_of(256);
  l.args = args, l.num_args = 4;
  TRY(crec_program_add_launch(library, crec_program_body(library), "y = 2x", &l, &c));

  if (!crec_device_available()) { printf("no CUDA device: %s\n", crec_last_error()); return 0; }
  void *buf[6];
  for (int i = 0; i < 6; i++) TRY(crec_device_alloc(0, N * 4, &buf[i]));
  static float host[N];
  for (int i = 0; i < N; i++) host[i] = (float)i;
  for (int k = 0; k < 3; k++) TRY(crec_copy(buf[2 * k], host, N * 4)); /* each set's x = 0, 1, 2, ... */
  crec_stream stream;
  TRY(crec_stream_create(0, &stream));
  TRY(library_call(NULL, stream, buf));                 /* once outside a capture: its kernels load */
  TRY(crec_stream_synchronize(stream));

  /* capture it twice (buffers 0, 1 then 2, 3) and import the first capture */
  crec_graph_argument ga[2] = {{"x", buf[0], N * 4}, {"y", buf[1], N * 4}};
  void *second[2] = {buf[2], buf[3]};
  crec_exec *e;
  TRY(crec_capture_import(library_call, NULL, stream, ga, 2, second, NULL, &e));
  TRY(crec_exec_dump_import(e, stdout));

  crec_binding b[2];
  crec_bindings bindings = CREC_BINDINGS_INIT;
  bindings.buffers = b, bindings.num_buffers = 2;
  for (int it = 0; it < 100; it++) {
    int k = it % 3;                                     /* buffers 0-1, 2-3, 4-5 in turn */
    b[0] = (crec_binding){buf[2 * k], N * 4}, b[1] = (crec_binding){buf[2 * k + 1], N * 4};
    TRY(crec_exec_replay(e, &bindings, stream));        /* rewrite the moved pointers, launch */
  }
  TRY(crec_stream_synchronize(stream));
  TRY(crec_copy(host, buf[1], N * 4));                  /* the last replay's y (replay 99: buffers 0-1) */
  for (int i = 0; i < N; i++)
    if (host[i] != 2.0f * (float)i) { fprintf(stderr, "y[%d] = %g, not %g\n", i, host[i], 2.0 * i); return 1; }
  crec_exec_stats st = CREC_EXEC_STATS_INIT;
  TRY(crec_exec_get_stats(e, &st));
  printf("y = 2x; %llu replays, %llu node updates\n", (unsigned long long)st.replays, (unsigned long long)st.nodes_updated);
  crec_exec_destroy(e);
  crec_stream_destroy(stream);
  for (int i = 0; i < 6; i++) crec_device_free(buf[i]);
  crec_program_destroy(library);
  return 0;
}
