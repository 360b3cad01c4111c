/* native.c - the module shardkit._native: errors, pixel buffers, module
 * set-up (see native.h). */
#include "native.h"
#include "shardx.h"

#include <stdlib.h>
#include <string.h>

/* shardkit.errors: the function that makes a library error's exception, and
 * the class of a damaged record, looked up at the first error (not when the
 * module loads: shardkit.errors imports this module, for its status codes). */
static PyObject *from_library, *corrupt_record_error;

/* 0 once both are known, or -1 with an exception set. */
static int errors_ready(void)
{
    if (from_library && corrupt_record_error)
        return 0;
    PyObject *errors = PyImport_ImportModule("shardkit.errors");
    if (!errors)
        return -1;
    if (!from_library)
        from_library = PyObject_GetAttrString(errors, "_from_library");
    if (from_library && !corrupt_record_error)
        corrupt_record_error = PyObject_GetAttrString(errors, "CorruptRecordError");
    Py_DECREF(errors);
    return from_library && corrupt_record_error ? 0 : -1;
}

PyObject *skpy_message(const char *msg)
{
    /* a path in a message may hold any bytes: those that are not UTF-8
     * read as \xNN, rather than the message failing to decode */
    return PyUnicode_DecodeUTF8(msg, (Py_ssize_t)strlen(msg), "backslashreplace");
}

static const char *message_of(const struct shard_err *err, int code)
{
    return err->msg[0] ? err->msg : shard_strerror(code);
}

PyObject *skpy_error(int code, const char *msg, PyObject *filename)
{
    if (errors_ready() < 0)
        return NULL;
    PyObject *text = skpy_message(msg);
    if (!text)
        return NULL;
    PyObject *exc = PyObject_CallFunction(from_library, "iOO", code, text,
                                          filename ? filename : Py_None);
    Py_DECREF(text);
    return exc;
}

PyObject *skpy_raise_path(const struct shard_err *err, PyObject *filename)
{
    int code = err->code ? err->code : SHARD_EIO;
    PyObject *exc = skpy_error(code, message_of(err, code), filename);
    if (exc) {
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
        Py_DECREF(exc);
    }
    return NULL;
}

PyObject *skpy_raise(const struct shard_err *err)
{
    return skpy_raise_path(err, NULL);
}

PyObject *skpy_redacted(PyObject *given)
{
    PyObject *bytes = NULL, *out = NULL;
    if (!PyUnicode_FSConverter(given, &bytes))
        return NULL;
    const char *text = PyBytes_AS_STRING(bytes);
    char *shown = shardx_redact_urls(text);
    if (!shown)
        PyErr_NoMemory();
    else if (!strcmp(shown, text))
        out = Py_NewRef(given);
    else if (PyBytes_Check(given))
        out = PyBytes_FromString(shown);
    else
        out = PyUnicode_DecodeFSDefault(shown);
    free(shown);
    Py_DECREF(bytes);
    return out;
}

static int is_damage(int code)
{
    return code == SHARD_ECORRUPT || code == SHARD_ENOTIMAGE || code == SHARD_EUNSUPPORTED;
}

PyObject *skpy_record_error(struct shard_dataset *ds, uint64_t index, const struct shard_err *err)
{
    if (errors_ready() < 0)
        return NULL;
    uint32_t shard = 0;
    uint64_t record = 0;
    struct shard_buf key = {0};
    struct shard_err ignored;
    shard_dataset_locate(ds, index, &shard, &record, &ignored);
    /* the key from the footer: unknown when the footer itself is damaged */
    PyObject *kb = shard_dataset_key_copy(ds, index, &key, &ignored)
                       ? Py_NewRef(Py_None)
                       : PyBytes_FromStringAndSize((const char *)key.data, (Py_ssize_t)key.len);
    shard_buf_release(&key);
    const struct shard_manifest *m = shard_dataset_manifest(ds);
    const char *file = shard < m->shard_count ? m->shards[shard].file : "";
    PyObject *kw = Py_BuildValue("{s:K,s:s,s:K,s:i}", "index", (unsigned long long)index, "shard",
                                 file, "record", (unsigned long long)record, "code", err->code);
    if (!kw) {
        Py_XDECREF(kb);
        return NULL;
    }
    if (!kb || PyDict_SetItemString(kw, "key_bytes", kb) < 0) {
        Py_XDECREF(kb);
        Py_DECREF(kw);
        return NULL;
    }
    Py_DECREF(kb);
    PyObject *text = skpy_message(message_of(err, err->code));
    PyObject *args = text ? PyTuple_Pack(1, text) : NULL;
    Py_XDECREF(text);
    PyObject *exc = args ? PyObject_Call(corrupt_record_error, args, kw) : NULL;
    Py_XDECREF(args);
    Py_DECREF(kw);
    return exc;
}

PyObject *skpy_raise_record(struct shard_dataset *ds, uint64_t index, const struct shard_err *err)
{
    if (!is_damage(err->code))
        return skpy_raise(err);
    PyObject *exc = skpy_record_error(ds, index, err);
    if (exc) {
        PyErr_SetObject(corrupt_record_error, exc);
        Py_DECREF(exc);
    }
    return NULL;
}

int skpy_uint(PyObject *o, const char *what, uint64_t min, uint64_t max, uint64_t *out)
{
    if (PyBool_Check(o) || !PyIndex_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s must be an int, not %.100s", what, Py_TYPE(o)->tp_name);
        return -1;
    }
    PyObject *n = PyNumber_Index(o);
    if (!n)
        return -1;
    int overflow;
    long long small = PyLong_AsLongLongAndOverflow(n, &overflow);
    unsigned long long v = 0;
    int in_range = 0;
    if (!PyErr_Occurred() && (overflow > 0 || (overflow == 0 && small >= 0))) {
        v = PyLong_AsUnsignedLongLong(n); /* OverflowError beyond 2**64-1 */
        in_range = !PyErr_Occurred() && v >= min && v <= max;
    }
    if (!in_range) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "%s must be in %llu..%llu, not %S", what,
                     (unsigned long long)min, (unsigned long long)max, n);
    }
    Py_DECREF(n);
    if (!in_range)
        return -1;
    *out = v;
    return 0;
}

int skpy_u64(PyObject *o, const char *what, uint64_t *out)
{
    return skpy_uint(o, what, 0, UINT64_MAX, out);
}

int skpy_u32(PyObject *o, const char *what, uint32_t min, uint32_t *out)
{
    uint64_t v;
    if (skpy_uint(o, what, min, UINT32_MAX, &v) < 0)
        return -1;
    *out = (uint32_t)v;
    return 0;
}

/* ---- buffers ------------------------------------------------------------------ */

typedef struct {
    PyObject_HEAD char *data;
    int ndim;
    Py_ssize_t shape[4];
    Py_ssize_t strides[4];
    Py_ssize_t itemsize;
    Py_ssize_t len;
    const char *format;
    PyObject *owner;
    void (*free_fn)(void *);
    void *free_arg;
    int contiguous; /* C-contiguous (else strides must be asked for) */
} BufferObject;

/* A Buffer of values of `format` (a struct module code, native order),
 * itemsize bytes each. */
static PyObject *buffer_make(void *data, int ndim, const Py_ssize_t *shape, const char *format,
                             Py_ssize_t itemsize, PyObject *owner, void (*free_fn)(void *),
                             void *free_arg)
{
    BufferObject *b = PyObject_New(BufferObject, &skpy_buffer_type);
    if (!b) {
        if (free_fn)
            free_fn(free_arg);
        return NULL;
    }
    b->data = data;
    b->ndim = ndim;
    b->itemsize = itemsize;
    b->format = format;
    Py_ssize_t stride = b->itemsize;
    b->len = b->itemsize;
    for (int i = ndim - 1; i >= 0; i--) {
        b->shape[i] = shape[i];
        b->strides[i] = stride;
        stride *= shape[i];
        b->len *= shape[i];
    }
    b->owner = Py_XNewRef(owner);
    b->contiguous = 1;
    b->free_fn = free_fn;
    b->free_arg = free_arg;
    return (PyObject *)b;
}

PyObject *skpy_buffer_new(void *data, int ndim, const Py_ssize_t *shape, enum shard_dtype dtype,
                          PyObject *owner, void (*free_fn)(void *), void *free_arg)
{
    const char *format = dtype == SHARD_DTYPE_FLOAT32   ? "f"
                         : dtype == SHARD_DTYPE_FLOAT16 ? "e"
                         : dtype == SHARD_DTYPE_UINT16  ? "H"
                                                        : "B";
    return buffer_make(data, ndim, shape, format, (Py_ssize_t)shard_dtype_size(dtype), owner,
                       free_fn, free_arg);
}

static Py_ssize_t format_size(const char *format)
{
    return format[0] == 'q' || format[0] == 'Q' || format[0] == 'd'   ? 8
           : format[0] == 'f' || format[0] == 'I' || format[0] == 'i' ? 4
           : format[0] == 'H'                                         ? 2
                                                                      : 1;
}

PyObject *skpy_values_new(const void *data, int ndim, const Py_ssize_t *shape, const char *format,
                          PyObject *owner)
{
    return buffer_make((void *)data, ndim, shape, format, format_size(format), owner, NULL, NULL);
}

PyObject *skpy_owned_new(void *data, int ndim, const Py_ssize_t *shape, const char *format)
{
    return buffer_make(data, ndim, shape, format, format_size(format), NULL, free, data);
}

PyObject *skpy_strided_new(const void *data, int ndim, const Py_ssize_t *shape,
                           const Py_ssize_t *strides, const char *format, PyObject *owner)
{
    BufferObject *b = (BufferObject *)skpy_values_new(data, ndim, shape, format, owner);
    if (b) {
        for (int i = 0; i < ndim; i++)
            b->contiguous &= b->strides[i] == strides[i];
        memcpy(b->strides, strides, (size_t)ndim * sizeof *strides);
    }
    return (PyObject *)b;
}

void skpy_sample_shape(enum shard_layout layout, uint32_t width, uint32_t height, uint32_t channels,
                       Py_ssize_t *shape)
{
    if (layout == SHARD_LAYOUT_NCHW) {
        shape[0] = channels, shape[1] = height, shape[2] = width;
    } else {
        shape[0] = height, shape[1] = width, shape[2] = channels;
    }
}

static int buffer_get(PyObject *self, Py_buffer *view, int flags)
{
    BufferObject *b = (BufferObject *)self;
    if (!b->contiguous && (flags & PyBUF_STRIDES) != PyBUF_STRIDES) {
        PyErr_SetString(PyExc_BufferError, "a strided buffer: ask for its strides");
        return -1;
    }
    view->buf = b->data;
    view->obj = Py_NewRef(self);
    view->len = b->len;
    view->readonly = 0;
    view->itemsize = b->itemsize;
    view->format = (flags & PyBUF_FORMAT) ? (char *)b->format : NULL;
    view->ndim = b->ndim;
    view->shape = (flags & PyBUF_ND) ? b->shape : NULL;
    view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? b->strides : NULL;
    view->suboffsets = NULL;
    view->internal = NULL;
    if (!(flags & PyBUF_ND))
        view->ndim = 1; /* a plain view of the (C-contiguous) bytes */
    return 0;
}

static PyBufferProcs buffer_procs = {buffer_get, NULL};

static void buffer_dealloc(PyObject *self)
{
    BufferObject *b = (BufferObject *)self;
    if (b->free_fn)
        b->free_fn(b->free_arg);
    Py_XDECREF(b->owner);
    PyObject_Free(self);
}

PyTypeObject skpy_buffer_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "shardkit._native.Buffer",
    .tp_basicsize = sizeof(BufferObject),
    .tp_dealloc = buffer_dealloc,
    .tp_as_buffer = &buffer_procs,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "pixel memory owned by the library, exported through the buffer protocol",
};

/* ---- the module ------------------------------------------------------------------ */

static PyObject *version(PyObject *self, PyObject *unused)
{
    return PyUnicode_FromString(shard_version());
}

static PyObject *available_cpus(PyObject *self, PyObject *unused)
{
    return PyLong_FromLong(shard_available_cpus());
}

/* _raise_library_error(code, message bytes[, filename]): raise what a
 * library failure with that status and message raises (for the tests of the
 * exception classes, one per status code). */
static PyObject *raise_library_error(PyObject *self, PyObject *args)
{
    int code;
    const char *msg;
    PyObject *filename = NULL;
    if (!PyArg_ParseTuple(args, "iy|O:_raise_library_error", &code, &msg, &filename))
        return NULL;
    struct shard_err err;
    shard_err_set(&err, code, "%s", msg);
    return skpy_raise_path(&err, filename);
}

/* redact_urls(location) -> the location as messages show it */
static PyObject *redact_urls(PyObject *self, PyObject *location)
{
    return skpy_redacted(location);
}

static PyMethodDef module_methods[] = {
    {"redact_urls", redact_urls, METH_O,
     "redact_urls($module, location, /)\n--\n\n"
     "the location (str, bytes or a path) with a URL's user and password replaced by ***, "
     "as the library's messages show it; the location itself when it names none"},
    {"_raise_library_error", raise_library_error, METH_VARARGS,
     "_raise_library_error($module, code, message, filename=None, /)\n--\n\n"
     "raise as for a library error"},
    {"decode_value", skpy_decode_value, METH_VARARGS,
     "decode_value($module, type, raw, /)\n--\n\na field value of the type named from its stored "
     "bytes"},
    {"version", version, METH_NOARGS, "version($module, /)\n--\n\nthe linked library's version"},
    {"available_cpus", available_cpus, METH_NOARGS,
     "available_cpus($module, /)\n--\n\n"
     "CPUs this process may use (affinity, cgroup quota, OMP_NUM_THREADS)"},
    {NULL, NULL, 0, NULL},
};

/* enum shard_status (shardkit/error.h), each by its name: shardkit.errors
 * maps them to its classes. */
static int add_status_codes(PyObject *m)
{
#define STATUS(name) \
    {                \
#name, name  \
    }
    static const struct {
        const char *name;
        int code;
    } codes[] = {
        STATUS(SHARD_OK),     STATUS(SHARD_ENOMEM),    STATUS(SHARD_EIO),
        STATUS(SHARD_EINVAL), STATUS(SHARD_ECORRUPT),  STATUS(SHARD_EUNSUPPORTED),
        STATUS(SHARD_ELIMIT), STATUS(SHARD_ENOTIMAGE), STATUS(SHARD_ELOCKED),
        STATUS(SHARD_EEXIST), STATUS(SHARD_EMISMATCH), STATUS(SHARD_ENOTFOUND),
        STATUS(SHARD_ENET),   STATUS(SHARD_EINTR),     STATUS(SHARD_EREJECTED),
    };
#undef STATUS
    for (size_t i = 0; i < sizeof codes / sizeof *codes; i++)
        if (PyModule_AddIntConstant(m, codes[i].name, codes[i].code) < 0)
            return -1;
    return 0;
}

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "shardkit._native", "the C core of shardkit (libshardkit)", -1,
    module_methods,
};

PyMODINIT_FUNC PyInit__native(void)
{
    PyTypeObject *types[] = {&skpy_buffer_type, &skpy_dataset_type, &skpy_transforms_type,
                             &skpy_loader_type, &skpy_batch_type,   &skpy_mixture_type};
    for (size_t i = 0; i < sizeof types / sizeof *types; i++)
        if (PyType_Ready(types[i]) < 0)
            return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (!m)
        return NULL;
    if (PyModule_AddObjectRef(m, "Buffer", (PyObject *)&skpy_buffer_type) < 0 ||
        PyModule_AddObjectRef(m, "Dataset", (PyObject *)&skpy_dataset_type) < 0 ||
        PyModule_AddObjectRef(m, "Transforms", (PyObject *)&skpy_transforms_type) < 0 ||
        PyModule_AddObjectRef(m, "Loader", (PyObject *)&skpy_loader_type) < 0 ||
        PyModule_AddObjectRef(m, "Batch", (PyObject *)&skpy_batch_type) < 0 ||
        PyModule_AddObjectRef(m, "Mixture", (PyObject *)&skpy_mixture_type) < 0 ||
        PyModule_AddIntConstant(m, "MAX_STEPS", SHARD_TRANSFORMS_MAX_STEPS) < 0 ||
        PyModule_AddIntConstant(m, "MAX_SIDE", SHARD_TRANSFORMS_MAX_SIDE) < 0 ||
        PyModule_AddIntConstant(m, "DATASET_MAX_CONNECTIONS", SHARD_DATASET_MAX_CONNECTIONS) < 0 ||
        PyModule_AddIntConstant(m, "DATASET_MIN_WINDOW", SHARD_DATASET_MIN_WINDOW) < 0 ||
        PyModule_AddIntConstant(m, "DATASET_MAX_WINDOW", SHARD_DATASET_MAX_WINDOW) < 0 ||
        PyModule_AddIntConstant(m, "DATASET_MAX_RETRIES", SHARD_DATASET_MAX_RETRIES) < 0 ||
        PyModule_AddIntConstant(m, "DATASET_MAX_TIMEOUT", SHARD_DATASET_MAX_TIMEOUT) < 0 ||
        add_status_codes(m) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
