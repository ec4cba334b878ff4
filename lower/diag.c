/* Locations ("file:line:col") and errors of the front end. Every error is one
 * line: "<fn>: <file:line:col>: '<op>': <reason>", and also goes to the
 * diagnostics callback. MLIR's own diagnostics are captured here as well. */
#include <stdio.h>
#include <string.h>

#include "access.h"
#include "lower_internal.h"

/* Reads the quoted string at `q` (its opening quote) into `out`; returns the
 * character after the closing quote, or NULL when the string does not end. */
static const char *read_quoted(const char *q, char *out, size_t size) {
  size_t n = 0;
  const char *c = q + 1;
  for (; *c && *c != '"'; c++) {
    if (*c == '\\' && c[1]) c++;
    if (n + 1 < size) out[n++] = *c;
  }
  if (size) out[n] = '\0';
  return *c ? c + 1 : NULL;
}

/* Finds the first `"file":line:col` in a printed location. */
static bool parse_location(const char *s, char *file, size_t file_size, unsigned long *line,
                           unsigned long *col) {
  for (const char *q = strchr(s, '"'); q; q = strchr(q, '"')) {
    const char *c = read_quoted(q, file, file_size);
    if (!c) return false;
    unsigned long l = 0, k = 0;
    int used = 0;
    if (sscanf(c, ":%lu:%lu%n", &l, &k, &used) == 2 && used > 0) {
      *line = l;
      *col = k;
      return true;
    }
    q = c;
  }
  return false;
}

static bool format_location(const lw *L, MlirLocation loc, char *buf, size_t size) {
  crec__text t = {0};
  mlirLocationPrint(loc, crec__lw_print_text, &t);
  crec__text_puts(&t, "");
  char file[1024];
  unsigned long line = 0, col = 0;
  bool ok = !t.failed && t.data && parse_location(t.data, file, sizeof file, &line, &col);
  crec__free(t.data);
  if (!ok) return false;
  /* the parser names its buffer "-": that is the file (or string) being lowered */
  const char *name = (!file[0] || strcmp(file, "-") == 0) ? L->filename : file;
  snprintf(buf, size, "%s:%lu:%lu", name, line, col);
  return true;
}

void crec__lw_loc_place(const lw *L, MlirLocation loc, char *file, size_t file_size, unsigned long *line,
                        char *name, size_t name_size) {
  crec__text t = {0};
  mlirLocationPrint(loc, crec__lw_print_text, &t);
  crec__text_puts(&t, "");
  unsigned long col = 0;
  *line = 0;
  if (name_size) name[0] = '\0';
  if (t.failed || !t.data || !parse_location(t.data, file, file_size, line, &col)) snprintf(file, file_size, "-");
  if (!file[0] || strcmp(file, "-") == 0) snprintf(file, file_size, "%s", L->filename);
  /* a named location prints as "name"(child) */
  for (const char *q = t.data ? strchr(t.data, '"') : NULL; q && name_size;) {
    const char *after = read_quoted(q, name, name_size);
    if (!after) break;
    if (*after == '(') {
      crec__free(t.data);
      return;
    }
    q = strchr(after, '"');
  }
  if (name_size) name[0] = '\0';
  crec__free(t.data);
}

void crec__lw_op_location(const lw *L, MlirOperation op, char *buf, size_t size) {
  for (MlirOperation o = op; !mlirOperationIsNull(o); o = mlirOperationGetParentOperation(o))
    if (format_location(L, mlirOperationGetLocation(o), buf, size)) return;
  snprintf(buf, size, "%s:1:1", L->filename);
}

void crec__lw_emit(lw *L, const char *severity, const char *location, const char *message) {
  if (L->internal) return;
  if (L->diagnostic) L->diagnostic(L->diagnostic_user, severity, location, message);
  if (L->recording) {
    crec__text_putn(&L->diag_log, severity, strlen(severity) + 1);
    crec__text_putn(&L->diag_log, location, strlen(location) + 1);
    crec__text_putn(&L->diag_log, message, strlen(message) + 1);
  }
}

static void one_line(char *s) {
  for (; *s; s++)
    if (*s == '\n' || *s == '\r' || *s == '\t') *s = ' ';
}

crec_status crec__lw_fail(lw *L, MlirOperation op, crec_status status, const char *fmt, ...) {
  char loc[1100], name[160], msg[1400];
  if (mlirOperationIsNull(op) && !mlirModuleIsNull(L->module)) op = mlirModuleGetOperation(L->module);
  if (mlirOperationIsNull(op)) {
    snprintf(loc, sizeof loc, "%s:1:1", L->filename);
    name[0] = '\0';
  } else {
    crec__lw_op_location(L, op, loc, sizeof loc);
    crec__lw_op_name(op, name, sizeof name);
  }
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  one_line(msg);
  char full[1600];
  if (name[0]) snprintf(full, sizeof full, "'%s': %s", name, msg);
  else snprintf(full, sizeof full, "%s", msg);
  crec__lw_emit(L, "error", loc, full);
  return crec__error(status, L->fn, "%s: %s", loc, full);
}

crec_status crec__lw_fail_builder(lw *L, MlirOperation op, crec_status status) {
  char inner[2048];
  snprintf(inner, sizeof inner, "%s", crec_last_error());
  return crec__lw_fail(L, op, status, "%s", inner);
}

crec_status crec__lw_fail_mlir(lw *L, MlirOperation op, const char *fallback) {
  if (!L->first_error) return crec__lw_fail(L, op, CREC_ERR_MLIR, "%s", fallback);
  return crec__error(CREC_ERR_MLIR, L->fn, "%s", L->first_error);
}

MlirLogicalResult crec__lw_diagnostic(MlirDiagnostic d, void *user) {
  lw *L = user;
  static const char *const names[] = {"error", "warning", "note", "remark"};
  MlirDiagnosticSeverity sev = mlirDiagnosticGetSeverity(d);
  const char *severity = (unsigned)sev < 4 ? names[sev] : "error";
  char loc[1100];
  if (!format_location(L, mlirDiagnosticGetLocation(d), loc, sizeof loc)) loc[0] = '\0';
  crec__text msg = {0};
  mlirDiagnosticPrint(d, crec__lw_print_text, &msg);
  crec__text_puts(&msg, "");
  if (msg.failed) {
    crec__free(msg.data);
    return mlirLogicalResultSuccess();
  }
  if (sev == MlirDiagnosticError && !L->first_error) {
    /* keep the first line: notes and op dumps follow on later lines */
    char *nl = strchr(msg.data, '\n');
    size_t n = nl ? (size_t)(nl - msg.data) : strlen(msg.data);
    crec__text first = {0};
    if (loc[0]) crec__text_printf(&first, "%s: ", loc);
    else crec__text_printf(&first, "%s: ", L->filename);
    crec__text_putn(&first, msg.data, n);
    if (first.failed) crec__free(first.data);
    else L->first_error = first.data;
  }
  crec__lw_emit(L, severity, loc, msg.data);
  for (intptr_t i = 0; i < mlirDiagnosticGetNumNotes(d); i++) crec__lw_diagnostic(mlirDiagnosticGetNote(d, i), L);
  crec__free(msg.data);
  return mlirLogicalResultSuccess();
}

/* ---- warnings about reads of undefined bytes ---- */

crec_status crec__lw_note_ops(lw *L, size_t first, MlirOperation op) {
  size_t n = L->p->num_commands;
  if (n > L->num_cmd_ops) {
    if (CREC__RESERVE(L->cmd_ops, L->cap_cmd_ops, n) != CREC_OK) return crec__oom(L->fn);
    for (size_t i = L->num_cmd_ops; i < n; i++) L->cmd_ops[i].ptr = NULL;
    L->num_cmd_ops = n;
  }
  for (size_t i = first; i < n; i++)
    if (mlirOperationIsNull(L->cmd_ops[i])) L->cmd_ops[i] = op;
  return CREC_OK;
}

crec_status crec__lw_note_unsure(lw *L, crec_command command, uint32_t arg) {
  if (CREC__RESERVE(L->unsure, L->cap_unsure, L->num_unsure + 1) != CREC_OK) return crec__oom(L->fn);
  lw_unsure u = {(uint32_t)crec__index(command.id), arg};
  L->unsure[L->num_unsure++] = u;
  return CREC_OK;
}

static bool assumed(const lw *L, const crec__undefined_read *r) {
  crec_command_kind k = L->p->commands[r->command].kind;
  if (k != CREC_COMMAND_LAUNCH && k != CREC_COMMAND_HOST && k != CREC_COMMAND_CUSTOM) return false;
  for (size_t i = 0; i < L->num_unsure; i++)
    if (L->unsure[i].command == r->command && L->unsure[i].arg == r->slot) return true;
  return false;
}

static bool warn_read(void *user, const crec__undefined_read *r) {
  lw *L = user;
  if (assumed(L, r)) return false;
  MlirOperation op = r->command < L->num_cmd_ops ? L->cmd_ops[r->command] : (MlirOperation){NULL};
  char loc[1100], name[160], what[400], msg[1024];
  if (mlirOperationIsNull(op)) {
    /* not made by an op of the entry: say it as the C API does */
    snprintf(loc, sizeof loc, "%s:1:1", L->filename);
    crec__undefined_message(L->p, r, msg, sizeof msg);
  } else {
    crec__lw_op_location(L, op, loc, sizeof loc);
    crec__lw_op_name(op, name, sizeof name);
    crec__undefined_what(L->p, r, what, sizeof what);
    snprintf(msg, sizeof msg, "%s %s %s, which nothing wrote before: its bytes are undefined (%s)", name,
             crec__undefined_verb(L->p, r), what,
             r->access == CREC_ACCESS_READ_WRITE ? "zero it first with gpu.memset"
                                                 : "write it first, e.g. zero it with gpu.memset");
  }
  crec__lw_emit(L, "warning", loc, msg);
  return true;
}

crec_status crec__lw_warn_undefined(lw *L) {
  if (!L->diagnostic && !L->recording) return CREC_OK; /* nobody to tell */
  crec_status s = crec__undefined_reads(L->p, warn_read, L);
  return s ? crec__oom(L->fn) : CREC_OK;
}
