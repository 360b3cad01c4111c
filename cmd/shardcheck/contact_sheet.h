/* contact_sheet.h - a sample of the stored images, small, for the report page:
 * what training will see, without running shardcat.
 *
 * Up to CONTACT_SHEET_MAX samples spread evenly over the stored order, each
 * read and decoded from the dataset through the public API and scaled to fit
 * a CONTACT_THUMB_SIZE square, kept as JPEG bytes made by the library's
 * encoder (the page embeds them as data: URIs, so its size stays bounded:
 * a few kilobytes a thumbnail), with the sample's caption when the dataset
 * declares a text field named "caption", else its first text field.  A
 * sample that cannot be read is kept with the reason (the verdict names the
 * damage as a problem already). */
#ifndef SHARDCHECK_CONTACT_SHEET_H
#define SHARDCHECK_CONTACT_SHEET_H

#include <stddef.h>
#include <stdint.h>

#include "shardkit.h"

#define CONTACT_SHEET_MAX 48
#define CONTACT_THUMB_SIZE 128
#define CONTACT_THUMB_QUALITY 85
/* Bytes of a caption kept, at most (cut at a character boundary, then "..."). */
#define CONTACT_CAPTION_MAX 300

struct contact_thumb {
    uint64_t index; /* the sample's position in stored order */
    char *key;      /* key_len bytes + NUL */
    size_t key_len;
    uint32_t width, height; /* as stored */
    uint32_t thumb_width, thumb_height;
    struct shard_buf jpeg; /* the thumbnail; len 0 when the sample could not be read */
    char *caption;         /* caption_len bytes of UTF-8 + NUL, or NULL: no caption
                            * field, or the sample has none */
    size_t caption_len;
    int caption_cut; /* the caption was longer than CONTACT_CAPTION_MAX */
    char *error;     /* why it could not be read, or NULL */
};

struct contact_sheet {
    struct contact_thumb *thumbs; /* count of them, in stored order */
    size_t count;
    uint64_t samples;    /* in the dataset */
    char *caption_field; /* the field captions come from, or NULL */
};

/* Read the sheet of the dataset at dst.  0, or -1 with *why set (malloc'd)
 * when the dataset cannot be opened or memory runs out; a sample that cannot
 * be read is no failure (its thumb says why).  Release with
 * contact_sheet_release in both cases. */
int contact_sheet_load(struct contact_sheet *cs, const char *dst, char **why);
void contact_sheet_release(struct contact_sheet *cs); /* accepts NULL */

#endif
