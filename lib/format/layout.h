/* layout.h - byte offsets and magic numbers of the shard format (private).
 * manifests/FORMAT.md is the specification; keep the two in step. */
#ifndef SHARDKIT_LAYOUT_H
#define SHARDKIT_LAYOUT_H

#include "shardkit/format.h"

/* header: magic[8] version:u16 header_bytes:u16 shard_index:u32 flags:u64 xxh3:u64 */
#define HEADER_MAGIC "SKSHARD\x1a"
#define HEADER_OFF_VERSION 8
#define HEADER_OFF_SIZE 10
#define HEADER_OFF_INDEX 12
#define HEADER_OFF_FLAGS 16
#define HEADER_OFF_CHECK 24

/* record content: magic[4] key_bytes:u32 label:i32 width:u32 height:u32
 *                 pixels:u8 (channels, 0x10 for 16 bits) codec:u8 reserved:u16
 *                 payload_bytes:u64 key payload */
#define RECORD_MAGIC "SKR1"
/* version 2: the same header with reserved:u16 holding field_count, and the
 * field area after the payload */
#define RECORD_MAGIC_FIELDS "SKR2"
#define RECORD_OFF_FIELD_COUNT 22
#define RECORD_OFF_KEYLEN 4
#define RECORD_OFF_LABEL 8
#define RECORD_OFF_WIDTH 12
#define RECORD_OFF_HEIGHT 16
#define RECORD_OFF_CHANNELS 20
#define RECORD_OFF_CODEC 21
#define RECORD_OFF_RESERVED 22
#define RECORD_OFF_PAYLOAD 24

/* footer: magic[8] record_count:u64 keys_bytes:u64 rows[] keys xxh3:u64
 * row:    offset:u64 frame_bytes:u64 frame_xxh3:u64 key_bytes:u32 label:i32 */
#define FOOTER_MAGIC "SKFOOTER"
#define FOOTER_OFF_COUNT 8
#define FOOTER_OFF_KEYS 16
#define ROW_OFF_OFFSET 0
#define ROW_OFF_FRAME_BYTES 8
#define ROW_OFF_XXH3 16
#define ROW_OFF_KEYLEN 24
#define ROW_OFF_LABEL 28

/* trailer: footer_offset:u64 footer_bytes:u64 record_count:u64 xxh3:u64 magic[8] */
#define TRAILER_MAGIC "SKTRAILR"
#define TRAILER_OFF_FOOTER 0
#define TRAILER_OFF_FOOTER_BYTES 8
#define TRAILER_OFF_COUNT 16
#define TRAILER_OFF_CHECK 24
#define TRAILER_OFF_MAGIC 32

#define MAGIC_BYTES 8

#endif
