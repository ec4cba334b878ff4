/* Status names, the per-thread last error, and the library version. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

const char *crec_status_name(crec_status status) {
  switch (status) {
#define CREC__STATUS_NAME(name, value, text) \
  case CREC_##name:                          \
    return #name;
    CREC_STATUS_TABLE(CREC__STATUS_NAME)
#undef CREC__STATUS_NAME
  }
  return "UNKNOWN";
}

const char *crec_status_string(crec_status status) {
  switch (status) {
#define CREC__STATUS_TEXT(name, value, text) \
  case CREC_##name:                          \
    return text;
    CREC_STATUS_TABLE(CREC__STATUS_TEXT)
#undef CREC__STATUS_TEXT
  }
  return "unknown status";
}

static _Thread_local char last_error[2048];

const char *crec_last_error(void) { return last_error; }

crec_status crec__verror(crec_status status, const char *func, const char *fmt, va_list ap) {
  int n = snprintf(last_error, sizeof last_error, "%s: ", func ? func : "crec");
  if (n < 0 || (size_t)n >= sizeof last_error) return status;
  vsnprintf(last_error + n, sizeof last_error - (size_t)n, fmt, ap);
  return status;
}

crec_status crec__error(crec_status status, const char *func, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  crec__verror(status, func, fmt, ap);
  va_end(ap);
  return status;
}

crec_status crec__annotate(crec_status status, const char *func, const char *what) {
  if (status == CREC_OK || strstr(last_error, what)) return status;
  size_t f = strlen(func ? func : "crec");
  if (strncmp(last_error, func ? func : "crec", f) != 0 || strncmp(last_error + f, ": ", 2) != 0) return status;
  char rest[sizeof last_error];
  snprintf(rest, sizeof rest, "%s", last_error + f + 2);
  return crec__error(status, func, "%s: %s", what, rest);
}

crec_status crec__rethrow(crec_status status, const char *func) {
  char inner[sizeof last_error];
  memcpy(inner, last_error, sizeof inner);
  return crec__error(status, func, "%s", inner);
}

crec_status crec__oom(const char *func) {
  return crec__error(CREC_ERR_OUT_OF_MEMORY, func, "out of host memory");
}

const char *crec_version(void) { return CREC_VERSION_STRING; }
