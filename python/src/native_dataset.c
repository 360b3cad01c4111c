/* native_dataset.c - _native.Dataset: an open dataset (shardkit/dataset.h). */
#include "native.h"

#include <stdlib.h>

/* timeout: a real number (not a bool) in (0, SHARD_DATASET_MAX_TIMEOUT]. */
static int take_timeout(PyObject *o, double *out)
{
    if (PyBool_Check(o) || !PyNumber_Check(o) || PyComplex_Check(o)) {
        PyErr_Format(PyExc_TypeError, "timeout must be a number of seconds, not %.100s",
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    double v = PyFloat_AsDouble(o);
    if (v == -1.0 && PyErr_Occurred())
        return -1;
    if (!(v > 0 && v <= SHARD_DATASET_MAX_TIMEOUT)) {
        PyErr_Format(PyExc_ValueError,
                     "timeout must be more than 0 and at most %d seconds, "
                     "not %R",
                     SHARD_DATASET_MAX_TIMEOUT, o);
        return -1;
    }
    *out = v;
    return 0;
}

/* The remote-reading options given (None: the default), range-checked,
 * into *o.  0, or -1 with ValueError or TypeError naming the argument. */
static int take_options(PyObject *connections, PyObject *window, PyObject *window_cache,
                        PyObject *retries, PyObject *timeout, struct shard_dataset_options *o)
{
    uint64_t v;
    shard_dataset_options_init(o);
    if (connections != Py_None) {
        if (skpy_uint(connections, "connections", 1, SHARD_DATASET_MAX_CONNECTIONS, &v) < 0)
            return -1;
        o->connections = (int)v;
    }
    if (window != Py_None && skpy_uint(window, "window", SHARD_DATASET_MIN_WINDOW,
                                       SHARD_DATASET_MAX_WINDOW, &o->window_bytes) < 0)
        return -1;
    if (window_cache != Py_None && skpy_uint(window_cache, "window_cache", SHARD_DATASET_MIN_WINDOW,
                                             UINT64_MAX, &o->window_cache_bytes) < 0)
        return -1;
    if (o->window_cache_bytes < o->window_bytes) {
        PyErr_Format(PyExc_ValueError,
                     "window_cache must be at least the window (%llu bytes), not %llu",
                     (unsigned long long)o->window_bytes,
                     (unsigned long long)o->window_cache_bytes);
        return -1;
    }
    if (retries != Py_None) {
        if (skpy_uint(retries, "retries", 0, SHARD_DATASET_MAX_RETRIES, &v) < 0)
            return -1;
        o->retries = (int)v;
    }
    if (timeout != Py_None && take_timeout(timeout, &o->timeout_seconds) < 0)
        return -1;
    return 0;
}

/* Dataset(location, *, connections=None, window=None, window_cache=None,
 * retries=None, timeout=None, cache_dir=None, cache_limit=None): location
 * is str, bytes or a path
 * (os.fsencode's rules: a str of a non-UTF-8 file name holds surrogate
 * escapes); the rest how a remote one is read (shard_dataset_open_ex),
 * None the default. */
static int dataset_init(PyObject *self, PyObject *args, PyObject *kwds)
{
    DatasetObject *d = (DatasetObject *)self;
    static char *names[] = {"location",     "connections", "window",
                            "window_cache", "retries",     "timeout",
                            "cache_dir",    "cache_limit", NULL};
    PyObject *given, *loc;
    PyObject *connections = Py_None, *window = Py_None, *window_cache = Py_None, *retries = Py_None,
             *timeout = Py_None, *cache_dir = Py_None, *cache_limit = Py_None, *dir = NULL;
    struct shard_dataset_options o;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|$OOOOOOO:Dataset", names, &given, &connections,
                                     &window, &window_cache, &retries, &timeout, &cache_dir,
                                     &cache_limit) ||
        take_options(connections, window, window_cache, retries, timeout, &o) < 0)
        return -1;
    if (cache_limit != Py_None &&
        skpy_uint(cache_limit, "cache_limit", 1, UINT64_MAX, &o.cache_limit) < 0)
        return -1;
    if (cache_dir != Py_None) {
        if (!PyUnicode_FSConverter(cache_dir, &dir))
            return -1;
        o.cache_dir = PyBytes_AS_STRING(dir);
    }
    if (!PyUnicode_FSConverter(given, &loc)) {
        Py_XDECREF(dir);
        return -1;
    }
    if (d->ds) {
        Py_DECREF(loc);
        Py_XDECREF(dir);
        PyErr_SetString(PyExc_RuntimeError, "Dataset is already open");
        return -1;
    }
    struct shard_dataset *ds;
    struct shard_err err;
    int rc;
    const char *path = PyBytes_AS_STRING(loc);
    Py_BEGIN_ALLOW_THREADS rc = shard_dataset_open_ex(&ds, path, &o, &err);
    Py_END_ALLOW_THREADS Py_DECREF(loc);
    Py_XDECREF(dir);
    if (rc) { /* .filename as given, but never with a URL's password */
        PyObject *shown = skpy_redacted(given);
        if (shown) {
            skpy_raise_path(&err, shown);
            Py_DECREF(shown);
        }
        return -1;
    }
    if (d->ds) { /* another thread's __init__ opened it meanwhile */
        shard_dataset_close(ds);
        PyErr_SetString(PyExc_RuntimeError, "Dataset is already open");
        return -1;
    }
    d->ds = ds;
    return 0;
}

static void dataset_dealloc(PyObject *self)
{
    DatasetObject *d = (DatasetObject *)self;
    shard_dataset_close(d->ds);
    Py_TYPE(self)->tp_free(self);
}

static int dataset_ready(DatasetObject *d)
{
    if (!d->ds) {
        PyErr_SetString(PyExc_RuntimeError, "Dataset is not open");
        return 0;
    }
    return 1;
}

static Py_ssize_t dataset_len(PyObject *self)
{
    DatasetObject *d = (DatasetObject *)self;
    if (!dataset_ready(d))
        return -1;
    return (Py_ssize_t)shard_dataset_size(d->ds);
}

/* Index argument: an int in 0..len-1 (negative indices are the caller's). */
static int take_index(DatasetObject *d, PyObject *o, uint64_t *index)
{
    if (skpy_u64(o, "index", index) < 0)
        return -1;
    if (*index >= shard_dataset_size(d->ds)) {
        PyErr_Format(PyExc_IndexError, "index %llu is out of range for a dataset of %llu samples",
                     (unsigned long long)*index, (unsigned long long)shard_dataset_size(d->ds));
        return -1;
    }
    return 0;
}

static void image_free(void *p)
{
    shard_image_release(p);
    free(p);
}

/* Read the sample at index `arg` into *item (zeroed by the caller) with the
 * GIL released.  0, or -1 with an exception set and *item released. */
static int read_item(DatasetObject *d, PyObject *arg, unsigned flags, struct shard_item *item)
{
    uint64_t index;
    if (!dataset_ready(d) || take_index(d, arg, &index) < 0)
        return -1;
    struct shard_err err;
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = shard_dataset_read(d->ds, index, flags, item, &err);
    Py_END_ALLOW_THREADS if (rc)
    {
        shard_item_release(item);
        skpy_raise_record(d->ds, index, &err);
        return -1;
    }
    return 0;
}

/* read(index) -> (key_bytes, label or -1, Buffer (h, w, c) uint8 or uint16 in
 * the dataset's stored form, fields: a
 * tuple of (field number, value bytes), see skpy_item_fields) */
static PyObject *dataset_read(PyObject *self, PyObject *arg)
{
    struct shard_item item = {0};
    if (read_item((DatasetObject *)self, arg, SHARD_READ_PIXELS, &item) < 0)
        return NULL;
    struct shard_image *img = malloc(sizeof *img);
    if (!img) {
        shard_item_release(&item);
        return PyErr_NoMemory();
    }
    *img = item.pixels; /* the pixels move to the buffer */
    memset(&item.pixels, 0, sizeof item.pixels);
    Py_ssize_t shape[3];
    skpy_sample_shape(SHARD_LAYOUT_NHWC, img->width, img->height, img->channels, shape);
    PyObject *key = PyBytes_FromStringAndSize((const char *)item.key.data,
                                              (Py_ssize_t)item.key.len);
    PyObject *fields = skpy_item_fields(&item);
    int32_t label = item.label;
    shard_item_release(&item);
    PyObject *buf = skpy_buffer_new(img->pixels, 3, shape,
                                    img->depth == 16 ? SHARD_DTYPE_UINT16 : SHARD_DTYPE_UINT8, NULL,
                                    image_free, img);
    if (!key || !buf || !fields) {
        Py_XDECREF(key);
        Py_XDECREF(buf);
        Py_XDECREF(fields);
        return NULL;
    }
    return Py_BuildValue("(NiNN)", key, (int)label, buf, fields);
}

/* read_stored(index) -> (codec name, width, height, payload bytes as stored:
 * a JPEG or PNG file's bytes, or raw RGB pixels) */
static PyObject *dataset_read_stored(PyObject *self, PyObject *arg)
{
    struct shard_item item = {0};
    if (read_item((DatasetObject *)self, arg, SHARD_READ_STORED, &item) < 0)
        return NULL;
    PyObject *r = Py_BuildValue("(sIIy#)", shard_codec_name(item.codec), (unsigned)item.width,
                                (unsigned)item.height, (const char *)item.stored.data,
                                (Py_ssize_t)item.stored.len);
    shard_item_release(&item);
    return r;
}

/* key(index) -> bytes, from the footer */
static PyObject *dataset_key(PyObject *self, PyObject *arg)
{
    DatasetObject *d = (DatasetObject *)self;
    uint64_t index;
    if (!dataset_ready(d) || take_index(d, arg, &index) < 0)
        return NULL;
    struct shard_buf key = {0};
    struct shard_err err;
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = shard_dataset_key_copy(d->ds, index, &key, &err);
    Py_END_ALLOW_THREADS PyObject *out = rc ? skpy_raise(&err)
                                            : PyBytes_FromStringAndSize((const char *)key.data,
                                                                        (Py_ssize_t)key.len);
    shard_buf_release(&key);
    return out;
}

/* find(key_bytes) -> index, through the key tables (or the index files of
 * a dataset written before them); KeyError when no sample has that key */
static PyObject *dataset_find(PyObject *self, PyObject *arg)
{
    DatasetObject *d = (DatasetObject *)self;
    if (!dataset_ready(d))
        return NULL;
    if (!PyBytes_Check(arg))
        return PyErr_Format(PyExc_TypeError, "key must be bytes, not %.100s",
                            Py_TYPE(arg)->tp_name);
    const char *key = PyBytes_AS_STRING(arg);
    size_t len = (size_t)PyBytes_GET_SIZE(arg);
    uint64_t index;
    struct shard_err err;
    int rc;
    /* arg (immutable bytes) is held by the caller while the GIL is released */
    Py_BEGIN_ALLOW_THREADS rc = shard_dataset_find_key(d->ds, key, len, &index, &err);
    Py_END_ALLOW_THREADS if (rc == SHARD_ENOTFOUND)
    {
        PyErr_SetObject(PyExc_KeyError, arg);
        return NULL;
    }
    if (rc)
        return skpy_raise(&err);
    return PyLong_FromUnsignedLongLong(index);
}

/* locate(index) -> (shard file name, record) */
static PyObject *dataset_locate(PyObject *self, PyObject *arg)
{
    DatasetObject *d = (DatasetObject *)self;
    uint64_t index, record;
    uint32_t shard;
    struct shard_err err;
    if (!dataset_ready(d) || take_index(d, arg, &index) < 0)
        return NULL;
    if (shard_dataset_locate(d->ds, index, &shard, &record, &err))
        return skpy_raise(&err);
    return Py_BuildValue("(sK)", shard_dataset_manifest(d->ds)->shards[shard].file,
                         (unsigned long long)record);
}

static PyObject *dataset_manifest_json(PyObject *self, PyObject *unused)
{
    DatasetObject *d = (DatasetObject *)self;
    if (!dataset_ready(d))
        return NULL;
    char *text = NULL;
    struct shard_err err;
    if (shard_manifest_dump(shard_dataset_manifest(d->ds), &text, &err))
        return skpy_raise(&err);
    PyObject *s = PyUnicode_FromString(text);
    free(text);
    return s;
}

static PyObject *dataset_fields(PyObject *self, PyObject *unused)
{
    DatasetObject *d = (DatasetObject *)self;
    if (!dataset_ready(d))
        return NULL;
    return skpy_field_decls(shard_dataset_manifest(d->ds));
}

static PyObject *dataset_labels(PyObject *self, PyObject *unused)
{
    DatasetObject *d = (DatasetObject *)self;
    if (!dataset_ready(d))
        return NULL;
    const struct shard_manifest *m = shard_dataset_manifest(d->ds);
    PyObject *t = PyTuple_New(m->label_count);
    for (uint32_t i = 0; t && i < m->label_count; i++) {
        PyObject *s = PyUnicode_DecodeUTF8(m->labels[i], (Py_ssize_t)strlen(m->labels[i]),
                                           "surrogateescape");
        if (!s) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, s);
    }
    return t;
}

/* stats() -> the dataset's read counters (shard_dataset_stats) as a dict */
static PyObject *dataset_stats(PyObject *self, PyObject *unused)
{
    DatasetObject *d = (DatasetObject *)self;
    if (!dataset_ready(d))
        return NULL;
    struct shard_read_stats st;
    shard_dataset_stats(d->ds, &st);
    return Py_BuildValue(
        "{s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K}", "cache_hits",
        (unsigned long long)st.cache_hits, "cache_misses", (unsigned long long)st.cache_misses,
        "cache_bytes_fetched", (unsigned long long)st.cache_bytes_fetched, "cache_evictions",
        (unsigned long long)st.cache_evictions, "cache_skipped",
        (unsigned long long)st.cache_skipped, "cache_corrupt", (unsigned long long)st.cache_corrupt,
        "samples", (unsigned long long)st.samples, "errors", (unsigned long long)st.errors,
        "read_ns", (unsigned long long)st.read_ns, "decompress_ns",
        (unsigned long long)st.decompress_ns, "decode_ns", (unsigned long long)st.decode_ns,
        "bytes_requested", (unsigned long long)st.bytes_requested, "bytes_transferred",
        (unsigned long long)st.bytes_transferred, "requests", (unsigned long long)st.requests,
        "retries", (unsigned long long)st.retries);
}

/* cache_warning() -> str: the node-local cache's first warning, or "" */
static PyObject *dataset_cache_warning(PyObject *self, PyObject *unused)
{
    DatasetObject *d = (DatasetObject *)self;
    if (!dataset_ready(d))
        return NULL;
    char buf[SHARD_ERRMSG_SIZE];
    size_t n = shard_dataset_cache_warning(d->ds, buf, sizeof buf);
    return PyUnicode_DecodeUTF8(buf, (Py_ssize_t)n, "surrogateescape");
}

/* manifest_xxh3() -> int: the XXH3-64 of manifest.json's bytes (the identity) */
static PyObject *dataset_manifest_xxh3(PyObject *self, PyObject *unused)
{
    DatasetObject *d = (DatasetObject *)self;
    if (!dataset_ready(d))
        return NULL;
    return PyLong_FromUnsignedLongLong(shard_dataset_manifest_xxh3(d->ds));
}

static PyObject *dataset_shard_count(PyObject *self, PyObject *unused)
{
    DatasetObject *d = (DatasetObject *)self;
    if (!dataset_ready(d))
        return NULL;
    return PyLong_FromUnsignedLong(shard_dataset_shard_count(d->ds));
}

static PyMethodDef dataset_methods[] = {
    {"read", dataset_read, METH_O,
     "read($self, index, /)\n--\n\n"
     "(key bytes, label or -1, pixels, ((field number, value bytes), ...))"},
    {"read_stored", dataset_read_stored, METH_O,
     "read_stored($self, index, /)\n--\n\n(codec, width, height, payload bytes as stored)"},
    {"key", dataset_key, METH_O, "key($self, index, /)\n--\n\nkey bytes (from the shard footer)"},
    {"find", dataset_find, METH_O,
     "find($self, key, /)\n--\n\nthe index of the key bytes (KeyError when absent)"},
    {"locate", dataset_locate, METH_O, "locate($self, index, /)\n--\n\n(shard file, record)"},
    {"manifest_json", dataset_manifest_json, METH_NOARGS,
     "manifest_json($self, /)\n--\n\nthe manifest as JSON text"},
    {"labels", dataset_labels, METH_NOARGS, "labels($self, /)\n--\n\nthe class names, as a tuple"},
    {"fields", dataset_fields, METH_NOARGS,
     "fields($self, /)\n--\n\nthe field declarations, a tuple of dicts in field number order"},
    {"shard_count", dataset_shard_count, METH_NOARGS,
     "shard_count($self, /)\n--\n\nnumber of shards"},
    {"manifest_xxh3", dataset_manifest_xxh3, METH_NOARGS,
     "manifest_xxh3($self, /)\n--\n\nXXH3-64 of manifest.json's bytes: the dataset's identity"},
    {"stats", dataset_stats, METH_NOARGS,
     "stats($self, /)\n--\n\nthe read counters since the dataset was opened"},
    {"cache_warning", dataset_cache_warning, METH_NOARGS,
     "cache_warning($self, /)\n--\n\nthe node-local cache's first warning, or ''"},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods dataset_sequence = {.sq_length = dataset_len};

PyTypeObject skpy_dataset_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "shardkit._native.Dataset",
    .tp_basicsize = sizeof(DatasetObject),
    .tp_dealloc = dataset_dealloc,
    .tp_as_sequence = &dataset_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Dataset(location, *, connections=None, window=None, window_cache=None, "
              "retries=None, timeout=None, cache_dir=None, cache_limit=None)\n--\n\n"
              "an open shardkit dataset (a directory, an http(s) URL or an "
              "s3:// location; str or bytes); the keywords say how a remote one is read "
              "(None: the default)",
    .tp_methods = dataset_methods,
    .tp_init = dataset_init,
    .tp_new = PyType_GenericNew,
};
