/* native_fields.c - fields (format version 2) handed to Python: a
 * dataset's declarations, an item's values as stored and decoded, a batch's
 * selected fields as buffers over the batch's memory and lists made in one
 * pass.  Every byte layout is the library's (shard_field_*_decode); turning
 * buffers into numpy arrays and JSON text into values is
 * shardkit/dataset.py's and loader.py's. */
#include "native.h"

#include <stdlib.h>
#include <string.h>

/* 2-byte values (a mask's) are stored little-endian: a view of them reads
 * right in host order only on a little-endian host; elsewhere they are
 * copied (shard_field_grid_copy). */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define HOST_LITTLE_ENDIAN 0
#else
#define HOST_LITTLE_ENDIAN 1
#endif

/* ---- declarations ------------------------------------------------------------- */

/* Where declaration d's values come from: (kind, what). */
static PyObject *decl_source(const struct shard_field_decl *d)
{
    if (d->sidecar)
        return Py_BuildValue("(ss)", "sidecar", d->sidecar);
    if (d->column)
        return Py_BuildValue("(ss)", "column", d->column);
    if (d->coco)
        return Py_BuildValue("(ss)", "coco", d->coco);
    if (d->folder)
        return Py_BuildValue("(ss)", "folder", d->folder);
    return Py_BuildValue("(ss)", "", "");
}

/* BOXES and MASK: {id: name}; None for the others. */
static PyObject *decl_classes(const struct shard_field_decl *d)
{
    if (!d->classes)
        return Py_NewRef(Py_None);
    PyObject *classes = PyDict_New();
    for (uint32_t i = 0; classes && i < d->class_count; i++) {
        PyObject *id = PyLong_FromUnsignedLong(d->classes[i].id);
        PyObject *name = id ? PyUnicode_FromString(d->classes[i].name) : NULL;
        if (!name || PyDict_SetItem(classes, id, name) < 0)
            Py_CLEAR(classes);
        Py_XDECREF(id);
        Py_XDECREF(name);
    }
    return classes;
}

/* One declaration as the dict Dataset.fields() gives. */
static PyObject *decl_dict(const struct shard_manifest *m, uint32_t number)
{
    const struct shard_field_decl *d = &m->config.fields[number];
    PyObject *source = decl_source(d), *classes = source ? decl_classes(d) : NULL;
    PyObject *length = shard_field_type_is_vector(d->type) ? PyLong_FromUnsignedLong(d->length)
                                                           : Py_NewRef(Py_None);
    PyObject *ignore = d->has_ignore ? PyLong_FromUnsignedLong(d->ignore) : Py_NewRef(Py_None);
    unsigned long long present = m->field_samples ? m->field_samples[number] : 0;
    PyObject *r = NULL;
    if (source && classes && length && ignore)
        r = Py_BuildValue("{s:s,s:I,s:s,s:O,s:O,s:O,s:K,s:O,s:O}", "name", d->name, "number",
                          (unsigned)number, "type", shard_field_type_name(d->type), "length",
                          length, "source", source, "required", d->required ? Py_True : Py_False,
                          "present", present, "classes", classes, "ignore", ignore);
    Py_XDECREF(source);
    Py_XDECREF(classes);
    Py_XDECREF(length);
    Py_XDECREF(ignore);
    return r;
}

PyObject *skpy_field_decls(const struct shard_manifest *m)
{
    PyObject *t = PyTuple_New(m->config.field_count);
    for (uint32_t i = 0; t && i < m->config.field_count; i++) {
        PyObject *d = decl_dict(m, i);
        if (!d) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, i, d);
    }
    return t;
}

/* ---- one value decoded ---------------------------------------------------------- */

/* A boxes value (or several back to back) as (xyxy float32 (n, 4), class
 * ids int64 (n,), crowd bool (n,)), new memory. */
static PyObject *boxes_arrays(const uint8_t *data, uint64_t len)
{
    struct shard_err err;
    uint64_t n;
    if (shard_field_boxes_decode(data, len, NULL, &n, &err))
        return skpy_raise(&err);
    struct shard_box *boxes = malloc(n ? n * sizeof *boxes : 1);
    float *xyxy = malloc(n ? n * 4 * sizeof *xyxy : 1);
    int64_t *cls = malloc(n ? n * sizeof *cls : 1);
    uint8_t *crowd = malloc(n ? n : 1);
    if (!boxes || !xyxy || !cls || !crowd) {
        free(boxes), free(xyxy), free(cls), free(crowd);
        return PyErr_NoMemory();
    }
    shard_field_boxes_decode(data, len, boxes, &n, &err);
    for (uint64_t i = 0; i < n; i++) {
        xyxy[4 * i] = boxes[i].x0, xyxy[4 * i + 1] = boxes[i].y0;
        xyxy[4 * i + 2] = boxes[i].x1, xyxy[4 * i + 3] = boxes[i].y1;
        cls[i] = boxes[i].cls;
        crowd[i] = (boxes[i].flags & SHARD_BOX_CROWD) != 0;
    }
    free(boxes);
    Py_ssize_t shape[2] = {(Py_ssize_t)n, 4};
    PyObject *a = skpy_owned_new(xyxy, 2, shape, "f");
    PyObject *b = skpy_owned_new(cls, 1, shape, "q");
    PyObject *c = skpy_owned_new(crowd, 1, shape, "?");
    PyObject *r = a && b && c ? PyTuple_Pack(3, a, b, c) : NULL;
    Py_XDECREF(a);
    Py_XDECREF(b);
    Py_XDECREF(c);
    return r;
}

/* A grid's shape: (height, width) for one channel, else (height, width,
 * channels); its ndim. */
static int grid_shape(const struct shard_field_grid *g, Py_ssize_t *shape)
{
    shape[0] = g->height, shape[1] = g->width, shape[2] = g->channels;
    return g->channels == 1 ? 2 : 3;
}

/* A grid's values, a Buffer: a view of `owner`'s memory when it reads
 * right in host order and `owner` is given, else a copy. */
static PyObject *grid_buffer(const struct shard_field_grid *g, PyObject *owner)
{
    Py_ssize_t shape[3];
    int ndim = grid_shape(g, shape);
    const char *format = g->value_bytes == 2 ? "H" : "B";
    if (owner && (g->value_bytes == 1 || HOST_LITTLE_ENDIAN))
        return skpy_values_new(g->values, ndim, shape, format, owner);
    void *copy = malloc((size_t)g->width * g->height * g->channels * g->value_bytes);
    if (!copy)
        return PyErr_NoMemory();
    shard_field_grid_copy(g, copy);
    return skpy_owned_new(copy, ndim, shape, format);
}

/* An instances value's masks, (n, height, width) uint8, new memory. */
static PyObject *instances_array(const uint8_t *data, uint64_t len)
{
    struct shard_err err;
    uint32_t w, h, n;
    if (shard_field_instances_decode(data, len, &w, &h, &n, NULL, &err))
        return skpy_raise(&err);
    size_t bytes = (size_t)n * w * h;
    uint8_t *masks = malloc(bytes ? bytes : 1);
    if (!masks)
        return PyErr_NoMemory();
    shard_field_instances_decode(data, len, &w, &h, &n, masks, &err);
    Py_ssize_t shape[3] = {n, h, w};
    return skpy_owned_new(masks, 3, shape, "B");
}

/* n little-endian values of `size` bytes (4 or 8) as a host-order Buffer
 * of `format`, new memory. */
static PyObject *vector(const uint8_t *data, uint64_t n, size_t size, const char *format)
{
    uint8_t *out = malloc(n ? n * size : 1);
    if (!out)
        return PyErr_NoMemory();
    for (uint64_t i = 0; i < n; i++) {
        uint64_t v = 0;
        for (size_t k = 0; k < size; k++)
            v |= (uint64_t)data[i * size + k] << (8 * k);
        if (size == 4) {
            uint32_t v32 = (uint32_t)v;
            memcpy(out + i * size, &v32, 4);
        } else {
            memcpy(out + i * size, &v, 8);
        }
    }
    Py_ssize_t shape = (Py_ssize_t)n;
    return skpy_owned_new(out, 1, &shape, format);
}

static uint64_t le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int k = 0; k < 8; k++)
        v |= (uint64_t)p[k] << (8 * k);
    return v;
}

/* The type a name names (shard_field_type_name's), or 0. */
static enum shard_field_type type_named(const char *name)
{
    for (int t = 1; shard_field_type_name((enum shard_field_type)t); t++)
        if (!strcmp(shard_field_type_name((enum shard_field_type)t), name))
            return (enum shard_field_type)t;
    return 0;
}

/* One value of type t (the reader checked it against its declaration). */
static PyObject *decode_value(enum shard_field_type t, const uint8_t *p, uint64_t len)
{
    struct shard_err err;
    struct shard_field_grid g;
    int rc = 0;
    switch (t) {
    case SHARD_FIELD_TEXT:
    case SHARD_FIELD_JSON: return PyUnicode_DecodeUTF8((const char *)p, (Py_ssize_t)len, "strict");
    case SHARD_FIELD_INT:
    case SHARD_FIELD_FLOAT: {
        if (len != 8)
            break;
        uint64_t v = le64(p);
        if (t == SHARD_FIELD_INT)
            return PyLong_FromLongLong((long long)v);
        double d;
        memcpy(&d, &v, sizeof d);
        return PyFloat_FromDouble(d);
    }
    case SHARD_FIELD_FLOAT32:
        if (len % 4)
            break;
        return vector(p, len / 4, 4, "f");
    case SHARD_FIELD_INT64:
        if (len % 8)
            break;
        return vector(p, len / 8, 8, "q");
    case SHARD_FIELD_LABELS: {
        if (len % 4)
            break;
        PyObject *list = PyList_New((Py_ssize_t)(len / 4));
        for (uint64_t i = 0; list && i < len / 4; i++) {
            const uint8_t *q = p + 4 * i;
            uint32_t v = (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 |
                         (uint32_t)q[3] << 24;
            PyObject *o = PyLong_FromUnsignedLong(v);
            if (!o)
                Py_CLEAR(list);
            else
                PyList_SET_ITEM(list, (Py_ssize_t)i, o);
        }
        return list;
    }
    case SHARD_FIELD_BYTES: return PyBytes_FromStringAndSize((const char *)p, (Py_ssize_t)len);
    case SHARD_FIELD_BOXES: return boxes_arrays(p, len);
    case SHARD_FIELD_INSTANCES: return instances_array(p, len);
    case SHARD_FIELD_MASK:
    case SHARD_FIELD_IMAGE:
        rc = t == SHARD_FIELD_MASK ? shard_field_mask_decode(p, len, &g, &err)
                                   : shard_field_image_decode(p, len, &g, &err);
        return rc ? skpy_raise(&err) : grid_buffer(&g, NULL);
    }
    PyErr_Format(PyExc_ValueError, "%llu bytes are no %s value", (unsigned long long)len,
                 shard_field_type_name(t));
    return NULL;
}

/* decode_value(type, raw): raw (any bytes-like object) as a value of the
 * type named: see native.h. */
PyObject *skpy_decode_value(PyObject *self, PyObject *args)
{
    const char *name;
    Py_buffer raw;
    if (!PyArg_ParseTuple(args, "sy*:decode_value", &name, &raw))
        return NULL;
    enum shard_field_type t = type_named(name);
    PyObject *r = NULL;
    if (!t)
        PyErr_Format(PyExc_ValueError, "unknown field type '%s'", name);
    else if (!PyBuffer_IsContiguous(&raw, 'C'))
        PyErr_SetString(PyExc_ValueError, "a field value must be contiguous bytes");
    else
        r = decode_value(t, raw.buf, (uint64_t)raw.len);
    PyBuffer_Release(&raw);
    return r;
}

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

/* A labels field's (label numbers uint32, offsets uint64 counting labels). */
static PyObject *batch_labels(const struct shard_batch_info *in, const struct shard_batch_field *f,
                              PyObject *holder)
{
    Py_ssize_t ids = (Py_ssize_t)(f->offsets[in->count] / sizeof(uint32_t));
    Py_ssize_t offsets = in->count + 1;
    uint64_t *ends = malloc((size_t)offsets * sizeof *ends);
    if (!ends)
        return PyErr_NoMemory();
    for (Py_ssize_t j = 0; j < offsets; j++)
        ends[j] = f->offsets[j] / sizeof(uint32_t);
    PyObject *a = skpy_values_new(f->data, 1, &ids, "I", holder);
    PyObject *b = skpy_owned_new(ends, 1, &offsets, "Q");
    PyObject *r = a && b ? PyTuple_Pack(2, a, b) : NULL;
    Py_XDECREF(a);
    Py_XDECREF(b);
    return r;
}

/* A boxes field's (xyxy, class ids, crowd: the whole batch's, as
 * boxes_arrays; and each sample's box count, a list). */
static PyObject *batch_boxes(const struct shard_batch_info *in, const struct shard_batch_field *f)
{
    PyObject *arrays = boxes_arrays(f->data, f->offsets[in->count]);
    PyObject *counts = arrays ? PyList_New(in->count) : NULL;
    for (uint32_t j = 0; counts && j < in->count; j++) {
        uint64_t n;
        struct shard_err err;
        PyObject *o = NULL;
        if (shard_field_boxes_decode(f->data + f->offsets[j], f->offsets[j + 1] - f->offsets[j],
                                     NULL, &n, &err))
            skpy_raise(&err);
        else
            o = PyLong_FromUnsignedLongLong(n);
        if (!o)
            Py_CLEAR(counts);
        else
            PyList_SET_ITEM(counts, j, o);
    }
    PyObject *r = counts ? Py_BuildValue("(OOOO)", PyTuple_GET_ITEM(arrays, 0),
                                         PyTuple_GET_ITEM(arrays, 1), PyTuple_GET_ITEM(arrays, 2),
                                         counts)
                         : NULL;
    Py_XDECREF(arrays);
    Py_XDECREF(counts);
    return r;
}

/* Sample j's value of a MASK, IMAGE or INSTANCES field of the batch as a
 * Buffer over the batch's memory (a copy where it must be), its grid in *g
 * (for INSTANCES, count x height x width in width, height and channels). */
static PyObject *batch_value(const struct shard_batch_info *in, const struct shard_batch_field *f,
                             uint32_t j, PyObject *holder, struct shard_field_grid *g)
{
    const uint8_t *p = f->data + f->offsets[j];
    uint64_t len = f->offsets[j + 1] - f->offsets[j];
    struct shard_err err;
    if (f->type == SHARD_FIELD_INSTANCES) {
        uint32_t w, h, n;
        const uint8_t *masks;
        if (shard_batch_instances(f, in->count, j, &w, &h, &n, &masks)) {
            PyErr_SetString(PyExc_RuntimeError, "the loader gave no instance masks");
            return NULL;
        }
        Py_ssize_t shape[3] = {n, h, w};
        return skpy_values_new(masks, 3, shape, "B", holder);
    }
    int rc = f->type == SHARD_FIELD_MASK ? shard_field_mask_decode(p, len, g, &err)
                                         : shard_field_image_decode(p, len, g, &err);
    return rc ? skpy_raise(&err) : grid_buffer(g, holder);
}

/* A MASK, IMAGE or INSTANCES field's (each sample's value or None, a list;
 * and for MASK and IMAGE when every sample has one of the same size, one
 * (count, ...) view of them all, else None). */
static PyObject *batch_grids(const struct shard_batch_info *in, const struct shard_batch_field *f,
                             PyObject *holder)
{
    PyObject *list = PyList_New(in->count), *stacked = NULL;
    struct shard_field_grid first = {0};
    int same = in->count > 0 && f->type != SHARD_FIELD_INSTANCES;
    for (uint32_t j = 0; list && j < in->count; j++) {
        struct shard_field_grid g = {0};
        PyObject *v = f->present[j] ? batch_value(in, f, j, holder, &g) : Py_NewRef(Py_None);
        if (!v) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, j, v);
        if (j == 0)
            first = g;
        /* the same size, equally spaced (the loader puts them back to back) */
        same = same && f->present[j] && g.width == first.width && g.height == first.height &&
               g.channels == first.channels && g.value_bytes == first.value_bytes &&
               g.values - first.values == (ptrdiff_t)(f->offsets[j] - f->offsets[0]) &&
               (j == 0 || f->offsets[j] - f->offsets[j - 1] == f->offsets[1] - f->offsets[0]);
    }
    if (list && same) {
        Py_ssize_t shape[4], strides[4];
        shape[0] = in->count;
        int ndim = 1 + grid_shape(&first, shape + 1);
        strides[ndim - 1] = first.value_bytes;
        for (int d = ndim - 2; d >= 1; d--)
            strides[d] = strides[d + 1] * shape[d + 1];
        strides[0] = (Py_ssize_t)(f->offsets[1] - f->offsets[0]);
        const char *format = first.value_bytes == 2 ? "H" : "B";
        if (first.value_bytes == 1 || HOST_LITTLE_ENDIAN) {
            stacked = skpy_strided_new(first.values, ndim, shape, strides, format, holder);
        } else { /* big-endian 2-byte values: copied, one grid after another */
            size_t each = (size_t)first.width * first.height * first.channels * 2;
            uint8_t *copy = malloc(each * in->count);
            for (uint32_t j = 0; copy && j < in->count; j++) {
                struct shard_field_grid g = first;
                g.values = first.values + (size_t)strides[0] * j;
                shard_field_grid_copy(&g, copy + each * j);
            }
            stacked = copy ? skpy_owned_new(copy, ndim, shape, format) : PyErr_NoMemory();
        }
        if (!stacked)
            Py_CLEAR(list);
    }
    PyObject *r = list ? PyTuple_Pack(2, list, stacked ? stacked : Py_None) : NULL;
    Py_XDECREF(list);
    Py_XDECREF(stacked);
    return r;
}

/* One selected field's entry of the batch tuple (see native.h). */
static PyObject *batch_field(const struct shard_batch_info *in, const struct shard_batch_field *f,
                             PyObject *holder)
{
    Py_ssize_t shape[2] = {in->count, f->length};
    PyObject *present = skpy_values_new(f->present, 1, shape, "B", holder);
    PyObject *values = NULL, *items = NULL, *labels = NULL, *boxes = NULL, *grids = NULL;
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
    case SHARD_FIELD_LABELS: labels = batch_labels(in, f, holder); break;
    case SHARD_FIELD_BOXES: boxes = batch_boxes(in, f); break;
    case SHARD_FIELD_MASK:
    case SHARD_FIELD_INSTANCES:
    case SHARD_FIELD_IMAGE: grids = batch_grids(in, f, holder); break;
    default: /* TEXT, JSON, BYTES */ items = value_list(in, f); break;
    }
    PyObject *r = NULL;
    if (present && (values || items || labels || boxes || grids))
        r = Py_BuildValue("(IOOOOOO)", (unsigned)f->field, present, values ? values : Py_None,
                          items ? items : Py_None, labels ? labels : Py_None,
                          boxes ? boxes : Py_None, grids ? grids : Py_None);
    Py_XDECREF(present);
    Py_XDECREF(values);
    Py_XDECREF(items);
    Py_XDECREF(labels);
    Py_XDECREF(boxes);
    Py_XDECREF(grids);
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
