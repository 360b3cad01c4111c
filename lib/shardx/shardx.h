/*
 * shardx.h - the helpers the programs share with the library (private; not
 * installed), in the style of curl's lib/curlx: quoting a byte string (a
 * key) inside a one-line message, keeping a URL's password out of any text,
 * and sizes in bytes as people write them.
 *
 * These sources are compiled into the library (where -fvisibility=hidden
 * keeps them unexported) and, again, into every program that uses them:
 * the tools of cmd/ and the programs of bench/ (compiled with -Ilib/shardx,
 * and no other folder of lib/), and the Python extension (which redacts the
 * locations in its messages).  So no program calls them through the
 * library's exports, and the library's API does not carry what only a
 * command line needs.  They use nothing of the library (the lowest layer of
 * lib/README.md): the C library and, for shardx_json.h, jansson.
 */
#ifndef SHARDKIT_SHARDX_H
#define SHARDKIT_SHARDX_H

#include <stddef.h>
#include <stdint.h>

/* ---- byte strings in messages (quote.c) --------------------------------- */

/* Room for a key quoted by shardx_quote, with its terminating NUL: the one
 * buffer size the library and the tools quote keys into (longer keys are
 * cut). */
#define SHARDX_QUOTE_SIZE 208

/* Make a byte string (a sample key: any bytes) safe inside a one-line
 * message: valid UTF-8 text is kept; control bytes (below 0x20), DEL, bytes
 * that are not valid UTF-8 and the bytes of a character that does not show
 * as itself (shardx_utf8_shown_len: U+202E, a zero-width space, ...) become
 * \xNN (two lower-case hex digits); a backslash is doubled (\\), so that
 * the result reads back unambiguously and shows what its bytes are.  A
 * string too long for out is cut at a character boundary and ends in "...".
 * Returns out (always NUL-terminated when out_size > 0). */
const char *shardx_quote(const char *s, size_t len, char *out, size_t out_size);

/* Length of the valid UTF-8 character at p (at most `avail` bytes): 1..4, or
 * 0 when the bytes there are not valid UTF-8 (overlong forms, surrogates and
 * values above U+10FFFF are invalid). */
size_t shardx_utf8_len(const unsigned char *p, size_t avail);

/* Length of the character at p when it may be shown as it is wherever a
 * name is quoted (a message, a page, a file name): as shardx_utf8_len, but 0
 * also for ASCII control bytes and DEL, and for a character that shows as
 * nothing, as white space other than the space or as something else, or
 * that reorders the text around it: C1 controls, no-break and other spaces,
 * line and paragraph separators, bidirectional controls (U+061C, U+200E,
 * U+200F, U+202A..U+202E, U+2066..U+2069), zero-width and other
 * default-ignorable characters (U+200B..U+200D, U+2060..U+206F, U+FEFF,
 * variation selectors, tags).  A caller quotes such bytes one by one
 * (shardx_quote writes \xNN), so that a name cannot show other bytes than
 * it holds. */
size_t shardx_utf8_shown_len(const unsigned char *p, size_t avail);

/* The value of hexadecimal digit c (either case), or -1. */
int shardx_hex_value(char c);

/* ---- credentials out of URLs (redact.c) --------------------------------- */

/* A copy of `text` in which the user information of every URL ("user:password"
 * of "https://user:password@host/d") is replaced by three asterisks, so that
 * a password given in a URL reaches no message, report or log.  A URL is a
 * scheme (a letter, then letters, digits, '+', '-' or '.'), "://", and an
 * authority up to the first '/', '?', '#', white space or control byte;
 * its user information ends at the last '@' of the authority.  Every
 * message the library makes is redacted so already.  Returns a malloc'd
 * string the caller frees, or NULL (out of memory, or `text` NULL). */
char *shardx_redact_urls(const char *text);

/* The same into out (out_size bytes, always NUL-terminated when
 * out_size > 0; out may be NULL when out_size is 0).  Returns the length of
 * the whole result, as snprintf does: a result of out_size or more bytes was
 * cut. */
size_t shardx_redact_urls_into(const char *text, char *out, size_t out_size);

/* ---- sizes (size.c) ------------------------------------------------------ */

/* Every size shardkit reads or prints is in bytes and powers of 1024.
 * Parse "4096", "16K", "256M", "1G", "2T" (a K, M, G or T suffix, any case,
 * optionally followed by "B" or "iB": "16MB" and "16MiB" are both 16 x
 * 1024 x 1024).  0, or -1 (not a size, or one that overflows; *out is
 * left alone). */
int shardx_size_parse(const char *s, uint64_t *out);
/* Print `bytes` in the same units: "512 B", "1.5 KiB", "256.0 MiB" ...
 * into out (out_size bytes; 16 are enough).  Returns out. */
const char *shardx_size_format(uint64_t bytes, char *out, size_t out_size);
/* The unit a chart of sizes up to `max` is drawn in: its value (1, 1024,
 * 1024^2 ...), its name in *name ("B", "KiB", "MiB" ...). */
double shardx_size_unit(uint64_t max, const char **name);

#endif
