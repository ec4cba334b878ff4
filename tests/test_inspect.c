/* Introspection: what the builder was given reads back through inspect.h. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

TestSuite(inspect, .fini = crec_test_leak_check);

Test(inspect, buffers_read_back) {
  crec_program *p = NULL;
  EXPECT_OK(crec_program_create(&p));
  crec_argument_options o = CREC_ARGUMENT_OPTIONS_INIT;
  o.memory = CREC_MEMORY_HOST;
  o.alignment = 64;
  o.element = CREC_ELEMENT_BF16;
  crec_argument_options dyn = CREC_ARGUMENT_OPTIONS_INIT;
  dyn.dynamic_size = 1;
  unsigned char data[5] = {9, 8, 7, 6, 5};
  crec_buffer a, t, c, h, d;
  EXPECT_OK(crec_program_add_argument(p, "a", 100, NULL, &a));
  EXPECT_OK(crec_program_add_temporary(p, "t", 200, &t));
  EXPECT_OK(crec_program_add_constant(p, "c", data, sizeof data, &c));
  EXPECT_OK(crec_program_add_argument(p, "h", 300, &o, &h));
  EXPECT_OK(crec_program_add_argument(p, "d", 8, &dyn, &d));
  data[0] = 0; /* the program holds a copy */
  cr_assert_eq(crec_program_buffer_count(p), 5);
  cr_assert_eq(crec_program_argument_count(p), 3);
  const crec_buffer in_order[] = {a, t, c, h, d}, args[] = {a, h, d};
  for (size_t i = 0; i < 5; i++) {
    cr_assert_eq(crec_program_buffer(p, i).id, in_order[i].id);
    cr_assert_eq(crec_handle_index(in_order[i].id), i, "handle index is the creation order");
  }
  for (size_t i = 0; i < 3; i++) cr_assert_eq(crec_program_argument(p, i).id, args[i].id);
  cr_assert_eq(crec_program_buffer(p, 5).id, 0);
  cr_assert_eq(crec_program_argument(p, 3).id, 0);

  crec_buffer_info i;
  EXPECT_OK(crec_buffer_get_info(p, a, &i));
  cr_assert(strcmp(i.name, "a") == 0 && i.kind == CREC_BUFFER_ARGUMENT && i.size == 100 && i.alignment == 16 &&
            i.memory == CREC_MEMORY_DEVICE && !i.dynamic_size && i.argument_index == 0 && i.data == NULL);
  EXPECT_OK(crec_buffer_get_info(p, t, &i));
  cr_assert(i.kind == CREC_BUFFER_TEMPORARY && i.size == 200 && i.argument_index == SIZE_MAX);
  EXPECT_OK(crec_buffer_get_info(p, c, &i));
  cr_assert(i.kind == CREC_BUFFER_CONSTANT && i.size == 5 && i.data != NULL && i.data != (const void *)data);
  cr_assert_eq(((const unsigned char *)i.data)[0], 9, "the constant changed with the caller's bytes");
  EXPECT_OK(crec_buffer_get_info(p, h, &i));
  cr_assert(i.memory == CREC_MEMORY_HOST && i.alignment == 64 && i.element == CREC_ELEMENT_BF16 &&
            i.argument_index == 1);
  EXPECT_OK(crec_buffer_get_info(p, d, &i));
  cr_assert(i.dynamic_size && i.size == 8 && i.argument_index == 2);

  crec_buffer found;
  EXPECT_OK(crec_program_find_buffer(p, "h", &found));
  cr_assert_eq(found.id, h.id);
  EXPECT_STATUS(crec_program_find_buffer(p, "nope", &found), CREC_ERR_NOT_FOUND);
  EXPECT_ERROR_MENTIONS("'nope'");
  cr_assert_eq(found.id, 0);
  EXPECT_STATUS(crec_program_find_buffer(p, NULL, &found), CREC_ERR_NULL_POINTER);
  crec_buffer bad = {a.id + 10};
  EXPECT_STATUS(crec_buffer_get_info(p, bad, &i), CREC_ERR_INVALID_HANDLE);
  cr_assert_null(i.name, "a refused get_info leaves the struct zeroed");
  EXPECT_STATUS(crec_buffer_get_info(NULL, a, &i), CREC_ERR_NULL_POINTER);
  EXPECT_STATUS(crec_buffer_get_info(p, a, NULL), CREC_ERR_NULL_POINTER);
  crec_program_destroy(p);
}

static int host_noop(void *user, const crec_value *in, crec_value *out) {
  (void)user;
  (void)in;
  (void)out;
  return 0;
}

Test(inspect, scalars_and_host_functions_read_back) {
  crec_program *p = NULL;
  EXPECT_OK(crec_program_create(&p));
  crec_buffer x;
  EXPECT_OK(crec_program_add_argument(p, "x", 8, NULL, &x));
  crec_scalar n, d, sz, f;
  EXPECT_OK(crec_program_add_scalar(p, "n", CREC_TYPE_I32, &n));
  EXPECT_OK(crec_program_add_derived_scalar(p, "d", CREC_TYPE_F64, &d));
  EXPECT_OK(crec_program_add_size_scalar(p, "sz", x, &sz));
  EXPECT_OK(crec_program_add_scalar(p, "f", CREC_TYPE_F32, &f));
  cr_assert_eq(crec_program_scalar_count(p), 4);
  cr_assert_eq(crec_program_bound_scalar_count(p), 2);
  cr_assert_eq(crec_program_bound_scalar(p, 0).id, n.id);
  cr_assert_eq(crec_program_bound_scalar(p, 1).id, f.id);
  cr_assert_eq(crec_program_bound_scalar(p, 2).id, 0);
  cr_assert_eq(crec_program_scalar(p, 2).id, sz.id);
  crec_scalar_info i;
  EXPECT_OK(crec_scalar_get_info(p, n, &i));
  cr_assert(strcmp(i.name, "n") == 0 && i.type == CREC_TYPE_I32 && i.kind == CREC_SCALAR_BOUND && i.binding_index == 0);
  EXPECT_OK(crec_scalar_get_info(p, f, &i));
  cr_assert(i.kind == CREC_SCALAR_BOUND && i.binding_index == 1 && i.type == CREC_TYPE_F32);
  EXPECT_OK(crec_scalar_get_info(p, d, &i));
  cr_assert(i.kind == CREC_SCALAR_DERIVED && i.binding_index == SIZE_MAX && i.type == CREC_TYPE_F64);
  EXPECT_OK(crec_scalar_get_info(p, sz, &i));
  cr_assert(i.kind == CREC_SCALAR_SIZE && i.type == CREC_TYPE_I64 && i.buffer.id == x.id);
  crec_scalar found;
  EXPECT_OK(crec_program_find_scalar(p, "sz", &found));
  cr_assert_eq(found.id, sz.id);
  EXPECT_STATUS(crec_program_find_scalar(p, "x", &found), CREC_ERR_NOT_FOUND);

  crec_scalar in[2] = {n, sz}, out[1] = {d};
  int user = 5;
  EXPECT_OK(crec_program_add_host_function(p, "h", host_noop, &user, NULL, in, 2, out, 1));
  in[0] = f; /* the program keeps its own copy of the lists */
  crec_host_function_info h;
  EXPECT_OK(crec_program_get_host_function(p, 0, &h));
  cr_assert(strcmp(h.name, "h") == 0 && h.fn == host_noop && h.user == &user);
  cr_assert(h.num_inputs == 2 && h.inputs[0].id == n.id && h.inputs[1].id == sz.id);
  cr_assert(h.num_outputs == 1 && h.outputs[0].id == d.id);
  EXPECT_STATUS(crec_program_get_host_function(p, 1, &h), CREC_ERR_OUT_OF_RANGE);
  EXPECT_ERROR_MENTIONS("'index'");
  crec_program_destroy(p);
}

Test(inspect, launch_arguments_read_back) {
  crec_kernel k;
  crec_program *p = crec_test_program(&k);
  crec_buffer x;
  EXPECT_OK(crec_program_add_argument(p, "x", 256, NULL, &x));
  crec_scalar n, big;
  EXPECT_OK(crec_program_add_scalar(p, "n", CREC_TYPE_I32, &n));
  EXPECT_OK(crec_program_add_scalar(p, "big", CREC_TYPE_I64, &big));
  unsigned char blob[40], small[3] = {1, 2, 3};
  for (int i = 0; i < 40; i++) blob[i] = (unsigned char)i;
  crec_arg args[] = {crec_arg_buffer(crec_range_of(x, 16, CREC_WHOLE), CREC_ACCESS_READ_WRITE),
                     crec_arg_scalar(n), crec_arg_i64(-5), crec_arg_f32(0.25f), crec_arg_bytes(blob, 40),
                     crec_arg_bytes(small, 3)};
  crec_launch l = CREC_LAUNCH_INIT;
  l.kernel = k;
  l.args = args;
  l.num_args = 6;
  l.grid[0] = crec_dim_from(big);
  l.grid[2] = crec_dim_of(3);
  l.block[0] = crec_dim_of(128);
  l.shared_bytes = crec_dim_from(n);
  crec_command c;
  EXPECT_OK(crec_program_add_launch(p, crec_program_body(p), "go", &l, &c));
  memset(blob, 0xee, sizeof blob);
  small[0] = 0xee;
  args[0].range.offset = 99;

  crec_command_info ci = CREC_COMMAND_INFO_INIT;
  EXPECT_OK(crec_command_get_info(p, c, &ci));
  cr_assert(ci.kind == CREC_COMMAND_LAUNCH && strcmp(ci.name, "go") == 0 && ci.kernel.id == k.id);
  cr_assert(ci.region.id == crec_program_body(p).id && ci.index_in_region == 0 && ci.num_args == 6);
  cr_assert(ci.grid[0].scalar.id == big.id && ci.grid[1].value == 1 && ci.grid[2].value == 3);
  cr_assert(ci.block[0].value == 128 && ci.shared_bytes.scalar.id == n.id && ci.num_regions == 0);

  crec_arg a;
  EXPECT_OK(crec_command_get_arg(p, c, 0, &a));
  cr_assert(a.kind == CREC_ARG_BUFFER && a.access == CREC_ACCESS_READ_WRITE && a.range.buffer.id == x.id);
  cr_assert(a.range.offset == 16 && a.range.size == 240, "a whole range reads back resolved: %llu + %llu",
            (unsigned long long)a.range.offset, (unsigned long long)a.range.size);
  EXPECT_OK(crec_command_get_arg(p, c, 1, &a));
  cr_assert(a.kind == CREC_ARG_SCALAR && a.scalar.id == n.id && a.type == CREC_TYPE_I32);
  EXPECT_OK(crec_command_get_arg(p, c, 2, &a));
  cr_assert(a.kind == CREC_ARG_IMMEDIATE && a.type == CREC_TYPE_I64 && a.size == 8 && a.value.i64 == -5);
  EXPECT_OK(crec_command_get_arg(p, c, 3, &a));
  cr_assert(a.type == CREC_TYPE_F32 && a.size == 4 && a.value.f32 == 0.25f);
  EXPECT_OK(crec_command_get_arg(p, c, 4, &a));
  cr_assert(a.kind == CREC_ARG_IMMEDIATE && a.size == 40 && a.data != NULL && a.data != (const void *)blob);
  for (int i = 0; i < 40; i++)
    cr_assert_eq(((const unsigned char *)a.data)[i], i, "immediate byte %d changed with the caller's", i);
  EXPECT_OK(crec_command_get_arg(p, c, 5, &a));
  cr_assert(a.size == 3 && a.data == NULL && a.value.bytes[0] == 1 && a.value.bytes[2] == 3,
            "a small immediate lives in 'value'");
  EXPECT_STATUS(crec_command_get_arg(p, c, 6, &a), CREC_ERR_OUT_OF_RANGE);
  crec_command b;
  EXPECT_OK(crec_program_add_barrier(p, crec_program_body(p), NULL, &b));
  EXPECT_STATUS(crec_command_get_arg(p, b, 0, &a), CREC_ERR_INVALID_ARGUMENT);
  EXPECT_ERROR_MENTIONS("barrier");
  crec_program_destroy(p);
}

Test(inspect, regions_and_commands_read_back) {
  crec_kernel k;
  crec_program *p = crec_test_program(&k);
  crec_buffer x, idx;
  EXPECT_OK(crec_program_add_argument(p, "x", 256, NULL, &x));
  EXPECT_OK(crec_program_add_argument(p, "idx", 16, NULL, &idx));
  crec_region body = crec_program_body(p);
  cr_assert_eq(crec_program_region(p, 0).id, body.id);
  cr_assert_eq(crec_program_region_count(p), 1);
  crec_command m, w, s, i, inner;
  EXPECT_OK(crec_program_add_memset(p, body, "m", crec_range_of(x, 8, 16), 0xab, 1, &m));
  crec_region cond, loop, br[3], then_r, else_r;
  EXPECT_OK(crec_program_add_while(p, body, "w", crec_range_of(x, 3, CREC_WHOLE), &w, &cond, &loop));
  EXPECT_OK(crec_program_add_switch(p, body, "s", crec_range_of(idx, 8, 8), 3, NULL, &s, br));
  EXPECT_OK(crec_program_add_if(p, br[1], "i", crec_range_of(x, 0, 1), &i, &then_r, &else_r));
  EXPECT_OK(crec_program_add_memcpy(p, loop, "inner", crec_range_of(x, 0, 8), crec_range_of(x, 8, 8), &inner));
  cr_assert_eq(crec_program_region_count(p), 8);
  cr_assert_eq(crec_program_command_count(p), 5);

  crec_region_info ri;
  EXPECT_OK(crec_region_get_info(p, body, &ri));
  cr_assert(ri.role == CREC_REGION_PROGRAM && ri.parent.id == 0 && ri.num_commands == 3);
  EXPECT_OK(crec_region_get_info(p, cond, &ri));
  cr_assert(ri.role == CREC_REGION_COND && ri.parent.id == w.id && ri.index_in_parent == 0 && ri.num_commands == 0);
  EXPECT_OK(crec_region_get_info(p, loop, &ri));
  cr_assert(ri.role == CREC_REGION_BODY && ri.parent.id == w.id && ri.index_in_parent == 1 && ri.num_commands == 1);
  for (size_t b = 0; b < 3; b++) {
    EXPECT_OK(crec_region_get_info(p, br[b], &ri));
    cr_assert(ri.role == CREC_REGION_BRANCH && ri.parent.id == s.id && ri.index_in_parent == b);
    cr_assert_eq(crec_command_region(p, s, b).id, br[b].id);
  }
  cr_assert_eq(crec_command_region(p, s, 3).id, 0);
  cr_assert_eq(crec_command_region(p, m, 0).id, 0);
  EXPECT_OK(crec_region_get_info(p, else_r, &ri));
  cr_assert(ri.role == CREC_REGION_ELSE && ri.parent.id == i.id && ri.index_in_parent == 1);
  cr_assert_eq(crec_region_command(p, body, 2).id, s.id);
  cr_assert_eq(crec_region_command(p, body, 3).id, 0);
  cr_assert_eq(crec_region_command(p, br[1], 0).id, i.id);

  crec_command_info ci = CREC_COMMAND_INFO_INIT;
  EXPECT_OK(crec_command_get_info(p, m, &ci));
  cr_assert(ci.kind == CREC_COMMAND_MEMSET && ci.dst.buffer.id == x.id && ci.dst.offset == 8 && ci.dst.size == 16);
  cr_assert(ci.bytes == 16 && ci.memset_value == 0xab && ci.memset_element_size == 1 && ci.num_regions == 0);
  EXPECT_OK(crec_command_get_info(p, w, &ci));
  cr_assert(ci.kind == CREC_COMMAND_WHILE && ci.num_regions == 2 && ci.predicate.offset == 3 && ci.predicate.size == 1);
  cr_assert_null(ci.case_values);
  EXPECT_OK(crec_command_get_info(p, s, &ci));
  cr_assert(ci.kind == CREC_COMMAND_SWITCH && ci.num_regions == 3 && ci.predicate.offset == 8 && ci.predicate.size == 4);
  EXPECT_OK(crec_command_get_info(p, i, &ci));
  cr_assert(ci.region.id == br[1].id && ci.index_in_region == 0);
  EXPECT_OK(crec_command_get_info(p, inner, &ci));
  cr_assert(ci.kind == CREC_COMMAND_MEMCPY && ci.src.offset == 8 && ci.dst.offset == 0 && ci.bytes == 8);
  cr_assert(ci.region.id == loop.id && ci.index_in_region == 0);

  crec_command order[5];
  cr_assert_eq(crec_test_program_order(p, order), 5);
  const crec_command want[5] = {m, w, inner, s, i};
  for (int n = 0; n < 5; n++) cr_assert_eq(order[n].id, want[n].id);
  crec_command bad = {m.id + 20};
  EXPECT_STATUS(crec_command_get_info(p, bad, &ci), CREC_ERR_INVALID_HANDLE);
  crec_region badr = {body.id + 20};
  EXPECT_STATUS(crec_region_get_info(p, badr, &ri), CREC_ERR_INVALID_HANDLE);
  cr_assert_eq(crec_region_command(p, badr, 0).id, 0);
  crec_program_destroy(p);
}

/* crec_command_info grows: the caller's struct_size says how much of it is written. */
Test(inspect, command_info_writes_what_the_callers_struct_size_holds) {
  crec_program *p = NULL;
  EXPECT_OK(crec_program_create(&p));
  crec_region body = crec_program_body(p);
  crec_buffer a, b, d;
  EXPECT_OK(crec_program_add_argument(p, "a", 8 * 4 * 4, NULL, &a));
  EXPECT_OK(crec_program_add_argument(p, "b", 4 * 2 * 4, NULL, &b));
  EXPECT_OK(crec_program_add_argument(p, "d", 8 * 2 * 4, NULL, &d));
  crec_gemm g = CREC_GEMM_INIT;
  g.a = crec_matrix_of(crec_range_whole(a), 8, 4);
  g.b = crec_matrix_of(crec_range_whole(b), 4, 2);
  g.d = crec_matrix_of(crec_range_whole(d), 8, 2);
  crec_command c;
  EXPECT_OK(crec_program_add_gemm(p, body, "mm", &g, &c));

  crec_command_info init = CREC_COMMAND_INFO_INIT;
  cr_assert_eq(init.struct_size, sizeof init);
  cr_assert(init.kind == CREC_COMMAND_LAUNCH && !init.name && !init.num_operands && !init.workspace.id);

  /* today's size: every field, the workspace too */
  crec_command_info full = CREC_COMMAND_INFO_INIT;
  EXPECT_OK(crec_command_get_info(p, c, &full));
  cr_assert_eq(full.struct_size, sizeof full);
  cr_assert(full.kind == CREC_COMMAND_GEMM && !strcmp(full.name, "mm") && full.num_operands == 4);
  cr_assert_neq(full.workspace.id, 0, "a GEMM names its workspace");

  /* an older caller, one without the workspace field: the bytes after what it holds stay */
  union {
    crec_command_info info;
    unsigned char bytes[sizeof(crec_command_info) + 16];
  } u;
  const size_t older = offsetof(crec_command_info, workspace);
  memset(&u, 0xa5, sizeof u);
  u.info.struct_size = older;
  EXPECT_OK(crec_command_get_info(p, c, &u.info));
  cr_assert_eq(u.info.struct_size, older, "struct_size says what was written");
  cr_assert(u.info.kind == CREC_COMMAND_GEMM && !strcmp(u.info.name, "mm") && u.info.num_operands == 4);
  cr_assert(u.info.kernel.id == 0 && u.info.num_regions == 0 && !u.info.case_values, "unused fields are zero");
  for (size_t k = older; k < sizeof u.bytes; k++) cr_assert_eq(u.bytes[k], 0xa5, "byte %zu was written", k);

  /* the oldest size taken: the first version's fields, up to the case values */
  const size_t oldest = offsetof(crec_command_info, num_operands);
  memset(&u, 0xa5, sizeof u);
  u.info.struct_size = oldest;
  EXPECT_OK(crec_command_get_info(p, c, &u.info));
  cr_assert(u.info.struct_size == oldest && u.info.kind == CREC_COMMAND_GEMM && !strcmp(u.info.name, "mm"));
  for (size_t k = oldest; k < sizeof u.bytes; k++) cr_assert_eq(u.bytes[k], 0xa5, "byte %zu was written", k);

  /* a newer caller's larger struct: today's fields, struct_size set to them */
  memset(&u, 0xa5, sizeof u);
  u.info.struct_size = sizeof u.bytes;
  EXPECT_OK(crec_command_get_info(p, c, &u.info));
  cr_assert_eq(u.info.struct_size, sizeof(crec_command_info));
  cr_assert_eq(u.info.workspace.id, full.workspace.id);
  for (size_t k = sizeof(crec_command_info); k < sizeof u.bytes; k++) cr_assert_eq(u.bytes[k], 0xa5);

  /* below the oldest, or unset: refused, naming the argument, and nothing written */
  const size_t refused[] = {0, sizeof(size_t), oldest - 1};
  for (size_t r = 0; r < sizeof refused / sizeof refused[0]; r++) {
    memset(&u, 0xa5, sizeof u);
    u.info.struct_size = refused[r];
    EXPECT_STATUS(crec_command_get_info(p, c, &u.info), CREC_ERR_INVALID_ARGUMENT);
    char want[160];
    snprintf(want, sizeof want, "crec_command_get_info: argument 'out': struct_size %zu is smaller than %zu (use "
             "CREC_COMMAND_INFO_INIT)", refused[r], oldest);
    EXPECT_ERROR_MENTIONS(want);
    cr_assert_eq(u.info.struct_size, refused[r]);
    for (size_t k = sizeof(size_t); k < sizeof u.bytes; k++) cr_assert_eq(u.bytes[k], 0xa5, "byte %zu was written", k);
  }

  /* a bad handle: the fields the caller holds are zero */
  memset(&u, 0xa5, sizeof u);
  u.info.struct_size = sizeof u.info;
  crec_command bad = {c.id + 20};
  EXPECT_STATUS(crec_command_get_info(p, bad, &u.info), CREC_ERR_INVALID_HANDLE);
  cr_assert(u.info.struct_size == sizeof u.info && u.info.kind == 0 && !u.info.name && !u.info.workspace.id);
  crec_program_destroy(p);
}

Test(inspect, modules_and_kernels_read_back) {
  crec_kernel k;
  crec_program *p = crec_test_program(&k);
  crec_kernel_options o = CREC_KERNEL_OPTIONS_INIT;
  o.shared_bytes = 4096;
  o.cluster[0] = 2;
  o.cluster[1] = 1;
  o.cluster[2] = 1;
  crec_module m = crec_program_module(p, 0);
  crec_kernel k2;
  EXPECT_OK(crec_program_add_kernel(p, m, "k2", &o, &k2));
  cr_assert_eq(crec_program_module_count(p), 1);
  cr_assert_eq(crec_program_kernel_count(p), 2);
  cr_assert_eq(crec_program_kernel(p, 1).id, k2.id);
  cr_assert_eq(crec_program_kernel(p, 2).id, 0);
  crec_kernel_info ki;
  EXPECT_OK(crec_kernel_get_info(p, k2, &ki));
  cr_assert(ki.module.id == m.id && strcmp(ki.entry, "k2") == 0 && ki.shared_bytes == 4096 && ki.cluster[0] == 2);
  EXPECT_OK(crec_kernel_get_info(p, k, &ki));
  cr_assert(ki.shared_bytes == 0 && ki.cluster[0] == 0 && ki.cluster[1] == 0 && ki.cluster[2] == 0);
  crec_module_info mi;
  EXPECT_OK(crec_module_get_info(p, m, &mi));
  cr_assert(strcmp(mi.name, "m") == 0 && mi.format == CREC_IMAGE_PTX && mi.size == strlen(crec_test_ptx));
  crec_program_destroy(p);
}

Test(inspect, names_of_enums) {
  const char *kinds[] = {"launch", "memcpy", "memset", "barrier", "while", "if", "switch",
                         "gemm", "collective", "custom", "host", "fft", "cholesky", "conv", "graph"};
  for (int i = 0; i < 15; i++) cr_assert_str_eq(crec_command_kind_name((crec_command_kind)i), kinds[i]);
  cr_assert_str_eq(crec_command_kind_name((crec_command_kind)15), "unknown");
  cr_assert_str_eq(crec_command_kind_name((crec_command_kind)-1), "unknown");
  const char *roles[] = {"program", "body", "cond", "then", "else", "branch"};
  for (int i = 0; i < 6; i++) cr_assert_str_eq(crec_region_role_name((crec_region_role)i), roles[i]);
  cr_assert_str_eq(crec_region_role_name((crec_region_role)6), "unknown");
  cr_assert_str_eq(crec_buffer_kind_name(CREC_BUFFER_CONSTANT), "constant");
  cr_assert_str_eq(crec_buffer_kind_name((crec_buffer_kind)3), "unknown");
  cr_assert_str_eq(crec_type_name(CREC_TYPE_F64), "f64");
  cr_assert_str_eq(crec_type_name(CREC_TYPE_NONE), "unknown");
  cr_assert_eq(crec_type_size(CREC_TYPE_I64), 8);
  cr_assert_eq(crec_type_size(CREC_TYPE_F32), 4);
  cr_assert_eq(crec_type_size(CREC_TYPE_NONE), 0);
  cr_assert_str_eq(crec_element_name(CREC_ELEMENT_BF16), "bf16");
  cr_assert_str_eq(crec_element_name((crec_element)9), "unknown");
  cr_assert_eq(crec_element_size(CREC_ELEMENT_BYTES), 1);
  cr_assert_eq(crec_element_size(CREC_ELEMENT_F16), 2);
  cr_assert_eq(crec_element_size(CREC_ELEMENT_F64), 8);
  cr_assert_eq(crec_element_size((crec_element)9), 0);
  cr_assert_str_eq(crec_image_format_name(CREC_IMAGE_FATBIN), "fatbin");
  cr_assert_str_eq(crec_image_format_name((crec_image_format)3), "unknown");
  cr_assert_eq(crec_handle_index(0), SIZE_MAX);
}

/* ---- whether an image's load compiles PTX ---- */

extern const unsigned char crec_test_kernels_fatbin[];
extern const size_t crec_test_kernels_fatbin_size;

/* A fatbin as nvcc lays it out, of `n` ELF entries (a few payload bytes each)
 * for the archs in `archs` (major * 10 + minor), those in `specific` arch-specific
 * ('a'); returns its size. */
static size_t make_fatbin(unsigned char *out, const unsigned *archs, const int *specific, size_t n) {
  enum { HEAD = 16, ENTRY = 64, PAYLOAD = 8 };
  memset(out, 0, HEAD + n * (ENTRY + PAYLOAD));
  uint32_t magic = 0xBA55ED50u;
  uint16_t version = 1, hs = HEAD;
  uint64_t body = n * (ENTRY + PAYLOAD);
  memcpy(out, &magic, 4), memcpy(out + 4, &version, 2), memcpy(out + 6, &hs, 2), memcpy(out + 8, &body, 8);
  for (size_t i = 0; i < n; i++) {
    unsigned char *e = out + HEAD + i * (ENTRY + PAYLOAD);
    uint16_t kind = 2;
    uint32_t ehs = ENTRY, arch = archs[i];
    uint64_t payload = PAYLOAD, flags = 0x11u | (specific[i] ? 1u << 20 : 0u);
    memcpy(e, &kind, 2), memcpy(e + 4, &ehs, 4), memcpy(e + 8, &payload, 8), memcpy(e + 28, &arch, 4);
    memcpy(e + 40, &flags, 8);
    memcpy(e + ENTRY, "\x7f" "ELF", 4);
  }
  return HEAD + n * (ENTRY + PAYLOAD);
}

Test(inspect, an_image_needs_jit_unless_it_holds_a_cubin_the_chip_runs) {
  static const char ptx[] = ".version 8.0\n.target sm_75\n.entry k() { ret; }\n";
  static const unsigned char elf[] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0x41};
  cr_assert_eq(crec_image_needs_jit(CREC_IMAGE_PTX, ptx, sizeof ptx - 1, 9, 0), 1);
  cr_assert_eq(crec_image_needs_jit(CREC_IMAGE_CUBIN, elf, sizeof elf, 9, 0), 0);
  /* the test kernels' fatbin, as nvcc built it: sm_90 SASS and compute_75 PTX */
  const unsigned char *tk = crec_test_kernels_fatbin;
  size_t tn = crec_test_kernels_fatbin_size;
  cr_assert_eq(crec_image_needs_jit(CREC_IMAGE_FATBIN, tk, tn, 9, 0), 0, "sm_90 runs its sm_90 cubin");
  cr_assert_eq(crec_image_needs_jit(CREC_IMAGE_FATBIN, tk, tn, 8, 0), 1, "sm_80 compiles its PTX");
  cr_assert_eq(crec_image_needs_jit(CREC_IMAGE_FATBIN, tk, tn, 10, 0), 1, "sm_100 compiles its PTX");
  cr_assert_eq(crec_image_needs_jit(CREC_IMAGE_FATBIN, tk, 40, 9, 0), 1, "cut short: it cannot tell");
  /* a cubin runs on later chips of its major version; an arch-specific one on its own chip only */
  unsigned char fb[16 + 3 * 72];
  const unsigned archs[] = {86, 90, 120};
  const int specific[] = {0, 1, 0};
  size_t n = make_fatbin(fb, archs, specific, 3);
  cr_assert_eq(crec_image_needs_jit(CREC_IMAGE_FATBIN, fb, n, 8, 9), 0, "sm_89 runs sm_86");
  cr_assert_eq(crec_image_needs_jit(CREC_IMAGE_FATBIN, fb, n, 8, 0), 1, "sm_80 cannot run sm_86");
  cr_assert_eq(crec_image_needs_jit(CREC_IMAGE_FATBIN, fb, n, 9, 0), 0, "sm_90 runs sm_90a");
  cr_assert_eq(crec_image_needs_jit(CREC_IMAGE_FATBIN, fb, n, 12, 1), 0, "sm_121 runs sm_120");
  cr_assert_eq(crec_image_needs_jit(CREC_IMAGE_FATBIN, fb, n, 10, 0), 1, "no sm_10x cubin");
  const int all_specific[] = {1, 1, 1};
  n = make_fatbin(fb, archs, all_specific, 3);
  cr_assert_eq(crec_image_needs_jit(CREC_IMAGE_FATBIN, fb, n, 8, 9), 1, "sm_86a runs on sm_86 only");
  cr_assert_eq(crec_image_needs_jit(CREC_IMAGE_FATBIN, fb, n, 12, 1), 1, "sm_120a runs on sm_120 only");
  /* a payload that runs past the end, a bad magic, a wrapper */
  n = make_fatbin(fb, archs, specific, 1);
  uint64_t huge = 1u << 20;
  memcpy(fb + 16 + 8, &huge, 8);
  cr_assert_eq(crec_image_needs_jit(CREC_IMAGE_FATBIN, fb, n, 8, 6), 1);
  static const unsigned char wrapper[16] = {0xB1, 0x43, 0x62, 0x46, 1};
  cr_assert_eq(crec_image_needs_jit(CREC_IMAGE_FATBIN, wrapper, sizeof wrapper, 9, 0), 1);
  cr_assert_eq(crec_image_needs_jit(CREC_IMAGE_FATBIN, NULL, 0, 9, 0), -1);
  cr_assert_eq(crec_image_needs_jit((crec_image_format)3, elf, sizeof elf, 9, 0), -1);
}

Test(inspect, null_program_counts_nothing) {
  cr_assert_eq(crec_program_buffer_count(NULL), 0);
  cr_assert_eq(crec_program_argument_count(NULL), 0);
  cr_assert_eq(crec_program_scalar_count(NULL), 0);
  cr_assert_eq(crec_program_bound_scalar_count(NULL), 0);
  cr_assert_eq(crec_program_host_function_count(NULL), 0);
  cr_assert_eq(crec_program_module_count(NULL), 0);
  cr_assert_eq(crec_program_kernel_count(NULL), 0);
  cr_assert_eq(crec_program_region_count(NULL), 0);
  cr_assert_eq(crec_program_command_count(NULL), 0);
  cr_assert_eq(crec_program_body(NULL).id, 0);
  cr_assert_eq(crec_program_buffer(NULL, 0).id, 0);
  cr_assert_eq(crec_program_region(NULL, 0).id, 0);
  cr_assert_eq(crec_region_command(NULL, (crec_region){1}, 0).id, 0);
  EXPECT_STATUS(crec_program_validate(NULL), CREC_ERR_NULL_POINTER);
}
