/* fidelity.c - --fidelity N: re-run shardify's conversion (the very
 * sk_record_build() it uses, with the manifest's config) on N source files
 * spread evenly over stored order, and compare with what is stored.
 *
 * The stored payload and the re-run's payload are both decoded and
 * compared: raw and png must give identical pixels; jpeg is measured by
 * PSNR against SHARD_FIDELITY_DEFAULT_PSNR or the caller's threshold (the
 * same build gives identical bytes; another build of libjpeg-turbo or of
 * the resizer may move pixels by a level).  The pipeline is also run with
 * the codec set to raw, which yields the pixels just before encoding: the
 * stored pixels against those give the codec's own loss (loss_psnr). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shardx/shardx.h"
#include "record/record_build.h"
#include "shardkit/source.h"
#include "source/source_internal.h"
#include "verify/verify_internal.h"

#define PSNR_PEAK 255.0

/* What one thread reuses from sample to sample. */
struct fidelity_thread {
    struct record_builder *as_stored; /* the manifest's config */
    struct record_builder *as_pixels; /* the same with codec raw */
    struct shard_buf source;
    struct shard_buf payload;   /* the re-run's payload */
    struct shard_buf pixels;    /* the re-run's pixels before encoding */
    struct shard_image decoded; /* the re-run's payload, decoded */
    struct shard_image before;  /* the re-run's pixels before encoding */
    struct shard_image tmp;
    struct shard_item item; /* the stored sample */
};

/* The chosen samples' source bytes, for archives (read in one pass, and
 * again for a sample whose bytes are another entry's: a hard link). */
struct captured {
    const char *key;
    size_t len;
    uint64_t k; /* position in the results */
    struct shard_buf bytes;
    int have;
    int seen; /* its (first) entry was met: candidate number `cand` */
    uint64_t cand;
    int need; /* its bytes are those of `from` (sk_links_source) */
    struct sk_link_copy from;
};

/* PSNR of two images of one size and form (8-bit samples against a peak
 * of 255, 16-bit ones of 65535). */
static double psnr(const struct shard_image *a, const struct shard_image *b)
{
    int wide = a->depth == 16;
    double peak = wide ? 65535.0 : PSNR_PEAK, sse = 0;
    size_t n = (size_t)a->width * a->channels;
    for (uint32_t y = 0; y < a->height; y++) {
        const uint8_t *ra = a->pixels + (size_t)y * a->stride,
                      *rb = b->pixels + (size_t)y * b->stride;
        for (size_t i = 0; i < n; i++) {
            double d;
            if (wide) {
                uint16_t va, vb;
                memcpy(&va, ra + 2 * i, 2);
                memcpy(&vb, rb + 2 * i, 2);
                d = (double)va - (double)vb;
            } else {
                d = (double)ra[i] - (double)rb[i];
            }
            sse += d * d;
        }
    }
    if (sse == 0)
        return INFINITY;
    return 10.0 * log10(peak * peak * (double)n * a->height / sse);
}

/* *img decoded from a payload of form `stored`, in the form the reader
 * gave the stored sample (`like`): a narrower record of a mixed dataset is
 * widened as the reader widens it (losslessly), so exact stays exact. */
static int as_read(struct shard_image *img, const struct shard_item *like,
                   const struct shard_config *c, struct shard_image *tmp, struct shard_err *err)
{
    if (img->channels == like->pixels.channels && img->depth == like->pixels.depth)
        return SHARD_OK;
    int rc = shard_image_convert(img, like->pixels.channels, like->pixels.depth, c->background, tmp,
                                 err);
    if (!rc) {
        struct shard_image t = *img;
        *img = *tmp;
        *tmp = t;
    }
    return rc;
}

static int compare_captured(const void *pa, const void *pb)
{
    const struct captured *a = pa, *b = pb;
    return sk_key_compare(a->key, a->len, b->key, b->len);
}

static int keep_bytes(struct captured *c, const struct shard_buf *buf, struct shard_err *err)
{
    c->bytes.len = 0;
    int rc = shard_buf_append(&c->bytes, buf->data, buf->len, err);
    c->have = rc == 0;
    return rc;
}

/* Entries the second reading wants besides candidates: hidden items. */
struct reread {
    struct sk_archive *a;
    struct captured *cap;
    uint64_t n;
    const struct sk_links *links;
};

static int reread_wants(void *ctx, const char *key, size_t len)
{
    const struct reread *r = ctx;
    uint64_t ordinal = sk_archive_ordinal(r->a);
    for (uint64_t i = 0; i < r->n; i++)
        if (r->cap[i].need && r->cap[i].from.from == SK_FROM_ITEM &&
            sk_links_item_ordinal(r->links, r->cap[i].from.source) == ordinal)
            return 1;
    return 0;
}

/* Read the archive again for the samples whose bytes are another entry's. */
static int capture_linked(struct verify_run *v, struct captured *cap, uint64_t n,
                          const struct sk_links *links, struct shard_err *err)
{
    struct reread r = {NULL, cap, n, links};
    int rc = sk_archive_open(&r.a, v->o->source, err);
    if (rc)
        return rc;
    struct shard_buf buf = {0};
    struct shard_scan_stats st = {0};
    struct sk_archive_entry ent;
    uint64_t cand = 0;
    while ((rc = sk_archive_next_entry(r.a, v->m->config.max_file_bytes, reread_wants, &r, &ent,
                                       &buf, &st, err)) == 1) {
        uint64_t ordinal = sk_archive_ordinal(r.a);
        for (uint64_t i = 0; i < n && rc >= 0; i++) {
            struct captured *c = &cap[i];
            int mine = c->need &&
                       (ent.candidate
                            ? c->from.from == SK_FROM_CANDIDATE && c->from.source == cand
                            : c->from.from == SK_FROM_ITEM &&
                                  sk_links_item_ordinal(links, c->from.source) == ordinal);
            if (mine && !ent.problem && !ent.too_large && !ent.link_only)
                rc = keep_bytes(c, &buf, err);
        }
        if (rc < 0)
            break;
        cand += ent.candidate;
    }
    shard_buf_release(&buf);
    sk_archive_close(r.a);
    return rc < 0 ? rc : SHARD_OK;
}

/* One pass over the archive keeping the bytes of the chosen keys (the
 * first entry of a name, as shardify keeps), noting its hard links; a
 * chosen sample that is a link gets its bytes in a second reading. */
static int capture_from_archive(struct verify_run *v, struct captured *cap, uint64_t n,
                                struct shard_err *err)
{
    qsort(cap, n, sizeof *cap, compare_captured);
    struct sk_archive *a;
    struct sk_links *links = NULL;
    int rc = sk_archive_open(&a, v->o->source, err);
    if (rc)
        return rc;
    struct shard_buf buf = {0};
    struct shard_scan_stats st = {0};
    struct shard_keylist keys = {0};
    if ((rc = sk_links_new(&links, err)))
        goto out;
    for (uint64_t cand = 0;; cand++) {
        const char *key;
        size_t len;
        uint64_t too_large = 0;
        int link_only = 0;
        rc = sk_archive_next(a, v->m->config.max_file_bytes, &key, &len, &buf, &too_large, &st,
                             err);
        if (rc <= 0)
            break;
        if ((rc = sk_links_note(links, a, cand, err)) ||
            (rc = shard_keylist_add(&keys, key, len, err)))
            goto out;
        struct captured probe = {.key = key, .len = len};
        struct captured *hit = bsearch(&probe, cap, n, sizeof *cap, compare_captured);
        if (!hit)
            continue;
        sk_archive_link(a, NULL, &link_only);
        int usable = !too_large && !sk_archive_problem(a) && !link_only;
        /* equal keys sit side by side: take the first not yet met */
        while (hit > cap && !compare_captured(hit - 1, &probe))
            hit--;
        for (; hit < cap + n && !compare_captured(hit, &probe); hit++)
            if (!hit->seen) {
                hit->seen = 1;
                hit->cand = cand;
                if (usable && (rc = keep_bytes(hit, &buf, err)))
                    goto out;
                break;
            }
    }
    if (rc < 0 || !sk_links_any(links))
        goto out;
    sk_archive_close(a);
    a = NULL;
    if ((rc = sk_links_resolve(links, &keys, v->o->source, v->m->config.max_file_bytes, NULL, NULL,
                               err)))
        goto out;
    int again = 0;
    for (uint64_t i = 0; i < n; i++)
        if (cap[i].seen && sk_links_source(links, cap[i].cand, &cap[i].from) &&
            cap[i].from.from != SK_FROM_NOWHERE) {
            cap[i].need = again = 1;
            cap[i].have = 0;
        }
    if (again)
        rc = capture_linked(v, cap, n, links, err);
out:
    shard_buf_release(&buf);
    shard_keylist_release(&keys);
    sk_links_free(links);
    sk_archive_close(a);
    return rc < 0 ? rc : SHARD_OK;
}

static void thread_release(struct fidelity_thread *w)
{
    sk_record_builder_free(w->as_stored);
    sk_record_builder_free(w->as_pixels);
    shard_buf_release(&w->source);
    shard_buf_release(&w->payload);
    shard_buf_release(&w->pixels);
    shard_image_release(&w->decoded);
    shard_image_release(&w->before);
    shard_image_release(&w->tmp);
    shard_item_release(&w->item);
}

/* Compare sample `index` (result *res, key already set) with a re-run of
 * the pipeline on `src`. */
static void compare_one(struct verify_run *v, struct fidelity_thread *w, uint64_t index,
                        const uint8_t *src, size_t src_len, double min_psnr,
                        struct shard_fidelity_result *res)
{
    char q[SHARDX_QUOTE_SIZE];
    shardx_quote(res->key, res->key_len, q, sizeof q);
    const char *file = v->m->shards[res->shard].file;
    unsigned long long rec = (unsigned long long)res->record;
    struct shard_err e;
    shard_err_clear(&e);
#define FIDELITY_PROBLEM(code, ...)                                                              \
    sk_verify_problem(v, SHARD_CHECK_FIDELITY, code, res->shard, (int64_t)res->record, res->key, \
                      res->key_len, __VA_ARGS__)
    int rc = shard_dataset_read(v->ds, index,
                                SHARD_READ_PIXELS | SHARD_READ_STORED | SHARD_READ_VERIFY, &w->item,
                                &e);
    if (rc) {
        FIDELITY_PROBLEM(rc, "fidelity: %s", e.msg);
        return;
    }
    struct shard_record_meta m1, m2;
    enum shard_codec codec = v->m->config.codec;
    if ((rc = sk_record_build(w->as_stored, src, src_len, &w->payload, &m1, NULL, NULL, &e)) ||
        (rc = sk_record_build(w->as_pixels, src, src_len, &w->pixels, &m2, NULL, NULL, &e)) ||
        (rc = shard_decode_payload_form(codec, w->payload.data, w->payload.len, m1.width, m1.height,
                                        m1.channels, m1.depth, &w->decoded, &e)) ||
        (rc = shard_decode_payload_form(SHARD_CODEC_RAW, w->pixels.data, w->pixels.len, m2.width,
                                        m2.height, m2.channels, m2.depth, &w->before, &e)) ||
        (rc = as_read(&w->decoded, &w->item, &v->m->config, &w->tmp, &e)) ||
        (rc = as_read(&w->before, &w->item, &v->m->config, &w->tmp, &e))) {
        FIDELITY_PROBLEM(rc, "fidelity: %s record %llu (key '%s'): the pipeline now fails: %s",
                         file, rec, q, e.msg);
        return;
    }
    const struct shard_item *it = &w->item;
    res->width = it->width;
    res->height = it->height;
    if (it->width != m1.width || it->height != m1.height || m1.width != m2.width ||
        m1.height != m2.height) {
        FIDELITY_PROBLEM(SHARD_EMISMATCH,
                         "fidelity: %s record %llu (key '%s'): stored %ux%u, the pipeline "
                         "gives %ux%u",
                         file, rec, q, it->width, it->height, m1.width, m1.height);
        return;
    }
    if (it->stored_channels != m1.channels || it->stored_depth != m1.depth) {
        FIDELITY_PROBLEM(SHARD_EMISMATCH,
                         "fidelity: %s record %llu (key '%s'): stored as %s of %u bits, the "
                         "pipeline gives %s of %u bits",
                         file, rec, q, shard_pixels_name(it->stored_channels), it->stored_depth,
                         shard_pixels_name(m1.channels), m1.depth);
        return;
    }
    res->same_bytes = w->payload.len == it->stored.len &&
                      !memcmp(w->payload.data, it->stored.data, it->stored.len);
    res->psnr = psnr(&it->pixels, &w->decoded);
    res->loss_psnr = psnr(&it->pixels, &w->before);
    res->exact = isinf(res->psnr);
    int lossy = codec == SHARD_CODEC_JPEG;
    res->passed = lossy ? res->psnr >= min_psnr : res->exact;
    if (res->passed)
        return;
    if (lossy)
        FIDELITY_PROBLEM(SHARD_EMISMATCH,
                         "fidelity: %s record %llu (key '%s'): psnr %.2f db against a re-run "
                         "of the pipeline is below the threshold %.2f db",
                         file, rec, q, res->psnr, min_psnr);
    else
        FIDELITY_PROBLEM(SHARD_EMISMATCH,
                         "fidelity: %s record %llu (key '%s'): stored pixels differ from a "
                         "re-run of the pipeline (psnr %.2f db; %s must be exact)",
                         file, rec, q, res->psnr, shard_codec_name(codec));
#undef FIDELITY_PROBLEM
}

static int choose_samples(struct verify_run *v, uint64_t n, struct shard_err *err)
{
    struct shard_verify_report *r = v->report;
    r->fidelity = calloc(n ? n : 1, sizeof *r->fidelity);
    if (!r->fidelity)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    for (uint64_t k = 0; k < n; k++) {
        struct shard_fidelity_result *res = &r->fidelity[r->fidelity_count];
        uint64_t g = (uint64_t)((unsigned __int128)k * v->samples / n);
        shard_dataset_locate(v->ds, g, &res->shard, &res->record, NULL);
        size_t len;
        if (!(res->key = sk_verify_key_of(v, g, &len)))
            continue; /* its shard is unreadable, and reported */
        res->key_len = len;
        res->psnr = NAN;
        res->loss_psnr = NAN;
        r->fidelity_count++;
    }
    return SHARD_OK;
}

/* The source bytes of sample `res`: the archive's entry `c` as captured, or
 * its file under `root` read into w->source.  NULL, reported, when it has
 * none. */
static const uint8_t *source_of(struct verify_run *v, struct fidelity_thread *w, int archive,
                                const struct captured *c, struct sk_source_root *root,
                                const struct shard_fidelity_result *res, size_t *len)
{
    struct shard_err e;
    shard_err_clear(&e);
    if (archive && c->have) {
        *len = c->bytes.len;
        return c->bytes.data;
    }
    if (!archive &&
        sk_source_root_read(root, res->key, v->m->config.max_file_bytes, &w->source, &e) == 0) {
        *len = w->source.len;
        return w->source.data;
    }
    char q[SHARDX_QUOTE_SIZE];
    sk_verify_problem(v, SHARD_CHECK_FIDELITY, SHARD_ENOTFOUND, res->shard, (int64_t)res->record,
                      res->key, res->key_len, "fidelity: '%s': cannot read its source file: %s",
                      shardx_quote(res->key, res->key_len, q, sizeof q),
                      archive ? "not in the archive" : e.msg);
    return NULL;
}

/* Compare the n chosen samples (by_k[k]: the captured source of result k)
 * with re-runs of the pipeline, on v->threads threads, each with its own
 * builders.  0, or SHARD_ENOMEM when a thread could not set them up. */
static int compare_all(struct verify_run *v, struct captured **by_k, uint64_t n, int archive,
                       struct sk_source_root *root, double min_psnr, struct shard_err *err)
{
    struct shard_verify_report *r = v->report;
    struct shard_config pixels_config = v->m->config;
    pixels_config.codec = SHARD_CODEC_RAW;
    int failed = 0;
#pragma omp parallel num_threads(v->threads)
    {
        struct fidelity_thread w;
        memset(&w, 0, sizeof w);
        struct shard_err e;
        int ok = sk_record_builder_new(&w.as_stored, &v->m->config, &e) == 0 &&
                 sk_record_builder_new(&w.as_pixels, &pixels_config, &e) == 0;
        if (!ok) {
#pragma omp atomic write
            failed = 1;
        }
#pragma omp for schedule(dynamic, 1)
        for (uint64_t k = 0; k < n; k++) {
            struct shard_fidelity_result *res = &r->fidelity[k];
            size_t src_len = 0;
            const uint8_t *src = ok ? source_of(v, &w, archive, by_k[k], root, res, &src_len)
                                    : NULL;
            if (!src)
                continue;
            uint64_t g;
            shard_dataset_index_of(v->ds, res->shard, res->record, &g, NULL);
            compare_one(v, &w, g, src, src_len, min_psnr, res);
        }
        thread_release(&w);
    }
    return failed ? shard_err_set(err, SHARD_ENOMEM, "cannot set up the conversion pipeline")
                  : SHARD_OK;
}

int sk_verify_fidelity(struct verify_run *v, struct shard_err *err)
{
    struct shard_verify_report *r = v->report;
    uint64_t n = v->o->fidelity < v->samples ? v->o->fidelity : v->samples;
    double min_psnr = v->o->min_psnr > 0 ? v->o->min_psnr : SHARD_FIDELITY_DEFAULT_PSNR;
    r->min_psnr = min_psnr;
    int rc = choose_samples(v, n, err);
    if (rc)
        return rc;
    n = r->fidelity_count;
    struct stat st;
    int archive = !sk_source_is_s3(v->o->source) && stat(v->o->source, &st) == 0 &&
                  S_ISREG(st.st_mode);
    struct captured *cap = calloc(n ? n : 1, sizeof *cap);
    struct sk_source_root root = {.fd = -1};
    if (!cap)
        return shard_err_set(err, SHARD_ENOMEM, "out of memory");
    for (uint64_t k = 0; k < n; k++)
        cap[k] = (struct captured){.key = r->fidelity[k].key,
                                   .len = r->fidelity[k].key_len,
                                   .k = k};
    if (archive) {
        if ((rc = capture_from_archive(v, cap, n, err)))
            goto out;
    } else if ((rc = sk_source_root_open(&root, v->o->source, err))) {
        goto out;
    }
    /* after the archive pass cap[] is sorted by key: find each result's entry */
    struct captured **by_k = calloc(n ? n : 1, sizeof *by_k);
    if (!by_k) {
        rc = shard_err_set(err, SHARD_ENOMEM, "out of memory");
        goto out;
    }
    for (uint64_t i = 0; i < n; i++)
        by_k[cap[i].k] = &cap[i];
    rc = compare_all(v, by_k, n, archive, &root, min_psnr, err);
    free(by_k);
out:
    sk_source_root_close(&root);
    for (uint64_t k = 0; k < n; k++)
        shard_buf_release(&cap[k].bytes);
    free(cap);
    return rc;
}
