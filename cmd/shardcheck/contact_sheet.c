/* contact_sheet.c - a sample of the stored images for the report page (see
 * contact_sheet.h). */
#include "contact_sheet.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The field captions come from: "caption" when it is a text field, else the
 * first text field; -1 when there is none. */
static int32_t caption_field(const struct shard_config *c)
{
    int32_t named = shard_config_field(c, "caption");
    if (named >= 0 && c->fields[named].type == SHARD_FIELD_TEXT)
        return named;
    for (uint32_t i = 0; i < c->field_count; i++)
        if (c->fields[i].type == SHARD_FIELD_TEXT)
            return (int32_t)i;
    return -1;
}

/* A copy of the caption value, cut to CONTACT_CAPTION_MAX bytes at a
 * character boundary (the value is valid UTF-8: the read checked it). */
static int keep_caption(struct contact_thumb *t, const uint8_t *data, uint64_t len)
{
    size_t keep = len > CONTACT_CAPTION_MAX ? CONTACT_CAPTION_MAX : (size_t)len;
    while (keep < len && keep > 0 && (data[keep] & 0xC0) == 0x80)
        keep--; /* data[keep] continues a character: cut before that character */
    t->caption = malloc(keep + 1);
    if (!t->caption)
        return -1;
    memcpy(t->caption, data, keep);
    t->caption[keep] = '\0';
    t->caption_len = keep;
    t->caption_cut = keep < len;
    return 0;
}

/* The thumbnail's size: the stored size scaled to fit the square, never up. */
static void thumb_size(uint32_t w, uint32_t h, uint32_t *tw, uint32_t *th)
{
    uint32_t longer = w > h ? w : h;
    if (longer <= CONTACT_THUMB_SIZE) {
        *tw = w;
        *th = h;
        return;
    }
    *tw = (uint32_t)((uint64_t)w * CONTACT_THUMB_SIZE / longer);
    *th = (uint32_t)((uint64_t)h * CONTACT_THUMB_SIZE / longer);
    if (*tw == 0)
        *tw = 1;
    if (*th == 0)
        *th = 1;
}

/* Read, decode, scale and encode sample `index` into *t.  0, or -1 when
 * memory runs out; a sample that cannot be read gets t->error. */
static int load_thumb(struct shard_dataset *ds, uint64_t index, int32_t field,
                      struct shard_item *item, struct shard_image *small, struct contact_thumb *t)
{
    struct shard_err err;
    shard_err_clear(&err);
    t->index = index;
    unsigned flags = SHARD_READ_PIXELS | (field < 0 ? SHARD_READ_NO_FIELDS : 0);
    int rc = shard_dataset_read(ds, index, flags, item, &err);
    if (rc == 0) {
        t->width = item->width;
        t->height = item->height;
        thumb_size(item->width, item->height, &t->thumb_width, &t->thumb_height);
        rc = shard_resize(&item->pixels, t->thumb_width, t->thumb_height, small, &err);
        if (rc == 0)
            rc = shard_encode(small, SHARD_CODEC_JPEG, CONTACT_THUMB_QUALITY, &t->jpeg, &err);
    }
    if (rc == SHARD_ENOMEM)
        return -1;
    if (rc) {
        t->jpeg.len = 0;
        if (!(t->error = strdup(err.msg)))
            return -1;
        /* its key from the shard's footer, when that can be read */
        const char *key;
        size_t key_len;
        if (shard_dataset_key(ds, index, &key, &key_len, NULL) == 0) {
            if (!(t->key = strndup(key, key_len)))
                return -1;
            t->key_len = key_len;
        }
        return 0;
    }
    t->key = strndup((const char *)item->key.data, item->key.len);
    t->key_len = item->key.len;
    if (!t->key)
        return -1;
    for (uint32_t i = 0; i < item->field_count; i++)
        if (field >= 0 && item->fields[i].field == (uint32_t)field)
            return keep_caption(t, item->fields[i].data, item->fields[i].len);
    return 0;
}

int contact_sheet_load(struct contact_sheet *cs, const char *dst, char **why)
{
    memset(cs, 0, sizeof *cs);
    *why = NULL;
    struct shard_dataset *ds = NULL;
    struct shard_item item = {0};
    struct shard_image small = {0};
    struct shard_err err;
    int rc = -1;
    if (shard_dataset_open(&ds, dst, &err)) {
        *why = strdup(err.msg);
        return -1;
    }
    const struct shard_config *config = &shard_dataset_manifest(ds)->config;
    int32_t field = caption_field(config);
    if (field >= 0 && !(cs->caption_field = strdup(config->fields[field].name)))
        goto out;
    cs->samples = shard_dataset_size(ds);
    size_t n = cs->samples < CONTACT_SHEET_MAX ? (size_t)cs->samples : CONTACT_SHEET_MAX;
    if (n && !(cs->thumbs = calloc(n, sizeof *cs->thumbs)))
        goto out;
    for (size_t i = 0; i < n; i++, cs->count++) {
        /* evenly over the stored order, the first sample included */
        if (load_thumb(ds, (uint64_t)i * cs->samples / n, field, &item, &small, &cs->thumbs[i]))
            goto out;
    }
    rc = 0;
out:
    if (rc && !*why)
        *why = strdup("out of memory");
    shard_image_release(&small);
    shard_item_release(&item);
    shard_dataset_close(ds);
    return rc;
}

void contact_sheet_release(struct contact_sheet *cs)
{
    if (!cs)
        return;
    for (size_t i = 0; i < cs->count; i++) {
        free(cs->thumbs[i].key);
        free(cs->thumbs[i].caption);
        free(cs->thumbs[i].error);
        shard_buf_release(&cs->thumbs[i].jpeg);
    }
    free(cs->thumbs);
    free(cs->caption_field);
    memset(cs, 0, sizeof *cs);
}
