/* safe_name.h - a sample key as one file name, reversibly.
 *
 * Keys are relative paths of any bytes; shardcat writes every sample as one
 * flat file in the output directory.  The name is the key with these bytes
 * written as %XX (two upper-case hex digits):
 *   '/'  '\\'  '%'                      (separators and the escape itself)
 *   bytes 0x00-0x1f and 0x7f            (control characters)
 *   bytes that are not part of valid UTF-8, and those of a character that
 *   does not show as itself (shardx_utf8_shown_len: C1 controls, U+202E and
 *   the other bidirectional controls, zero-width and other invisible
 *   characters, spaces other than the space)
 *   a '.' at the very start             (no hidden files, never "." or "..")
 * Everything else - printable ASCII, spaces, quotes, valid UTF-8 text - is
 * kept, so names stay readable.  Decoding every %XX gives the key back, and
 * a name can never contain '/', so it stays inside the output directory.
 *
 * A name longer than a file name may be (NAME_MAX, 255 bytes) is shortened:
 * its first characters, then "%~" and the 16 hex digits of the key's XXH3-64,
 * then the suffix: "n01%2Faaa...aaa%~0123456789abcdef.png".  "%~" never
 * occurs in a full name ('%' is always written %25 there), so a shortened
 * name is told apart at a glance, and the hash keeps two keys with the same
 * beginning apart.  Such a name cannot be decoded: shardcat lists it with
 * its key in the output directory's keys.tsv. */
#ifndef SHARDCAT_SAFE_NAME_H
#define SHARDCAT_SAFE_NAME_H

#include <limits.h>
#include <stddef.h>

/* Room for a name and its NUL. */
#define SAFE_NAME_SIZE (NAME_MAX + 1)

/* The name of key[0..len) followed by `suffix` into out (SAFE_NAME_SIZE
 * bytes, NUL-terminated), shortened when needed (*shortened then 1).
 * Returns the name's length, or 0 for a key longer than SHARD_KEY_MAX. */
size_t safe_name(const char *key, size_t len, const char *suffix, char out[SAFE_NAME_SIZE],
                 int *shortened);

/* The same encoding for showing a key in a message or keys.tsv, keeping
 * '/', '\\' and a leading '.' as they are (one printable line without tabs).
 * Returns the length, or 0 when it does not fit in out_size. */
size_t shown_key(const char *key, size_t len, char *out, size_t out_size);

/* Room for a key shown in a message. */
#define SHOWN_KEY_SIZE 512

/* shown_key into buf, or "(a key of N bytes)" when it does not fit.
 * Returns buf. */
const char *key_for_message(const char *key, size_t len, char buf[SHOWN_KEY_SIZE]);

#endif
