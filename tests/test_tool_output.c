/* What `crec run --check` does with what a program prints: standard output
 * captured per execution, and a replay's text compared with the eager run's. */
#include <string.h>
#include <unistd.h>

#include "test_tool.h"

static int compare(const char *a, const char *b, char *why, size_t size) {
  return crec_tool_compare_output(a, strlen(a), b, strlen(b), why, size);
}

Test(tool_output, equal_text_is_equal) {
  char why[256] = "untouched";
  cr_assert_eq(compare("", "", why, sizeof why), 0);
  cr_assert_eq(compare("x = 1\ny = 2\n", "x = 1\ny = 2\n", why, sizeof why), 0);
  cr_assert_str_empty(why);
}

Test(tool_output, the_same_lines_in_another_order_are_told_apart_from_a_difference) {
  /* kernels' printf from several blocks has no fixed order */
  char why[256];
  cr_assert_eq(compare("block 1\nblock 0\n", "block 0\nblock 1\n", why, sizeof why), 1);
  cr_assert_str_empty(why);
  /* the same lines, one of them twice on one side: a difference */
  cr_assert_eq(compare("a\na\nb\n", "a\nb\nb\n", why, sizeof why), -1);
}

Test(tool_output, where_printmemref_says_a_memref_lives_is_not_compared) {
  /* the runner utilities' header names the buffer's address, which differs
   * between an eager run's temporaries and a replay's arena */
  char why[256];
  const char *replay = "Unranked Memref base@ = 0x7f2ee9e00100 rank = 1 offset = 0 sizes = [2] strides = [1] data = \n"
                       "[1,  2]\n";
  const char *eager = "Unranked Memref base@ = 0x7f2ee0000000 rank = 1 offset = 0 sizes = [2] strides = [1] data = \n"
                      "[1,  2]\n";
  cr_assert_eq(compare(replay, eager, why, sizeof why), 0, "%s", why);
  /* what follows the address still counts */
  const char *other = "Unranked Memref base@ = 0x7f2ee0000000 rank = 1 offset = 0 sizes = [2] strides = [1] data = \n"
                      "[1,  3]\n";
  cr_assert_eq(compare(replay, other, why, sizeof why), -1);
  cr_assert_str_eq(why, "line 2: '[1,  2]' against '[1,  3]' (2 lines against 2)");
  /* other addresses a program prints are its output like any other */
  cr_assert_eq(compare("x is at 0x7f00\n", "x is at 0x7f80\n", why, sizeof why), -1);
}

Test(tool_output, a_difference_names_its_first_line_and_quotes_both) {
  char why[640]; /* two quoted lines of up to 246 bytes each */
  cr_assert_eq(compare("[1, 2]\n[3, 5]\n", "[1, 2]\n[3, 4]\n", why, sizeof why), -1);
  cr_assert_str_eq(why, "line 2: '[3, 5]' against '[3, 4]' (2 lines against 2)");
  /* one side stops early; a missing newline at the end is a line too */
  cr_assert_eq(compare("a\nb", "a\n", why, sizeof why), -1);
  cr_assert_str_eq(why, "line 2: 'b' against nothing (no such line) (2 lines against 1)");
  cr_assert_eq(compare("a\n", "a", why, sizeof why), -1, "a newline more is a difference");
  /* control bytes are escaped, long lines cut */
  char longer[200];
  memset(longer, 'z', sizeof longer - 2);
  longer[sizeof longer - 2] = '\n', longer[sizeof longer - 1] = '\0';
  cr_assert_eq(compare("\x1b[0m\n", longer, why, sizeof why), -1);
  cr_assert(strstr(why, "'\\x1b[0m'"), "%s", why);
  cr_assert(strstr(why, "zzz...'"), "%s", why);
  /* a long line of bytes that all need escaping: its first 60, each as \xNN */
  char binary[101];
  memset(binary, 1, 100);
  binary[100] = '\0';
  cr_assert_eq(compare(binary, "x", why, sizeof why), -1);
  cr_assert(strstr(why, "\\x01\\x01"), "%s", why);
  cr_assert(strstr(why, "...' against 'x'"), "%s", why);
}

Test(tool_output, capture_takes_what_descriptor_1_and_stdout_print_and_gives_them_back) {
  crec_tool_capture c;
  crec_tool_diag d;
  cr_assert_eq(crec_tool_capture_begin(&c, &d), 0, "%s", d.message);
  /* what the driver's printf and a JIT-compiled host function may use: the
   * descriptor itself, and stdio (buffered; the end flushes it) */
  cr_assert_eq(write(STDOUT_FILENO, "by the descriptor\n", 18), 18);
  printf("and through stdio\n");
  char *text;
  size_t n;
  crec_tool_capture_end(&c, &text, &n);
  cr_assert_not_null(text);
  cr_assert_str_eq(text, "by the descriptor\nand through stdio\n");
  cr_assert_eq(n, strlen(text));
  free(text);
  cr_assert_eq(c.file, NULL);
  cr_assert_eq(c.saved_fd, -1);
  /* ending again, or a capture that never began, reads nothing and restores nothing */
  crec_tool_capture_end(&c, &text, &n);
  cr_assert_null(text);
  cr_assert_eq(n, 0);
}
