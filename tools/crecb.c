/* Program files in the tool: knowing one by its first bytes, and whether the
 * chips its modules target can run on a device. */
#include <stdlib.h>
#include <string.h>

#include "tool.h"

/* serialize.h: 0x89 'C' 'R' 'E' 'C' 'B' '\r' '\n' */
static const unsigned char magic[8] = {0x89, 'C', 'R', 'E', 'C', 'B', '\r', '\n'};

int crec_tool_is_program_file(const void *head, size_t size) {
  return head && size >= sizeof magic && memcmp(head, magic, sizeof magic) == 0;
}

/* Parses "NN" or "NNN" and an optional suffix letter ('a' or 'f') after `prefix`. */
static int parse_chip(const char *s, const char *prefix, int *major, int *minor, char *suffix) {
  size_t n = strlen(prefix);
  if (strncmp(s, prefix, n) != 0) return 0;
  s += n;
  size_t digits = 0;
  while (s[digits] >= '0' && s[digits] <= '9') digits++;
  if (digits < 2 || digits > 3) return 0;
  *suffix = s[digits];
  if (*suffix && (s[digits + 1] || (*suffix != 'a' && *suffix != 'f'))) return 0;
  int v = atoi(s);
  *major = v / 10;
  *minor = v % 10;
  return 1;
}

int crec_tool_chip_runs_one(const char *target, int major, int minor, char *why, size_t why_size) {
  int tmajor = 0, tminor = 0;
  char suffix = 0;
  int dev = major * 10 + minor;
  if (why && why_size) why[0] = '\0';
  if (!strcmp(target, "any")) return 1;
  if (parse_chip(target, "compute_", &tmajor, &tminor, &suffix)) {
    int t = tmajor * 10 + tminor;
    /* PTX: the driver compiles it for its own chip and any later one; "a" PTX
     * uses features of that one chip, "f" those of its family (same major) */
    if (suffix == 'a' ? dev == t : suffix == 'f' ? major == tmajor && minor >= tminor : dev >= t) return 1;
    if (why)
      snprintf(why, why_size, "PTX for %s compiles for %s only", target,
               suffix == 'a' ? "that chip" : suffix == 'f' ? "later chips of its family" : "that chip and later ones");
    return 0;
  }
  if (parse_chip(target, "sm_", &tmajor, &tminor, &suffix)) {
    /* a cubin runs on its chip and later minor versions of the same major; "a" on its chip only */
    if (suffix == 'a' ? dev == tmajor * 10 + tminor : major == tmajor && minor >= tminor) return 1;
    if (why) {
      if (suffix == 'a') snprintf(why, why_size, "a cubin for %s runs on %d.%d only", target, tmajor, tminor);
      else snprintf(why, why_size, "a cubin for %s runs on %d.%d to %d.9 only", target, tmajor, tminor, tmajor);
    }
    return 0;
  }
  if (why) snprintf(why, why_size, "target '%s' is not a chip this crec knows", target);
  return 0;
}

int crec_tool_chip_runs(const char *targets, int major, int minor, char *why, size_t why_size) {
  if (why && why_size) why[0] = '\0';
  for (const char *t = targets; t && *t;) {
    size_t n = strcspn(t, ",");
    char one[64];
    snprintf(one, sizeof one, "%.*s", (int)(n < sizeof one ? n : sizeof one - 1), t);
    if (!crec_tool_chip_runs_one(one, major, minor, why, why_size)) return 0;
    t += n;
    if (*t == ',') t++;
  }
  return 1;
}
