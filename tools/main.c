/* The crec command-line tool: run, bench, dump (see 'crec --help'). */
#include "gpu.h"

int main(int argc, char **argv) {
  const crec_tool_backend backend = {crec_lower_mlir_file, crec_device_available, crec_tool_device_run,
                                     crec_tool_device_bench, crec_tool_device_cuda_dot};
  return crec_tool_main(argc, argv, stdout, stderr, &backend);
}
