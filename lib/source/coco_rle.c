/* coco_rle.c - COCO run-length encoded masks (see coco_rle.h).
 *
 * sk_rle_from_polygon and sk_rle_from_string follow rleFrPoly and
 * rleFrString of the COCO API's common/maskApi.c step by step, so that the
 * pixels are the ones pycocotools gives; the arithmetic is widened to 64
 * bits and every allocation and every count checked.  That file carries:
 *
 *   Microsoft COCO Toolbox.      version 2.0
 *   Code written by Piotr Dollar and Tsung-Yi Lin, 2015.
 *   Copyright (c) 2014, Piotr Dollar and Tsung-Yi Lin.  All rights reserved.
 *   Redistribution and use in source and binary forms, with or without
 *   modification, are permitted provided that the following conditions are
 *   met: 1. Redistributions of source code must retain the above copyright
 *   notice, this list of conditions and the following disclaimer.
 *   2. Redistributions in binary form must reproduce the above copyright
 *   notice, this list of conditions and the following disclaimer in the
 *   documentation and/or other materials provided with the distribution.
 *   THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS "AS
 *   IS" AND ANY EXPRESS OR IMPLIED WARRANTIES, INCLUDING, BUT NOT LIMITED
 *   TO, THE IMPLIED WARRANTIES OF MERCHANTABILITY AND FITNESS FOR A
 *   PARTICULAR PURPOSE ARE DISCLAIMED. IN NO EVENT SHALL THE COPYRIGHT OWNER
 *   OR CONTRIBUTORS BE LIABLE FOR ANY DIRECT, INDIRECT, INCIDENTAL, SPECIAL,
 *   EXEMPLARY, OR CONSEQUENTIAL DAMAGES (INCLUDING, BUT NOT LIMITED TO,
 *   PROCUREMENT OF SUBSTITUTE GOODS OR SERVICES; LOSS OF USE, DATA, OR
 *   PROFITS; OR BUSINESS INTERRUPTION) HOWEVER CAUSED AND ON ANY THEORY OF
 *   LIABILITY, WHETHER IN CONTRACT, STRICT LIABILITY, OR TORT (INCLUDING
 *   NEGLIGENCE OR OTHERWISE) ARISING IN ANY WAY OUT OF THE USE OF THIS
 *   SOFTWARE, EVEN IF ADVISED OF THE POSSIBILITY OF SUCH DAMAGE. */
#include "source/coco_rle.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* rleFrPoly's upsampling of the boundary. */
#define POLY_SCALE 5
/* Most boundary points of one polygon (each 16 bytes while rasterising):
 * past it the polygon is refused rather than allocated. */
#define POLY_POINTS_MAX (1ull << 26)
/* Characters of one number in the compressed string: 12 x 5 bits. */
#define STRING_DIGITS_MAX 12

void sk_rle_release(struct sk_rle *r)
{
    if (!r)
        return;
    free(r->counts);
    memset(r, 0, sizeof *r);
}

static int compare_u64(const void *pa, const void *pb)
{
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    return (a > b) - (a < b);
}

/* 0 when counts[0..n) cover h x w exactly, else SHARD_ECORRUPT. */
static int check_total(const uint64_t *counts, size_t n, uint64_t h, uint64_t w,
                       struct shard_err *why)
{
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (counts[i] > h * w - total)
            return shard_err_set(why, SHARD_ECORRUPT,
                                 "RLE counts cover more than the %llux%llu "
                                 "image",
                                 (unsigned long long)w, (unsigned long long)h);
        total += counts[i];
    }
    if (total != h * w)
        return shard_err_set(why, SHARD_ECORRUPT, "RLE counts cover %llu of the %llu pixels",
                             (unsigned long long)total, (unsigned long long)(h * w));
    return SHARD_OK;
}

int sk_rle_from_polygon(const double *xy, size_t k, uint64_t h, uint64_t w, struct sk_rle *r,
                        struct shard_err *why)
{
    memset(r, 0, sizeof *r);
    r->h = h;
    r->w = w;
    const double scale = POLY_SCALE;
    int64_t *x = malloc((k + 1) * sizeof *x), *y = malloc((k + 1) * sizeof *y);
    int64_t *u = NULL, *v = NULL;
    uint64_t *a = NULL, *b = NULL;
    int rc = SHARD_OK;
    if (!x || !y) {
        rc = shard_err_set(why, SHARD_ENOMEM, "out of memory");
        goto out;
    }
    /* upsample and get discrete points densely along the entire boundary */
    for (size_t j = 0; j < k; j++) {
        x[j] = (int64_t)(scale * xy[j * 2] + .5);
        y[j] = (int64_t)(scale * xy[j * 2 + 1] + .5);
    }
    x[k] = x[0];
    y[k] = y[0];
    uint64_t m = 0;
    for (size_t j = 0; j < k; j++) {
        uint64_t dx = (uint64_t)llabs(x[j] - x[j + 1]), dy = (uint64_t)llabs(y[j] - y[j + 1]);
        m += (dx > dy ? dx : dy) + 1;
        if (m > POLY_POINTS_MAX) {
            rc = shard_err_set(why, SHARD_ECORRUPT, "a polygon too long to rasterise");
            goto out;
        }
    }
    u = malloc((m ? m : 1) * sizeof *u);
    v = malloc((m ? m : 1) * sizeof *v);
    if (!u || !v) {
        rc = shard_err_set(why, SHARD_ENOMEM, "out of memory");
        goto out;
    }
    m = 0;
    for (size_t j = 0; j < k; j++) {
        int64_t xs = x[j], xe = x[j + 1], ys = y[j], ye = y[j + 1];
        int64_t dx = llabs(xe - xs), dy = llabs(ys - ye), t;
        int flip = (dx >= dy && xs > xe) || (dx < dy && ys > ye);
        if (flip) {
            t = xs, xs = xe, xe = t;
            t = ys, ys = ye, ye = t;
        }
        double s = dx >= dy ? (double)(ye - ys) / (double)dx : (double)(xe - xs) / (double)dy;
        if (dx >= dy)
            for (int64_t d = 0; d <= dx; d++) {
                t = flip ? dx - d : d;
                u[m] = t + xs;
                v[m] = (int64_t)((double)ys + s * (double)t + .5);
                m++;
            }
        else
            for (int64_t d = 0; d <= dy; d++) {
                t = flip ? dy - d : d;
                v[m] = t + ys;
                u[m] = (int64_t)((double)xs + s * (double)t + .5);
                m++;
            }
    }
    /* get points along the y-boundary and downsample */
    size_t n = (size_t)m;
    free(x);
    free(y);
    x = malloc((n ? n : 1) * sizeof *x);
    y = malloc((n ? n : 1) * sizeof *y);
    if (!x || !y) {
        rc = shard_err_set(why, SHARD_ENOMEM, "out of memory");
        goto out;
    }
    m = 0;
    for (size_t j = 1; j < n; j++) {
        if (u[j] == u[j - 1])
            continue;
        double xd = (double)(u[j] < u[j - 1] ? u[j] : u[j] - 1);
        xd = (xd + .5) / scale - .5;
        if (floor(xd) != xd || xd < 0 || xd > (double)w - 1)
            continue;
        double yd = (double)(v[j] < v[j - 1] ? v[j] : v[j - 1]);
        yd = (yd + .5) / scale - .5;
        if (yd < 0)
            yd = 0;
        else if (yd > (double)h)
            yd = (double)h;
        yd = ceil(yd);
        x[m] = (int64_t)xd;
        y[m] = (int64_t)yd;
        m++;
    }
    /* compute the RLE encoding given the y-boundary points */
    size_t count = (size_t)m;
    a = malloc((count + 1) * sizeof *a);
    b = malloc((count + 1) * sizeof *b);
    if (!a || !b) {
        rc = shard_err_set(why, SHARD_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t j = 0; j < count; j++)
        a[j] = (uint64_t)x[j] * h + (uint64_t)y[j];
    a[count++] = h * w;
    qsort(a, count, sizeof *a, compare_u64);
    uint64_t p = 0;
    for (size_t j = 0; j < count; j++) {
        uint64_t t = a[j];
        a[j] -= p;
        p = t;
    }
    size_t j = 0;
    m = 0;
    b[m++] = a[j++];
    while (j < count) {
        if (a[j] > 0) {
            b[m++] = a[j++];
        } else {
            j++;
            if (j < count)
                b[m - 1] += a[j++];
        }
    }
    r->counts = b;
    r->count = (size_t)m;
    b = NULL;
out:
    free(x);
    free(y);
    free(u);
    free(v);
    free(a);
    free(b);
    return rc;
}

/* Start r as an h x w mask with room for n counts (none yet): the opening
 * of the readers of stored counts.  0 or SHARD_ENOMEM. */
static int rle_begin(struct sk_rle *r, uint64_t h, uint64_t w, size_t n, struct shard_err *why)
{
    memset(r, 0, sizeof *r);
    r->h = h;
    r->w = w;
    r->counts = malloc((n ? n : 1) * sizeof *r->counts);
    if (!r->counts)
        return shard_err_set(why, SHARD_ENOMEM, "out of memory");
    return SHARD_OK;
}

/* Close what rle_begin opened (or failed to): with rc 0, r holds its first
 * n counts once they cover the image exactly; else (rc, or SHARD_ECORRUPT
 * from that check) r is left without counts, its size kept.  Returns that
 * outcome. */
static int rle_finish(struct sk_rle *r, size_t n, int rc, struct shard_err *why)
{
    if (rc == SHARD_OK)
        rc = check_total(r->counts, n, r->h, r->w, why);
    if (rc) {
        free(r->counts);
        r->counts = NULL;
        n = 0;
    }
    r->count = n;
    return rc;
}

int sk_rle_from_string(const char *s, uint64_t h, uint64_t w, struct sk_rle *r,
                       struct shard_err *why)
{
    int rc = rle_begin(r, h, w, strlen(s), why);
    if (rc)
        return rc;
    uint64_t *counts = r->counts;
    size_t m = 0, p = 0;
    while (s[p]) {
        int64_t x = 0;
        int k = 0, more = 1;
        while (more) {
            if (s[p] < 48 || s[p] > 111 || k >= STRING_DIGITS_MAX) {
                rc = shard_err_set(why, SHARD_ECORRUPT,
                                   "RLE string is malformed at "
                                   "character %zu",
                                   p);
                goto out;
            }
            int c = s[p] - 48;
            x |= (int64_t)(c & 0x1f) << (5 * k);
            more = c & 0x20;
            p++;
            k++;
            if (!more && (c & 0x10))
                x |= -(int64_t)((uint64_t)1 << (5 * k)); /* sign-extend */
        }
        if (m > 2)
            x += (int64_t)counts[m - 2];
        if (x < 0) {
            rc = shard_err_set(why, SHARD_ECORRUPT, "RLE string gives a negative count");
            goto out;
        }
        counts[m++] = (uint64_t)x;
    }
out:
    return rle_finish(r, m, rc, why);
}

int sk_rle_from_counts(const json_t *list, uint64_t h, uint64_t w, struct sk_rle *r,
                       struct shard_err *why)
{
    size_t n = json_array_size(list);
    int rc = rle_begin(r, h, w, n, why);
    for (size_t i = 0; i < n && rc == SHARD_OK; i++) {
        const json_t *c = json_array_get(list, i);
        if (!json_is_integer(c) || json_integer_value(c) < 0)
            rc = shard_err_set(why, SHARD_ECORRUPT,
                               "RLE count %zu is no non-negative "
                               "integer",
                               i);
        else
            r->counts[i] = (uint64_t)json_integer_value(c);
    }
    return rle_finish(r, n, rc, why);
}

void sk_rle_paint(const struct sk_rle *r, uint32_t value, struct shard_image *mask)
{
    const uint32_t bytes = mask->channels;
    uint8_t le[2] = {(uint8_t)value, (uint8_t)(value >> 8)};
    uint64_t pos = 0;
    for (size_t i = 0; i < r->count; i++) {
        uint64_t end = pos + r->counts[i];
        if (i % 2) /* a run of 1s: position p is column p / h, row p % h */
            for (uint64_t p = pos; p < end && p < r->h * r->w; p++)
                memcpy(mask->pixels + (size_t)(p % r->h) * mask->stride +
                           (size_t)(p / r->h) * bytes,
                       le, bytes);
        pos = end;
    }
}
