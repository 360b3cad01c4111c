/* fields_out.h - a sample's fields written beside its PNG, as sidecar files
 * again (format version 2).
 *
 * Each field the sample has becomes one file in the output directory, named
 * after the sample's key without its extension (its stem, as sidecars are
 * named: manifests/FORMAT.md "Where values come from"), written with
 * safe_name.h's encoding:
 *   - a field from a sidecar file: STEM + its suffix ("a/0001.txt" becomes
 *     a%2F0001.txt).  Text, json and bytes hold the stored bytes, which are
 *     the source file's, byte for byte;
 *   - a field from an annotation table column: STEM + "." + NAME + ".txt"
 *     (text), ".bin" (bytes) or ".json" (the others), text and bytes as
 *     stored, json as stored;
 *   - numbers and vectors, from either source, as JSON text (an int, a float
 *     with 17 significant digits, float32 elements with 9: each reads back to
 *     the stored value), labels as a JSON array of class names (the
 *     manifest's), each followed by a newline;
 *   - boxes as JSON (STEM.NAME.json from a COCO file), a mask as a grey PNG
 *     of its class ids (from a sidecar under its suffix, "_mask.png", else
 *     STEM.NAME.png): targets_out.h.
 * Shortened names are listed in keys.tsv with the sidecar's key (STEM +
 * suffix), as the PNGs' are with theirs. */
#ifndef SHARDCAT_FIELDS_OUT_H
#define SHARDCAT_FIELDS_OUT_H

#include "out_dir.h"
#include "shardkit.h"

/* Write the fields of `it` (a sample of the dataset whose manifest is m)
 * into d.  0, or -1 when one could not be written (each named on stderr;
 * the others are still written). */
int fields_write(struct out_dir *d, const char *prog, const struct shard_manifest *m,
                 const struct shard_item *it);

#endif
