/*
 * shardkit.h - the shardkit library: image datasets as zstd shards.
 *
 * Include this one header; it pulls in the parts:
 *   shardkit/api.h       the version, and SHARD_API on every public function
 *   shardkit/error.h     status codes and per-call error text
 *   shardkit/util.h      byte buffers, hashes in hex, the usable CPUs
 *   shardkit/image.h     decode, resize, encode
 *   shardkit/format.h    the shard file format: records, writer, reader
 *   shardkit/manifest.h  manifest.json and the per-sample index
 *   shardkit/source.h    scanning directories and archives, labels
 *   shardkit/shardify.h  the whole conversion
 *   shardkit/dataset.h   reading: samples by index, epoch plans, prefetching
 *   shardkit/loader.h    training batches: transforms in C, a batch loader
 *   shardkit/verify.h    proving a dataset matches its manifest and source
 * Link with `pkg-config --libs shardkit`.
 *
 * The API has a stable and an experimental tier; define SHARDKIT_EXPERIMENTAL
 * before including to see the experimental one (shardkit/api.h says what
 * each promises).  shardkit/json.h holds older names only.
 */
#ifndef SHARDKIT_H
#define SHARDKIT_H

#include "shardkit/api.h"
#include "shardkit/dataset.h"
#include "shardkit/error.h"
#include "shardkit/format.h"
#include "shardkit/image.h"
#include "shardkit/loader.h"
#include "shardkit/manifest.h"
#include "shardkit/merge.h"
#include "shardkit/mixture.h"
#include "shardkit/shardify.h"
#include "shardkit/source.h"
#include "shardkit/util.h"
#include "shardkit/verify.h"

#endif
