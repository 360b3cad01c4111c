/* redact.h - credentials out of the URLs in a text (private; the public
 * shard_redact_urls is in shardkit/error.h). */
#ifndef SHARDKIT_REDACT_H
#define SHARDKIT_REDACT_H

#include <stddef.h>

/* Copy `text` into out (out_size bytes, always NUL-terminated when
 * out_size > 0; out may be NULL when out_size is 0) with the user
 * information of every URL in it ("https://user:password@host/...")
 * replaced by three asterisks.  Returns the length of the
 * whole result, as snprintf does: a result of out_size or more bytes was
 * cut. */
size_t sk_redact_urls(const char *text, char *out, size_t out_size);

#endif
