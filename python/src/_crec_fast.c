/* _crec_fast: the hot path of a crec.torch call, compiled.
 *
 * A crec.torch.Graphed call checks each tensor against what was captured
 * (shape, dtype, device, alignment, contiguity), gathers the addresses and calls
 * crec_exec_replay_buffers on the current stream. In Python over ctypes that is
 * 2-3 us of the host's time a call, often more than the graph takes on the GPU
 * (docs/capture.md). Here the same checks and the call are one C function.
 *
 * It uses CPython's limited API (3.11 and later: one build serves them all), and
 * does not link libcrec: it is given crec_exec_replay_buffers' address, as
 * ctypes loaded it, so it calls the library the package uses. crec/_lib.py
 * loads it from beside libcrec; without it (no compiler, no Python headers, or
 * CREC_PYTHON_FAST=0) the package uses the same checks written in Python.
 *
 *   Replayer(replay, exec, signature, stream, device)
 *     replay:    the address of crec_exec_replay_buffers (int)
 *     exec:      the crec_exec handle (int); the caller keeps the exec alive and
 *                stops calling once it is destroyed
 *     signature: a tuple, per input, of (shape, dtype, device, mask): the shape
 *                compared with ==, the dtype by identity, the device index, and
 *                the address bits that must be zero (alignment - 1)
 *     stream:    a callable taking `device`, returning the raw CUstream (int)
 *     device:    the device index passed to `stream`
 *   replayer(*tensors) -> int
 *     0: replayed; > 0: crec's status (crec_last_error() says why, on this
 *     thread); -1: a tensor did not match (the count, or one of the checks, or
 *     not a tensor at all): nothing was called, and the caller says why. */
#define Py_LIMITED_API 0x030B0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

typedef int (*replay_fn)(void *exec, void *const *buffers, size_t count, void *stream);

typedef struct {
  PyObject_HEAD
  replay_fn replay;
  void *exec;
  Py_ssize_t n;
  PyObject *signature; /* tuple of n (shape, dtype, device, mask) tuples */
  PyObject *stream;    /* callable(device) -> int */
  PyObject *device;    /* int */
  long *devices;       /* per input: its device index, read once */
  unsigned long long *masks;
  void **ptrs;
} replayer;

static PyObject *s_shape, *s_dtype, *s_get_device, *s_data_ptr, *s_is_contiguous;

static void replayer_dealloc(PyObject *self) {
  replayer *r = (replayer *)self;
  Py_XDECREF(r->signature);
  Py_XDECREF(r->stream);
  Py_XDECREF(r->device);
  PyMem_Free(r->devices);
  PyMem_Free(r->masks);
  PyMem_Free(r->ptrs);
  PyTypeObject *tp = Py_TYPE(self);
  freefunc f = (freefunc)PyType_GetSlot(tp, Py_tp_free);
  f(self);
  Py_DECREF(tp);
}

static void *address(PyObject *o, const char *what) {
  void *p = PyLong_AsVoidPtr(o);
  if (!p && !PyErr_Occurred()) PyErr_Format(PyExc_ValueError, "Replayer: %s is NULL", what);
  return p;
}

static int replayer_init(PyObject *self, PyObject *args, PyObject *kwds) {
  replayer *r = (replayer *)self;
  PyObject *fn, *ex, *sig, *stream, *device;
  if (kwds && PyDict_Size(kwds)) {
    PyErr_SetString(PyExc_TypeError, "Replayer takes no keyword arguments");
    return -1;
  }
  if (!PyArg_ParseTuple(args, "OOO!OO", &fn, &ex, &PyTuple_Type, &sig, &stream, &device)) return -1;
  if (!PyCallable_Check(stream)) {
    PyErr_SetString(PyExc_TypeError, "Replayer: stream must be callable");
    return -1;
  }
  if (r->signature) {
    PyErr_SetString(PyExc_TypeError, "Replayer: already initialised");
    return -1;
  }
  r->replay = (replay_fn)address(fn, "replay");
  if (!r->replay) return -1;
  r->exec = address(ex, "exec");
  if (!r->exec) return -1;
  Py_ssize_t n = PyTuple_Size(sig);
  r->devices = PyMem_Calloc((size_t)(n ? n : 1), sizeof *r->devices);
  r->masks = PyMem_Calloc((size_t)(n ? n : 1), sizeof *r->masks);
  r->ptrs = PyMem_Calloc((size_t)(n ? n : 1), sizeof *r->ptrs);
  if (!r->devices || !r->masks || !r->ptrs) {
    PyErr_NoMemory();
    return -1;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *e = PyTuple_GetItem(sig, i); /* borrowed */
    if (!e || !PyTuple_Check(e) || PyTuple_Size(e) != 4) {
      PyErr_Format(PyExc_TypeError, "Replayer: signature %zd is not (shape, dtype, device, mask)", i);
      return -1;
    }
    r->devices[i] = PyLong_AsLong(PyTuple_GetItem(e, 2));
    r->masks[i] = PyLong_AsUnsignedLongLong(PyTuple_GetItem(e, 3));
    if (PyErr_Occurred()) return -1;
  }
  r->n = n;
  Py_INCREF(sig), r->signature = sig;
  Py_INCREF(stream), r->stream = stream;
  Py_INCREF(device), r->device = device;
  return 0;
}

/* 1: `t` matches signature entry `e` (its address in *ptr); 0: it does not;
 * -1: an error other than a missing attribute (propagated). */
static int matches(PyObject *t, PyObject *e, long device, unsigned long long mask, void **ptr) {
  int ok = 0;
  PyObject *v = PyObject_GetAttr(t, s_shape);
  if (!v) goto missing;
  int same = PyObject_RichCompareBool(v, PyTuple_GetItem(e, 0), Py_EQ);
  Py_DECREF(v);
  if (same < 0) goto missing;
  if (!same) return 0;
  v = PyObject_GetAttr(t, s_dtype);
  if (!v) goto missing;
  same = v == PyTuple_GetItem(e, 1);
  Py_DECREF(v);
  if (!same) return 0;
  v = PyObject_CallMethodObjArgs(t, s_get_device, NULL);
  if (!v) goto missing;
  long d = PyLong_AsLong(v);
  Py_DECREF(v);
  if (d == -1 && PyErr_Occurred()) goto missing;
  if (d != device) return 0;
  v = PyObject_CallMethodObjArgs(t, s_data_ptr, NULL);
  if (!v) goto missing;
  unsigned long long p = PyLong_AsUnsignedLongLong(v);
  Py_DECREF(v);
  if (p == (unsigned long long)-1 && PyErr_Occurred()) goto missing;
  if (p & mask) return 0;
  v = PyObject_CallMethodObjArgs(t, s_is_contiguous, NULL);
  if (!v) goto missing;
  ok = v == Py_True;
  Py_DECREF(v);
  *ptr = (void *)(uintptr_t)p;
  return ok;
missing:
  /* not a tensor, or not one like the examples: the caller's checks say why */
  if (PyErr_ExceptionMatches(PyExc_AttributeError) || PyErr_ExceptionMatches(PyExc_TypeError) ||
      PyErr_ExceptionMatches(PyExc_ValueError) || PyErr_ExceptionMatches(PyExc_OverflowError)) {
    PyErr_Clear();
    return 0;
  }
  return -1;
}

static PyObject *replayer_call(PyObject *self, PyObject *args, PyObject *kwds) {
  replayer *r = (replayer *)self;
  if (!r->signature) {
    PyErr_SetString(PyExc_TypeError, "Replayer: not initialised");
    return NULL;
  }
  if ((kwds && PyDict_Size(kwds)) || PyTuple_Size(args) != r->n) return PyLong_FromLong(-1);
  /* the addresses on this call's stack where they fit: the call runs without the
   * GIL, and another thread's call of the same object must not overwrite them */
  void *local[8];
  void **ptrs = r->n <= 8 ? local : r->ptrs;
  for (Py_ssize_t i = 0; i < r->n; i++) {
    int m = matches(PyTuple_GetItem(args, i), PyTuple_GetItem(r->signature, i), r->devices[i], r->masks[i],
                    &ptrs[i]);
    if (m < 0) return NULL;
    if (!m) return PyLong_FromLong(-1);
  }
  PyObject *s = PyObject_CallFunctionObjArgs(r->stream, r->device, NULL);
  if (!s) return NULL;
  void *stream = PyLong_AsVoidPtr(s);
  Py_DECREF(s);
  if (!stream && PyErr_Occurred()) return NULL;
  int status;
  Py_BEGIN_ALLOW_THREADS
  status = r->replay(r->exec, (void *const *)ptrs, (size_t)r->n, stream);
  Py_END_ALLOW_THREADS
  return PyLong_FromLong(status);
}

static PyType_Slot replayer_slots[] = {
    {Py_tp_dealloc, (void *)replayer_dealloc},
    {Py_tp_init, (void *)replayer_init},
    {Py_tp_call, (void *)replayer_call},
    {Py_tp_new, (void *)PyType_GenericNew},
    {Py_tp_doc, (void *)"Replayer(replay, exec, signature, stream, device): a crec.torch call's checks and "
                        "replay in C (see python/src/_crec_fast.c)"},
    {0, NULL},
};

static PyType_Spec replayer_spec = {
    .name = "_crec_fast.Replayer",
    .basicsize = sizeof(replayer),
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = replayer_slots,
};

static int module_exec(PyObject *m) {
  if (!(s_shape = PyUnicode_InternFromString("shape")) || !(s_dtype = PyUnicode_InternFromString("dtype")) ||
      !(s_get_device = PyUnicode_InternFromString("get_device")) ||
      !(s_data_ptr = PyUnicode_InternFromString("data_ptr")) ||
      !(s_is_contiguous = PyUnicode_InternFromString("is_contiguous")))
    return -1;
  PyObject *type = PyType_FromSpec(&replayer_spec);
  if (!type) return -1;
  if (PyModule_AddObject(m, "Replayer", type) < 0) {
    Py_DECREF(type);
    return -1;
  }
  return 0;
}

static PyModuleDef_Slot module_slots[] = {{Py_mod_exec, (void *)module_exec}, {0, NULL}};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_crec_fast",
    .m_doc = "crec.torch's call path in C (python/src/_crec_fast.c)",
    .m_size = 0,
    .m_slots = module_slots,
};

PyMODINIT_FUNC PyInit__crec_fast(void) { return PyModuleDef_Init(&module_def); }
