/* safe_name.h - a sample key as one file name, reversibly.
 *
 * Keys are relative paths of any bytes; shardcat writes every sample as one
 * flat file in the output directory.  The name is the key with these bytes
 * written as %XX (two upper-case hex digits):
 *   '/'  '\\'  '%'                      (separators and the escape itself)
 *   bytes 0x00-0x1f and 0x7f            (control characters)
 *   bytes that are not part of valid UTF-8, and UTF-8 C1 controls (U+0080-U+009F)
 *   a '.' at the very start             (no hidden files, never "." or "..")
 * Everything else - printable ASCII, spaces, quotes, valid UTF-8 text - is
 * kept, so names stay readable.  Decoding every %XX gives the key back, and
 * a name can never contain '/', so it stays inside the output directory. */
#ifndef SHARDCAT_SAFE_NAME_H
#define SHARDCAT_SAFE_NAME_H

#include <stddef.h>

/* Encode key[0..len) followed by `suffix` into out (out_size bytes, NUL-
 * terminated).  Returns the length of the name, or 0 when it does not fit. */
size_t safe_name(const char *key, size_t len, const char *suffix, char *out, size_t out_size);

/* The same encoding for showing a key in a message, keeping '/', '\\' and a
 * leading '.' as they are (one printable line). */
size_t shown_key(const char *key, size_t len, char *out, size_t out_size);

#endif
