/* native_loader.c - _native.Loader and _native.Batch: the batch loader
 * (shardkit/loader.h).  next() waits with the GIL released, in slices of
 * WAIT_SLICE_MS, and checks for signals between them, so Ctrl-C stops a
 * training loop that waits for input within a fraction of a second.  With
 * threads=0, next() reads the batch itself: the loader's interrupt
 * (loader_interrupted) looks for a Ctrl-C or a close() every 50 ms while
 * it reads, so a read that waits for a server that stalls stops too.
 *
 * The C loader is used by one call at a time, and never freed under a call
 * that uses it.  A call that releases the GIL around the loader (start,
 * next, stop) marks the object busy first; meanwhile another thread's call
 * is refused (RuntimeError), and close() - from another thread, or from a
 * signal handler that runs inside next()'s wait - only asks for the close:
 * the busy call frees the loader when it is done with it (next() within
 * one wait slice) and raises ValueError "the loader is closed". */
#include "native.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* How long next() waits with the GIL released before it checks signals. */
#define WAIT_SLICE_MS 100
/* A call refused because another one is using the loader. */
#define BUSY_MESSAGE                                                                          \
    "the loader is in use by another call (another thread's, or the next() a signal handler " \
    "interrupted): one at a time"

typedef struct {
    PyObject_HEAD struct shard_batch *batch;
} BatchObject;

/* busy and close_pending are read and written with the GIL held only. */
typedef struct {
    PyObject_HEAD struct shard_loader *loader;
    PyObject *dataset;    /* the DatasetObject or MixtureObject read (kept open while the
                           * loader lives) */
    PyObject *transforms; /* the TransformsObject applied, or NULL */
    int busy;             /* a call is using `loader` (or __init__ is making it) */
    int close_pending;    /* close() came while busy: the busy call frees the loader */
    int interrupted;      /* the interrupt saw a SIGINT during next()'s own reads */
} LoaderObject;

/* ---- Batch: owns a struct shard_batch; the arrays handed out keep it alive ---- */

static void batch_dealloc(PyObject *self)
{
    shard_batch_free(((BatchObject *)self)->batch);
    PyObject_Free(self);
}

PyTypeObject skpy_batch_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "shardkit._native.Batch",
    .tp_basicsize = sizeof(BatchObject),
    .tp_dealloc = batch_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "the memory of one batch (freed when no array uses it)",
};

/* ---- Loader ---------------------------------------------------------------------- */

/* The C loader's interrupt, on the thread of a next() that reads the batch
 * itself (threads=0): stop for a close() from another thread, or a SIGINT.
 * It takes the GIL but runs no Python code (the reader's locks may be
 * held): a SIGINT is only noted, and made pending again, so that its
 * handler runs once next() has returned from the library. */
static int loader_interrupted(void *user)
{
    LoaderObject *lo = user;
    PyGILState_STATE gil = PyGILState_Ensure();
    if (!lo->interrupted && PyOS_InterruptOccurred()) {
        lo->interrupted = 1;
        PyErr_SetInterrupt();
    }
    int stop = lo->interrupted || lo->close_pending;
    PyGILState_Release(gil);
    return stop;
}

/* The dataset of source s of what the loader reads (a Dataset's is its
 * own). */
static struct shard_dataset *source_dataset(LoaderObject *lo, uint32_t s)
{
    if (PyObject_TypeCheck(lo->dataset, &skpy_mixture_type))
        return shard_mixture_source(((MixtureObject *)lo->dataset)->mixture, s);
    return ((DatasetObject *)lo->dataset)->ds;
}

/* A sequence of (world_size, taken, remainder) as segments
 * (shardkit/dataset.h: the rest of an epoch) in a malloc'd *out of *count.
 * 0, or -1 with an exception set. */
static int take_segments(PyObject *seq, struct shard_plan_segment **out, size_t *count)
{
    *out = NULL;
    *count = 0;
    PyObject *fast = PySequence_Fast(seq, "done must be a sequence of (world_size, taken, "
                                          "remainder) segments");
    if (!fast)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    struct shard_plan_segment *v = calloc(n ? (size_t)n : 1, sizeof *v);
    int rc = v ? 0 : -1;
    if (!v)
        PyErr_NoMemory();
    for (Py_ssize_t i = 0; !rc && i < n; i++) {
        PyObject *segment = PySequence_Fast_GET_ITEM(fast, i), *w, *t;
        const char *rem;
        if (!PyArg_ParseTuple(segment, "OOs;done: each segment is (world_size, taken, remainder)",
                              &w, &t, &rem) ||
            skpy_u32(w, "a segment's world_size", 1, &v[i].world_size) < 0 ||
            skpy_u64(t, "a segment's taken", &v[i].taken) < 0)
            rc = -1;
        else if (shard_remainder_parse(rem, &v[i].remainder)) {
            PyErr_Format(PyExc_ValueError,
                         "a segment's remainder must be 'keep', 'drop' or "
                         "'pad', not '%s'",
                         rem);
            rc = -1;
        }
    }
    Py_DECREF(fast);
    if (rc) {
        free(v);
        return -1;
    }
    *out = v;
    *count = (size_t)n;
    return 0;
}

/* The options a Loader takes, by name (a dict: those not given keep
 * shard_loader_options_init's defaults). */
static const char OPTION_NAMES[] = "batch_size, shuffle, seed, rank, world_size, threads, "
                                   "drop_last, remainder, shuffle_buffer, prefetch, "
                                   "skip_errors, worker, workers, fields, box_min_size, channels";

/* A bool option: 0 or 1 into *out, or -1 with TypeError naming it. */
static int take_bool(PyObject *v, const char *name, int *out)
{
    if (!PyBool_Check(v)) {
        PyErr_Format(PyExc_TypeError, "Loader option '%s' must be a bool, not %.100s", name,
                     Py_TYPE(v)->tp_name);
        return -1;
    }
    *out = v == Py_True;
    return 0;
}

/* Option `name` = v into *o (a field list into *fields, malloc'd).  0, or
 * -1 with an exception naming the option. */
static int take_option(const char *name, PyObject *v, struct shard_loader_options *o,
                       uint32_t **fields)
{
    uint64_t n;
    if (!strcmp(name, "batch_size"))
        return skpy_u32(v, "batch_size", 1, &o->batch_size);
    if (!strcmp(name, "shuffle"))
        return take_bool(v, name, &o->plan.shuffle);
    if (!strcmp(name, "seed"))
        return skpy_u64(v, "seed", &o->plan.seed);
    if (!strcmp(name, "rank"))
        return skpy_u32(v, "rank", 0, &o->plan.rank);
    if (!strcmp(name, "world_size"))
        return skpy_u32(v, "world_size", 1, &o->plan.world_size);
    if (!strcmp(name, "threads")) { /* the library checks its own limit (1024) */
        if (skpy_uint(v, "threads", 0, INT_MAX, &n) < 0)
            return -1;
        o->threads = (int)n;
        return 0;
    }
    if (!strcmp(name, "drop_last"))
        return take_bool(v, name, &o->drop_last);
    if (!strcmp(name, "remainder")) {
        const char *text = PyUnicode_Check(v) ? PyUnicode_AsUTF8(v) : NULL;
        if (!text && !PyErr_Occurred())
            PyErr_Format(PyExc_TypeError, "Loader option 'remainder' must be a str, not %.100s",
                         Py_TYPE(v)->tp_name);
        if (!text)
            return -1;
        if (shard_remainder_parse(text, &o->plan.remainder)) {
            PyErr_Format(PyExc_ValueError, "remainder must be 'keep', 'drop' or 'pad', not '%s'",
                         text);
            return -1;
        }
        return 0;
    }
    if (!strcmp(name, "shuffle_buffer"))
        return skpy_u64(v, "shuffle_buffer", &o->plan.shuffle_buffer);
    if (!strcmp(name, "prefetch"))
        return skpy_u32(v, "prefetch", 1, &o->prefetch);
    if (!strcmp(name, "skip_errors"))
        return take_bool(v, name, &o->skip_errors);
    if (!strcmp(name, "worker"))
        return skpy_u32(v, "worker", 0, &o->worker);
    if (!strcmp(name, "workers"))
        return skpy_u32(v, "workers", 1, &o->workers);
    if (!strcmp(name, "channels"))
        return skpy_u32(v, "channels", 0, &o->channels);
    if (!strcmp(name, "fields")) {
        free(*fields);
        *fields = NULL;
        int rc = skpy_field_numbers(v, fields, &o->field_count);
        o->fields = *fields;
        return rc;
    }
    if (!strcmp(name, "box_min_size")) {
        if (PyBool_Check(v) || !(PyFloat_Check(v) || PyLong_Check(v))) {
            PyErr_Format(PyExc_TypeError,
                         "Loader option 'box_min_size' must be a number, not %.100s",
                         Py_TYPE(v)->tp_name);
            return -1;
        }
        o->box_min_size = PyFloat_AsDouble(v);
        return o->box_min_size == -1.0 && PyErr_Occurred() ? -1 : 0;
    }
    PyErr_Format(PyExc_TypeError, "Loader: unknown option '%s' (%s)", name, OPTION_NAMES);
    return -1;
}

/* The options dict into *o (initialised here); *fields the field list's
 * memory (free it).  0, or -1 with an exception set. */
static int take_options(PyObject *options, struct shard_loader_options *o, uint32_t **fields)
{
    shard_loader_options_init(o);
    *fields = NULL;
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(options, &pos, &key, &value)) {
        if (!PyUnicode_Check(key)) {
            PyErr_Format(PyExc_TypeError, "Loader: an option's name must be a str, not %.100s",
                         Py_TYPE(key)->tp_name);
            return -1;
        }
        const char *name = PyUnicode_AsUTF8(key);
        if (!name || take_option(name, value, o, fields) < 0)
            return -1;
    }
    return 0;
}

/* Loader(dataset, transforms, options): a Dataset or a Mixture, a
 * Transforms or None, and a dict of options by name (OPTION_NAMES). */
static int loader_init(PyObject *self, PyObject *args, PyObject *kwds)
{
    LoaderObject *lo = (LoaderObject *)self;
    static char *names[] = {"dataset", "transforms", "options", NULL};
    PyObject *dataset, *transforms, *options;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOO!:Loader", names, &dataset, &transforms,
                                     &PyDict_Type, &options))
        return -1;
    if (lo->loader || lo->busy) {
        PyErr_SetString(PyExc_RuntimeError, "Loader is already initialised");
        return -1;
    }
    if (transforms != Py_None && (!PyObject_TypeCheck(transforms, &skpy_transforms_type) ||
                                  !((TransformsObject *)transforms)->transforms)) {
        PyErr_SetString(PyExc_TypeError, "transforms must be an initialised Transforms or None");
        return -1;
    }
    const struct shard_mixture *mix = NULL;
    struct shard_dataset *ds = NULL;
    if (PyObject_TypeCheck(dataset, &skpy_mixture_type)) {
        if (!(mix = ((MixtureObject *)dataset)->mixture)) {
            PyErr_SetString(PyExc_RuntimeError, "Mixture is not initialised");
            return -1;
        }
    } else if (!PyObject_TypeCheck(dataset, &skpy_dataset_type)) {
        PyErr_Format(PyExc_TypeError, "dataset must be a Dataset or a Mixture, not %.100s",
                     Py_TYPE(dataset)->tp_name);
        return -1;
    } else if (!(ds = ((DatasetObject *)dataset)->ds)) {
        PyErr_SetString(PyExc_RuntimeError, "Dataset is not open");
        return -1;
    }
    struct shard_transforms *list = transforms == Py_None
                                        ? NULL
                                        : ((TransformsObject *)transforms)->transforms;
    struct shard_loader_options o;
    uint32_t *fields = NULL; /* the selected fields (the options' copy is the loader's) */
    if (take_options(options, &o, &fields) < 0) {
        free(fields);
        return -1;
    }
    struct shard_loader *made;
    struct shard_err err;
    int rc;
    lo->busy = 1; /* another thread's __init__ waits for nothing: it is refused */
    Py_BEGIN_ALLOW_THREADS rc = mix ? shard_loader_new_mixture(&made, mix, list, &o, &err)
                                    : shard_loader_new(&made, ds, list, &o, &err);
    Py_END_ALLOW_THREADS lo->busy = 0;
    free(fields);
    if (rc) {
        skpy_raise(&err);
        return -1;
    }
    shard_loader_set_interrupt(made, loader_interrupted, lo);
    lo->loader = made;
    lo->dataset = Py_NewRef(dataset);
    lo->transforms = transforms == Py_None ? NULL : Py_NewRef(transforms);
    return 0;
}

/* Stop the threads and free the loader (batches handed out stay valid). */
static void loader_close_now(LoaderObject *lo)
{
    struct shard_loader *l = lo->loader;
    lo->loader = NULL;
    lo->close_pending = 0;
    if (l) {
        Py_BEGIN_ALLOW_THREADS shard_loader_free(l);
        Py_END_ALLOW_THREADS
    }
    Py_CLEAR(lo->transforms);
    Py_CLEAR(lo->dataset);
}

static void loader_dealloc(PyObject *self)
{
    loader_close_now((LoaderObject *)self); /* never busy: a call holds a reference */
    Py_TYPE(self)->tp_free(self);
}

static PyObject *closed_error(void)
{
    PyErr_SetString(PyExc_ValueError, "the loader is closed");
    return NULL;
}

static PyObject *busy_error(void)
{
    PyErr_SetString(PyExc_RuntimeError, BUSY_MESSAGE);
    return NULL;
}

/* For a call that only reads the loader with the GIL held. */
static int loader_ready(LoaderObject *lo)
{
    if (!lo->loader)
        closed_error();
    return lo->loader != NULL;
}

/* The loader, marked busy, for a call that releases the GIL around it; or
 * NULL with ValueError (closed) or RuntimeError (another call has it). */
static struct shard_loader *loader_take(LoaderObject *lo)
{
    if (!lo->loader)
        return (struct shard_loader *)closed_error();
    if (lo->busy)
        return (struct shard_loader *)busy_error();
    lo->busy = 1;
    return lo->loader;
}

/* The end of a loader_take's call: 0, or 1 when close() was asked for
 * meanwhile (the loader is then freed, and the call must not use it). */
static int loader_release(LoaderObject *lo)
{
    lo->busy = 0;
    if (!lo->close_pending)
        return 0;
    loader_close_now(lo);
    return 1;
}

static PyObject *loader_close(PyObject *self, PyObject *unused)
{
    LoaderObject *lo = (LoaderObject *)self;
    if (lo->busy)
        lo->close_pending = 1; /* the busy call frees it */
    else
        loader_close_now(lo);
    Py_RETURN_NONE;
}

/* The loader's start from batch `from` of epoch `epoch`, or (batches not
 * NULL: resumed_batches) its count of batches, the segments done_o (NULL:
 * none) read before: None, or the count. */
static PyObject *with_segments(LoaderObject *lo, uint64_t epoch, uint64_t from, PyObject *done_o,
                               uint64_t *batches)
{
    struct shard_plan_segment *done = NULL;
    size_t count = 0;
    if (done_o && take_segments(done_o, &done, &count) < 0)
        return NULL;
    struct shard_loader *l = loader_take(lo);
    if (!l) {
        free(done);
        return NULL;
    }
    struct shard_err err;
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = batches
                                    ? shard_loader_resumed_batch_count(l, epoch, done, count,
                                                                       batches, &err)
                                    : shard_loader_start_resumed(l, epoch, done, count, from, &err);
    Py_END_ALLOW_THREADS free(done);
    if (loader_release(lo))
        return closed_error();
    if (rc)
        return skpy_raise(&err);
    return batches ? PyLong_FromUnsignedLongLong(*batches) : Py_NewRef(Py_None);
}

/* start(epoch, batch, done=()): the rank's batch `batch` on, of the epoch
 * or (done: (world_size, taken, remainder) segments) of its rest */
static PyObject *loader_start(PyObject *self, PyObject *args)
{
    PyObject *e, *f, *done_o = NULL;
    uint64_t epoch, from;
    if (!PyArg_ParseTuple(args, "OO|O:start", &e, &f, &done_o) ||
        skpy_u64(e, "epoch", &epoch) < 0 || skpy_u64(f, "batch", &from) < 0)
        return NULL;
    return with_segments((LoaderObject *)self, epoch, from, done_o, NULL);
}

/* resumed_batches(epoch, done) -> the rank's batches of the rest */
static PyObject *loader_resumed_batches(PyObject *self, PyObject *args)
{
    PyObject *e, *done_o;
    uint64_t epoch, batches = 0;
    if (!PyArg_ParseTuple(args, "OO:resumed_batches", &e, &done_o) ||
        skpy_u64(e, "epoch", &epoch) < 0)
        return NULL;
    return with_segments((LoaderObject *)self, epoch, 0, done_o, &batches);
}

/* The Python side of a batch: (images, indices bytes, labels bytes, epoch,
 * number, skipped, fields, sources bytes) where images is one buffer (fixed
 * size) or a list
 * of buffers, all keeping `holder` (the batch's memory) alive, skipped a
 * list of CorruptRecordError instances and fields the selected fields
 * (skpy_batch_fields). */
static PyObject *batch_tuple(LoaderObject *lo, struct shard_batch *b)
{
    BatchObject *holder = PyObject_New(BatchObject, &skpy_batch_type);
    if (!holder) {
        shard_batch_free(b);
        return NULL;
    }
    holder->batch = b;
    const struct shard_batch_info *in = shard_batch_info(b);
    PyObject *images = NULL, *indices = NULL, *labels = NULL, *skipped = NULL, *result = NULL;
    PyObject *sources = NULL;
    PyObject *fields = skpy_batch_fields(in, (PyObject *)holder);
    Py_ssize_t shape[4];
    if (in->fixed) {
        shape[0] = in->count;
        skpy_sample_shape(in->layout, in->width, in->height, in->channels, shape + 1);
        images = skpy_buffer_new(in->data, 4, shape, in->dtype, (PyObject *)holder, NULL, NULL);
    } else {
        images = PyList_New(in->count);
        for (uint32_t j = 0; images && j < in->count; j++) {
            skpy_sample_shape(in->layout, in->widths[j], in->heights[j], in->channels, shape);
            PyObject *s = skpy_buffer_new(in->samples[j], 3, shape, in->dtype, (PyObject *)holder,
                                          NULL, NULL);
            if (!s) {
                Py_CLEAR(images);
                break;
            }
            PyList_SET_ITEM(images, j, s);
        }
    }
    indices = PyBytes_FromStringAndSize((const char *)in->indices,
                                        (Py_ssize_t)(in->count * sizeof *in->indices));
    labels = PyBytes_FromStringAndSize((const char *)in->labels,
                                       (Py_ssize_t)(in->count * sizeof *in->labels));
    sources = PyBytes_FromStringAndSize((const char *)in->sources,
                                        (Py_ssize_t)(in->count * sizeof *in->sources));
    skipped = PyList_New(in->skipped);
    for (uint32_t k = 0; skipped && k < in->skipped; k++) {
        PyObject *exc = skpy_record_error(source_dataset(lo, in->skipped_sources[k]),
                                          in->skipped_indices[k], &in->skipped_errors[k]);
        if (!exc) {
            Py_CLEAR(skipped);
            break;
        }
        PyList_SET_ITEM(skipped, k, exc);
    }
    if (images && indices && labels && skipped && fields && sources)
        result = Py_BuildValue("(OOOKKOOO)", images, indices, labels, (unsigned long long)in->epoch,
                               (unsigned long long)in->number, skipped, fields, sources);
    Py_XDECREF(sources);
    Py_XDECREF(fields);
    Py_XDECREF(images);
    Py_XDECREF(indices);
    Py_XDECREF(labels);
    Py_XDECREF(skipped);
    Py_DECREF(holder);
    return result;
}

/* next() -> the batch tuple, or None when the epoch is over */
static PyObject *loader_next(PyObject *self, PyObject *unused)
{
    LoaderObject *lo = (LoaderObject *)self;
    struct shard_loader *l = loader_take(lo);
    if (!l)
        return NULL;
    struct shard_batch *b = NULL;
    struct shard_err err;
    int rc, interrupted = 0, sigint;
    for (;;) {
        Py_BEGIN_ALLOW_THREADS rc = shard_loader_next(l, WAIT_SLICE_MS, &b, &err);
        Py_END_ALLOW_THREADS
            /* its own reads stopped for a SIGINT (threads=0): the handler runs below */
            sigint = rc == SHARD_EINTR && lo->interrupted;
        lo->interrupted = 0;
        if (!sigint && (rc != SHARD_LOADER_WAITING || lo->close_pending))
            break;
        /* a signal handler runs here; if it calls close(), the loader is
         * freed below, not under this loop */
        if (PyErr_CheckSignals() < 0) {
            interrupted = 1; /* KeyboardInterrupt: the loader stays where it was */
            break;
        }
    }
    uint64_t failed = rc < 0 ? shard_loader_failed_index(l) : 0;
    uint32_t failed_source = rc < 0 ? shard_loader_failed_source(l) : 0;
    if (loader_release(lo)) {
        shard_batch_free(b); /* NULL unless it came with the close */
        return interrupted ? NULL : closed_error();
    }
    if (interrupted)
        return NULL;
    if (rc == 0)
        Py_RETURN_NONE;
    if (rc < 0) {
        if (err.code == SHARD_EINVAL)
            return skpy_raise(&err);
        return skpy_raise_record(source_dataset(lo, failed_source), failed, &err);
    }
    return batch_tuple(lo, b);
}

static PyObject *loader_stop(PyObject *self, PyObject *unused)
{
    LoaderObject *lo = (LoaderObject *)self;
    if (!lo->loader)
        Py_RETURN_NONE; /* closed: nothing runs */
    struct shard_loader *l = loader_take(lo);
    if (!l)
        return NULL;
    Py_BEGIN_ALLOW_THREADS shard_loader_stop(l);
    Py_END_ALLOW_THREADS if (loader_release(lo)) return closed_error();
    Py_RETURN_NONE;
}

static PyObject *loader_counts(PyObject *self, PyObject *unused)
{
    LoaderObject *lo = (LoaderObject *)self;
    if (!loader_ready(lo))
        return NULL;
    return Py_BuildValue("{s:K,s:K,s:K}", "batches",
                         (unsigned long long)shard_loader_batch_count(lo->loader), "samples",
                         (unsigned long long)shard_loader_sample_count(lo->loader), "dropped",
                         (unsigned long long)shard_loader_dropped(lo->loader));
}

/* position() -> (epoch, batches handed out in it) */
static PyObject *loader_position(PyObject *self, PyObject *unused)
{
    LoaderObject *lo = (LoaderObject *)self;
    if (!loader_ready(lo))
        return NULL;
    if (lo->busy) /* next() moves it, with the GIL released */
        return busy_error();
    return Py_BuildValue("(KK)", (unsigned long long)shard_loader_epoch(lo->loader),
                         (unsigned long long)shard_loader_position(lo->loader));
}

static PyObject *loader_stats(PyObject *self, PyObject *unused)
{
    LoaderObject *lo = (LoaderObject *)self;
    if (!loader_ready(lo))
        return NULL;
    struct shard_loader_stats s;
    shard_loader_stats(lo->loader, &s);
    return Py_BuildValue("{s:K,s:K,s:K,s:K,s:K,s:K,s:K}", "samples", (unsigned long long)s.samples,
                         "batches", (unsigned long long)s.batches, "skipped",
                         (unsigned long long)s.skipped, "failed_batches",
                         (unsigned long long)s.failed_batches, "transform_ns",
                         (unsigned long long)s.transform_ns, "wait_ns",
                         (unsigned long long)s.wait_ns, "busy_ns", (unsigned long long)s.busy_ns);
}

static PyMethodDef loader_methods[] = {
    {"start", loader_start, METH_VARARGS,
     "start($self, epoch, batch, done=(), /)\n--\n\nbegin reading there (done: the segments "
     "of the epoch read before, (world_size, taken, remainder))"},
    {"resumed_batches", loader_resumed_batches, METH_VARARGS,
     "resumed_batches($self, epoch, done, /)\n--\n\nthe rank's batches of the rest of the "
     "epoch after the segments done"},
    {"next", loader_next, METH_NOARGS,
     "next($self, /)\n--\n\nthe next batch's parts, or None at the end"},
    {"counts", loader_counts, METH_NOARGS,
     "counts($self, /)\n--\n\nbatches, samples and dropped samples per epoch"},
    {"position", loader_position, METH_NOARGS,
     "position($self, /)\n--\n\n(epoch, batches handed out)"},
    {"stats", loader_stats, METH_NOARGS, "stats($self, /)\n--\n\nthe loader's counters"},
    {"stop", loader_stop, METH_NOARGS,
     "stop($self, /)\n--\n\nstop the threads; the position stays"},
    {"close", loader_close, METH_NOARGS,
     "close($self, /)\n--\n\n"
     "stop the threads and free the loader (during a call of another thread or under a "
     "signal handler: when that call is done with it)"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject skpy_loader_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "shardkit._native.Loader",
    .tp_basicsize = sizeof(LoaderObject),
    .tp_dealloc = loader_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Loader(dataset, transforms, options)\n--\n\nthe C batch loader (use "
              "shardkit.Loader); options: a dict of batch_size, shuffle, seed, rank, world_size, "
              "threads, drop_last, remainder, shuffle_buffer, prefetch, skip_errors, worker, "
              "workers, fields, box_min_size, channels (those not given: the library's defaults)",
    .tp_methods = loader_methods,
    .tp_init = loader_init,
    .tp_new = PyType_GenericNew,
};
