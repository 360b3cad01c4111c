/* field_parse.h - a field's stored value from its source bytes, as
 * manifests/FORMAT.md "Where values come from" says (private).
 *
 * One parser for the two sides that need it: shardify, which stores what
 * it parses, and shardcheck --deep --source, which parses the source again
 * and compares with what is stored.  Messages name the field and the
 * origin of the bytes as the caller words it ("'a/0001.txt'", "'ann.jsonl'
 * line 3"). */
#ifndef SHARDKIT_FIELD_PARSE_H
#define SHARDKIT_FIELD_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "shardkit/manifest.h"

/* The stored value of a field of declaration d from its source bytes
 * data[0..n), into out (replacing its contents): text, json and bytes as
 * they are (text and json checked), int a decimal int64 and float a finite
 * decimal number (ASCII white space around allowed), float32[N] and
 * int64[N] a JSON array of N numbers.  Not for LABELS (see
 * sk_field_parse_label_names: their numbers depend on the label list).
 * 0, SHARD_ECORRUPT with the reason in *why, or SHARD_ENOMEM. */
int sk_field_parse_value(const struct shard_field_decl *d, const uint8_t *data, size_t n,
                         const char *origin, struct shard_buf *out, struct shard_err *why);

/* The class names of a LABELS value: a JSON array of non-empty strings, none
 * twice.  The array (release with json_decref), or NULL with the reason in
 * *why (SHARD_ECORRUPT). */
json_t *sk_field_parse_label_names(const struct shard_field_decl *d, const uint8_t *data, size_t n,
                                   const char *origin, struct shard_err *why);

/* A JSON array (of `want` elements when want > 0; `what` names them in
 * messages: "numbers") from the bytes, or NULL with the reason in *why. */
json_t *sk_field_parse_array(const char *name, const uint8_t *data, size_t n, const char *what,
                             uint32_t want, const char *origin, struct shard_err *why);

/* A class name from a sidecar or a column (--labels sidecar:SUFFIX,
 * column:NAME): the bytes without the ASCII white space around them, in
 * *name and *len.  1, or 0 when nothing is left or a NUL byte is in it (the
 * sample then has no class). */
int sk_field_class_name(const uint8_t *data, size_t n, const uint8_t **name, size_t *len);

/* The largest class number (WebDataset's numeric .cls): the label list of
 * numbered classes is "0".."max", so a larger one would be a list of more
 * names than any dataset has classes (manifests/FORMAT.md, "labels"). */
#define SK_CLASS_NUMBER_MAX 999999u

/* Whether class name[0..len) is a class number: decimal digits only
 * (leading zeros allowed, as WebDataset's int() reads "007": 7).  1 with
 * *number, 0 when it is no number (a sign, a point, a letter), -1 when it
 * is one above SK_CLASS_NUMBER_MAX. */
int sk_field_class_number(const char *name, size_t len, uint32_t *number);

#endif
