/* Property: a few hundred generated programs (random launches, copies, fills,
 * barriers, nested scf.if / scf.while / scf.index_switch, views and host
 * arithmetic) all lower, give the same JSON and text dumps when lowered twice,
 * plan without error, and keep every command the generator wrote, kind by kind. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common.h"

TestSuite(lower_property, .init = crec_test_require_mlir);

#define PROGRAMS 300

typedef struct gen {
  uint64_t state;
  char *text;
  size_t len, cap;
  int tmp;            /* SSA names */
  int buffers;        /* b0 .. b<buffers-1> plus temporaries t<k> */
  int temps;
  size_t counts[11];  /* commands per crec_command_kind */
  bool uses_n;
} gen;

static uint32_t rnd(gen *g, uint32_t n) {
  g->state = g->state * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(g->state >> 33) % n;
}

static void emit(gen *g, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char line[1024];
  int n = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  cr_assert(n > 0 && (size_t)n < sizeof line);
  if (g->len + (size_t)n + 1 > g->cap) {
    g->cap = (g->len + (size_t)n + 1) * 2;
    g->text = realloc(g->text, g->cap);
    cr_assert_not_null(g->text);
  }
  memcpy(g->text + g->len, line, (size_t)n + 1);
  g->len += (size_t)n;
}

/* A random buffer operand: a whole buffer, or a 64-float subview at a static offset. */
static int operand(gen *g, char *name, size_t size, char *type, size_t tsize, bool whole) {
  int pool = g->buffers + g->temps;
  int k = (int)rnd(g, (uint32_t)pool);
  char base[32];
  if (k < g->buffers) snprintf(base, sizeof base, "%%b%d", k);
  else snprintf(base, sizeof base, "%%t%d", k - g->buffers);
  if (whole || rnd(g, 2)) {
    snprintf(name, size, "%s", base);
    snprintf(type, tsize, "memref<256xf32>");
    return k;
  }
  int id = g->tmp++;
  int off = 64 * (int)rnd(g, 4);
  snprintf(type, tsize, "memref<64xf32, strided<[1], offset: %d>>", off);
  emit(g, "    %%v%d = memref.subview %s[%d] [64] [1] : memref<256xf32> to %s\n", id, base, off, type);
  snprintf(name, size, "%%v%d", id);
  return k;
}

static void dim(gen *g, char *name, size_t size) {
  static const int values[] = {1, 2, 4, 8, 16};
  if (rnd(g, 3) == 0) {
    int id = g->tmp++;
    int by = 32 << rnd(g, 3);
    emit(g, "    %%d%d_c = arith.constant %d : index\n", id, by);
    emit(g, "    %%d%d = arith.ceildivui %%n, %%d%d_c : index\n", id, id);
    snprintf(name, size, "%%d%d", id);
    g->uses_n = true;
    return;
  }
  snprintf(name, size, "%%c%d", values[rnd(g, 5)]);
}

static void statements(gen *g, int depth, int count);

static void statement(gen *g, int depth) {
  char a[32], b[32], gx[32], bx[32], ta[64], tb[64];
  uint32_t kind = rnd(g, depth < 3 ? 10 : 6);
  switch (kind) {
    case 0:
    case 1: {
      /* scale: b = a * s, both whole 256-float buffers */
      operand(g, a, sizeof a, ta, sizeof ta, true);
      operand(g, b, sizeof b, tb, sizeof tb, true);
      dim(g, gx, sizeof gx);
      snprintf(bx, sizeof bx, "%%c%d", 32 << rnd(g, 4));
      emit(g, "    gpu.launch_func @k::@scale blocks in (%s, %%c1, %%c1) threads in (%s, %%c1, %%c1) "
              "args(%s : memref<256xf32>, %s : memref<256xf32>, %%s : f32)\n", gx, bx, a, b);
      g->counts[CREC_COMMAND_LAUNCH]++;
      break;
    }
    case 2: {
      int ka = operand(g, a, sizeof a, ta, sizeof ta, false);
      int kb = operand(g, b, sizeof b, tb, sizeof tb, false);
      if ((a[1] == 'v') != (b[1] == 'v')) { /* a view and a whole buffer differ in size */
        ka = operand(g, a, sizeof a, ta, sizeof ta, true);
        kb = operand(g, b, sizeof b, tb, sizeof tb, true);
      }
      if (ka == kb) break; /* crec refuses copies within one buffer that may overlap */
      emit(g, "    gpu.memcpy %s, %s : %s, %s\n", a, b, ta, tb);
      g->counts[CREC_COMMAND_MEMCPY]++;
      break;
    }
    case 3: {
      operand(g, a, sizeof a, ta, sizeof ta, false);
      emit(g, "    gpu.memset %s, %%f%d : %s, f32\n", a, (int)rnd(g, 3), ta);
      g->counts[CREC_COMMAND_MEMSET]++;
      break;
    }
    case 4:
      emit(g, "    \"crec.barrier\"() : () -> ()\n");
      g->counts[CREC_COMMAND_BARRIER]++;
      break;
    case 5: {
      operand(g, a, sizeof a, ta, sizeof ta, true);
      emit(g, "    gpu.launch_func @k::@inc blocks in (%%c1, %%c1, %%c1) threads in (%%c256, %%c1, %%c1) "
              "args(%s : memref<256xf32>)\n", a);
      g->counts[CREC_COMMAND_LAUNCH]++;
      break;
    }
    case 6:
    case 7: {
      int id = g->tmp++;
      emit(g, "    %%p%d = memref.load %%flags[%%c%d] : memref<8xi32>\n", id, 1 << rnd(g, 3));
      emit(g, "    %%q%d = arith.cmpi ne, %%p%d, %%z : i32\n", id, id);
      emit(g, "    scf.if %%q%d {\n", id);
      g->counts[CREC_COMMAND_IF]++;
      statements(g, depth + 1, 1 + (int)rnd(g, 3));
      if (rnd(g, 2)) {
        emit(g, "    } else {\n");
        statements(g, depth + 1, 1 + (int)rnd(g, 2));
      }
      emit(g, "    }\n");
      break;
    }
    case 8: {
      static const int slots[4] = {0, 1, 2, 4};
      int id = g->tmp++, slot = slots[rnd(g, 4)];
      emit(g, "    scf.while : () -> () {\n");
      emit(g, "    gpu.launch_func @k::@step blocks in (%%c1, %%c1, %%c1) threads in (%%c1, %%c1, %%c1) "
              "args(%%counters : memref<4xi32>, %%flags : memref<8xi32>)\n");
      g->counts[CREC_COMMAND_LAUNCH]++;
      g->counts[CREC_COMMAND_WHILE]++;
      emit(g, "    %%p%d = memref.load %%flags[%%c%d] : memref<8xi32>\n", id, slot);
      emit(g, "    %%q%d = arith.cmpi ne, %%p%d, %%z : i32\n", id, id);
      emit(g, "    scf.condition(%%q%d)\n    } do {\n", id);
      statements(g, depth + 1, 1 + (int)rnd(g, 3));
      emit(g, "    scf.yield\n    }\n");
      break;
    }
    default: {
      int id = g->tmp++, cases = 1 + (int)rnd(g, 3);
      emit(g, "    %%p%d = memref.load %%flags[%%c%d] : memref<8xi32>\n", id, 1 << rnd(g, 3));
      emit(g, "    %%x%d = arith.index_cast %%p%d : i32 to index\n", id, id);
      emit(g, "    scf.index_switch %%x%d\n", id);
      g->counts[CREC_COMMAND_SWITCH]++;
      int value = (int)rnd(g, 3) - 1;
      for (int c = 0; c < cases; c++) {
        emit(g, "    case %d {\n", value);
        value += 1 + (int)rnd(g, 5);
        statements(g, depth + 1, (int)rnd(g, 3));
        emit(g, "    scf.yield\n    }\n");
      }
      emit(g, "    default {\n");
      statements(g, depth + 1, (int)rnd(g, 2));
      emit(g, "    scf.yield\n    }\n");
      break;
    }
  }
}

static void statements(gen *g, int depth, int count) {
  for (int i = 0; i < count; i++) statement(g, depth);
}

static char *generate(uint64_t seed, gen *g) {
  memset(g, 0, sizeof *g);
  g->state = seed * 0x9e3779b97f4a7c15ull + 1;
  g->buffers = 2 + (int)rnd(g, 4);
  emit(g, "module attributes {gpu.container_module} {\n"
          "  gpu.module @k {\n"
          "    gpu.func @scale(%%a: memref<256xf32>, %%b: memref<256xf32>, %%s: f32) kernel {\n"
          "      %%i = gpu.thread_id x\n      %%v = memref.load %%a[%%i] : memref<256xf32>\n"
          "      %%w = arith.mulf %%v, %%s : f32\n      memref.store %%w, %%b[%%i] : memref<256xf32>\n"
          "      gpu.return\n    }\n"
          "    gpu.func @inc(%%a: memref<256xf32>) kernel {\n"
          "      %%i = gpu.thread_id x\n      %%v = memref.load %%a[%%i] : memref<256xf32>\n"
          "      %%w = arith.addf %%v, %%v : f32\n      memref.store %%w, %%a[%%i] : memref<256xf32>\n"
          "      gpu.return\n    }\n"
          "    gpu.func @step(%%c: memref<4xi32>, %%f: memref<8xi32>) kernel {\n"
          "      %%c0 = arith.constant 0 : index\n      %%v = memref.load %%c[%%c0] : memref<4xi32>\n"
          "      memref.store %%v, %%f[%%c0] : memref<8xi32>\n      gpu.return\n    }\n"
          "  }\n  func.func @main(");
  for (int i = 0; i < g->buffers; i++) emit(g, "%%b%d: memref<256xf32>, ", i);
  emit(g, "%%flags: memref<8xi32>, %%counters: memref<4xi32>, %%n: index, %%s: f32) {\n");
  emit(g, "    %%z = arith.constant 0 : i32\n    %%f0 = arith.constant 0.0 : f32\n"
          "    %%f1 = arith.constant 1.0 : f32\n    %%f2 = arith.constant -2.5 : f32\n");
  for (int c = 0; c <= 256; c = c ? c * 2 : 1) emit(g, "    %%c%d = arith.constant %d : index\n", c, c);
  g->temps = (int)rnd(g, 3);
  for (int t = 0; t < g->temps; t++) emit(g, "    %%t%d = memref.alloc() : memref<256xf32>\n", t);
  statements(g, 0, 1 + (int)rnd(g, 8));
  emit(g, "    return\n  }\n}\n");
  return g->text;
}

static char *dump(const crec_program *p, crec_dump_format f) {
  char *out = NULL;
  EXPECT_OK(crec_dump(p, NULL, f, &out, NULL));
  return out;
}

Test(lower_property, generated_programs_lower_deterministically) {
  size_t totals[11] = {0}, with_host = 0;
  for (uint64_t seed = 1; seed <= PROGRAMS; seed++) {
    gen g;
    char *text = generate(seed, &g);
    crec_lower_options o = CREC_LOWER_OPTIONS_INIT;
    char name[64];
    snprintf(name, sizeof name, "generated-%llu.mlir", (unsigned long long)seed);
    o.filename = name;
    o.chip = "sm_90";
    crec_program *a = NULL, *b = NULL;
    crec_status s = crec_lower_mlir_string(text, g.len, &o, &a);
    cr_assert_eq(s, CREC_OK, "seed %llu: %s\n%s", (unsigned long long)seed, crec_last_error(), text);
    EXPECT_OK(crec_lower_mlir_string(text, g.len, &o, &b));
    for (int f = 0; f < 2; f++) {
      char *da = dump(a, f ? CREC_DUMP_TEXT : CREC_DUMP_JSON), *db = dump(b, f ? CREC_DUMP_TEXT : CREC_DUMP_JSON);
      cr_assert_str_eq(da, db, "seed %llu lowers differently the second time", (unsigned long long)seed);
      crec_free(da);
      crec_free(db);
    }
    size_t counts[11] = {0};
    for (size_t i = 0; i < crec_program_command_count(a); i++) {
      crec_command_info info = CREC_COMMAND_INFO_INIT;
      EXPECT_OK(crec_command_get_info(a, crec_program_command(a, i), &info));
      counts[info.kind]++;
    }
    for (int k = 0; k < 11; k++) {
      cr_assert_eq(counts[k], g.counts[k], "seed %llu: %zu %s commands, the program has %zu\n%s",
                   (unsigned long long)seed, counts[k], crec_command_kind_name((crec_command_kind)k), g.counts[k], text);
      totals[k] += counts[k];
    }
    cr_assert_eq(crec_program_host_function_count(a), g.uses_n ? 1u : 0u, "seed %llu", (unsigned long long)seed);
    with_host += g.uses_n;
    crec_plan *plan = NULL;
    EXPECT_OK(crec_plan_create(a, NULL, &plan));
    crec_plan_destroy(plan);
    crec_program_destroy(a);
    crec_program_destroy(b);
    free(text);
  }
  /* the generator reaches every construct */
  cr_assert_gt(totals[CREC_COMMAND_LAUNCH], 100);
  cr_assert_gt(totals[CREC_COMMAND_MEMCPY], 50);
  cr_assert_gt(totals[CREC_COMMAND_MEMSET], 50);
  cr_assert_gt(totals[CREC_COMMAND_BARRIER], 20);
  cr_assert_gt(totals[CREC_COMMAND_IF], 50);
  cr_assert_gt(totals[CREC_COMMAND_WHILE], 30);
  cr_assert_gt(totals[CREC_COMMAND_SWITCH], 30);
  cr_assert_gt(with_host, 50);
  crec_lower_cache_stats st = CREC_LOWER_CACHE_STATS_INIT;
  EXPECT_OK(crec_lower_cache_get_stats(&st));
  cr_assert_eq(st.compilations, 1, "the one gpu.module is compiled once for %d programs", 2 * PROGRAMS);
}
