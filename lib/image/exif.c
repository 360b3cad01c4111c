/* exif.c - the orientation tag of an EXIF block, read with libexif.
 *
 * libexif keeps no global state (its default allocator is calloc/free and no
 * log is attached), so this is safe to call from many threads at once.
 */
#include "image/decode_internal.h"

#include <libexif/exif-data.h>
#include <limits.h>

int sk_exif_orientation(const uint8_t *exif, size_t len)
{
    /* An APP1 segment holds at most 64 KiB; libexif takes an unsigned int. */
    if (!exif || len < 6 || len > UINT_MAX)
        return SHARD_ORIENTATION_NORMAL;
    ExifData *ed = exif_data_new();
    if (!ed)
        return SHARD_ORIENTATION_NORMAL;
    /* Read only: do not let libexif "fix" the data by adding or changing
     * entries, and skip tags it does not know. */
    exif_data_unset_option(ed, EXIF_DATA_OPTION_FOLLOW_SPECIFICATION);
    exif_data_set_option(ed, EXIF_DATA_OPTION_IGNORE_UNKNOWN_TAGS);
    exif_data_load_data(ed, exif, (unsigned int)len);

    int orientation = SHARD_ORIENTATION_NORMAL;
    /* IFD0 describes the main image (IFD1 is the thumbnail). */
    ExifEntry *e = exif_content_get_entry(ed->ifd[EXIF_IFD_0], EXIF_TAG_ORIENTATION);
    if (e && e->format == EXIF_FORMAT_SHORT && e->components >= 1 && e->data && e->size >= 2) {
        unsigned v = exif_get_short(e->data, exif_data_get_byte_order(ed));
        if (v >= SHARD_ORIENTATION_NORMAL && v <= SHARD_ORIENTATION_MAX)
            orientation = (int)v;
    }
    exif_data_unref(ed);
    return orientation;
}
