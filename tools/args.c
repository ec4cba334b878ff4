/* Command-line parsing and the help texts of the crec tool. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tool.h"

static const char help_tool[] =
    "crec: record GPU programs into CUDA graphs once, replay them many times\n"
    "\n"
    "Usage:\n"
    "  crec run   PROG.mlir [--entry NAME] [--input NAME=SPEC]... [--scalar NAME=VALUE]...\n"
    "             [--size NAME=ELEMENTS[,ELEMENTS...]]... [--iters N] [--check]\n"
    "             [--output NAME=FILE]... [--cuda-dot FILE] [--loop-limit N] [--timeout SECONDS]\n"
    "             [--variants N] [--timings] [--quiet] [--require-device]\n"
    "  crec bench PROG.mlir [--entry NAME] [--input NAME=SPEC]... [--scalar NAME=VALUE]...\n"
    "             [--size NAME=ELEMENTS]... [--iters N] [--json] [--loop-limit N] [--variants N]\n"
    "             [--require-device]\n"
    "  crec profile PROG.mlir [--entry NAME] [--input NAME=SPEC]... [--scalar NAME=VALUE]...\n"
    "             [--size NAME=ELEMENTS]... [--iters N] [--loop-limit N] [--format text|json|html]\n"
    "             [-o FILE] [--require-device]\n"
    "  crec dump  PROG.mlir [--entry NAME] [--format text|json|dot|svg|html] [-o FILE]\n"
    "             [--profile FILE [--force]] [--cuda-dot FILE [--input NAME=SPEC]...\n"
    "             [--size NAME=ELEMENTS]... [--scalar NAME=VALUE]...]\n"
    "  crec compile PROG.mlir -o PROG.crecb [--entry NAME] [--chip sm_NN] [--cubin] [--early-start]\n"
    "  crec cache [stats|clear]\n"
    "  crec help [run|bench|profile|dump|compile|cache]\n"
    "  crec --version\n"
    "\n"
    "Commands:\n"
    "  run     record the program once, replay it N times, print every output buffer;\n"
    "          --check compares each replay with the eager executor, byte for byte\n"
    "  bench   time eager execution against graph replay (unchanged, and with rotated buffers)\n"
    "  profile measure where a replay's time goes, per command of the program (through\n"
    "          CUPTI): as text, JSON, or the graph's HTML page with the profile drawn on it\n"
    "  dump    show the program and its dependency graph (text, JSON, DOT, SVG, or an HTML page)\n"
    "  compile lower the program once and write it as a program file (PROG.crecb), which\n"
    "          run, bench, profile and dump take in place of PROG.mlir, without lowering it again\n"
    "  cache   show or empty the persistent cache of lowered programs (crec cache --help)\n"
    "\n"
    "Input SPECs:  fill:V   iota   random:SEED   PATH (a raw binary file)\n"
    "Exit status:  0 success, 1 a --check mismatch, 2 an error, 3 a kernel's assertion\n"
    "              (cf.assert) failed, its message printed above, 4 an execution ran past\n"
    "              run --timeout; an error is one line,\n"
    "              crec: error: FILE:LINE:COL: message\n"
    "              (the MLIR front end's warnings, without an error, are lines of\n"
    "              crec: warning: FILE:LINE:COL: message)\n"
    "\n"
    "Without a CUDA device, run, bench and profile print the program's summary, say\n"
    "that no device is available, and exit 0; dump needs no device. With\n"
    "--require-device, or CREC_REQUIRE_DEVICE=1 in the environment (for a CI job that\n"
    "must run the program), they fail instead: one error line, and exit status 5.\n"
    "\n"
    "Examples:\n"
    "  crec run examples/chain.mlir --input x=iota --check\n"
    "  crec run examples/dynamic.mlir --size x=1000,1000000 --input x=iota --check\n"
    "  crec bench examples/chain.mlir --iters 1000 --json\n"
    "  crec profile examples/branches.mlir --input x=iota --format html -o branches.html\n"
    "  crec dump examples/jacobi.mlir --format html -o jacobi.html\n"
    "  crec compile examples/jacobi.mlir -o jacobi.crecb\n"
    "The build copies examples/*.mlir to build/examples/, next to the kernel image that\n"
    "image.mlir loads: run that one as build/examples/image.mlir.\n"
    "\n"
    "Run 'crec COMMAND --help' for the options of a command.\n";

/* run's --size takes a list (SIZES_HELP); bench's and profile's one count (SIZE_HELP) */
#define INPUT_OPTIONS_HELP(SIZE) ENTRY_INPUT_HELP SIZE SCALAR_LOOP_HELP

#define ENTRY_INPUT_HELP                                                                            \
  "  --entry NAME          the entry function (default: main)\n"                                  \
  "  --input NAME=SPEC     initial contents of argument buffer NAME (default: all zero bytes):\n" \
  "                          fill:V       every element is V (an integer, or a float for\n"       \
  "                                       float elements; integers may be negative or 0x hex)\n"  \
  "                          iota         element i is i (integers wrap at their width)\n"        \
  "                          random:SEED  reproducible: floats uniform in [-1, 1), integers\n"    \
  "                                       and untyped bytes with every bit random\n"              \
  "                          PATH         the raw bytes of a file, exactly the buffer's size\n"

#define SIZE_HELP                                                                                   \
  "  --size NAME=ELEMENTS  element count of a dynamic-size argument (with a file input, the\n"    \
  "                        file's size is used; without either, the program's minimum)\n"

#define SIZES_HELP                                                                                  \
  "  --size NAME=N,N,...   element count of a dynamic-size argument (with a file input, the\n"    \
  "                        file's size is used; without either, the program's minimum);\n"       \
  "                        several counts: one recording, and each replay takes the next\n"      \
  "                        count in turn (lists of several arguments go in step)\n"

#define SCALAR_LOOP_HELP                                                                            \
  "  --scalar NAME=VALUE   value of bound scalar NAME: i32 and i64 decimal or 0x hex, f32 and\n"  \
  "                        f64 as C floats (1.5, 1e-6, inf); every bound scalar needs one\n"  \
  "  --loop-limit N        most iterations of each loop (scf.while) in one execution, for\n"    \
  "                        loops without a crec.max_iterations of their own (default\n"        \
  "                        10000000; 0: unlimited); a loop that reaches it is stopped and\n"    \
  "                        the command fails with an error naming it\n"

#define VARIANTS_HELP                                                                               \
  "  --variants N          record N executable graphs of the one graph (1 to 16; default\n"  \
  "                        1): a replay launches the one that already holds its buffers,\n"  \
  "                        else updates the least recently launched (crec_record_options.\n" \
  "                        variants); refused for programs with device control flow\n"

#define REQUIRE_DEVICE_HELP                                                                         \
  "  --require-device      without a CUDA device, fail with exit status 5 (one error line)\n"  \
  "                        instead of printing the summary and exiting 0: for CI jobs that\n"  \
  "                        must run the program (also: CREC_REQUIRE_DEVICE=1)\n"

static const char help_run[] =
    "Usage: crec run PROG.mlir [options]\n"
    "\n"
    "Lowers PROG.mlir, records it into a CUDA graph once, replays the graph --iters\n"
    "times, then prints one line per output buffer (an argument that some command\n"
    "writes): its element type and count, the FNV-1a 64-bit checksum of its bytes,\n"
    "and its first elements. PROG.mlir may also be a program file that 'crec compile'\n"
    "wrote (PROG.crecb), which is read instead of lowered; one whose kernels the\n"
    "device cannot run is refused.\n"
    "\n"
    "Options:\n" INPUT_OPTIONS_HELP(SIZES_HELP)
    "  --iters N             replays after recording (default 1; with a --size list, one per\n"
    "                        count)\n"    VARIANTS_HELP

    "  --check               also run the program with the eager executor and compare: each\n"
    "                        replay uses the next of 3 sets of argument buffers (carrying the\n"
    "                        state of the last one over), and after every execution every byte\n"
    "                        of every argument must equal the eager result, and what the\n"
    "                        replay printed must equal what the eager run printed (the same\n"
    "                        lines; kernels' printf may order them differently); the eager\n"
    "                        run's output is not shown; on a difference, names the buffer and\n"
    "                        its first differing byte, or the first differing line, and exits 1\n"
    "  --output NAME=FILE    write argument NAME's final bytes to FILE\n"
    "  --cuda-dot FILE       also write the CUDA driver's DOT dump of the instantiated graph\n"
    "  --timings             also print when each phase ended, in ms since the process\n"
    "                        started: main reached (libraries loaded), program lowered (and\n"
    "                        whether the persistent cache answered) or read, device ready,\n"
    "                        recorded (with the modules loaded and those compiled from PTX),\n"
    "                        first replay done (with --check, after an eager run too)\n"
    "  --quiet               print only what the program prints (its host code's output,\n"
    "                        such as printMemrefF32, and device printf); crec's own lines\n"
    "                        are left out, and without a device that note goes to standard\n"
    "                        error; errors still go to standard error\n"
    "  --timeout SECONDS     each execution (a replay, or --check's eager run) must finish\n"
    "                        within SECONDS, or crec says which did not and exits 4 at once,\n"
    "                        leaving it running on the device until the process ends (a\n"
    "                        kernel that waits for what never comes would hang the run)\n"
    REQUIRE_DEVICE_HELP
    "  -h, --help            show this help\n"
    "\n"
    "Library calls run too (GEMMs; FFTs, Cholesky factorizations and convolutions,\n"
    "which need cuFFT, cuSOLVER and cuDNN; collectives): each communicator slot gets\n"
    "an NCCL communicator of one rank, so a program written for more ranks is refused;\n"
    "custom calls need handlers registered through the C API, which this tool has none of.\n"
    "\n"
    "Without a CUDA device: prints the program's summary and the prepared inputs, says\n"
    "that no device is available, and exits 0.\n"
    "\n"
    "Examples:\n"
    "  crec run examples/chain.mlir --input x=iota\n"
    "  crec run examples/chain.mlir --input x=random:7 --iters 100 --check\n"
    "  crec run examples/jacobi.mlir --input b=fill:1 --scalar tol=1e-4 --output x=x.bin\n"
    "  crec run examples/dynamic.mlir --size x=1000,100000,1000000 --input x=iota --check\n";

static const char help_bench[] =
    "Usage: crec bench PROG.mlir [options]\n"
    "\n"
    "Lowers and records PROG.mlir, then, after a warm-up of 10 executions of each kind\n"
    "(fewer when --iters is smaller), times --iters executions each of:\n"
    "  eager            the eager executor: commands issued one by one on a stream\n"
    "  replay           graph replay with unchanged bindings (no graph update)\n"
    "  replay (update)  graph replay with the argument buffers rotated among 2 sets,\n"
    "                   so every replay updates the nodes that use them\n"
    "Each execution is timed on the host from issue until its stream is synchronized;\n"
    "before each one the arguments get their initial contents back (untimed), so\n"
    "loops whose trip count depends on the data do the same work every time.\n"
    "Prints the graph's node count, the record time, and min/p50/p90/p99 microseconds\n"
    "per execution. A progress bar goes to stderr when it is a terminal. PROG.mlir may\n"
    "also be a program file that 'crec compile' wrote (PROG.crecb).\n"
    "\n"
    "Options:\n" INPUT_OPTIONS_HELP(SIZE_HELP)
    "  --iters N             timed executions of each kind (default 100)\n"    VARIANTS_HELP

    "  --json                print one JSON object instead of the table:\n"
    "                        {\"nodes\": N, \"record_us\": X, \"eager_us\": P, \"replay_us\": P,\n"
    "                         \"replay_update_us\": P}, each P being\n"
    "                        {\"min\": X, \"p50\": X, \"p90\": X, \"p99\": X} in microseconds\n"
    REQUIRE_DEVICE_HELP
    "  -h, --help            show this help\n"
    "\n"
    "Without a CUDA device: prints the program's summary, says that no device is\n"
    "available, and exits 0; with --json those lines go to stderr, and standard output\n"
    "gets the object with every value null.\n"
    "\n"
    "Examples:\n"
    "  crec bench examples/chain.mlir\n"
    "  crec bench examples/chain.mlir --iters 1000 --json > chain.json\n";

static const char help_profile[] =
    "Usage: crec profile PROG.mlir [options]\n"
    "\n"
    "Lowers and records PROG.mlir as 'crec bench' does, then profiles its replays on\n"
    "the device through CUPTI's activity API (crec_exec_profile): one warm-up replay,\n"
    "--iters replays timed without the profiler and --iters under it, each one\n"
    "synchronized. Each kernel, memcpy and memset a profiled replay runs counts for the\n"
    "command of the program it belongs to (the kernels of a loop's body or of a library\n"
    "call count for that command). The profile gives per command its device time (p50,\n"
    "min and max over the replays), its start, what ran beside it, and a loop's\n"
    "iterations; and for the program, the critical path through its dependencies, the\n"
    "idle time, and a timeline of one replay (docs/profile.md). PROG.mlir may also be a\n"
    "program file that 'crec compile' wrote (PROG.crecb).\n"
    "\n"
    "The replays run back to back on the same buffers: unlike bench, nothing gives the\n"
    "arguments their initial contents back between them, so each replay starts from\n"
    "what the one before left.\n"
    "\n"
    "Formats (--format, default text):\n"
    "  text   the commands that ran, slowest first, and the summary\n"
    "  json   one JSON object (docs/profile.schema.json), which\n"
    "         'crec dump --format html --profile FILE' draws\n"
    "  html   the page of 'crec dump --format html' with the profile drawn on it: nodes\n"
    "         shaded by device time, the critical path marked, and a timeline of one\n"
    "         replay whose bars select their node (needs Graphviz's 'dot')\n"
    "\n"
    "Options:\n" INPUT_OPTIONS_HELP(SIZE_HELP)
    "  --iters N             replays profiled, and as many timed without the profiler\n"
    "                        (default 20)\n"
    REQUIRE_DEVICE_HELP
    "  --format FORMAT       text, json or html\n"
    "  -o FILE               write the profile to FILE instead of standard output (into a\n"
    "                        temporary file renamed over FILE: a reader never sees a part;\n"
    "                        '-o -': standard output)\n"
    "  -h, --help            show this help\n"
    "\n"
    "Needs CUPTI (libcupti.so.13, from the CUDA toolkit). Another profiler that uses\n"
    "CUPTI in the same process (Nsight Systems) and this one disturb each other.\n"
    "\n"
    "Without a CUDA device: prints the program's summary, says that no device is\n"
    "available, writes no profile, and exits 0; with --format json or html and no -o,\n"
    "those lines go to stderr, and standard output stays empty.\n"
    "\n"
    "Examples:\n"
    "  crec profile examples/jacobi.mlir --input b=fill:1 --scalar tol=1e-4\n"
    "  crec profile examples/chain.mlir --input x=iota --iters 100 --format json -o chain.json\n"
    "  crec profile examples/branches.mlir --input x=iota --format html -o branches.html\n";

static const char help_dump[] =
    "Usage: crec dump PROG.mlir [options]\n"
    "\n"
    "Lowers PROG.mlir and shows its buffers, scalars, kernels and commands with the\n"
    "dependencies the recorder uses (byte-range hazards after arena placement,\n"
    "transitively reduced). Needs no GPU. PROG.mlir may also be a program file that\n"
    "'crec compile' wrote (PROG.crecb): its dump is the same as its source's.\n"
    "\n"
    "Formats (--format, default text):\n"
    "  text   a summary, and the command tree with each command's dependencies\n"
    "  json   {\"buffers\":[{\"name\",\"kind\",\"size\",\"element\",\"dynamic\",...}],\n"
    "          \"scalars\":[{\"name\",\"type\",\"kind\"}], \"regions\":[{\"id\",\"parent\",\"role\",\"index\"}],\n"
    "          \"commands\":[{\"id\",\"kind\",\"name\",\"region\",\"deps\":[ids], ...}]}\n"
    "         where each command adds its kind's fields: a launch its kernel, grid, block,\n"
    "         shared memory, cluster dims (where its kernel has them) and arguments; copies\n"
    "         and fills their ranges; control flow its predicate and regions; library\n"
    "         commands their description and operands (the schema is in crec/dump.h)\n"
    "  dot    Graphviz DOT: control-flow bodies as nested clusters, nodes coloured by kind\n"
    "  svg    the DOT graph drawn by Graphviz's 'dot' program, which must be installed\n"
    "  html   one self-contained page (no network resources): the SVG of the graph;\n"
    "         clicking a node shows its kernel, grid and block (and cluster dims),\n"
    "         arguments with buffer ranges and access, and its dependencies and\n"
    "         dependents\n"
    "\n"
    "Options:\n"
    "  --entry NAME          the entry function (default: main)\n"
    "  --format FORMAT       text, json, dot, svg or html\n"
    "  -o FILE               write to FILE instead of standard output ('-o -': standard output)\n"
    "  --cuda-dot FILE       on a CUDA device, also record the program and write the driver's\n"
    "                        DOT dump of the instantiated graph to FILE\n"
    "  --input NAME=SPEC     with --cuda-dot: the recording's inputs, sizes and scalars, as\n"
    "  --size NAME=ELEMENTS  'crec run' takes them (crec run --help)\n"
    "  --scalar NAME=VALUE\n"
    "  --profile FILE        with --format html: draw a profile of the program's replays on the\n"
    "                        page (JSON, docs/profile.md): nodes shaded by device time, the\n"
    "                        critical path marked, and a timeline of one replay whose bars\n"
    "                        select their node; a profile of another program (one that times\n"
    "                        commands this program lacks, or counts iterations of a command\n"
    "                        that is not a loop) is an error\n"
    "  --force               with --profile: draw another program's profile anyway, for the\n"
    "                        commands that match (the page lists what it ignored)\n"
    "  -h, --help            show this help\n"
    "\n"
    "Examples:\n"
    "  crec dump examples/chain.mlir\n"
    "  crec dump examples/switch.mlir --format json\n"
    "  crec dump examples/jacobi.mlir --format html -o jacobi.html\n"
    "  crec dump examples/branches.mlir --format html --profile tests/profiles/branches.json -o b.html\n";

static const char help_compile[] =
    "Usage: crec compile PROG.mlir -o PROG.crecb [options]\n"
    "\n"
    "Lowers PROG.mlir (as run, bench and dump do) and writes the program as a program\n"
    "file (crec/serialize.h, docs/program-files.md): its buffers, scalars, kernels\n"
    "with their PTX or cubin, and commands. 'crec run', 'bench', 'profile' and 'dump'\n"
    "take the file wherever they take PROG.mlir (they know it by its first bytes,\n"
    "whatever its name), read it without lowering again, and need no MLIR: a crec\n"
    "built with -DCREC_WITH_MLIR=OFF runs it. 'crec dump PROG.crecb' prints what\n"
    "'crec dump PROG.mlir' prints. Needs no GPU.\n"
    "\n"
    "The file is written to a temporary file in the same folder and renamed, so a\n"
    "reader never sees part of it. A program with host code (an entry function that\n"
    "computes scalars on the host, as examples/dynamic.mlir does) cannot be written:\n"
    "that code lives in this process only; run such a program from its MLIR.\n"
    "\n"
    "Options:\n"
    "  -o FILE               the program file to write (required; '-o -': standard output)\n"
    "  --entry NAME          the entry function (default: main)\n"
    "  --chip sm_NN          the chip to compile kernels for (sm_NN or sm_NNa, up to\n"
    "                        sm_90a; default: the first device's, else sm_90); 'run',\n"
    "                        'bench' and 'profile' refuse a file whose kernels do not fit\n"
    "                        the device\n"
    "  --cubin               compile the kernels ahead of time to SASS for the chip (a\n"
    "                        cubin, through the CUDA toolkit's nvJitLink), so that 'run'\n"
    "                        and 'bench' load them without the driver's PTX JIT; the\n"
    "                        file then runs on that chip and later ones of its major\n"
    "                        version only (default: PTX, which the driver compiles)\n"
    "  --early-start         every kernel compiled from a gpu.module body waits for the\n"
    "                        kernels before it at its entry (griddepcontrol.wait), and its\n"
    "                        launches may start while they drain (programmatic dependent\n"
    "                        launch); only for sm_90 and later chips, as {crec.early_start}\n"
    "                        on each gpu.module (docs/mlir.md)\n"
    "  -h, --help            show this help\n"
    "\n"
    "Examples:\n"
    "  crec compile examples/jacobi.mlir -o jacobi.crecb\n"
    "  crec compile examples/chain.mlir -o chain.crecb --chip sm_80\n"
    "  crec compile examples/jacobi.mlir -o jacobi-sm90.crecb --chip sm_90 --cubin\n"
    "  crec dump jacobi.crecb\n";

static const char help_cache[] =
    "Usage: crec cache [stats|clear]\n"
    "\n"
    "Every lowering of MLIR (run, bench, dump, compile) first looks for the program it\n"
    "would make in a persistent cache on disk, which earlier lowerings of the same\n"
    "text, entry, file name and chip filled (crec/lower.h says what the key holds and\n"
    "what is never cached). A hit runs no MLIR pass and compiles no kernel; the\n"
    "warnings the first lowering printed are printed again.\n"
    "\n"
    "  stats   (the default) where the cache is, whether it is in use, its entries and\n"
    "          bytes, and its cap\n"
    "  clear   remove every entry\n"
    "\n"
    "Environment:\n"
    "  CREC_CACHE=0            do not use the cache\n"
    "  CREC_CACHE_DIR=DIR      the cache directory (default: $XDG_CACHE_HOME/crec, else\n"
    "                          $HOME/.cache/crec); made private to the user (0700) and\n"
    "                          not used when others can write it\n"
    "  CREC_CACHE_MAX_BYTES=N  the cap (default 268435456): past it the least recently\n"
    "                          used entries are removed\n"
    "\n"
    "Examples:\n"
    "  crec cache\n"
    "  CREC_CACHE_DIR=/tmp/c crec dump examples/jacobi.mlir && crec cache stats\n"
    "  crec cache clear\n";

const char *crec_tool_help(crec_tool_command command) {
  switch (command) {
    case CREC_TOOL_CMD_RUN: return help_run;
    case CREC_TOOL_CMD_BENCH: return help_bench;
    case CREC_TOOL_CMD_DUMP: return help_dump;
    case CREC_TOOL_CMD_COMPILE: return help_compile;
    case CREC_TOOL_CMD_CACHE: return help_cache;
    case CREC_TOOL_CMD_PROFILE: return help_profile;
    default: return help_tool;
  }
}

const char *crec_tool_command_name(crec_tool_command command) {
  switch (command) {
    case CREC_TOOL_CMD_RUN: return "run";
    case CREC_TOOL_CMD_BENCH: return "bench";
    case CREC_TOOL_CMD_DUMP: return "dump";
    case CREC_TOOL_CMD_COMPILE: return "compile";
    case CREC_TOOL_CMD_CACHE: return "cache";
    case CREC_TOOL_CMD_PROFILE: return "profile";
    default: return "";
  }
}

static const char *const format_names[] = {"text", "json", "dot", "svg", "html"};

const char *crec_tool_format_name(crec_tool_format format) {
  return (unsigned)format < 5 ? format_names[format] : "unknown";
}

/* Which subcommands take an option. */
enum { RUN = 1, BENCH = 2, DUMP = 4, COMPILE = 8, PROFILE = 16 };

typedef enum {
  OPT_HELP, OPT_ENTRY, OPT_INPUT, OPT_SCALAR, OPT_SIZE, OPT_ITERS, OPT_CHECK, OPT_OUTPUT,
  OPT_JSON, OPT_FORMAT, OPT_OUT, OPT_CUDA_DOT, OPT_LOOP_LIMIT, OPT_CHIP, OPT_CUBIN, OPT_EARLY_START, OPT_TIMINGS, OPT_PROFILE, OPT_QUIET,
  OPT_REQUIRE_DEVICE,
  OPT_TIMEOUT, OPT_VARIANTS, OPT_FORCE
} opt_id;

static const struct option_spec {
  const char *name;
  opt_id id;
  int takes_value;
  int commands;
  const char *what; /* the value's name, for messages */
} options[] = {
    {"--help", OPT_HELP, 0, RUN | BENCH | DUMP | COMPILE | PROFILE, NULL},
    {"-h", OPT_HELP, 0, RUN | BENCH | DUMP | COMPILE | PROFILE, NULL},
    {"--entry", OPT_ENTRY, 1, RUN | BENCH | DUMP | COMPILE | PROFILE, "NAME"},
    {"--input", OPT_INPUT, 1, RUN | BENCH | DUMP | PROFILE, "NAME=SPEC"},
    {"--scalar", OPT_SCALAR, 1, RUN | BENCH | DUMP | PROFILE, "NAME=VALUE"},
    {"--size", OPT_SIZE, 1, RUN | BENCH | DUMP | PROFILE, "NAME=ELEMENTS"},
    {"--iters", OPT_ITERS, 1, RUN | BENCH | PROFILE, "N"},
    {"--check", OPT_CHECK, 0, RUN, NULL},
    {"--output", OPT_OUTPUT, 1, RUN, "NAME=FILE"},
    {"--json", OPT_JSON, 0, BENCH, NULL},
    {"--format", OPT_FORMAT, 1, DUMP | PROFILE, "FORMAT"},
    {"-o", OPT_OUT, 1, DUMP | COMPILE | PROFILE, "FILE"},
    {"--cuda-dot", OPT_CUDA_DOT, 1, RUN | DUMP, "FILE"},
    {"--loop-limit", OPT_LOOP_LIMIT, 1, RUN | BENCH | PROFILE, "N"},
    {"--chip", OPT_CHIP, 1, COMPILE, "sm_NN"},
    {"--cubin", OPT_CUBIN, 0, COMPILE, NULL},
    {"--early-start", OPT_EARLY_START, 0, COMPILE, NULL},
    {"--timings", OPT_TIMINGS, 0, RUN, NULL},
    {"--quiet", OPT_QUIET, 0, RUN, NULL},
    {"--require-device", OPT_REQUIRE_DEVICE, 0, RUN | BENCH | PROFILE, NULL},
    {"--timeout", OPT_TIMEOUT, 1, RUN, "SECONDS"},
    {"--variants", OPT_VARIANTS, 1, RUN | BENCH, "N"},
    {"--profile", OPT_PROFILE, 1, DUMP, "FILE"},
    {"--force", OPT_FORCE, 0, DUMP, NULL},
};

static void free_pairs(crec_tool_pair *pairs, size_t n) {
  for (size_t i = 0; i < n; i++) {
    free((char *)pairs[i].name);
    free((char *)pairs[i].arg);
  }
  free(pairs);
}

void crec_tool_args_free(crec_tool_args *args) {
  if (!args) return;
  free_pairs(args->inputs, args->num_inputs);
  free_pairs(args->scalars, args->num_scalars);
  free_pairs(args->outputs, args->num_outputs);
  free_pairs(args->sizes, args->num_sizes);
  memset(args, 0, sizeof *args);
}

/* Splits NAME=VALUE and appends it, refusing a repeated NAME. */
static int add_pair(crec_tool_pair **pairs, size_t *n, const char *opt, const char *value,
                    const char *what, crec_tool_diag *d) {
  size_t arglen = strlen(opt) + 1 + strlen(value) + 1;
  char *arg = malloc(arglen);
  if (!arg) return crec_tool_fail(d, opt, "out of memory");
  snprintf(arg, arglen, "%s %s", opt, value);
  const char *eq = strchr(value, '=');
  if (!eq || eq == value) {
    crec_tool_fail(d, arg, "expected %s", what);
    free(arg);
    return -1;
  }
  if (!eq[1]) {
    crec_tool_fail(d, arg, "nothing after '=': expected %s", what);
    free(arg);
    return -1;
  }
  size_t nlen = (size_t)(eq - value);
  for (size_t i = 0; i < *n; i++) {
    if (strlen((*pairs)[i].name) == nlen && memcmp((*pairs)[i].name, value, nlen) == 0) {
      crec_tool_fail(d, arg, "'%.*s' is already given by '%s'", (int)nlen, value, (*pairs)[i].arg);
      free(arg);
      return -1;
    }
  }
  char *name = malloc(nlen + 1);
  crec_tool_pair *grown = realloc(*pairs, (*n + 1) * sizeof **pairs);
  if (!name || !grown) {
    free(name);
    free(arg);
    if (grown) *pairs = grown;
    return crec_tool_fail(d, opt, "out of memory");
  }
  memcpy(name, value, nlen);
  name[nlen] = '\0';
  *pairs = grown;
  (*pairs)[*n] = (crec_tool_pair){name, eq + 1, arg};
  (*n)++;
  return 0;
}

static int parse_count(const char *opt, const char *value, uint64_t max, uint64_t *out, crec_tool_diag *d) {
  const char *p = value;
  if (*p < '0' || *p > '9')
    return crec_tool_fail(d, NULL, "%s %s: expected a positive integer", opt, value);
  errno = 0;
  char *end = NULL;
  unsigned long long v = strtoull(p, &end, 10);
  if (*end) return crec_tool_fail(d, NULL, "%s %s: expected a positive integer", opt, value);
  if (errno == ERANGE || v > max || v == 0)
    return crec_tool_fail(d, NULL, "%s %s: must be between 1 and %llu", opt, value, (unsigned long long)max);
  *out = v;
  return 0;
}

static int set_once(const char **slot, const char *opt, const char *value, crec_tool_diag *d) {
  if (*slot) return crec_tool_fail(d, NULL, "%s is given twice ('%s' and '%s')", opt, *slot, value);
  *slot = value;
  return 0;
}

/* The command word (argv[1]) and the commands that take no options: 1 when the
 * line is done (--help, --version, help, cache), 0 with the command's option
 * mask in `*mask` when its options follow, -1 on an error. */
static int parse_command(int argc, char **argv, crec_tool_args *args, int *mask, crec_tool_diag *d) {
  if (argc < 2) return crec_tool_fail(d, NULL, "no command given (try 'crec --help')");
  const char *cmd = argv[1];
  if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
    args->help = 1;
    return 1;
  }
  if (!strcmp(cmd, "--version")) {
    args->version = 1;
    return 1;
  }
  if (!strcmp(cmd, "help")) {
    args->help = 1;
    if (argc == 2) return 1;
    if (argc > 3) return crec_tool_fail(d, NULL, "'crec help' takes at most one command");
    cmd = argv[2];
    if (!strcmp(cmd, "run")) args->command = CREC_TOOL_CMD_RUN;
    else if (!strcmp(cmd, "bench")) args->command = CREC_TOOL_CMD_BENCH;
    else if (!strcmp(cmd, "dump")) args->command = CREC_TOOL_CMD_DUMP;
    else if (!strcmp(cmd, "compile")) args->command = CREC_TOOL_CMD_COMPILE;
    else if (!strcmp(cmd, "cache")) args->command = CREC_TOOL_CMD_CACHE;
    else if (!strcmp(cmd, "profile")) args->command = CREC_TOOL_CMD_PROFILE;
    else
      return crec_tool_fail(d, NULL, "unknown command '%s' (commands: run, bench, profile, dump, compile, cache)", cmd);
    return 1;
  }
  if (!strcmp(cmd, "cache")) {
    args->command = CREC_TOOL_CMD_CACHE;
    if (argc > 3) return crec_tool_fail(d, NULL, "'crec cache' takes one action, stats or clear (try 'crec cache --help')");
    const char *action = argc == 3 ? argv[2] : "stats";
    if (!strcmp(action, "--help") || !strcmp(action, "-h")) {
      args->help = 1;
      return 1;
    }
    if (strcmp(action, "stats") != 0 && strcmp(action, "clear") != 0)
      return crec_tool_fail(d, NULL, "crec cache: unknown action '%s' (stats or clear; try 'crec cache --help')", action);
    args->program = action;
    return 1;
  }
  if (!strcmp(cmd, "run")) args->command = CREC_TOOL_CMD_RUN, *mask = RUN;
  else if (!strcmp(cmd, "bench")) args->command = CREC_TOOL_CMD_BENCH, *mask = BENCH;
  else if (!strcmp(cmd, "dump")) args->command = CREC_TOOL_CMD_DUMP, *mask = DUMP;
  else if (!strcmp(cmd, "compile")) args->command = CREC_TOOL_CMD_COMPILE, *mask = COMPILE;
  else if (!strcmp(cmd, "profile")) args->command = CREC_TOOL_CMD_PROFILE, *mask = PROFILE;
  else if (cmd[0] == '-') return crec_tool_fail(d, NULL, "unknown option '%s' (try 'crec --help')", cmd);
  else
    return crec_tool_fail(d, NULL,
                          "unknown command '%s' (commands: run, bench, profile, dump, compile, cache; try "
                          "'crec --help')",
                          cmd);
  return 0;
}

/* The option `a` names (--name=value, --name value, -o FILE, -oFILE), with its
 * value when `a` holds it; NULL for none. */
static const struct option_spec *find_option(const char *a, const char **value) {
  *value = NULL;
  for (size_t k = 0; k < sizeof options / sizeof options[0]; k++) {
    size_t n = strlen(options[k].name);
    if (strncmp(a, options[k].name, n) != 0) continue;
    if (a[n] == '\0') return &options[k];
    if (options[k].takes_value && a[n] == '=' && a[1] == '-') {
      *value = a + n + 1;
      return &options[k];
    }
    if (options[k].takes_value && a[1] != '-') { /* -oFILE */
      *value = a + n;
      return &options[k];
    }
  }
  return NULL;
}

/* What the options not kept in `args` itself say until the line ends. */
typedef struct pending {
  const char *format;
  int loop_limit_given;
} pending;

/* Applies option `o` with its `value` (NULL for a flag): 0, or -1 on an error. */
static int apply_option(crec_tool_args *args, const struct option_spec *o, const char *value, pending *pd,
                        crec_tool_diag *d) {
  int r = 0;
  switch (o->id) {
    case OPT_HELP: args->help = 1; break;
    case OPT_ENTRY:
      if (!*value) r = crec_tool_fail(d, NULL, "--entry needs a function name");
      else r = set_once(&args->entry, "--entry", value, d);
      break;
    case OPT_INPUT: r = add_pair(&args->inputs, &args->num_inputs, "--input", value, "NAME=SPEC", d); break;
    case OPT_SCALAR: r = add_pair(&args->scalars, &args->num_scalars, "--scalar", value, "NAME=VALUE", d); break;
    case OPT_SIZE: r = add_pair(&args->sizes, &args->num_sizes, "--size", value, "NAME=ELEMENTS", d); break;
    case OPT_OUTPUT: r = add_pair(&args->outputs, &args->num_outputs, "--output", value, "NAME=FILE", d); break;
    case OPT_ITERS:
      if (args->iters_given) r = crec_tool_fail(d, NULL, "--iters is given twice");
      else r = parse_count("--iters", value, 1000000000u, &args->iters, d);
      args->iters_given = 1;
      break;
    case OPT_CHECK: args->check = 1; break;
    case OPT_JSON: args->json = 1; break;
    case OPT_FORMAT: r = set_once(&pd->format, "--format", value, d); break;
    case OPT_OUT:
      if (!*value) r = crec_tool_fail(d, NULL, "-o needs a file name");
      else r = set_once(&args->out_path, "-o", value, d);
      break;
    case OPT_CUDA_DOT:
      if (!*value) r = crec_tool_fail(d, NULL, "--cuda-dot needs a file name");
      else r = set_once(&args->cuda_dot, "--cuda-dot", value, d);
      break;
    case OPT_CHIP:
      if (!*value) r = crec_tool_fail(d, NULL, "--chip needs a chip name: --chip sm_NN");
      else r = set_once(&args->chip, "--chip", value, d);
      break;
    case OPT_CUBIN:
      args->cubin = 1;
      break;
    case OPT_EARLY_START: args->early_start = 1; break;
    case OPT_TIMINGS: args->timings = 1; break;
    case OPT_QUIET: args->quiet = 1; break;
    case OPT_REQUIRE_DEVICE: args->require_device = 1; break;
    case OPT_FORCE: args->force = 1; break;
    case OPT_TIMEOUT:
      if (args->timeout_s) r = crec_tool_fail(d, NULL, "--timeout is given twice");
      else r = parse_count("--timeout", value, 86400u, &args->timeout_s, d);
      break;
    case OPT_PROFILE:
      if (!*value) r = crec_tool_fail(d, NULL, "--profile needs a file name");
      else r = set_once(&args->profile, "--profile", value, d);
      break;
    case OPT_VARIANTS:
      if (args->variants) r = crec_tool_fail(d, NULL, "--variants is given twice");
      else r = parse_count("--variants", value, 16, &args->variants, d);
      break;
    case OPT_LOOP_LIMIT:
      if (pd->loop_limit_given) r = crec_tool_fail(d, NULL, "--loop-limit is given twice");
      else if (strcmp(value, "0") != 0) r = parse_count("--loop-limit", value, UINT64_MAX - 1, &args->loop_limit, d);
      else args->loop_limit = 0;
      pd->loop_limit_given = 1;
      break;
  }
  return r;
}

/* The checks of the whole line, after its last option: 0, or -1 on an error. */
static int check_args(crec_tool_args *args, const char *format, crec_tool_diag *d) {
  const char *cname = crec_tool_command_name(args->command);
  if (format) {
    size_t k;
    for (k = 0; k < 5 && strcmp(format, format_names[k]); k++) {
    }
    if (k == 5) {
      crec_tool_fail(d, NULL, "unknown format '%s' for --format (formats: text, json, dot, svg, html)", format);
      return -1;
    }
    args->format = (crec_tool_format)k;
    /* a profile is text, JSON, or drawn on the page; the graph alone is dump's */
    if (args->command == CREC_TOOL_CMD_PROFILE &&
        (args->format == CREC_TOOL_FORMAT_DOT || args->format == CREC_TOOL_FORMAT_SVG)) {
      crec_tool_fail(d, NULL,
                     "--format %s: 'crec profile' writes text, json or html (the graph alone: crec dump --format %s)",
                     format, format);
      return -1;
    }
  }
  if (args->force && !args->profile && !args->help) {
    crec_tool_fail(d, NULL, "--force draws another program's profile: it goes with --profile FILE");
    return -1;
  }
  /* -o -: standard output, where dump and profile write without -o (compile writes its bytes there) */
  if (args->out_path && !strcmp(args->out_path, "-") && args->command != CREC_TOOL_CMD_COMPILE) args->out_path = NULL;
  if (!args->program && !args->help) {
    crec_tool_fail(d, NULL, "'crec %s' needs a program: crec %s PROG.mlir (try 'crec %s --help')", cname,
                   cname, cname);
    return -1;
  }
  if (args->command == CREC_TOOL_CMD_COMPILE && !args->out_path && !args->help) {
    crec_tool_fail(d, NULL, "'crec compile' needs the file to write: crec compile %s -o PROG.crecb", args->program);
    return -1;
  }
  return 0;
}

int crec_tool_parse_args(int argc, char **argv, crec_tool_args *args, crec_tool_diag *d) {
  memset(args, 0, sizeof *args);
  int mask = 0;
  int done = parse_command(argc, argv, args, &mask, d);
  if (done) return done < 0 ? -1 : 0;
  const char *cname = crec_tool_command_name(args->command);
  args->iters = args->command == CREC_TOOL_CMD_BENCH     ? CREC_TOOL_BENCH_ITERS
                : args->command == CREC_TOOL_CMD_PROFILE ? CREC_TOOL_PROFILE_ITERS
                                                         : CREC_TOOL_RUN_ITERS;
  args->loop_limit = CREC_TOOL_LOOP_LIMIT;
  pending pd = {NULL, 0};
  int no_more_options = 0;
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i];
    if (no_more_options || a[0] != '-' || !a[1]) {
      if (args->program) {
        crec_tool_fail(d, NULL, "'crec %s' takes one program, but '%s' and '%s' are given", cname,
                       args->program, a);
        goto fail;
      }
      args->program = a;
      continue;
    }
    if (!strcmp(a, "--")) {
      no_more_options = 1;
      continue;
    }
    const char *value = NULL;
    const struct option_spec *o = find_option(a, &value);
    if (!o) {
      crec_tool_fail(d, NULL, "unknown option '%s' for 'crec %s' (try 'crec %s --help')", a, cname, cname);
      goto fail;
    }
    if (!(o->commands & mask)) {
      crec_tool_fail(d, NULL, "option '%s' is not an option of 'crec %s' (try 'crec %s --help')", o->name,
                     cname, cname);
      goto fail;
    }
    if (o->takes_value && !value) {
      if (i + 1 >= argc) {
        crec_tool_fail(d, NULL, "option '%s' needs a value: %s %s", o->name, o->name, o->what);
        goto fail;
      }
      value = argv[++i];
    }
    if (apply_option(args, o, value, &pd, d)) goto fail;
  }
  if (check_args(args, pd.format, d)) goto fail;
  return 0;
fail:
  crec_tool_args_free(args);
  return -1;
}
