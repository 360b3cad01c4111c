/* native_mixture.c - _native.Mixture: a weighted mixture of open datasets
 * (shardkit/mixture.h).  It keeps its Dataset objects (the C mixture
 * reads their handles) until it is freed; a Loader over it keeps it. */
#include "native.h"

#include <stdlib.h>

/* Mixture(datasets, weights, rule, epoch_size, labels) */
static int mixture_init(PyObject *self, PyObject *args, PyObject *kwds)
{
    MixtureObject *mo = (MixtureObject *)self;
    static char *names[] = {"datasets", "weights", "rule", "epoch_size", "labels", NULL};
    PyObject *datasets_o, *weights_o, *size_o;
    const char *rule, *labels;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOsOs:Mixture", names, &datasets_o, &weights_o,
                                     &rule, &size_o, &labels))
        return -1;
    if (mo->mixture) {
        PyErr_SetString(PyExc_RuntimeError, "Mixture is already initialised");
        return -1;
    }
    struct shard_mixture_options o;
    shard_mixture_options_init(&o);
    if (shard_mixture_rule_parse(rule, &o.rule)) {
        PyErr_Format(PyExc_ValueError,
                     "rule must be 'replace', 'stop_on_shortest' or 'stop_on_longest', not '%s'",
                     rule);
        return -1;
    }
    if (shard_mixture_labels_parse(labels, &o.labels)) {
        PyErr_Format(PyExc_ValueError, "labels must be 'own' or 'merged', not '%s'", labels);
        return -1;
    }
    if (skpy_u64(size_o, "epoch_size", &o.epoch_size) < 0)
        return -1;
    PyObject *datasets = PySequence_Tuple(datasets_o);
    PyObject *weights = datasets ? PySequence_Fast(weights_o, "weights must be a sequence") : NULL;
    struct shard_dataset **ds = NULL;
    double *w = NULL;
    int rc = -1;
    if (!datasets || !weights)
        goto out;
    Py_ssize_t n = PyTuple_GET_SIZE(datasets);
    if (PySequence_Fast_GET_SIZE(weights) != n) {
        PyErr_Format(PyExc_ValueError, "%zd weights for %zd datasets",
                     PySequence_Fast_GET_SIZE(weights), n);
        goto out;
    }
    ds = calloc(n ? (size_t)n : 1, sizeof *ds);
    w = calloc(n ? (size_t)n : 1, sizeof *w);
    if (!ds || !w) {
        PyErr_NoMemory();
        goto out;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *d = PyTuple_GET_ITEM(datasets, i);
        if (!PyObject_TypeCheck(d, &skpy_dataset_type) || !((DatasetObject *)d)->ds) {
            PyErr_Format(PyExc_TypeError, "datasets[%zd] must be an open Dataset, not %.100s", i,
                         Py_TYPE(d)->tp_name);
            goto out;
        }
        ds[i] = ((DatasetObject *)d)->ds;
        w[i] = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(weights, i));
        if (w[i] == -1.0 && PyErr_Occurred())
            goto out;
    }
    struct shard_err err;
    if (shard_mixture_new(&mo->mixture, ds, w, (uint32_t)(n > UINT32_MAX ? UINT32_MAX : n), &o,
                          &err)) {
        skpy_raise(&err);
        goto out;
    }
    mo->datasets = Py_NewRef(datasets);
    rc = 0;
out:
    free(ds);
    free(w);
    Py_XDECREF(datasets);
    Py_XDECREF(weights);
    return rc;
}

static void mixture_dealloc(PyObject *self)
{
    MixtureObject *mo = (MixtureObject *)self;
    shard_mixture_free(mo->mixture); /* never in use: a Loader holds a reference */
    Py_CLEAR(mo->datasets);
    Py_TYPE(self)->tp_free(self);
}

static struct shard_mixture *mixture_of(PyObject *self)
{
    struct shard_mixture *m = ((MixtureObject *)self)->mixture;
    if (!m)
        PyErr_SetString(PyExc_RuntimeError, "Mixture is not initialised");
    return m;
}

/* epoch_size() -> L */
static PyObject *mixture_epoch_size(PyObject *self, PyObject *unused)
{
    struct shard_mixture *m = mixture_of(self);
    return m ? PyLong_FromUnsignedLongLong(shard_mixture_epoch_size(m)) : NULL;
}

/* sources() -> ((weight relative to the sum, quota), ...) */
static PyObject *mixture_sources(PyObject *self, PyObject *unused)
{
    struct shard_mixture *m = mixture_of(self);
    if (!m)
        return NULL;
    uint32_t n = shard_mixture_source_count(m);
    PyObject *t = PyTuple_New(n);
    for (uint32_t s = 0; t && s < n; s++) {
        PyObject *e = Py_BuildValue("(dK)", shard_mixture_weight(m, s),
                                    (unsigned long long)shard_mixture_quota(m, s));
        if (!e) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, s, e);
    }
    return t;
}

/* labels() -> (the merged class names, (each source's label numbers in
 * them, ...)); ((), None) with each source's own */
static PyObject *mixture_labels(PyObject *self, PyObject *unused)
{
    struct shard_mixture *m = mixture_of(self);
    if (!m)
        return NULL;
    if (shard_mixture_labels(m) != SHARD_MIXTURE_LABELS_MERGED)
        return Py_BuildValue("(()O)", Py_None);
    uint32_t k = shard_mixture_label_count(m), n = shard_mixture_source_count(m);
    PyObject *names = PyTuple_New(k), *maps = PyTuple_New(n), *result = NULL;
    for (uint32_t i = 0; names && i < k; i++) {
        PyObject *s = skpy_message(shard_mixture_label(m, i));
        if (!s)
            goto out;
        PyTuple_SET_ITEM(names, i, s);
    }
    for (uint32_t s = 0; maps && s < n; s++) {
        uint32_t count = shard_dataset_manifest(shard_mixture_source(m, s))->label_count;
        PyObject *map = PyTuple_New(count);
        if (!map)
            goto out;
        PyTuple_SET_ITEM(maps, s, map);
        for (uint32_t i = 0; i < count; i++) {
            PyObject *v = PyLong_FromLong(shard_mixture_label_of(m, s, (int32_t)i));
            if (!v)
                goto out;
            PyTuple_SET_ITEM(map, i, v);
        }
    }
    if (names && maps)
        result = PyTuple_Pack(2, names, maps);
out:
    Py_XDECREF(names);
    Py_XDECREF(maps);
    return result;
}

static PyMethodDef mixture_methods[] = {
    {"epoch_size", mixture_epoch_size, METH_NOARGS,
     "epoch_size($self, /)\n--\n\nentries per epoch (before the rank split)"},
    {"sources", mixture_sources, METH_NOARGS,
     "sources($self, /)\n--\n\n((weight relative to the sum, entries per epoch), ...)"},
    {"labels", mixture_labels, METH_NOARGS,
     "labels($self, /)\n--\n\n(merged class names, each source's numbers in them), or ((), "
     "None)"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject skpy_mixture_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "shardkit._native.Mixture",
    .tp_basicsize = sizeof(MixtureObject),
    .tp_dealloc = mixture_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Mixture(datasets, weights, rule, epoch_size, labels)\n--\n\n"
              "a weighted mixture of datasets (use shardkit.Mixture)",
    .tp_methods = mixture_methods,
    .tp_init = mixture_init,
    .tp_new = PyType_GenericNew,
};
