/* The crec command-line tool: run, bench, profile, dump, compile, cache (see 'crec --help'). */
#include "gpu.h"

#if defined(__SANITIZE_ADDRESS__)
/* In a sanitized build: nvJitLink (compile --cubin) allocates a C++ exception
 * pool when it loads and never frees it; that is its leak, not crec's. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) { return "leak:libnvJitLink.so\n"; }
#endif

int main(int argc, char **argv) {
  const crec_tool_backend backend = {crec_lower_mlir_file, crec_device_available, crec_tool_device_run,
                                     crec_tool_device_bench, crec_tool_device_cuda_dot, crec_tool_device_profile};
  return crec_tool_main(argc, argv, stdout, stderr, &backend);
}
