/* record_internal.h - what lib/ files share about record decoders (private). */
#ifndef SHARDKIT_RECORD_INTERNAL_H
#define SHARDKIT_RECORD_INTERNAL_H

#include "shardkit/format.h"

/* A buffer owned by the decoder for the caller to read a frame into before
 * decoding it with the same decoder (the frame and its content are separate
 * buffers, so decoding does not clobber the frame). */
struct shard_buf *shard_record_decoder_frame(struct shard_record_decoder *dec);

#endif
