/* native.h - shardkit._native, the CPython extension over libshardkit:
 * what its files share.  The extension is a thin layer: it converts
 * arguments, releases the GIL around every call that reads, decodes or
 * waits, maps error codes to exceptions, and hands pixel memory to Python
 * through the buffer protocol (numpy.asarray and torch.from_numpy take it
 * without a copy).  Everything users see is shaped in the pure-Python
 * modules of the package. */
#ifndef SHARDKIT_PY_NATIVE_H
#define SHARDKIT_PY_NATIVE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "shardkit.h"

/* ---- errors (native.c) ---------------------------------------------------- */

/* Raise the exception for a library error: shardkit.errors._from_library
 * picks the class of err->code (a ShardkitError subclass that is also the
 * builtin it resembles: SHARD_EINVAL a ValueError, SHARD_ENOTFOUND a
 * FileNotFoundError, ...) and sets .code.  Returns NULL. */
PyObject *skpy_raise(const struct shard_err *err);

/* The same, naming `filename` (the location as the caller gave it, str or
 * bytes; NULL: none) as the exception's .filename where it has one. */
PyObject *skpy_raise_path(const struct shard_err *err, PyObject *filename);

/* The exception instance for status `code` and message `msg` (a new
 * reference, or NULL with an exception set). */
PyObject *skpy_error(int code, const char *msg, PyObject *filename);

/* `given` (a location: str, bytes or a path) as messages show it: with
 * the user information of its URLs replaced by "***" (shardx_redact_urls,
 * as the library's messages and the tools do), as str (bytes for bytes), or
 * `given` itself when there is none.  A new reference, or NULL with an
 * exception set. */
PyObject *skpy_redacted(PyObject *given);

/* A library message as a str: bytes that are not UTF-8 (a path's) become
 * \xNN, so that a message never fails to decode. */
PyObject *skpy_message(const char *msg);

/* Raise for a failed read of sample `index` of ds: a damaged record (corrupt
 * data, an undecodable or unsupported payload) is shardkit.CorruptRecordError
 * with .index, .shard (file name), .record, .key and .key_bytes; anything
 * else as skpy_raise.  Returns NULL. */
PyObject *skpy_raise_record(struct shard_dataset *ds, uint64_t index, const struct shard_err *err);

/* The CorruptRecordError instance for that failure (a new reference, or NULL
 * with an exception set), for callers that keep it rather than raise. */
PyObject *skpy_record_error(struct shard_dataset *ds, uint64_t index, const struct shard_err *err);

/* ---- buffers (native.c) --------------------------------------------------- */

/* A read-write buffer-protocol object over memory someone else owns: when
 * it is deallocated it calls free_fn(free_arg) (when set) and drops `owner`
 * (when set).  ndim <= 4; C-contiguous; format "B", "f" or "e". */
PyObject *skpy_buffer_new(void *data, int ndim, const Py_ssize_t *shape, enum shard_dtype dtype,
                          PyObject *owner, void (*free_fn)(void *), void *free_arg);

/* The same over values of another type: `format` one of "B" (uint8), "?"
 * (bool), "H" (uint16), "I" (uint32), "q" (int64), "Q" (uint64), "f"
 * (float32), "d" (float64), in host order; nothing is freed but `owner`'s
 * reference. */
PyObject *skpy_values_new(const void *data, int ndim, const Py_ssize_t *shape, const char *format,
                          PyObject *owner);

/* The same over malloc'd memory the Buffer owns (freed with it; freed at
 * once when the Buffer cannot be made). */
PyObject *skpy_owned_new(void *data, int ndim, const Py_ssize_t *shape, const char *format);

/* skpy_values_new with `strides` (bytes between neighbours of each
 * dimension): a view of rows that are not back to back. */
PyObject *skpy_strided_new(const void *data, int ndim, const Py_ssize_t *shape,
                           const Py_ssize_t *strides, const char *format, PyObject *owner);

/* The shape of one sample of width x height in `layout`: (h, w, 3) or (3, h, w). */
void skpy_sample_shape(enum shard_layout layout, uint32_t width, uint32_t height, uint32_t channels,
                       Py_ssize_t *shape);

/* Read the integer argument `what` (an int, or anything with __index__ but
 * a bool) into *out when it is in min..max.  Nothing wraps: TypeError for
 * what is not an int, ValueError naming the argument, its range and the
 * value otherwise ("batch_size must be in 1..4294967295, not 4294967304").
 * 0 or -1. */
int skpy_uint(PyObject *o, const char *what, uint64_t min, uint64_t max, uint64_t *out);
/* skpy_uint for 0..2**64-1 and for min..2**32-1 into a uint32_t. */
int skpy_u64(PyObject *o, const char *what, uint64_t *out);
int skpy_u32(PyObject *o, const char *what, uint32_t min, uint32_t *out);

/* ---- types ------------------------------------------------------------------ */

typedef struct {
    PyObject_HEAD struct shard_dataset *ds;
} DatasetObject;

typedef struct {
    PyObject_HEAD struct shard_transforms *transforms;
} TransformsObject;

/* A mixture and the tuple of its DatasetObjects (kept open for it). */
typedef struct {
    PyObject_HEAD struct shard_mixture *mixture;
    PyObject *datasets;
} MixtureObject;

extern PyTypeObject skpy_buffer_type;
extern PyTypeObject skpy_dataset_type;
extern PyTypeObject skpy_transforms_type;
extern PyTypeObject skpy_mixture_type;
extern PyTypeObject skpy_loader_type;
extern PyTypeObject skpy_batch_type;

/* ---- fields (native_fields.c) ------------------------------------------------ */

/* An item's fields as a tuple of (field number, value bytes as stored), in
 * field number order (a new reference, or NULL with an exception set). */
PyObject *skpy_item_fields(const struct shard_item *item);

/* A batch's selected fields (shard_batch_info.fields) as a tuple, one entry
 * per field: (number, present, values, items, labels, boxes, grids) where
 * present is a uint8 Buffer (count,); values, for a stacked field, a Buffer
 * (count,) or (count, length) of int64 or float64/float32 values, else
 * None; items, for text and JSON a list of str, for bytes a list of bytes
 * (None where absent), else None; labels, for a label list field, (label
 * numbers as a uint32 Buffer, offsets as a uint64 Buffer (count + 1,)
 * counting labels), else None; boxes, for a boxes field, (xyxy float32
 * (n, 4), class ids int64 (n,), crowd bool (n,): the batch's n boxes, and
 * a list of each sample's box count), else None; grids, for a mask, image
 * or instances field, (a list of each sample's value: a (height, width)
 * mask of uint8 or uint16, a (height, width, 3) image, (n, height, width)
 * uint8 instance masks, None where absent; for a mask or image field whose
 * samples all have one of the same size, one (count, ...) view of them
 * all, else None), else None.  The Buffers keep `holder` (the batch) alive. */
PyObject *skpy_batch_fields(const struct shard_batch_info *in, PyObject *holder);

/* The field declarations of a manifest, a tuple of dicts in field number
 * order: name, number, type (its name), length (a vector's, else None),
 * source ((kind, what): kind "sidecar", "column", "coco" or "folder"),
 * required, present (samples that have it), classes ({id: name} or None),
 * ignore (a mask's value of no class, or None).  NULL with an exception
 * set. */
PyObject *skpy_field_decls(const struct shard_manifest *m);

/* decode_value(type, raw) -> a field value of the type named (its name, as
 * in the declarations) from its stored bytes: text and json str, int int,
 * float float, float32 and int64 a Buffer (length,), labels a list of int,
 * bytes bytes, boxes (xyxy, class ids, crowd) as a batch's, mask a
 * (height, width) Buffer of uint8 or uint16, image (height, width, 3)
 * uint8, instances (n, height, width) uint8.  A damaged value raises as a
 * library error. */
PyObject *skpy_decode_value(PyObject *self, PyObject *args);

/* The field numbers of a sequence of ints (Loader's `fields`) in a malloc'd
 * array *out of *count (NULL and 0 for an empty or None sequence).  0, or
 * -1 with an exception set. */
int skpy_field_numbers(PyObject *seq, uint32_t **out, uint32_t *count);

/* Build a transform list from a list of step tuples (native_transforms.c):
 * ("random_resized_crop", h, w, (scale0, scale1), (ratio0, ratio1)),
 * ("center_crop", h, w), ("resize", h, w or 0), ("horizontal_flip", p),
 * ("normalize", (m, m, m), (s, s, s)). */
int skpy_transforms_build(PyObject *steps, const char *layout, const char *dtype,
                          struct shard_transforms **out);

#endif
