/* CPU suite for loop iteration limits: the builder's setter and getter, the
 * MLIR attribute crec.max_iterations, and record options of an older, smaller
 * struct_size. Running limited loops is in the GPU suite (gpu_control.c). */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "common.h" /* Criterion, or tests/stress/inproc.h */

TestSuite(loop_limit, .fini = crec_test_leak_check);

/* A program with a while loop (`*loop`) and a launch (`*launch`) in its body. */
static crec_program *loop_program(crec_command *loop, crec_command *launch) {
  crec_kernel k;
  crec_program *p = crec_test_program(&k);
  crec_buffer x;
  EXPECT_OK(crec_program_add_argument(p, "x", 256, NULL, &x));
  crec_region cond, body;
  EXPECT_OK(crec_program_add_while(p, crec_program_body(p), "spin", crec_range_of(x, 0, 1), loop, &cond, &body));
  crec_launch l = CREC_LAUNCH_INIT;
  l.kernel = k;
  EXPECT_OK(crec_program_add_launch(p, body, "step", &l, launch));
  return p;
}

Test(loop_limit, set_and_get) {
  crec_command w, k;
  crec_program *p = loop_program(&w, &k);
  uint64_t v = 7;
  EXPECT_OK(crec_program_get_loop_limit(p, w, &v));
  cr_expect_eq(v, 0, "a new loop has no limit of its own: %llu", (unsigned long long)v);
  EXPECT_OK(crec_program_set_loop_limit(p, w, 1000));
  EXPECT_OK(crec_program_get_loop_limit(p, w, &v));
  cr_expect_eq(v, 1000);
  EXPECT_OK(crec_program_set_loop_limit(p, w, CREC_LOOP_UNLIMITED));
  EXPECT_OK(crec_program_get_loop_limit(p, w, &v));
  cr_expect_eq(v, CREC_LOOP_UNLIMITED);
  crec_program_destroy(p);
}

Test(loop_limit, only_while_commands_of_this_program) {
  crec_command w, k;
  crec_program *p = loop_program(&w, &k);
  EXPECT_STATUS(crec_program_set_loop_limit(p, k, 10), CREC_ERR_INVALID_ARGUMENT);
  EXPECT_ERROR_MENTIONS("crec_program_set_loop_limit: argument 'loop': command 1 ('step') is a launch command, not a while");
  uint64_t v = 7;
  EXPECT_STATUS(crec_program_get_loop_limit(p, k, &v), CREC_ERR_INVALID_ARGUMENT);
  cr_expect_eq(v, 0, "the output is zeroed on failure");
  EXPECT_STATUS(crec_program_set_loop_limit(p, (crec_command){CREC_TEST_GARBAGE_ID}, 10), CREC_ERR_INVALID_HANDLE);
  EXPECT_ERROR_MENTIONS("'loop'");
  EXPECT_STATUS(crec_program_set_loop_limit(NULL, w, 10), CREC_ERR_NULL_POINTER);
  EXPECT_STATUS(crec_program_get_loop_limit(p, w, NULL), CREC_ERR_NULL_POINTER);
  crec_command w2, k2;
  crec_program *q = loop_program(&w2, &k2);
  EXPECT_STATUS(crec_program_set_loop_limit(q, w, 10), CREC_ERR_INVALID_HANDLE);
  crec_program_destroy(q);
  crec_program_destroy(p);
}

Test(loop_limit, from_the_mlir_attribute, .init = crec_test_require_mlir) {
  static const char prog[] =
      "module attributes {gpu.container_module} {\n"
      "  gpu.module @k {\n"
      "    gpu.func @step(%f: memref<i8>) kernel {\n"
      "      %z = arith.constant 0 : i8\n"
      "      memref.store %z, %f[] : memref<i8>\n"
      "      gpu.return\n"
      "    }\n"
      "  }\n"
      "  func.func @main(%f: memref<i8> {crec.name = \"flag\"}) {\n"
      "    %c1 = arith.constant 1 : index\n"
      "    scf.while : () -> () {\n"
      "      %v = memref.load %f[] : memref<i8>\n"
      "      %z = arith.constant 0 : i8\n"
      "      %c = arith.cmpi ne, %v, %z : i8\n"
      "      scf.condition(%c)\n"
      "    } do {\n"
      "      gpu.launch_func @k::@step blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%f : memref<i8>)\n"
      "      scf.yield\n"
      "    } ATTR\n"
      "    return\n"
      "  }\n"
      "}\n";
  const char *attrs[] = {"attributes {crec.max_iterations = 250 : i64}", "", "attributes {crec.max_iterations = 7 : ui64}",
                         "attributes {crec.max_iterations = 0 : i64}", "attributes {crec.max_iterations = \"many\"}",
                         "attributes {crec.max_iterations = 5 : i128}", "attributes {crec.max_iterations = -2 : si32}"};
  const uint64_t limits[] = {250, 0, 7};
  for (int i = 0; i < 7; i++) {
    char text[2048];
    const char *at = strstr(prog, "ATTR");
    snprintf(text, sizeof text, "%.*s%s%s", (int)(at - prog), prog, attrs[i], at + 4);
    crec_program *p = NULL;
    crec_lower_options lo = CREC_LOWER_OPTIONS_INIT;
    lo.filename = "limit.mlir";
    crec_status s = crec_lower_mlir_string(text, strlen(text), &lo, &p);
    if (i >= 3) {
      cr_expect_eq(s, CREC_ERR_MLIR, "%s: %s", attrs[i], crec_status_name(s));
      EXPECT_ERROR_MENTIONS("crec.max_iterations must be a positive integer");
      EXPECT_ERROR_MENTIONS("limit.mlir:");
      cr_expect_null(p);
      continue;
    }
    cr_assert_eq(s, CREC_OK, "%s: %s", attrs[i], crec_last_error());
    uint64_t v = 7;
    EXPECT_OK(crec_program_get_loop_limit(p, crec_program_command(p, 0), &v));
    cr_expect_eq(v, limits[i], "%s: limit %llu", attrs[i], (unsigned long long)v);
    crec_program_destroy(p);
  }
}

/* A caller compiled against an older exec.h passes a smaller crec_record_options:
 * it is accepted (the new fields take their defaults); smaller than any is refused. */
Test(loop_limit, record_options_of_an_older_header) {
  crec_command w, k;
  crec_program *p = loop_program(&w, &k);
  crec_record_options o = CREC_RECORD_OPTIONS_INIT;
  o.struct_size = offsetof(crec_record_options, max_loop_iterations);
  o.max_loop_iterations = 1; /* beyond the old size: never read */
  crec_exec *e = (crec_exec *)&o;
  crec_status s = crec_record(p, NULL, &o, &e);
  cr_expect_neq(s, CREC_ERR_INVALID_ARGUMENT, "an older struct_size was refused: %s", crec_last_error());
  cr_expect_null(e);
  o.struct_size = sizeof(size_t);
  EXPECT_STATUS(crec_record(p, NULL, &o, &e), CREC_ERR_INVALID_ARGUMENT);
  EXPECT_ERROR_MENTIONS("argument 'options': struct_size 8 is smaller than");
  EXPECT_ERROR_MENTIONS("(use CREC_RECORD_OPTIONS_INIT)");
  crec_program_destroy(p);
}
