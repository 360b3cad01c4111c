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
 *
 * Tiers (shardkit/api.h): the codes, struct shard_err, shard_strerror and
 * shard_err_clear are stable; the setters (shard_err_set, shard_err_errno,
 * shard_err_prefix), for code that reports errors the library's way, are
 * experimental (SHARDKIT_EXPERIMENTAL); the quoting and redacting helpers at
 * the end are older names.
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

/* Reset *err to SHARD_OK with an empty message.  Accepts NULL. */
SHARD_API void shard_err_clear(struct shard_err *err);

#ifdef SHARDKIT_EXPERIMENTAL
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
#endif /* SHARDKIT_EXPERIMENTAL */

/* ---- older names (deprecated) --------------------------------------------
 *
 * Quoting keys in messages and redacting URLs, which 0.1.0 exported for the
 * tools; the tools' own now (lib/shardx, compiled into the programs, not
 * exported).  Every message the library makes is quoted and redacted so
 * already.  Kept, exported, until CHANGELOG.md's removal version. */

/* Room for a key quoted by shard_quote, with its terminating NUL. */
#define SHARD_QUOTE_SIZE 208

/* A byte string (a key) made safe inside a one-line message: valid UTF-8
 * kept, other bytes and characters that do not show as themselves as \xNN,
 * a backslash doubled, cut with "..." to out_size.  Returns out. */
SHARD_API const char *shard_quote(const char *s, size_t len, char *out, size_t out_size)
    SHARD_DEPRECATED("no longer in the API, removed in 0.4.0");
/* A malloc'd copy of text with the user information of every URL replaced
 * by "***"; NULL when out of memory or text is NULL. */
SHARD_API char *shard_redact_urls(const char *text)
    SHARD_DEPRECATED("no longer in the API, removed in 0.4.0");
/* Length of the valid UTF-8 character at p (1..4), or 0. */
SHARD_API size_t shard_utf8_len(const unsigned char *p, size_t avail)
    SHARD_DEPRECATED("no longer in the API, removed in 0.4.0");
/* As shard_utf8_len, but 0 also for a character that does not show as
 * itself (controls, bidirectional controls, zero-width characters ...). */
SHARD_API size_t shard_utf8_shown_len(const unsigned char *p, size_t avail)
    SHARD_DEPRECATED("no longer in the API, removed in 0.4.0");

#ifdef __cplusplus
}
#endif
#endif
