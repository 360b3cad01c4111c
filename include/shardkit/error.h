/*
 * shardkit/error.h - status codes and per-call error text.
 *
 * Every library function that can fail returns 0 (SHARD_OK) or one of the
 * negative codes below.  Numbers are stable: they may be stored and compared.
 * Functions that can fail also take a `struct shard_err *` (which may be NULL);
 * on failure it receives the code and a one-line, lower-case message that
 * names the subject, e.g. "cannot decode 'a/b.jpg': truncated JPEG".  The
 * setters below keep it one line whatever text they are given (libarchive's
 * messages end in a newline): line breaks become spaces and trailing white
 * space is dropped.
 * There is no global error state: each caller owns its shard_err, so the
 * library is safe to use from many threads at once.
 */
#ifndef SHARDKIT_ERROR_H
#define SHARDKIT_ERROR_H

#include <stddef.h>

#include "shardkit/api.h"

#ifdef __cplusplus
extern "C" {
#endif

enum shard_status {
    SHARD_OK = 0,
    SHARD_ENOMEM = -1,       /* allocation failed */
    SHARD_EIO = -2,          /* a system call failed (open, read, write, fsync, rename ...) */
    SHARD_EINVAL = -3,       /* invalid argument or option value */
    SHARD_ECORRUPT = -4,     /* damaged data: truncated, bad checksum, inconsistent structure */
    SHARD_EUNSUPPORTED = -5, /* well-formed but not supported (e.g. 12-bit JPEG) */
    SHARD_ELIMIT = -6,       /* exceeds a configured limit (pixels, bytes, memory) */
    SHARD_ENOTIMAGE = -7,    /* not an image: unknown signature */
    SHARD_ELOCKED = -8,      /* another process holds the destination lock */
    SHARD_EEXIST = -9,       /* destination holds something we must not replace */
    SHARD_EMISMATCH = -10,   /* verification found a difference */
    SHARD_ENOTFOUND = -11,   /* a named file, key or record does not exist */
    SHARD_ENET = -12,        /* network transfer failed */
    SHARD_EINTR = -13,       /* interrupted on request (signal); state is resumable */
    SHARD_EREJECTED = -14,   /* an input was rejected and --on-error fail was in force */
};

/* Maximum length of a message, including the terminating NUL. */
#define SHARD_ERRMSG_SIZE 512

struct shard_err {
    int code;                    /* 0 or a negative enum shard_status */
    char msg[SHARD_ERRMSG_SIZE]; /* NUL-terminated; "" when code is 0 */
};

/* Static name of a status code ("corrupt data", "out of memory" ...).
 * Never NULL; unknown codes give "unknown error". */
SHARD_API const char *shard_strerror(int code);

/* The helpers below each return the `code` they are given, whether err is
 * NULL or not, so that `return shard_err_set(err, ...);` and
 * `return shard_err_prefix(err, rc, ...);` return the failure even when the
 * caller asked for no message. */

/* Record `code` and a printf-style message in *err (if err is not NULL).
 * Returns `code`. */
SHARD_API int shard_err_set(struct shard_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Like shard_err_set, appending ": strerror(errnum)" to the message. */
SHARD_API int shard_err_errno(struct shard_err *err, int code, int errnum, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Prefix the current message, "PREFIX: old message" (cut at
 * SHARD_ERRMSG_SIZE), and record `code` (the failure being reported, usually
 * the one the message came with).  Returns `code`. */
SHARD_API int shard_err_prefix(struct shard_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Room for a key quoted by shard_quote, with its terminating NUL: the one
 * buffer size the library itself quotes keys into (longer keys are cut). */
#define SHARD_QUOTE_SIZE 208

/* Make a byte string (a sample key: any bytes) safe inside a one-line
 * message: valid UTF-8 text is kept; control bytes (below 0x20), DEL, bytes
 * that are not valid UTF-8 and the bytes of a character that does not show
 * as itself (shard_utf8_shown_len: U+202E, a zero-width space, ...) become
 * \xNN (two lower-case hex digits); a backslash is doubled (\\), so that
 * the result reads back unambiguously and shows what its bytes are.  A
 * string too long for out is cut at a character boundary and ends in "...".
 * Returns out (always NUL-terminated when out_size > 0). */
SHARD_API const char *shard_quote(const char *s, size_t len, char *out, size_t out_size);

/* A copy of `text` in which the user information of every URL ("user:password"
 * of "https://user:password@host/d") is replaced by three asterisks, so that
 * a password given in a URL reaches no message, report or log.  A URL is a
 * scheme (a letter, then letters, digits, '+', '-' or '.'), "://", and an
 * authority up to the first '/', '?', '#', white space or control byte;
 * its user information ends at the last '@' of the authority.  Every
 * message this library makes is redacted so already.  Returns a malloc'd
 * string the caller frees, or NULL (out of memory, or `text` NULL). */
SHARD_API char *shard_redact_urls(const char *text);

/* Length of the valid UTF-8 character at p (at most `avail` bytes): 1..4, or
 * 0 when the bytes there are not valid UTF-8 (overlong forms, surrogates and
 * values above U+10FFFF are invalid). */
SHARD_API size_t shard_utf8_len(const unsigned char *p, size_t avail);

/* Length of the character at p when it may be shown as it is wherever a
 * name is quoted (a message, a page, a file name): as shard_utf8_len, but 0
 * also for ASCII control bytes and DEL, and for a character that shows as
 * nothing, as white space other than the space or as something else, or
 * that reorders the text around it: C1 controls, no-break and other spaces,
 * line and paragraph separators, bidirectional controls (U+061C, U+200E,
 * U+200F, U+202A..U+202E, U+2066..U+2069), zero-width and other
 * default-ignorable characters (U+200B..U+200D, U+2060..U+206F, U+FEFF,
 * variation selectors, tags).  A caller quotes such bytes one by one
 * (shard_quote writes \xNN), so that a name cannot show other bytes than
 * it holds. */
SHARD_API size_t shard_utf8_shown_len(const unsigned char *p, size_t avail);

/* Reset *err to SHARD_OK with an empty message.  Accepts NULL. */
SHARD_API void shard_err_clear(struct shard_err *err);

#ifdef __cplusplus
}
#endif
#endif
