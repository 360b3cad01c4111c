/* native_fields.c - fields (format version 2) handed to Python: an item's
 * values as stored, a batch's selected fields as buffers over the batch's
 * memory and lists made in one pass.  Turning values into Python's types
 * (json.loads, numpy arrays) is shardkit/dataset.py's and loader.py's. */
#include "native.h"

#include <stdlib.h>

PyObject *skpy_item_fields(const struct shard_item *item)
{
    PyObject *t = PyTuple_New(item->field_count);
    for (uint32_t i = 0; t && i < item->field_count; i++) {
        const struct shard_field_value *v = &item->fields[i];
        PyObject *pair = Py_BuildValue("(Iy#)", (unsigned)v->field, (const char *)v->data,
                                       (Py_ssize_t)v->len);
        if (!pair) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, i, pair);
    }
    return t;
}

/* The values of a text, JSON or bytes field as a list: str (the reader
 * checked they are UTF-8) or bytes, None where absent. */
static PyObject *value_list(const struct shard_batch_info *in, const struct shard_batch_field *f)
{
    PyObject *list = PyList_New(in->count);
    for (uint32_t j = 0; list && j < in->count; j++) {
        const char *p = (const char *)f->data + f->offsets[j];
        Py_ssize_t n = (Py_ssize_t)(f->offsets[j + 1] - f->offsets[j]);
        PyObject *v = !f->present[j]                 ? Py_NewRef(Py_None)
                      : f->type == SHARD_FIELD_BYTES ? PyBytes_FromStringAndSize(p, n)
                                                     : PyUnicode_DecodeUTF8(p, n, "strict");
        if (!v) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, j, v);
    }
    return list;
}

/* One selected field's entry of the batch tuple (see native.h). */
static PyObject *batch_field(const struct shard_batch_info *in, const struct shard_batch_field *f,
                             PyObject *holder)
{
    Py_ssize_t shape[2] = {in->count, f->length};
    PyObject *present = skpy_values_new(f->present, 1, shape, "B", holder);
    PyObject *values = NULL, *items = NULL, *labels = NULL;
    switch (f->type) {
    case SHARD_FIELD_INT:
    case SHARD_FIELD_INT64:
    case SHARD_FIELD_FLOAT:
    case SHARD_FIELD_FLOAT32: {
        const char *format = f->type == SHARD_FIELD_FLOAT     ? "d"
                             : f->type == SHARD_FIELD_FLOAT32 ? "f"
                                                              : "q";
        int ndim = f->type == SHARD_FIELD_INT || f->type == SHARD_FIELD_FLOAT ? 1 : 2;
        values = skpy_values_new(f->values, ndim, shape, format, holder);
        break;
    }
    case SHARD_FIELD_LABELS:
    case SHARD_FIELD_BOXES:
    case SHARD_FIELD_MASK:
    case SHARD_FIELD_INSTANCES:
    case SHARD_FIELD_IMAGE: { /* the values back to back, and their offsets in bytes */
        int byte_data = f->type != SHARD_FIELD_LABELS;
        Py_ssize_t ids = (Py_ssize_t)(f->offsets[in->count] / (byte_data ? 1 : 4));
        Py_ssize_t offsets = in->count + 1;
        PyObject *a = skpy_values_new(f->data, 1, &ids, byte_data ? "B" : "I", holder);
        PyObject *b = skpy_values_new(f->offsets, 1, &offsets, "Q", holder);
        labels = a && b ? PyTuple_Pack(2, a, b) : NULL;
        Py_XDECREF(a);
        Py_XDECREF(b);
        break;
    }
    default: /* TEXT, JSON, BYTES */ items = value_list(in, f); break;
    }
    PyObject *r = NULL;
    if (present && (values || items || labels))
        r = Py_BuildValue("(IOOOO)", (unsigned)f->field, present, values ? values : Py_None,
                          items ? items : Py_None, labels ? labels : Py_None);
    Py_XDECREF(present);
    Py_XDECREF(values);
    Py_XDECREF(items);
    Py_XDECREF(labels);
    return r;
}

PyObject *skpy_batch_fields(const struct shard_batch_info *in, PyObject *holder)
{
    PyObject *t = PyTuple_New(in->field_count);
    for (uint32_t k = 0; t && k < in->field_count; k++) {
        PyObject *f = batch_field(in, &in->fields[k], holder);
        if (!f) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, k, f);
    }
    return t;
}

int skpy_field_numbers(PyObject *seq, uint32_t **out, uint32_t *count)
{
    *out = NULL;
    *count = 0;
    if (seq == Py_None)
        return 0;
    PyObject *fast = PySequence_Fast(seq, "fields must be a sequence of field numbers");
    if (!fast)
        return -1;
    uint32_t *numbers = NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    if (n > SHARD_FIELDS_MAX) {
        PyErr_Format(PyExc_ValueError, "fields: %zd fields, more than a dataset may declare (%u)",
                     n, SHARD_FIELDS_MAX);
        goto fail;
    }
    if (n && !(numbers = malloc((size_t)n * sizeof *numbers))) {
        PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t v;
        if (skpy_u64(PySequence_Fast_GET_ITEM(fast, i), "a field number", &v) < 0)
            goto fail;
        if (v >= SHARD_FIELDS_MAX) {
            PyErr_Format(PyExc_ValueError, "field number %llu is not below %u",
                         (unsigned long long)v, SHARD_FIELDS_MAX);
            goto fail;
        }
        numbers[i] = (uint32_t)v;
    }
    Py_DECREF(fast);
    *out = numbers;
    *count = (uint32_t)n;
    return 0;
fail:
    free(numbers);
    Py_DECREF(fast);
    return -1;
}
