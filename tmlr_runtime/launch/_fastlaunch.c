/* tmlr_runtime.launch._fastlaunch: the compiled per-call path. It executes the LaunchPlan made at
 * load (launch/plan.py; launch/compiled.py hands it over): read the arguments, check them as the
 * Python path does, pack them into a prebuilt buffer, take the stream, call the driver. Besides, it walks a cubin's
 * ELF tables for the first load (elf_walk, at the end; artifact/elf.py calls it).
 *
 * How it reaches the driver: through the function pointers cuda-python's cuGetProcAddress hands out
 * at load (passed in as ints). So this file needs no CUDA headers or libraries to build, works with
 * cuda-python 12.x and 13.x alike, and calls the very driver entry points cuda-python would; the few
 * driver types it needs are declared below from the CUDA driver ABI (cuda.h, stable since CUDA 11.8).
 * cuda.bindings.cydriver was the other way: it needs Cython and cuda-bindings' .pxd files at build
 * time, pinned to one major version.
 *
 * The contract with Python: a call either launches here, or raises the driver's error after a
 * launch was attempted, or *declines* before anything happened (an argument this file does not
 * read, a check that fails, another context current, every buffer busy): then the whole call runs
 * through the Python path, which launches it or raises the typed error with its message. Errors
 * are therefore those of the Python path by construction. What is rare (keywords, callable grids,
 * stream objects, CuPy/DLPack/int pointers, bool/bf16/TMA/tensor-descriptor conversion, constexpr
 * checks) is done by Python helpers the plan hands over.
 *
 * Threads: everything but the driver calls runs under the GIL; a call takes one of POOL argument
 * buffers (allocated on first use, never per call), releases the GIL around the driver calls, and
 * gives the buffer back. The driver copies the parameters at launch (also under graph capture).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* ---- CUDA driver ABI (cuda.h): only what is called here ---------------------------------------- */
typedef int CUresult;
typedef void *CUcontext;
typedef void *CUfunction;
typedef void *CUstream;
typedef unsigned long long CUdeviceptr;
typedef struct {          /* CUlaunchAttribute: an enum id, padding to 8, a 64-byte value union */
    int id;
    char pad[4];
    unsigned int value[16];
} CUlaunchAttribute;
typedef struct {          /* CUlaunchConfig */
    unsigned int gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes;
    CUstream hStream;
    CUlaunchAttribute *attrs;
    unsigned int numAttrs;
} CUlaunchConfig;
typedef CUresult (*CtxGetCurrentFn)(CUcontext *);                                     /* v4000 */
typedef CUresult (*LaunchKernelFn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                   unsigned, CUstream, void **, void **);              /* v4000 */
typedef CUresult (*LaunchKernelExFn)(const CUlaunchConfig *, CUfunction, void **, void **); /* v11060 */
typedef CUresult (*MemAllocAsyncFn)(CUdeviceptr *, size_t, CUstream);                  /* v11020 */
typedef CUresult (*MemFreeAsyncFn)(CUdeviceptr, CUstream);                            /* v11020 */

/* ---- the plan ------------------------------------------------------------------------------------ */
/* A step's code (tmlr_runtime/launch/plan.py): what its argument needs */
enum { SCALAR, PTR, DIV16, BOOL, BF16, TMA, TENSORDESC, CONSTEXPR, ONE, IGNORED };
enum { KEY_DTYPE, KEY_ALIGNED, KEY_INT_CLASS, KEY_VALUE };  /* family/choose.py: what a family key reads */
#define POOL 8
#define MAX_ATTRS 4
#define BASE_ALIGN 64  /* a CUtensorMap passed by value needs its slot 64-byte aligned */
#define MAX_CALL 64    /* a family call with more arguments goes through Python */

typedef struct {
    int code, first, count;  /* the step's code; its slots */
    PyObject *dtype;         /* PTR with checks: the torch dtype a tensor must have (NULL: Python checks) */
    uint64_t mask;           /* PTR, DIV16: the low bits that must be zero */
} Step;

static PyObject *s_get_device, *s_dtype, *s_data_ptr, *s_stream, *s_compiled_attr;

/* How a torch tensor's get_device(), data_ptr() and .dtype are read: the C functions behind them,
 * found once on the exact tensor type (its methods are METH_NOARGS C methods, .dtype a getset), so
 * a call skips the attribute lookup and the call protocol; by name where they are something else.
 * (An instance attribute shadowing the method is not looked for: nobody sets tensor.data_ptr.) */
typedef struct {
    PyCFunction get_device, data_ptr;
    getter dtype;
    void *dtype_closure;
} TensorReads;

static PyCFunction noargs_method(PyObject *type, PyObject *name) {
    PyObject *d = PyObject_GetAttr(type, name);
    PyCFunction f = NULL;
    if (d && Py_IS_TYPE(d, &PyMethodDescr_Type) && (((PyMethodDescrObject *)d)->d_method->ml_flags & ~METH_COEXIST) == METH_NOARGS)
        f = ((PyMethodDescrObject *)d)->d_method->ml_meth;
    Py_XDECREF(d);  /* the type keeps it */
    PyErr_Clear();
    return f;
}

static void find_tensor_reads(PyObject *type, TensorReads *r) {
    memset(r, 0, sizeof *r);
    if (!PyType_Check(type)) return;
    r->get_device = noargs_method(type, s_get_device);
    r->data_ptr = noargs_method(type, s_data_ptr);
    PyObject *d = PyObject_GetAttr(type, s_dtype);
    if (d && Py_IS_TYPE(d, &PyGetSetDescr_Type) && ((PyGetSetDescrObject *)d)->d_getset->get) {
        r->dtype = ((PyGetSetDescrObject *)d)->d_getset->get;
        r->dtype_closure = ((PyGetSetDescrObject *)d)->d_getset->closure;
    }
    Py_XDECREF(d);
    PyErr_Clear();
}

static PyObject *read_noargs(PyCFunction f, PyObject *name, PyObject *t) {
    return f ? f(t, NULL) : PyObject_VectorcallMethod(name, &t, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
}

static PyObject *read_dtype(const TensorReads *r, PyObject *t) {
    return r->dtype ? r->dtype(t, r->dtype_closure) : PyObject_GetAttr(t, s_dtype);
}
/* What a family's key read of a tensor argument, which the sub-kernel's launch takes instead of reading
 * it again while no Python code has run since (a converter could change anything). */
typedef struct {
    PyObject *dtype;  /* compared by identity only; NULL: not read */
    uint64_t address;
    int has_address;
} Seen;

typedef PyObject *(*RunFn)(PyObject *, PyObject *const *, size_t, PyObject *);
typedef struct {  /* how an Executor and a FamilyKey start: what `Method` calls */
    PyObject_HEAD
    RunFn run;
} Runnable;

typedef struct {
    PyObject_HEAD
    RunFn run;  /* as Runnable */
    uintptr_t context;
    int device, checks;
    Py_ssize_t npos, nslots, nparams;
    Step *steps;
    char *codes;            /* the struct code of each runtime slot ('s': 128 bytes) */
    Py_ssize_t *offsets;    /* of each parameter the cubin takes (runtime slots, then hidden) */
    size_t size;
    PyObject *device_obj, *tensor_type, *stream_getter;
    PyObject *fallback, *convert, *bind, *grid3, *stream_handle, *fail;
    PyObject *what_launch, *what_alloc, *what_free;
    CUfunction function;
    unsigned block, shared;
    unsigned long long max_grid[3];
    unsigned cluster[3];
    int use_ex;
    CUlaunchAttribute attrs[MAX_ATTRS];
    unsigned nattrs;
    unsigned long long scratch_per_program, scratch_align;
    Py_ssize_t scratch_offset;  /* -1: no global scratch */
    CtxGetCurrentFn ctx_get;
    LaunchKernelFn launch;
    LaunchKernelExFn launch_ex;
    MemAllocAsyncFn mem_alloc;
    MemFreeAsyncFn mem_free;
    TensorReads reads;      /* of tensor_type */
    unsigned busy;          /* bit i: pool[i] is in use (changed only under the GIL) */
    char *pool_raw[POOL];   /* what PyMem_Malloc gave */
    void **pool[POOL];      /* void*[nparams], then the aligned parameter data */
} Executor;

static PyObject *int_classes[4];  /* (not v & 15, v == 1) for each of the four answers */

/* ---- reading the plan at construction ----------------------------------------------------------- */
static int get_ull(PyObject *obj, const char *name, unsigned long long *out) {
    PyObject *v = PyObject_GetAttrString(obj, name), *i;
    if (!v) return -1;
    i = PyNumber_Long(v);  /* cuda-python handles (CUfunction, CUcontext) give their address by int() */
    Py_DECREF(v);
    if (!i) return -1;
    *out = PyLong_AsUnsignedLongLong(i);
    Py_DECREF(i);
    return (*out == (unsigned long long)-1 && PyErr_Occurred()) ? -1 : 0;
}

static int get_obj(PyObject *obj, const char *name, PyObject **out) {
    *out = PyObject_GetAttrString(obj, name);
    return *out ? 0 : -1;
}

/* The items of obj.<name> as a list (a new reference), checking there are n of them (n < 0: any). */
static PyObject *get_seq(PyObject *obj, const char *name, Py_ssize_t n) {
    PyObject *v = PyObject_GetAttrString(obj, name), *t;
    if (!v) return NULL;
    t = PySequence_List(v);
    Py_DECREF(v);
    if (t && n >= 0 && PyList_GET_SIZE(t) != n) {
        PyErr_Format(PyExc_ValueError, "the plan's %s needs %zd items", name, n);
        Py_CLEAR(t);
    }
    return t;
}

static int get_ulls(PyObject *obj, const char *name, unsigned long long *out, Py_ssize_t n) {
    PyObject *t = get_seq(obj, name, n);
    if (!t) return -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        out[i] = PyLong_AsUnsignedLongLong(PyList_GET_ITEM(t, i));
        if (out[i] == (unsigned long long)-1 && PyErr_Occurred()) { Py_DECREF(t); return -1; }
    }
    Py_DECREF(t);
    return 0;
}

static Py_ssize_t code_size(char c) {
    switch (c) {
    case 'b': case 'B': return 1;
    case 'h': case 'H': case 'e': return 2;
    case 'i': case 'I': case 'f': return 4;
    case 'q': case 'Q': case 'd': return 8;
    default: return -1;
    }
}

/* Append the slots of a step's struct format `fmt` (packed from `offset`: codes, "<n>x" padding,
 * "128s") to codes/offsets; the number of slots, or -1. */
static int parse_format(Executor *self, const char *fmt, Py_ssize_t offset, Py_ssize_t capacity) {
    int n = 0;
    for (const char *c = fmt; *c;) {
        Py_ssize_t count = 0, size;
        int digits = 0;
        while (*c >= '0' && *c <= '9') { count = count * 10 + (*c++ - '0'); digits = 1; }
        if (!digits) count = 1;
        if (*c == 'x') { offset += count; c++; continue; }
        if (*c == 's' && count == 128) { size = 128; count = 1; }
        else if ((size = code_size(*c)) < 0) return -1;
        for (Py_ssize_t k = 0; k < count; k++, n++, offset += size) {
            if (self->nslots >= capacity || offset + size > (Py_ssize_t)self->size) return -1;
            self->codes[self->nslots] = *c;
            self->offsets[self->nslots++] = offset;
        }
        c++;
    }
    return n;
}

/* plan.steps: (code, position, offset, size, fmt, dtype, mask) per positional parameter; then plan.hidden. */
static int read_steps(Executor *self, PyObject *plan) {
    PyObject *steps = get_seq(plan, "steps", -1), *hidden = get_seq(plan, "hidden", -1);
    int rc = -1;
    if (!steps || !hidden) goto done;
    self->npos = PyList_GET_SIZE(steps);
    Py_ssize_t capacity = (Py_ssize_t)self->size + PyList_GET_SIZE(hidden);  /* no slot is smaller than a byte */
    self->steps = PyMem_Calloc(self->npos + 1, sizeof(Step));
    self->codes = PyMem_Calloc(capacity + 1, 1);
    self->offsets = PyMem_Calloc(capacity + 1, sizeof(Py_ssize_t));
    if (!self->steps || !self->codes || !self->offsets) { PyErr_NoMemory(); goto done; }
    for (Py_ssize_t i = 0; i < self->npos; i++) {
        Step *st = &self->steps[i];
        Py_ssize_t position, offset, size;
        const char *fmt;
        PyObject *dtype;
        unsigned long long mask;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(steps, i), "innnsOK", &st->code, &position, &offset, &size, &fmt, &dtype, &mask))
            goto done;
        st->first = (int)self->nslots;
        st->count = offset < 0 ? 0 : parse_format(self, fmt, offset, capacity);
        int slots = st->code == TENSORDESC ? st->count : st->code >= CONSTEXPR ? 0 : 1;  /* what pack_arg writes */
        if (position != i || st->code < SCALAR || st->code > IGNORED || st->count != slots || (st->code == TENSORDESC && !slots)
            || (st->code == PTR && self->codes[st->first] != 'Q') || offset + size > (Py_ssize_t)self->size) {
            PyErr_Format(PyExc_ValueError, "plan.steps[%zd] cannot be executed", i);
            goto done;
        }
        st->dtype = dtype == Py_None ? NULL : Py_NewRef(dtype);
        st->mask = mask;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(hidden); i++) {  /* (name, offset): stays zero but for scratch */
        PyObject *name;
        Py_ssize_t offset;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(hidden, i), "On", &name, &offset)) goto done;
        if (offset < 0 || offset + 8 > (Py_ssize_t)self->size) { PyErr_SetString(PyExc_ValueError, "plan.hidden: beyond the buffer"); goto done; }
        self->offsets[self->nslots + i] = offset;
    }
    self->nparams = self->nslots + PyList_GET_SIZE(hidden);
    rc = 0;
done:
    Py_XDECREF(steps);
    Py_XDECREF(hidden);
    return rc;
}

/* extras.attrs: ((id, (u32 words of the value...)), ...) for cuLaunchKernelEx */
static int read_attrs(Executor *self, PyObject *extras) {
    PyObject *t = get_seq(extras, "attrs", -1);
    if (!t) return -1;
    self->nattrs = (unsigned)PyList_GET_SIZE(t);
    int rc = self->nattrs <= MAX_ATTRS ? 0 : -1;
    if (rc) PyErr_SetString(PyExc_ValueError, "too many launch attributes");
    for (unsigned i = 0; rc == 0 && i < self->nattrs; i++) {
        PyObject *words, *w;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(t, i), "iO", &self->attrs[i].id, &words) || !(w = PySequence_List(words))) {
            rc = -1;
            break;
        }
        for (Py_ssize_t j = 0; j < PyList_GET_SIZE(w) && j < 16; j++)
            self->attrs[i].value[j] = (unsigned)PyLong_AsUnsignedLong(PyList_GET_ITEM(w, j));
        Py_DECREF(w);
        if (PyErr_Occurred()) rc = -1;
    }
    Py_DECREF(t);
    return rc;
}

static int read_launch(Executor *self, PyObject *plan, PyObject *extras) {
    unsigned long long v, grid[3], cluster[3], fns[5];
    PyObject *scratch;
    if (get_ull(plan, "context", &v) < 0) return -1;
    self->context = (uintptr_t)v;
    if (get_ull(plan, "function", &v) < 0) return -1;
    self->function = (CUfunction)(uintptr_t)v;
    if (get_ull(plan, "block", &v) < 0) return -1;
    self->block = (unsigned)v;
    if (get_ull(plan, "shared", &v) < 0) return -1;
    self->shared = (unsigned)v;
    if (get_ull(plan, "use_ex", &v) < 0) return -1;
    self->use_ex = v != 0;
    if (get_ulls(plan, "max_grid", grid, 3) < 0 || get_ulls(plan, "cluster", cluster, 3) < 0) return -1;
    for (int i = 0; i < 3; i++) { self->max_grid[i] = grid[i]; self->cluster[i] = (unsigned)(cluster[i] ? cluster[i] : 1); }
    if (get_obj(plan, "scratch", &scratch) < 0) return -1;  /* None or (bytes per program, alignment, offset) */
    self->scratch_offset = -1;
    int ok = scratch == Py_None || PyArg_ParseTuple(scratch, "KKn", &self->scratch_per_program, &self->scratch_align, &self->scratch_offset);
    Py_DECREF(scratch);
    if (!ok || read_attrs(self, extras) < 0 || get_ulls(extras, "entry_points", fns, 5) < 0) return -1;
    self->ctx_get = (CtxGetCurrentFn)(uintptr_t)fns[0];
    self->launch = (LaunchKernelFn)(uintptr_t)fns[1];
    self->launch_ex = (LaunchKernelExFn)(uintptr_t)fns[2];
    self->mem_alloc = (MemAllocAsyncFn)(uintptr_t)fns[3];
    self->mem_free = (MemFreeAsyncFn)(uintptr_t)fns[4];
    if (!self->ctx_get || !self->launch || (self->use_ex && !self->launch_ex)
        || (self->scratch_offset >= 0 && (!self->mem_alloc || !self->mem_free || (size_t)self->scratch_offset + 8 > self->size))) {
        PyErr_SetString(PyExc_ValueError, "a driver entry point this launch needs is missing");
        return -1;
    }
    return 0;
}

static void executor_dealloc(Executor *self) {
    for (Py_ssize_t i = 0; self->steps && i < self->npos; i++) Py_XDECREF(self->steps[i].dtype);
    PyMem_Free(self->steps);
    PyMem_Free(self->codes);
    PyMem_Free(self->offsets);
    for (int i = 0; i < POOL; i++) PyMem_Free(self->pool_raw[i]);
    Py_XDECREF(self->device_obj); Py_XDECREF(self->tensor_type); Py_XDECREF(self->stream_getter);
    Py_XDECREF(self->fallback); Py_XDECREF(self->convert); Py_XDECREF(self->bind); Py_XDECREF(self->grid3);
    Py_XDECREF(self->stream_handle); Py_XDECREF(self->fail);
    Py_XDECREF(self->what_launch); Py_XDECREF(self->what_alloc); Py_XDECREF(self->what_free);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *executor_run(PyObject *, PyObject *const *, size_t, PyObject *);

/* Executor(plan, extras): plan is a LaunchPlan (launch/plan.py), extras a compiled.Extras. */
static PyObject *executor_new(PyTypeObject *type, PyObject *a, PyObject *kw) {
    PyObject *plan, *extras;
    unsigned long long v;
    if (!PyArg_ParseTuple(a, "OO:Executor", &plan, &extras)) return NULL;
    Executor *self = (Executor *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    self->run = executor_run;
    if (get_ull(plan, "size", &v) < 0) goto fail;
    self->size = (size_t)(v ? v : 1);
    if (get_ull(plan, "checks", &v) < 0) goto fail;
    self->checks = v != 0;
    if (get_obj(plan, "device", &self->device_obj) < 0) goto fail;
    self->device = (int)PyLong_AsLong(self->device_obj);  /* -1: a CPU "device", which only tests plan for */
    if (self->device == -1 && PyErr_Occurred()) goto fail;
    if (read_steps(self, plan) < 0 || read_launch(self, plan, extras) < 0) goto fail;
    if (get_obj(plan, "tensor", &self->tensor_type) || get_obj(plan, "current_stream", &self->stream_getter)
        || get_obj(plan, "what", &self->what_launch) || get_obj(extras, "fallback", &self->fallback)
        || get_obj(extras, "convert", &self->convert) || get_obj(extras, "bind", &self->bind)
        || get_obj(extras, "grid3", &self->grid3) || get_obj(extras, "stream_handle", &self->stream_handle)
        || get_obj(extras, "fail", &self->fail))
        goto fail;
    find_tensor_reads(self->tensor_type, &self->reads);
    self->what_alloc = PyUnicode_FromString("cuMemAllocAsync (global scratch)");
    self->what_free = PyUnicode_FromString("cuMemFreeAsync (global scratch)");
    if (!self->what_alloc || !self->what_free) goto fail;
    return (PyObject *)self;
fail:
    Py_DECREF(self);
    return NULL;
}

/* ---- packing ---------------------------------------------------------------------------------- */
/* Write `v` into a slot of struct code `code` as struct.pack_into("<" + code) would; -1 (with an
 * exception set) where struct would refuse it. */
static int pack_slot(char code, char *at, PyObject *v) {
    if (code == 'e' || code == 'f' || code == 'd') {
        double x = PyFloat_AsDouble(v);
        if (x == -1.0 && PyErr_Occurred()) return -1;
#if PY_VERSION_HEX >= 0x030B0000
        return code == 'e' ? PyFloat_Pack2(x, at, 1) : code == 'f' ? PyFloat_Pack4(x, at, 1) : PyFloat_Pack8(x, at, 1);
#else
        return code == 'e' ? _PyFloat_Pack2(x, (unsigned char *)at, 1) : code == 'f' ? _PyFloat_Pack4(x, (unsigned char *)at, 1)
                           : _PyFloat_Pack8(x, (unsigned char *)at, 1);
#endif
    }
    if (code == 's') {  /* "128s": a CUtensorMap's bytes */
        char *p;
        Py_ssize_t n;
        if (!PyBytes_Check(v) || PyBytes_AsStringAndSize(v, &p, &n) < 0 || n != 128) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "a CUtensorMap needs 128 bytes");
            return -1;
        }
        memcpy(at, p, 128);
        return 0;
    }
    PyObject *i = PyLong_CheckExact(v) ? Py_NewRef(v) : PyNumber_Index(v);
    if (!i) return -1;
    int overflow = 0, bad = 0;
    if (code == 'Q') {
        unsigned long long u = PyLong_AsUnsignedLongLong(i);
        bad = u == (unsigned long long)-1 && PyErr_Occurred();
        if (!bad) memcpy(at, &u, 8);
        Py_DECREF(i);
        return bad ? -1 : 0;
    }
    long long x = PyLong_AsLongLongAndOverflow(i, &overflow);
    Py_DECREF(i);
    if (x == -1 && PyErr_Occurred()) return -1;
    switch (code) {
    case 'b': bad = overflow || x < -128 || x > 127; if (!bad) { int8_t y = (int8_t)x; memcpy(at, &y, 1); } break;
    case 'B': bad = overflow || x < 0 || x > 255; if (!bad) { uint8_t y = (uint8_t)x; memcpy(at, &y, 1); } break;
    case 'h': bad = overflow || x < -32768 || x > 32767; if (!bad) { int16_t y = (int16_t)x; memcpy(at, &y, 2); } break;
    case 'H': bad = overflow || x < 0 || x > 65535; if (!bad) { uint16_t y = (uint16_t)x; memcpy(at, &y, 2); } break;
    case 'i': bad = overflow || x < INT32_MIN || x > INT32_MAX; if (!bad) { int32_t y = (int32_t)x; memcpy(at, &y, 4); } break;
    case 'I': bad = overflow || x < 0 || x > UINT32_MAX; if (!bad) { uint32_t y = (uint32_t)x; memcpy(at, &y, 4); } break;
    case 'q': bad = overflow; if (!bad) memcpy(at, &x, 8); break;
    default: bad = 1;
    }
    if (bad) PyErr_SetString(PyExc_OverflowError, "argument out of range");
    return bad ? -1 : 0;
}

/* The address of an exact torch tensor passing the checks, or 0 with *ok = 0 where it does not
 * (then the Python converter decides); `seen`: what a family's key read of it, or NULL. */
static uint64_t tensor_address(Executor *self, Step *st, PyObject *t, int *ok, const Seen *seen) {
    *ok = 0;
    if (self->checks) {
        if (!st->dtype) return 0;
        PyObject *d = read_noargs(self->reads.get_device, s_get_device, t);
        if (!d) { PyErr_Clear(); return 0; }
        long dev = PyLong_AsLong(d);
        Py_DECREF(d);
        if ((dev == -1 && PyErr_Occurred()) || dev != self->device) { PyErr_Clear(); return 0; }
        PyObject *dtype = seen ? seen->dtype : NULL;  /* torch's dtypes are singletons: compared by identity, as */
        if (!dtype) {                                   /* the Python path does */
            if (!(dtype = read_dtype(&self->reads, t))) { PyErr_Clear(); return 0; }
            Py_DECREF(dtype);
        }
        if (dtype != st->dtype) return 0;
    }
    if (seen && seen->has_address) {
        *ok = !(seen->address & st->mask);
        return seen->address;
    }
    PyObject *p = read_noargs(self->reads.data_ptr, s_data_ptr, t);
    if (!p) { PyErr_Clear(); return 0; }
    uint64_t address = PyLong_AsUnsignedLongLong(p);
    Py_DECREF(p);
    if (PyErr_Occurred()) { PyErr_Clear(); return 0; }
    *ok = !(address & st->mask);
    return address;
}

/* Pack argument `i` (value `v`) into `data`; -1 to decline the call. *python is set when a
 * Python helper ran. */
static int pack_arg(Executor *self, Py_ssize_t i, PyObject *v, char *data, const Seen *seen, int *python) {
    Step *st = &self->steps[i];
    char *at = st->count ? data + self->offsets[st->first] : NULL;
    char code = st->count ? self->codes[st->first] : 0;
    int ok;
    switch (st->code) {
    case IGNORED:
        return 0;
    case SCALAR:
        return pack_slot(code, at, v);
    case DIV16: {  /* an int (or an object with __index__, as the struct takes it) that is a multiple of 16 */
        PyObject *n = PyLong_CheckExact(v) ? Py_NewRef(v) : PyNumber_Index(v);
        if (!n) return -1;
        int overflow = 0;
        uint64_t low;  /* the value's low bits: a u64 reads as unsigned (up to 2**64 - 1), any other type as signed */
        if (code == 'Q') {
            low = PyLong_AsUnsignedLongLong(n);
            overflow = low == (uint64_t)-1 && PyErr_Occurred();
        } else {
            long long x = PyLong_AsLongLongAndOverflow(n, &overflow);
            overflow = overflow || (x == -1 && PyErr_Occurred());
            low = (uint64_t)x;
        }
        int rc = overflow || (low & st->mask) ? -1 : pack_slot(code, at, n);
        Py_DECREF(n);
        return rc;
    }
    case PTR:
        if (Py_TYPE(v) == (PyTypeObject *)self->tensor_type) {
            uint64_t address = tensor_address(self, st, v, &ok, seen);
            if (ok) { memcpy(at, &address, 8); return 0; }
        }
        break;  /* anything else: the Python converter */
    }
    *python = 1;
    PyObject *c = PyLong_FromLong(st->code), *pos = PyLong_FromSsize_t(i), *r = NULL;  /* rare: Python converts or checks */
    if (c && pos) {
        PyObject *call[3] = {c, pos, v};
        r = PyObject_Vectorcall(self->convert, call, 3, NULL);
    }
    Py_XDECREF(c);
    Py_XDECREF(pos);
    if (!r) return -1;
    int rc = 0;
    if (st->count == 1) {
        rc = pack_slot(code, at, r);
    } else if (st->count > 1) {  /* a tensor descriptor: the values of its slots */
        if (!PyTuple_Check(r) || PyTuple_GET_SIZE(r) != st->count) rc = -1;
        for (int k = 0; k < st->count && rc == 0; k++)
            rc = pack_slot(self->codes[st->first + k], data + self->offsets[st->first + k], PyTuple_GET_ITEM(r, k));
    }
    Py_DECREF(r);
    return rc;
}

/* Whether a call may go on through Python after what just failed here: yes, the exception (an
 * Exception) cleared; not after KeyboardInterrupt & co., which propagate. */
static int declined(void) {
    if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_Exception)) return 0;
    PyErr_Clear();
    return 1;
}

static PyObject *tuple_of(PyObject *const *items, Py_ssize_t n) {
    PyObject *t = PyTuple_New(n);
    for (Py_ssize_t i = 0; t && i < n; i++) PyTuple_SET_ITEM(t, i, Py_NewRef(items[i]));
    return t;
}

static int is_stream(PyObject *name) {
    return name == s_stream || PyUnicode_CompareWithASCIIString(name, "stream") == 0;
}

/* ---- grid, stream ---------------------------------------------------------------------------- */
static int grid_axis(PyObject *v, unsigned long long *out) {
    if (!PyLong_CheckExact(v)) return -1;
    int overflow;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow || x < 0) return -1;  /* 0: an empty grid, which launches nothing */
    *out = (unsigned long long)x;
    return 0;
}

/* The grid as (x, y, z), within the device's limits with the cluster multiplied in; -1 to decline. */
static int grid_dims(Executor *self, PyObject *grid, PyObject *const *args, Py_ssize_t nargs, unsigned long long g[3]) {
    int fast = 0;
    g[0] = g[1] = g[2] = 1;
    if (PyLong_CheckExact(grid)) {
        fast = grid_axis(grid, &g[0]) == 0;
    } else if (PyTuple_CheckExact(grid) && PyTuple_GET_SIZE(grid) >= 1 && PyTuple_GET_SIZE(grid) <= 3) {
        fast = 1;
        for (Py_ssize_t i = 0; fast && i < PyTuple_GET_SIZE(grid); i++) fast = grid_axis(PyTuple_GET_ITEM(grid, i), &g[i]) == 0;
    }
    if (!fast) {  /* a callable, a list, numpy ints, a bad value...: Python's grid3 reads it, or raises */
        PyObject *t = tuple_of(args, nargs);
        if (!t) return -1;
        PyObject *call[2] = {grid, t};
        PyObject *r = PyObject_Vectorcall(self->grid3, call, 2, NULL);
        Py_DECREF(t);
        if (!r) return -1;
        int rc = PyTuple_CheckExact(r) && PyTuple_GET_SIZE(r) == 3 ? 0 : -1;
        for (int i = 0; rc == 0 && i < 3; i++) rc = grid_axis(PyTuple_GET_ITEM(r, i), &g[i]);
        Py_DECREF(r);
        if (rc < 0) return -1;
    }
    for (int i = 0; i < 3; i++)
        if (g[i] > self->max_grid[i] / self->cluster[i]) return -1;
    return 0;
}

static int stream_value(Executor *self, PyObject *stream, CUstream *out) {
    PyObject *h;
    if (stream == NULL || stream == Py_None)
        h = PyObject_Vectorcall(self->stream_getter, &self->device_obj, 1, NULL);
    else if (PyLong_CheckExact(stream))
        h = Py_NewRef(stream);
    else
        h = PyObject_Vectorcall(self->stream_handle, &stream, 1, NULL);
    if (!h) return -1;
    unsigned long long v = PyLong_AsUnsignedLongLong(h);
    Py_DECREF(h);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) return -1;
    *out = (CUstream)(uintptr_t)v;
    return 0;
}

/* ---- the call ------------------------------------------------------------------------------------ */
static void **take_buffer(Executor *self, int *slot) {
    for (int i = 0; i < POOL; i++) {
        if (self->busy & (1u << i)) continue;
        if (!self->pool[i]) {  /* once per buffer, never per call */
            size_t head = (self->nparams ? self->nparams : 1) * sizeof(void *);
            char *raw = PyMem_Calloc(1, head + self->size + 2 * BASE_ALIGN);
            if (!raw) return NULL;
            uintptr_t data = ((uintptr_t)raw + head + BASE_ALIGN - 1) & ~(uintptr_t)(BASE_ALIGN - 1);
            void **kp = (void **)raw;
            for (Py_ssize_t k = 0; k < self->nparams; k++) kp[k] = (void *)(data + self->offsets[k]);
            self->pool_raw[i] = raw;
            self->pool[i] = kp;
        }
        self->busy |= 1u << i;
        *slot = i;
        return self->pool[i];
    }
    return NULL;
}

static int fail_with(Executor *self, CUresult code, PyObject *what) {
    PyObject *c = PyLong_FromLong(code);
    if (!c) return -1;
    PyObject *call[2] = {c, what};
    PyObject *r = PyObject_Vectorcall(self->fail, call, 2, NULL);  /* raises the typed DriverError */
    Py_DECREF(c);
    Py_XDECREF(r);
    return -1;
}

/* Launch with the packed parameters `kp`: 0, or -1 with the driver's error raised. */
static int launch_packed(Executor *self, void **kp, char *data, const unsigned long long g[3], CUstream stream) {
    CUresult r = 0, r_alloc = 0, r_free = 0;
    CUdeviceptr raw = 0;
    Py_BEGIN_ALLOW_THREADS
    if (self->scratch_offset >= 0) {
        unsigned long long align = self->scratch_align, extra = align > 256 ? align - 1 : 0;  /* pools align to 256 */
        r_alloc = self->mem_alloc(&raw, g[0] * g[1] * g[2] * self->scratch_per_program + extra, stream);
        CUdeviceptr address = align ? raw + (align - raw % align) % align : raw;
        memcpy(data + self->scratch_offset, &address, 8);
    }
    if (!r_alloc) {
        if (!self->use_ex) {
            r = self->launch(self->function, (unsigned)g[0], (unsigned)g[1], (unsigned)g[2], self->block, 1, 1,
                             self->shared, stream, kp, NULL);
        } else {
            CUlaunchConfig config = {(unsigned)(g[0] * self->cluster[0]), (unsigned)(g[1] * self->cluster[1]),
                                     (unsigned)(g[2] * self->cluster[2]), self->block, 1, 1, self->shared, stream,
                                     self->attrs, self->nattrs};
            r = self->launch_ex(&config, self->function, kp, NULL);
        }
        if (self->scratch_offset >= 0) r_free = self->mem_free(raw, stream);
    }
    Py_END_ALLOW_THREADS
    if (r_alloc) return fail_with(self, r_alloc, self->what_alloc);
    if (r_free) return fail_with(self, r_free, self->what_free);
    if (r) return fail_with(self, r, self->what_launch);
    return 0;
}

/* Check, pack and launch `values` (the positional arguments) on `grid`: 1 launched, 0 declined
 * (nothing happened; the exception, if any, cleared), -1 the driver's error raised. */
static int try_launch(Executor *self, PyObject *grid, PyObject *const *values, Py_ssize_t n, PyObject *stream, const Seen *seen) {
    int slot;
    CUstream s = NULL;
    unsigned long long g[3];
    void **kp = take_buffer(self, &slot);
    if (!kp) { PyErr_Clear(); return 0; }
    char *data = self->nparams ? (char *)kp[0] - self->offsets[0] : NULL;
    int rc = 0;
    int python = 0;
    for (Py_ssize_t i = 0; i < n && rc == 0; i++) rc = pack_arg(self, i, values[i], data, python || !seen ? NULL : &seen[i], &python);
    if (rc == 0) rc = grid_dims(self, grid, values, n, g);
    if (rc == 0) rc = stream_value(self, stream, &s);
    if (rc < 0) {
        self->busy &= ~(1u << slot);
        return declined() ? 0 : -1;
    }
    rc = g[0] && g[1] && g[2] ? launch_packed(self, kp, data, g, s) : 0;  /* an empty grid: checked, nothing launched */
    self->busy &= ~(1u << slot);
    return rc < 0 ? -1 : 1;
}

/* The positional values of a call with keywords or another count of arguments: Python's bind
 * (which also checks constexprs given by keyword); NULL with an exception. */
static PyObject *bind_call(Executor *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, PyObject **stream) {
    PyObject *t = tuple_of(args, nargs), *kw = PyDict_New(), *bound = NULL;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t i = 0; t && kw && i < nkw; i++) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, i);
        if (is_stream(name)) *stream = args[nargs + i];
        else if (PyDict_SetItem(kw, name, args[nargs + i]) < 0) Py_CLEAR(kw);
    }
    if (t && kw) bound = PyObject_CallFunctionObjArgs(self->bind, t, kw, NULL);
    Py_XDECREF(t);
    Py_XDECREF(kw);
    if (bound && (!PyTuple_CheckExact(bound) || PyTuple_GET_SIZE(bound) != self->npos)) Py_CLEAR(bound);
    return bound;
}

/* `kernel(grid, *args, stream=None, **kwargs)`: args[0] is the kernel, args[1] the grid; `seen`
 * (one per positional argument, or NULL): what a family's key read of them. */
static PyObject *executor_call(Executor *self, PyObject *const *args, size_t nargsf, PyObject *kwnames, const Seen *seen) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf), nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    PyObject *stream = NULL;
    CUcontext ctx = NULL;
    int rc = 0;
    if (nargs < 2 || self->ctx_get(&ctx) != 0 || (uintptr_t)ctx != self->context)
        goto python;  /* another context is current: Python plans for it */
    if (nargs - 2 == self->npos && (nkw == 0 || (nkw == 1 && is_stream(PyTuple_GET_ITEM(kwnames, 0))))) {
        rc = try_launch(self, args[1], args + 2, self->npos, nkw ? args[nargs] : NULL, seen);
    } else {
        PyObject *bound = bind_call(self, args + 2, nargs - 2, kwnames, &stream);
        if (!bound) goto python;
        rc = try_launch(self, args[1], &PyTuple_GET_ITEM(bound, 0), self->npos, stream, NULL);
        Py_DECREF(bound);
    }
    if (rc < 0) return NULL;
    if (rc > 0) Py_RETURN_NONE;
python:  /* declined before anything happened: the Python executor launches it or raises the typed error */
    return declined() ? PyObject_Vectorcall(self->fallback, args, nargsf, kwnames) : NULL;
}

static PyObject *executor_run(PyObject *obj, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    return executor_call((Executor *)obj, args, nargsf, kwnames, NULL);
}

static PyTypeObject ExecutorType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tmlr_runtime.launch._fastlaunch.Executor",
    .tp_doc = "Executor(plan, extras): the compiled launch of one LaunchPlan (see tmlr_runtime/launch/compiled.py).",
    .tp_basicsize = sizeof(Executor),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = executor_new,
    .tp_dealloc = (destructor)executor_dealloc,
};

/* ---- a family's dispatch key, and its call --------------------------------------------------------- */
typedef struct {
    PyObject_HEAD
    RunFn run;  /* as Runnable */
    Py_ssize_t nparts, npos;
    int *what, *pos;
    PyObject *memo, *fallback;  /* fast key -> (launch, Kernel, grid meta); the family's Python call */
    PyObject *tensor_type;
    TensorReads reads;          /* of tensor_type */
} FamilyKey;

static PyObject *int_class(PyObject *v) {
    if (PyLong_CheckExact(v)) {
        int overflow;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (!overflow) return Py_NewRef(int_classes[((x & 15) == 0) * 2 + (x == 1)]);
        PyErr_Clear();
    }
    PyObject *fifteen = PyLong_FromLong(15), *one = PyLong_FromLong(1), *and = NULL, *eq = NULL, *r = NULL;
    int zero = -1;  /* not v & 15, then v == 1: as the Python key computes them */
    if (fifteen && one && (and = PyNumber_And(v, fifteen)) && (zero = PyObject_Not(and)) >= 0
        && (eq = PyObject_RichCompare(v, one, Py_EQ)))
        r = PyTuple_Pack(2, zero ? Py_True : Py_False, eq);
    Py_XDECREF(fifteen); Py_XDECREF(one); Py_XDECREF(and); Py_XDECREF(eq);
    return r;
}

/* The key of the positional arguments `args` (as _choose.fast_key makes it); NULL with an exception.
 * `seen` (nargs of them, zeroed, or NULL) gets what was read of tensors. */
static PyObject *family_key(FamilyKey *self, PyObject *const *args, Py_ssize_t nargs, Seen *seen) {
    PyObject *key = PyTuple_New(self->nparts);
    if (!key) return NULL;
    for (Py_ssize_t k = 0; k < self->nparts; k++) {
        if (self->pos[k] >= nargs) { Py_DECREF(key); PyErr_SetString(PyExc_IndexError, "argument missing"); return NULL; }
        PyObject *v = args[self->pos[k]], *part = NULL;
        int tensor = Py_TYPE(v) == (PyTypeObject *)self->tensor_type;
        if (self->what[k] == KEY_DTYPE) {
            part = tensor ? read_dtype(&self->reads, v) : PyObject_GetAttr(v, s_dtype);
            if (part && tensor && seen) seen[self->pos[k]].dtype = part;
        } else if (self->what[k] == KEY_ALIGNED) {
            PyObject *p = tensor ? read_noargs(self->reads.data_ptr, s_data_ptr, v)
                                 : PyObject_VectorcallMethod(s_data_ptr, &v, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
            if (p) {
                unsigned long long address = PyLong_AsUnsignedLongLong(p);  /* an int of 64 bits, as data_ptr() gives */
                if (!(address == (unsigned long long)-1 && PyErr_Occurred())) part = Py_NewRef(address & 15 ? Py_False : Py_True);
                if (part && tensor && seen) seen[self->pos[k]].address = address, seen[self->pos[k]].has_address = 1;
                Py_DECREF(p);
            }
        } else if (self->what[k] == KEY_INT_CLASS) {
            part = int_class(v);
        } else {
            part = Py_NewRef(v);
        }
        if (!part) { Py_DECREF(key); return NULL; }
        PyTuple_SET_ITEM(key, k, part);
    }
    return key;
}

static PyObject *familykey_call(PyObject *obj, PyObject *a, PyObject *kw) {
    PyObject *t;  /* key(args): the key of a tuple of positional arguments */
    if (kw || !PyArg_ParseTuple(a, "O!:key", &PyTuple_Type, &t)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "key(args) takes one tuple");
        return NULL;
    }
    return family_key((FamilyKey *)obj, &PyTuple_GET_ITEM(t, 0), PyTuple_GET_SIZE(t), NULL);
}

/* `family(grid, *args, stream=None)`: args[0] is the family. A call with the family's argument
 * count, a grid that is no callable, and a key the memo knows launches the sub-kernel's executor
 * from here; every other call is the family's Python call. */
static PyObject *familykey_run(PyObject *obj, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    FamilyKey *self = (FamilyKey *)obj;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf), nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    if (nargs - 2 != self->npos || nargs + nkw > MAX_CALL || nkw > 1 || (nkw && !is_stream(PyTuple_GET_ITEM(kwnames, 0)))
        || PyCallable_Check(args[1]))
        return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
    Seen seen[MAX_CALL];
    memset(seen, 0, (nargs - 2) * sizeof(Seen));
    PyObject *key = family_key(self, args + 2, nargs - 2, seen);
    PyObject *hit = key ? PyDict_GetItemWithError(self->memo, key) : NULL;  /* borrowed */
    Py_XDECREF(key);
    if (!hit || !PyTuple_CheckExact(hit) || PyTuple_GET_SIZE(hit) < 2)
        return declined() ? PyObject_Vectorcall(self->fallback, args, nargsf, kwnames) : NULL;
    Py_INCREF(hit);  /* the memo may be cleared while the launch runs Python code */
    PyObject *call[MAX_CALL], *kernel = PyTuple_GET_ITEM(hit, 1), *r = NULL;
    memcpy(call, args, (nargs + nkw) * sizeof(PyObject *));
    call[0] = kernel;  /* the sub-kernel's call: kernel(grid, *args, stream=...) */
    PyObject *fast = PyObject_GetAttr(kernel, s_compiled_attr);
    if (fast && Py_TYPE(fast) == &ExecutorType)
        r = executor_call((Executor *)fast, call, nargs, kwnames, seen);
    else if (declined())
        r = PyObject_Vectorcall(PyTuple_GET_ITEM(hit, 0), call, nargs, kwnames);
    Py_XDECREF(fast);
    Py_DECREF(hit);
    return r;
}

static PyObject *familykey_new(PyTypeObject *type, PyObject *a, PyObject *kw) {
    PyObject *parts, *memo, *fallback, *tensor_type;
    Py_ssize_t npos;
    if (!PyArg_ParseTuple(a, "OnO!OO:FamilyKey", &parts, &npos, &PyDict_Type, &memo, &fallback, &tensor_type)) return NULL;
    PyObject *t = PySequence_Fast(parts, "parts");  /* ((position, KEY_*), ...) */
    if (!t) return NULL;
    FamilyKey *self = (FamilyKey *)type->tp_alloc(type, 0);
    if (!self) { Py_DECREF(t); return NULL; }
    self->run = familykey_run;
    self->npos = npos;
    self->nparts = PySequence_Fast_GET_SIZE(t);
    self->what = PyMem_Calloc(self->nparts + 1, sizeof(int));
    self->pos = PyMem_Calloc(self->nparts + 1, sizeof(int));
    self->memo = Py_NewRef(memo);
    self->fallback = Py_NewRef(fallback);
    self->tensor_type = Py_NewRef(tensor_type);
    find_tensor_reads(tensor_type, &self->reads);
    if (!self->what || !self->pos) { PyErr_NoMemory(); goto fail; }
    for (Py_ssize_t k = 0; k < self->nparts; k++) {
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(t, k), "ii", &self->pos[k], &self->what[k])) goto fail;
        if (self->pos[k] < 0 || self->what[k] < KEY_DTYPE || self->what[k] > KEY_VALUE) {
            PyErr_SetString(PyExc_ValueError, "a key part is out of range");
            goto fail;
        }
    }
    Py_DECREF(t);
    return (PyObject *)self;
fail:
    Py_DECREF(t);
    Py_DECREF(self);
    return NULL;
}

static void familykey_dealloc(FamilyKey *self) {
    PyMem_Free(self->what);
    PyMem_Free(self->pos);
    Py_XDECREF(self->memo);
    Py_XDECREF(self->fallback);
    Py_XDECREF(self->tensor_type);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject FamilyKeyType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tmlr_runtime.launch._fastlaunch.FamilyKey",
    .tp_doc = "FamilyKey(parts, npos, memo, fallback, tensor_type): a family's dispatch key; key(args) -> tuple.",
    .tp_basicsize = sizeof(FamilyKey),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = familykey_new,
    .tp_dealloc = (destructor)familykey_dealloc,
    .tp_call = familykey_call,
};

/* ---- the method a class calls through ------------------------------------------------------------ */
/* Method(attribute, fallback): as `Kernel.__call__`, `kernel(grid, *args, **kw)` runs the Executor or
 * FamilyKey in `kernel.<attribute>` from C, or `fallback(kernel, grid, *args, **kw)` when it is None. */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *attribute, *fallback;
} Method;

static PyObject *method_vectorcall(PyObject *obj, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Method *self = (Method *)obj;
    if (PyVectorcall_NARGS(nargsf) < 1) return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
    PyObject *target = PyObject_GetAttr(args[0], self->attribute);
    if (!target) return NULL;
    PyObject *r;
    if (Py_TYPE(target) == &ExecutorType || Py_TYPE(target) == &FamilyKeyType)
        r = ((Runnable *)target)->run(target, args, PyVectorcall_NARGS(nargsf), kwnames);
    else
        r = PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
    Py_DECREF(target);
    return r;
}

static PyObject *method_get(PyObject *self, PyObject *obj, PyObject *type) {
    if (obj == NULL || obj == Py_None) return Py_NewRef(self);
    return PyMethod_New(self, obj);
}

static PyObject *method_new(PyTypeObject *type, PyObject *a, PyObject *kw) {
    PyObject *attribute, *fallback;
    if (!PyArg_ParseTuple(a, "UO:Method", &attribute, &fallback)) return NULL;
    Method *self = (Method *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    self->vectorcall = method_vectorcall;
    self->attribute = Py_NewRef(attribute);
    PyUnicode_InternInPlace(&self->attribute);
    self->fallback = Py_NewRef(fallback);
    return (PyObject *)self;
}

static void method_dealloc(Method *self) {
    Py_XDECREF(self->attribute);
    Py_XDECREF(self->fallback);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject MethodType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tmlr_runtime.launch._fastlaunch.Method",
    .tp_doc = "Method(attribute, fallback): a class attribute that calls obj.<attribute> from C, else fallback.",
    .tp_basicsize = sizeof(Method),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_vectorcall_offset = offsetof(Method, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_descr_get = method_get,
    .tp_new = method_new,
    .tp_dealloc = (destructor)method_dealloc,
};

/* ---- a served kernel bound to its grid ---------------------------------------------------------------- */
/* Bound(launcher, grid): what kernel[grid] gives on the compiled path; calling it calls launcher(grid, *args, **kw).
 * functools.partial (the Python path's) makes an argument tuple and a keyword dict besides itself and costs about
 * 0.12 us more per kernel[grid](...) than this (docs/serving.md, "Steady-state launches"). */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *launcher, *grid;
} Bound;

#define BOUND_STACK 16

static PyObject *bound_vectorcall(PyObject *obj, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Bound *self = (Bound *)obj;
    Py_ssize_t n = PyVectorcall_NARGS(nargsf), total = n + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
    PyObject *small[BOUND_STACK], **stack = small;
    if (total + 2 > BOUND_STACK) {
        stack = PyMem_Malloc((total + 2) * sizeof(PyObject *));
        if (!stack) return PyErr_NoMemory();
    }
    /* stack[0] is left free for the callee (a bound method puts its self there): PY_VECTORCALL_ARGUMENTS_OFFSET */
    stack[1] = self->grid;
    memcpy(stack + 2, args, total * sizeof(PyObject *));
    PyObject *r = PyObject_Vectorcall(self->launcher, stack + 1, (n + 1) | PY_VECTORCALL_ARGUMENTS_OFFSET, kwnames);
    if (stack != small) PyMem_Free(stack);
    return r;
}

static PyTypeObject BoundType;

static PyObject *bound_make(PyObject *launcher, PyObject *grid) {
    Bound *self = PyObject_GC_New(Bound, &BoundType);
    if (!self) return NULL;
    self->vectorcall = bound_vectorcall;
    self->launcher = Py_NewRef(launcher);
    self->grid = Py_NewRef(grid);
    PyObject_GC_Track(self);
    return (PyObject *)self;
}

static PyObject *bound_new(PyTypeObject *type, PyObject *a, PyObject *kw) {
    PyObject *launcher, *grid;
    if (!PyArg_ParseTuple(a, "OO:Bound", &launcher, &grid)) return NULL;
    return bound_make(launcher, grid);
}

static int bound_traverse(Bound *self, visitproc visit, void *arg) {
    Py_VISIT(self->launcher);
    Py_VISIT(self->grid);
    return 0;
}

static int bound_clear(Bound *self) {
    Py_CLEAR(self->launcher);
    Py_CLEAR(self->grid);
    return 0;
}

static void bound_dealloc(Bound *self) {
    PyObject_GC_UnTrack(self);
    bound_clear(self);
    PyObject_GC_Del(self);
}

static PyObject *bound_func(Bound *self, void *Py_UNUSED(closure)) { return Py_NewRef(self->launcher); }

static PyObject *bound_args(Bound *self, void *Py_UNUSED(closure)) { return PyTuple_Pack(1, self->grid); }

static PyObject *bound_repr(Bound *self) { return PyUnicode_FromFormat("Bound(%R, %R)", self->launcher, self->grid); }

static PyGetSetDef bound_getset[] = {
    {"func", (getter)bound_func, NULL, "the launcher, called with the grid first (functools.partial's func)", NULL},
    {"args", (getter)bound_args, NULL, "(grid,): the arguments put first, as functools.partial's args", NULL},
    {NULL},
};

static PyTypeObject BoundType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tmlr_runtime.launch._fastlaunch.Bound",
    .tp_doc = "Bound(launcher, grid): launcher(grid, *args, **kwargs) when called; kernel[grid] of a served kernel.",
    .tp_basicsize = sizeof(Bound),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_HAVE_GC,
    .tp_vectorcall_offset = offsetof(Bound, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_new = bound_new,
    .tp_traverse = (traverseproc)bound_traverse,
    .tp_clear = (inquiry)bound_clear,
    .tp_dealloc = (destructor)bound_dealloc,
    .tp_repr = (reprfunc)bound_repr,
    .tp_getset = bound_getset,
};

/* ---- served artifacts tried in order ------------------------------------------------------------------- */
/* Trying(kernels, refusals, route): serving/fast.py's trying (the Python reference): launcher(grid, *args, **kw)
 * calls each of `kernels` in turn until one takes the call (an exception of `refusals` means it refused: the next is
 * tried), then route(grid, *args, **kw). Any other exception is the call's and propagates. */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *kernels, *refusals, *route;
} Trying;

static PyObject *trying_vectorcall(PyObject *obj, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Trying *self = (Trying *)obj;
    size_t n = PyVectorcall_NARGS(nargsf);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(self->kernels); i++) {
        PyObject *r = PyObject_Vectorcall(PyTuple_GET_ITEM(self->kernels, i), args, n, kwnames);
        if (r || !PyErr_ExceptionMatches(self->refusals)) return r;
        PyErr_Clear();
    }
    return PyObject_Vectorcall(self->route, args, n, kwnames);
}

static PyObject *trying_new(PyTypeObject *type, PyObject *a, PyObject *kw) {
    PyObject *kernels, *refusals, *route;
    if (!PyArg_ParseTuple(a, "O!OO:Trying", &PyTuple_Type, &kernels, &refusals, &route)) return NULL;
    Trying *self = (Trying *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    self->vectorcall = trying_vectorcall;
    self->kernels = Py_NewRef(kernels);
    self->refusals = Py_NewRef(refusals);
    self->route = Py_NewRef(route);
    return (PyObject *)self;
}

static void trying_dealloc(Trying *self) {
    Py_XDECREF(self->kernels);
    Py_XDECREF(self->refusals);
    Py_XDECREF(self->route);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject TryingType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tmlr_runtime.launch._fastlaunch.Trying",
    .tp_doc = "Trying(kernels, refusals, route): the first of kernels that takes a call, else route (serving/fast.py).",
    .tp_basicsize = sizeof(Trying),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(Trying, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_new = trying_new,
    .tp_dealloc = (destructor)trying_dealloc,
};

/* ---- a served kernel's kernel[grid] ------------------------------------------------------------------ */
/* Getitem(fast, bind, state, nothing): serving/fast.py's hook_getitem (the Python reference), as the class's
 * __getitem__: kernel[grid] gives Bound(fast[id(kernel)], grid), or bind(kernel, grid) for a kernel not in `fast`,
 * or `nothing` while state.faking is true (a torch custom op deriving its fake). */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *fast, *bind, *state, *nothing;
} Getitem;

static PyObject *s_faking;

static PyObject *getitem_vectorcall(PyObject *obj, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Getitem *self = (Getitem *)obj;
    if (PyVectorcall_NARGS(nargsf) != 2 || kwnames) {
        PyErr_SetString(PyExc_TypeError, "__getitem__ takes the kernel and the grid");
        return NULL;
    }
    PyObject *faking = PyObject_GetAttr(self->state, s_faking);
    if (!faking) return NULL;
    int on = PyObject_IsTrue(faking);
    Py_DECREF(faking);
    if (on < 0) return NULL;
    if (on) return Py_NewRef(self->nothing);
    PyObject *key = PyLong_FromVoidPtr(args[0]);  /* id(kernel): kernel objects are never hashed (server.py) */
    if (!key) return NULL;
    PyObject *launcher = PyDict_GetItemWithError(self->fast, key);  /* borrowed */
    Py_DECREF(key);
    if (launcher) return bound_make(launcher, args[1]);
    if (PyErr_Occurred()) return NULL;
    return PyObject_Vectorcall(self->bind, args, 2, NULL);
}

static PyObject *getitem_new(PyTypeObject *type, PyObject *a, PyObject *kw) {
    PyObject *fast, *bind, *state, *nothing;
    if (!PyArg_ParseTuple(a, "O!OOO:Getitem", &PyDict_Type, &fast, &bind, &state, &nothing)) return NULL;
    Getitem *self = (Getitem *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    self->vectorcall = getitem_vectorcall;
    self->fast = Py_NewRef(fast);
    self->bind = Py_NewRef(bind);
    self->state = Py_NewRef(state);
    self->nothing = Py_NewRef(nothing);
    return (PyObject *)self;
}

static void getitem_dealloc(Getitem *self) {
    Py_XDECREF(self->fast);
    Py_XDECREF(self->bind);
    Py_XDECREF(self->state);
    Py_XDECREF(self->nothing);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject GetitemType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tmlr_runtime.launch._fastlaunch.Getitem",
    .tp_doc = "Getitem(fast, bind, state, nothing): a served kernel class's __getitem__ (serving/fast.py).",
    .tp_basicsize = sizeof(Getitem),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_vectorcall_offset = offsetof(Getitem, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_descr_get = method_get,
    .tp_new = getitem_new,
    .tp_dealloc = (destructor)getitem_dealloc,
};

/* ---- a cubin's ELF walk at first load (artifact/elf.py) ------------------------------------------------ */
/* elf.parse's walk, for the first Kernel.load of each cubin: there it runs cold, right after the file reads, where
 * the same walk in Python costs 15-30 us (docs/performance.md). It answers only for a file it finds whole and laid
 * out as ptxas writes it; for anything else it returns None and elf.py's Python walk, the reference, reads the file
 * again: it raises the typed error, and its message, for a damaged file, and reads the rarer layouts. Each read below
 * is checked against the file's size first. */
static uint64_t le(const unsigned char *p, int n) {  /* n little-endian bytes */
    uint64_t v = 0;
    while (n--) v = v << 8 | p[n];
    return v;
}

static int inside(uint64_t offset, uint64_t size, uint64_t len) { return offset <= len && size <= len - offset; }

static const unsigned char KPARAM[4] = {4, 0x17, 12, 0};  /* EIFMT_SVAL, EIATTR_KPARAM_INFO, 12 bytes: elf._KPARAM */

/* elf._kparams for the .nv.info section of `size` bytes at `at`: (offsets from the first one's, sizes) by ordinal, when
 * its KPARAM_INFO records are one block of 16-byte records, last parameter first; ((), ()) when it holds none */
static PyObject *kparams(const unsigned char *d, uint64_t at, uint64_t size, uint64_t len) {
    uint64_t first = 0, p, end = at + size;
    Py_ssize_t count = 0;
    if (!inside(at, size, len)) Py_RETURN_NONE;
    for (p = at; p + 4 <= end; p++)
        if (!memcmp(d + p, KPARAM, 4) && !count++) first = p;
    if (!count) {  /* elf._records' walk: the records fill the section, and no KPARAM_INFO of another size */
        for (p = at; p + 4 <= end; p += d[p] == 4 ? 4 + le(d + p + 2, 2) : 4)
            if (d[p] == 4 && d[p + 1] == 0x17) Py_RETURN_NONE;
        if (p != end) Py_RETURN_NONE;
        return Py_BuildValue("(()())");
    }
    if ((first - at) % 4 || (uint64_t)count > (end - first) / 16) Py_RETURN_NONE;
    PyObject *offsets = PyTuple_New(count), *sizes = PyTuple_New(count), *out = NULL;
    long base = (long)le(d + first + 16 * (count - 1) + 10, 2);  /* parameter 0's offset, in the last record */
    Py_ssize_t j = 0;
    for (; offsets && sizes && j < count; j++) {
        const unsigned char *r = d + first + 16 * (count - 1 - j);  /* header, index:u32, ordinal:u16, offset:u16, flags:u32 */
        if (memcmp(r, KPARAM, 4) || le(r + 8, 2) != (uint64_t)j) break;
        PyObject *offset = PyLong_FromLong((long)le(r + 10, 2) - base), *size = PyLong_FromLong((long)(le(r + 12, 4) >> 18));
        PyTuple_SET_ITEM(offsets, j, offset);  /* a tuple frees what it holds and skips a NULL */
        PyTuple_SET_ITEM(sizes, j, size);  /* the size: flags' bits 18-31 */
        if (!offset || !size) break;
    }
    if (j == count) out = PyTuple_Pack(2, offsets, sizes);
    else if (!PyErr_Occurred()) out = Py_NewRef(Py_None);  /* not that block: the Python walk reads it */
    Py_XDECREF(offsets);
    Py_XDECREF(sizes);
    return out;
}

/* elf_walk(data: bytes, entry: str | None) -> (table, names, params) as elf.parse reads them, or None (see above) */
static PyObject *elf_walk(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs) {
    const char *entry = NULL;
    Py_ssize_t n = 0;
    if (nargs != 2 || !PyBytes_Check(args[0])) Py_RETURN_NONE;
    if (args[1] != Py_None && !(PyUnicode_Check(args[1]) && (entry = PyUnicode_AsUTF8AndSize(args[1], &n)))) {
        PyErr_Clear();  /* no UTF-8 for it: Python's encode() says so */
        Py_RETURN_NONE;
    }
    const unsigned char *d = (const unsigned char *)PyBytes_AS_STRING(args[0]);
    uint64_t len = (uint64_t)PyBytes_GET_SIZE(args[0]);
    /* the header: 64-bit little-endian ELF, machine EM_CUDA, 64-byte section and 56-byte program headers */
    if (len < 64 || memcmp(d, "\x7f" "ELF\x02\x01", 6) || le(d + 18, 2) != 190 || le(d + 58, 2) != 64) Py_RETURN_NONE;
    uint64_t phnum = le(d + 56, 2), shnum = le(d + 60, 2), shstrndx = le(d + 62, 2);
    if ((phnum && le(d + 54, 2) != 56) || !inside(le(d + 32, 8), phnum * 56, len) || !inside(le(d + 40, 8), shnum * 64, len)
        || !shstrndx || shstrndx >= shnum) Py_RETURN_NONE;
    const unsigned char *sh = d + le(d + 40, 8), *names = sh + 64 * shstrndx;
    uint64_t strings = le(names + 24, 8), strings_size = le(names + 32, 8), best = UINT64_MAX;
    if (!inside(strings, strings_size, len)) Py_RETURN_NONE;
    PyObject *table = PyTuple_New((Py_ssize_t)(5 * shnum)), *out = NULL;
    Py_ssize_t found = -1;
    for (uint64_t i = 0; table && i < shnum; i++) {  /* name, type, offset, size, link of each */
        const unsigned char *s = sh + 64 * i;
        uint64_t name = le(s, 4), f[5] = {name, le(s + 4, 4), le(s + 24, 8), le(s + 32, 8), le(s + 40, 4)};
        if (f[1] != 8 && !inside(f[2], f[3], len)) goto done;  /* past the end, and not SHT_NOBITS (no bytes in the file) */
        for (int k = 0; k < 5; k++) {
            PyObject *v = PyLong_FromUnsignedLongLong(f[k]);
            if (!v) goto done;
            PyTuple_SET_ITEM(table, (Py_ssize_t)(5 * i) + k, v);
        }
        /* ".nv.info.<entry>\0" at this name; the lowest such offset in .shstrtab wins, as elf.parse's find does */
        if (entry && name < best && (uint64_t)n + 10 <= strings_size && name <= strings_size - n - 10
            && !memcmp(d + strings + name, ".nv.info.", 9) && !memcmp(d + strings + name + 9, entry, n)
            && !d[strings + name + 9 + n]) {
            best = name;
            found = (Py_ssize_t)i;
        }
    }
    PyObject *params = found < 0 ? Py_NewRef(Py_None)  /* no such section: the Python walk's answer too */
        : kparams(d, le(sh + 64 * found + 24, 8), le(sh + 64 * found + 32, 8), len);
    if (!params || (found >= 0 && params == Py_None)) {  /* kparams' None: another layout, or damaged */
        Py_XDECREF(params);
        goto done;
    }
    out = Py_BuildValue("(O(KK)N)", table, (unsigned long long)strings, (unsigned long long)strings_size, params);
done:
    Py_XDECREF(table);
    if (!out && !PyErr_Occurred()) Py_RETURN_NONE;
    return out;
}

static PyMethodDef functions[] = {
    {"elf_walk", (PyCFunction)(void (*)(void))elf_walk, METH_FASTCALL,
     "elf_walk(data, entry): a cubin's section table, section names and entry's parameters as artifact.elf.parse reads "
     "them, or None where elf.py's Python walk must read it"},
    {NULL, NULL, 0, NULL},
};

/* ---- the module ---------------------------------------------------------------------------------- */
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fastlaunch", "The compiled per-call launch path, and the first load's ELF walk.", -1, functions};

PyMODINIT_FUNC PyInit__fastlaunch(void) {
    if (PyType_Ready(&ExecutorType) < 0 || PyType_Ready(&FamilyKeyType) < 0 || PyType_Ready(&MethodType) < 0
        || PyType_Ready(&GetitemType) < 0 || PyType_Ready(&BoundType) < 0
        || PyType_Ready(&TryingType) < 0) return NULL;
    s_get_device = PyUnicode_InternFromString("get_device");
    s_dtype = PyUnicode_InternFromString("dtype");
    s_data_ptr = PyUnicode_InternFromString("data_ptr");
    s_stream = PyUnicode_InternFromString("stream");
    s_compiled_attr = PyUnicode_InternFromString("_compiled");
    s_faking = PyUnicode_InternFromString("faking");
    for (int i = 0; i < 4; i++) int_classes[i] = PyTuple_Pack(2, i & 2 ? Py_True : Py_False, i & 1 ? Py_True : Py_False);
    if (!s_get_device || !s_dtype || !s_data_ptr || !s_stream || !s_compiled_attr || !s_faking
        || !int_classes[3]) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    if (PyModule_AddObjectRef(m, "Executor", (PyObject *)&ExecutorType) < 0
        || PyModule_AddObjectRef(m, "FamilyKey", (PyObject *)&FamilyKeyType) < 0
        || PyModule_AddObjectRef(m, "Method", (PyObject *)&MethodType) < 0
        || PyModule_AddObjectRef(m, "Getitem", (PyObject *)&GetitemType) < 0
        || PyModule_AddObjectRef(m, "Bound", (PyObject *)&BoundType) < 0
        || PyModule_AddObjectRef(m, "Trying", (PyObject *)&TryingType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
