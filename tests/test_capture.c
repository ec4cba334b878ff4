/* CPU suite for imported graphs (capture.h): the checks that come before any
 * CUDA call, and what a machine without a driver answers. */
#include <stddef.h>
#include <string.h>

#include "common.h"

/* a graph handle the checks never dereference */
#define SOME_GRAPH ((crec_graph)(uintptr_t)0x1000)

static crec_status import(const crec_graph_argument *args, size_t n, crec_graph second, void *const *bases) {
  crec_graph_import in = CREC_GRAPH_IMPORT_INIT;
  in.graph = SOME_GRAPH;
  in.arguments = args;
  in.num_arguments = n;
  in.second = second;
  in.second_bases = bases;
  crec_exec *ex = (crec_exec *)(uintptr_t)1;
  crec_status s = crec_import_graph(&in, NULL, &ex);
  cr_assert_null(ex, "a failed import leaves *out NULL");
  return s;
}

Test(capture, imports_check_their_arguments_before_any_cuda_call) {
  crec_exec *ex;
  EXPECT_STATUS(crec_import_graph(NULL, NULL, &ex), CREC_ERR_NULL_POINTER);
  EXPECT_ERROR_MENTIONS("argument 'in' is NULL");
  crec_graph_import in = CREC_GRAPH_IMPORT_INIT;
  in.struct_size = 8;
  EXPECT_STATUS(crec_import_graph(&in, NULL, &ex), CREC_ERR_INVALID_ARGUMENT);
  EXPECT_ERROR_MENTIONS("CREC_GRAPH_IMPORT_INIT");
  char mem[64];
  crec_graph_argument a[2] = {{"x", mem, 32}, {"y", mem + 16, 32}};
  EXPECT_STATUS(import(a, 0, NULL, NULL), CREC_ERR_INVALID_ARGUMENT);
  EXPECT_ERROR_MENTIONS("no arguments");
  EXPECT_STATUS(import(a, 2, NULL, NULL), CREC_ERR_INVALID_ARGUMENT);
  EXPECT_ERROR_MENTIONS("arguments 0 and 1 overlap");
  a[1].size = 0;
  EXPECT_STATUS(import(a, 2, NULL, NULL), CREC_ERR_INVALID_ARGUMENT);
  EXPECT_ERROR_MENTIONS("argument 1: size is 0");
  a[1] = (crec_graph_argument){"y", mem + 32, 32};
  EXPECT_STATUS(import(a, 2, SOME_GRAPH, NULL), CREC_ERR_NULL_POINTER);
  EXPECT_ERROR_MENTIONS("'in->second_bases' is NULL");
  void *same[2] = {mem + 8, mem + 32};
  EXPECT_STATUS(import(a, 2, SOME_GRAPH, same), CREC_ERR_INVALID_ARGUMENT);
  EXPECT_ERROR_MENTIONS("argument 1: the second capture's base is an earlier capture's");
  a[0].base = NULL;
  EXPECT_STATUS(import(a, 2, NULL, NULL), CREC_ERR_NULL_POINTER);
  EXPECT_ERROR_MENTIONS("argument 0: base is NULL");
}

/* The fields 0.2 added: a third capture, and how the work uses each argument. */
Test(capture, a_third_capture_and_access_modes_are_checked_before_any_cuda_call) {
  char mem[128];
  crec_graph_argument a[2] = {{"x", mem, 32}, {"y", mem + 32, 32}};
  void *second[2] = {mem + 64, mem + 96}, *third[2] = {mem + 72, mem + 96};
  crec_graph_import in = CREC_GRAPH_IMPORT_INIT;
  in.graph = SOME_GRAPH;
  in.arguments = a;
  in.num_arguments = 2;
  in.third = SOME_GRAPH;
  in.third_bases = third;
  crec_exec *ex = NULL;
  EXPECT_STATUS(crec_import_graph(&in, NULL, &ex), CREC_ERR_INVALID_ARGUMENT);
  EXPECT_ERROR_MENTIONS("'third' is given without 'second'");
  in.second = SOME_GRAPH;
  in.second_bases = second;
  EXPECT_STATUS(crec_import_graph(&in, NULL, &ex), CREC_ERR_INVALID_ARGUMENT);
  EXPECT_ERROR_MENTIONS("argument 1: the third capture's base is an earlier capture's");
  third[1] = mem + 104;
  in.third_bases = NULL;
  EXPECT_STATUS(crec_import_graph(&in, NULL, &ex), CREC_ERR_NULL_POINTER);
  EXPECT_ERROR_MENTIONS("'in->third_bases' is NULL");
  in.third_bases = third;
  crec_access access[2] = {CREC_ACCESS_READ, (crec_access)8};
  in.access = access;
  EXPECT_STATUS(crec_import_graph(&in, NULL, &ex), CREC_ERR_INVALID_ARGUMENT);
  EXPECT_ERROR_MENTIONS("'in->access': entry 1 is 8");
  cr_assert_null(ex);
}

/* A caller built against 0.1 passes the older, smaller struct: its fields are
 * read, the rest taken as NULL (past the checks, a machine without a driver says so). */
Test(capture, an_import_struct_of_the_older_size_is_read_as_far_as_it_goes) {
  REQUIRE_NO_DEVICE();
  char mem[64];
  crec_graph_argument a[2] = {{"x", mem, 32}, {"y", mem + 32, 32}};
  crec_graph_import old = CREC_GRAPH_IMPORT_INIT;
  old.struct_size = offsetof(crec_graph_import, third);
  old.graph = SOME_GRAPH;
  old.arguments = a;
  old.num_arguments = 2;
  old.third = SOME_GRAPH; /* beyond its struct_size: never read ("third without second" otherwise) */
  crec_exec *ex = NULL;
  EXPECT_STATUS(crec_import_graph(&old, NULL, &ex), CREC_ERR_NO_DEVICE);
  cr_assert_null(ex);
}

Test(capture, routes_refuse_execs_that_were_not_imported) {
  crec_import_route r = CREC_IMPORT_ROUTE_INIT;
  EXPECT_STATUS(crec_exec_import_route(NULL, 0, &r), CREC_ERR_NULL_POINTER);
  EXPECT_ERROR_MENTIONS("argument 'exec' is NULL");
}

Test(capture, without_a_driver_capture_and_import_say_so) {
  REQUIRE_NO_DEVICE();
  char mem[64];
  crec_graph_argument a[1] = {{"x", mem, 32}};
  EXPECT_STATUS(import(a, 1, NULL, NULL), CREC_ERR_NO_DEVICE);
  EXPECT_STATUS(crec_capture_begin((crec_stream)(uintptr_t)0x10), CREC_ERR_NO_DEVICE);
  crec_graph g = SOME_GRAPH;
  EXPECT_STATUS(crec_capture_end((crec_stream)(uintptr_t)0x10, &g), CREC_ERR_NO_DEVICE);
  cr_assert_null(g);
  EXPECT_STATUS(crec_capture_begin(NULL), CREC_ERR_NULL_POINTER);
  EXPECT_ERROR_MENTIONS("the legacy stream cannot be captured");
  crec_graph_destroy(NULL);
}

Test(capture, counts_and_dumps_refuse_execs_that_were_not_imported) {
  size_t a, b, c;
  EXPECT_STATUS(crec_exec_import_counts(NULL, &a, &b, &c), CREC_ERR_NULL_POINTER);
  EXPECT_STATUS(crec_exec_import_edges(NULL, &a, &b), CREC_ERR_NULL_POINTER);
  EXPECT_STATUS(crec_exec_dump_import(NULL, stdout), CREC_ERR_NULL_POINTER);
  char *out = (char *)"x";
  EXPECT_STATUS(crec_exec_dump_import_string(NULL, 1, &out, NULL), CREC_ERR_NULL_POINTER);
}

/* crec_program_add_graph's checks that need no imported exec (the others are
 * gpu_embed.c's, which imports one). */
Test(capture, adding_a_graph_command_checks_its_arguments_and_leaves_no_command) {
  crec_program *p;
  EXPECT_OK(crec_program_create(&p));
  crec_buffer x;
  EXPECT_OK(crec_program_add_argument(p, "x", 64, NULL, &x));
  crec_operand op = crec_operand_of(crec_range_of(x, 0, 64), CREC_ACCESS_READ_WRITE);
  crec_command c = {7};
  EXPECT_STATUS(crec_program_add_graph(NULL, crec_program_body(p), "g", NULL, &op, 1, &c), CREC_ERR_NULL_POINTER);
  EXPECT_ERROR_MENTIONS("argument 'program' is NULL");
  cr_expect_eq(c.id, 0, "a failed add leaves *out 0");
  EXPECT_STATUS(crec_program_add_graph(p, crec_program_body(p), "g", NULL, &op, 1, &c), CREC_ERR_NULL_POINTER);
  EXPECT_ERROR_MENTIONS("argument 'imported' is NULL");
  cr_expect_eq(crec_program_command_count(p), 0);
  crec_program_destroy(p);
}
