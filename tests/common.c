#include "common.h"

#include <string.h>

const char crec_test_ptx[] =
    ".version 7.0\n.target sm_75\n.address_size 64\n"
    ".visible .entry k(.param .u64 p0, .param .u64 p1, .param .u32 n)\n{\n  ret;\n}\n";

crec_program *crec_test_program(crec_kernel *kernel) {
  crec_program *p = NULL;
  crec_module m;
  cr_assert_eq(crec_program_create(&p), CREC_OK, "%s", crec_last_error());
  cr_assert_eq(crec_program_add_module(p, "m", CREC_IMAGE_PTX, crec_test_ptx, strlen(crec_test_ptx), &m),
               CREC_OK, "%s", crec_last_error());
  cr_assert_eq(crec_program_add_kernel(p, m, "k", NULL, kernel), CREC_OK, "%s", crec_last_error());
  return p;
}
