/* quote.h - byte strings (keys) inside one-line messages (private).
 * A key is any byte string; a message must stay one printable line. */
#ifndef SHARDKIT_QUOTE_H
#define SHARDKIT_QUOTE_H

#include <stddef.h>

#include "shardkit/error.h" /* SHARD_QUOTE_SIZE: room for a quoted key in a message */

/* Copy s[0..len) into out (out_size bytes, always NUL-terminated), keeping
 * valid UTF-8 text and writing control bytes, DEL, bytes that are not valid
 * UTF-8 and those of characters that do not show as themselves
 * (sk_quote_shown_len) as \xNN, a backslash as \\.  A result that does not
 * fit is cut at a character boundary and ends in "...".  Returns out. */
const char *sk_quote_bytes(const char *s, size_t len, char *out, size_t out_size);

/* shard_utf8_shown_len (shardkit/error.h): the character at p when it shows
 * as itself, else 0. */
size_t sk_quote_shown_len(const unsigned char *p, size_t avail);

/* Length of the valid UTF-8 sequence starting at p (at most `avail` bytes):
 * 1..4, or 0 when the bytes there are not valid UTF-8 (overlong forms,
 * surrogates and values above U+10FFFF are invalid). */
size_t sk_quote_utf8_len(const unsigned char *p, size_t avail);

/* The value of hexadecimal digit c (either case), or -1. */
int sk_hex_value(char c);

#endif
