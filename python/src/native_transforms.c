/* native_transforms.c - _native.Transforms: a transform list and output format
 * (shardkit/loader.h), applicable to one image for tests and previews. */
#include "native.h"

#include <stdlib.h>

static int pair(PyObject *o, const char *what, double *out)
{
    if (!PyArg_ParseTuple(o, "dd", &out[0], &out[1])) {
        PyErr_Format(PyExc_TypeError, "%s must be two numbers", what);
        return -1;
    }
    return 0;
}

static int triple(PyObject *o, const char *what, double *out)
{
    if (!PyArg_ParseTuple(o, "ddd", &out[0], &out[1], &out[2])) {
        PyErr_Format(PyExc_TypeError, "%s must be three numbers", what);
        return -1;
    }
    return 0;
}

/* The output size of step k: height (1..2**32-1) and width (0 allowed for
 * resize: the shorter side); the library checks them against its limits. */
static int step_size(PyObject *h, PyObject *w, Py_ssize_t k, const char *name, uint32_t min_width,
                     struct shard_transform_step *s)
{
    char what[64];
    PyOS_snprintf(what, sizeof what, "step %zd (%s): height", k, name);
    if (skpy_u32(h, what, 1, &s->height) < 0)
        return -1;
    PyOS_snprintf(what, sizeof what, "step %zd (%s): width", k, name);
    return skpy_u32(w, what, min_width, &s->width);
}

/* Step tuple k (see native.h) into *s. */
static int parse_step(PyObject *t, Py_ssize_t k, struct shard_transform_step *s)
{
    if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) < 1 || !PyUnicode_Check(PyTuple_GET_ITEM(t, 0))) {
        PyErr_Format(PyExc_TypeError, "transform step %zd must be a tuple (name, ...)", k);
        return -1;
    }
    /* NULL for a name that cannot be UTF-8 (a lone surrogate) */
    const char *name = PyUnicode_AsUTF8(PyTuple_GET_ITEM(t, 0));
    if (!name)
        return -1;
    PyObject *o, *h = NULL, *w = NULL, *a = NULL, *b = NULL;
    if (!strcmp(name, "random_resized_crop")) {
        shard_transform_step_init(s, SHARD_TRANSFORM_RANDOM_RESIZED_CROP);
        if (!PyArg_ParseTuple(t, "OOOOO", &o, &h, &w, &a, &b) ||
            step_size(h, w, k, name, 1, s) < 0 || pair(a, "scale", s->scale) ||
            pair(b, "ratio", s->ratio))
            return -1;
    } else if (!strcmp(name, "center_crop")) {
        shard_transform_step_init(s, SHARD_TRANSFORM_CENTER_CROP);
        if (!PyArg_ParseTuple(t, "OOO", &o, &h, &w) || step_size(h, w, k, name, 1, s) < 0)
            return -1;
    } else if (!strcmp(name, "resize")) {
        shard_transform_step_init(s, SHARD_TRANSFORM_RESIZE);
        if (!PyArg_ParseTuple(t, "OOO", &o, &h, &w) || step_size(h, w, k, name, 0, s) < 0)
            return -1;
    } else if (!strcmp(name, "horizontal_flip")) {
        shard_transform_step_init(s, SHARD_TRANSFORM_HORIZONTAL_FLIP);
        if (!PyArg_ParseTuple(t, "Od", &o, &s->p))
            return -1;
    } else if (!strcmp(name, "normalize")) {
        shard_transform_step_init(s, SHARD_TRANSFORM_NORMALIZE);
        if (!PyArg_ParseTuple(t, "OOO", &o, &a, &b) || triple(a, "mean", s->mean) ||
            triple(b, "std", s->std))
            return -1;
    } else {
        PyErr_Format(PyExc_ValueError, "unknown transform step %R", PyTuple_GET_ITEM(t, 0));
        return -1;
    }
    return 0;
}

int skpy_transforms_build(PyObject *steps, const char *layout, const char *dtype,
                          struct shard_transforms **out)
{
    enum shard_layout l;
    enum shard_dtype d;
    if (shard_layout_parse(layout, &l)) {
        PyErr_Format(PyExc_ValueError, "layout must be 'NHWC' or 'NCHW', not '%s'", layout);
        return -1;
    }
    if (shard_dtype_parse(dtype, &d)) {
        PyErr_Format(PyExc_ValueError,
                     "dtype must be 'uint8', 'float32', 'float16' or 'uint16', not '%s'", dtype);
        return -1;
    }
    PyObject *seq = PySequence_Fast(steps, "transform steps must be a sequence");
    if (!seq)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > SHARD_TRANSFORMS_MAX_STEPS) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "transform: %zd steps, at most %d", n,
                     SHARD_TRANSFORMS_MAX_STEPS);
        return -1;
    }
    struct shard_transform_step s[SHARD_TRANSFORMS_MAX_STEPS];
    for (Py_ssize_t i = 0; i < n; i++)
        if (parse_step(PySequence_Fast_GET_ITEM(seq, i), i, &s[i]) < 0) {
            Py_DECREF(seq);
            return -1;
        }
    Py_DECREF(seq);
    struct shard_err err;
    if (shard_transforms_new(out, s, (size_t)n, l, d, &err)) {
        skpy_raise(&err);
        return -1;
    }
    return 0;
}

static int transforms_init(PyObject *self, PyObject *args, PyObject *kwds)
{
    TransformsObject *a = (TransformsObject *)self;
    static char *names[] = {"steps", "layout", "dtype", NULL};
    PyObject *steps;
    const char *layout = "NHWC", *dtype = "uint8";
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|ss:Transforms", names, &steps, &layout, &dtype))
        return -1;
    /* a Loader may be applying the transforms on its threads: they stay as
     * they were made (shard_transforms is immutable) */
    if (a->transforms) {
        PyErr_SetString(PyExc_RuntimeError, "Transforms is already initialised");
        return -1;
    }
    return skpy_transforms_build(steps, layout, dtype, &a->transforms);
}

static void transforms_dealloc(PyObject *self)
{
    shard_transforms_free(((TransformsObject *)self)->transforms);
    Py_TYPE(self)->tp_free(self);
}

static int transforms_ready(TransformsObject *a)
{
    if (!a->transforms)
        PyErr_SetString(PyExc_RuntimeError, "Transforms is not initialised");
    return a->transforms != NULL;
}

/* fixed_size() -> (height, width) or None */
static PyObject *transforms_fixed_size(PyObject *self, PyObject *unused)
{
    TransformsObject *a = (TransformsObject *)self;
    uint32_t w, h;
    if (!transforms_ready(a))
        return NULL;
    if (!shard_transforms_fixed_size(a->transforms, &w, &h))
        Py_RETURN_NONE;
    return Py_BuildValue("(II)", h, w);
}

/* seed, epoch, index: the random stream's inputs */
static int stream_args(PyObject *s, PyObject *e, PyObject *i, uint64_t *seed, uint64_t *epoch,
                       uint64_t *index)
{
    return skpy_u64(s, "seed", seed) || skpy_u64(e, "epoch", epoch) || skpy_u64(i, "index", index)
               ? -1
               : 0;
}

static PyObject *choice_dict(const struct shard_transform_choice *c)
{
    return Py_BuildValue("{s:I,s:I,s:I,s:I,s:i,s:i,s:I,s:I,s:i,s:O}", "in_width", c->in_width,
                         "in_height", c->in_height, "out_width", c->out_width, "out_height",
                         c->out_height, "left", c->left, "top", c->top, "box_width", c->box_width,
                         "box_height", c->box_height, "attempts", c->attempts, "flip",
                         c->flip ? Py_True : Py_False);
}

/* draw(width, height, seed, epoch, index) -> tuple of dicts, one per step */
static PyObject *transforms_draw(PyObject *self, PyObject *args)
{
    TransformsObject *a = (TransformsObject *)self;
    PyObject *wo, *ho, *s, *e, *i;
    uint32_t w, h;
    uint64_t seed, epoch, index;
    if (!transforms_ready(a) || !PyArg_ParseTuple(args, "OOOOO:draw", &wo, &ho, &s, &e, &i) ||
        skpy_u32(wo, "width", 1, &w) < 0 || skpy_u32(ho, "height", 1, &h) < 0 ||
        stream_args(s, e, i, &seed, &epoch, &index) < 0)
        return NULL;
    struct shard_transforms_draws *d = malloc(sizeof *d);
    if (!d)
        return PyErr_NoMemory();
    struct shard_err err;
    if (shard_transforms_draw(a->transforms, w, h, seed, epoch, index, d, &err)) {
        free(d);
        return skpy_raise(&err);
    }
    PyObject *t = PyTuple_New(d->steps);
    for (uint32_t k = 0; t && k < d->steps; k++) {
        PyObject *c = choice_dict(&d->step[k]);
        if (!c) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, k, c);
    }
    free(d);
    return t;
}

/* apply(image, seed, epoch, index) -> Buffer: image is any C-contiguous
 * uint8 (h, w, 3) buffer (a numpy array) */
static PyObject *transforms_apply(PyObject *self, PyObject *args)
{
    TransformsObject *a = (TransformsObject *)self;
    PyObject *src, *s, *e, *i;
    uint64_t seed, epoch, index;
    if (!transforms_ready(a) || !PyArg_ParseTuple(args, "OOOO:apply", &src, &s, &e, &i) ||
        stream_args(s, e, i, &seed, &epoch, &index) < 0)
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(src, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return NULL;
    PyObject *result = NULL;
    struct shard_transforms_draws *d = malloc(sizeof *d);
    struct shard_transforms_workspace *ws = NULL;
    void *out = NULL;
    struct shard_err err;
    int rc;
    if (!d) {
        PyErr_NoMemory();
        goto done;
    }
    if (view.ndim != 3 || view.shape[2] != 3 || view.itemsize != 1 ||
        (view.format && strcmp(view.format, "B") != 0) || view.shape[0] == 0 ||
        view.shape[1] == 0 || view.shape[0] > UINT32_MAX || view.shape[1] > UINT32_MAX) {
        PyErr_SetString(PyExc_ValueError,
                        "image must be a uint8 array of shape (height, width, 3)");
        goto done;
    }
    struct shard_image img = {
        .pixels = view.buf,
        .width = (uint32_t)view.shape[1],
        .height = (uint32_t)view.shape[0],
        .channels = 3,
        .stride = (size_t)view.shape[1] * 3,
    };
    if (shard_transforms_draw(a->transforms, img.width, img.height, seed, epoch, index, d, &err) ||
        shard_transforms_workspace_new(&ws, &err)) {
        skpy_raise(&err);
        goto done;
    }
    if (!(out = malloc(d->out_bytes))) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS rc = shard_transforms_apply(a->transforms, &img, d, ws, out, &err);
    Py_END_ALLOW_THREADS if (rc)
    {
        skpy_raise(&err);
        goto done;
    }
    Py_ssize_t shape[3];
    skpy_sample_shape(shard_transforms_layout(a->transforms), d->out_width, d->out_height, 3,
                      shape);
    result = skpy_buffer_new(out, 3, shape, shard_transforms_dtype(a->transforms), NULL, free, out);
    out = NULL; /* the buffer owns it (or freed it) */
done:
    free(out);
    shard_transforms_workspace_free(ws);
    free(d);
    PyBuffer_Release(&view);
    return result;
}

static PyMethodDef transforms_methods[] = {
    {"fixed_size", transforms_fixed_size, METH_NOARGS,
     "fixed_size($self, /)\n--\n\n(height, width) when every output has that size, else None"},
    {"draw", transforms_draw, METH_VARARGS,
     "draw($self, width, height, seed, epoch, index, /)\n--\n\n"
     "the random choices, one dict per step"},
    {"apply", transforms_apply, METH_VARARGS,
     "apply($self, image, seed, epoch, index, /)\n--\n\nthe transformed image (a Buffer)"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject skpy_transforms_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "shardkit._native.Transforms",
    .tp_basicsize = sizeof(TransformsObject),
    .tp_dealloc = transforms_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Transforms(steps, layout='NHWC', dtype='uint8')\n--\n\ntransforms run in C",
    .tp_methods = transforms_methods,
    .tp_init = transforms_init,
    .tp_new = PyType_GenericNew,
};
