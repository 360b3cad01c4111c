/* gen_archives.c - an img2dataset-style folder of WebDataset tars, quickly.
 *
 *   gen_archives [options] DIR SAMPLES
 *     --per-tar K     samples per tar (default 10000, as img2dataset writes)
 *     --first-tar T   number of the first tar (default 0): a later call adds tars
 *     --size WxH      the images' size (default 32x24)
 *     --no-caption    only the images (default: a .txt caption beside each)
 *     --json          a .json beside each too (img2dataset's metadata)
 *     --seed S        what the pictures and captions are drawn from (default 1)
 *
 * Writes DIR/00000.tar, DIR/00001.tar, ..., each holding K samples named as
 * img2dataset names them: the tar's number and the sample's, "000010023.jpg"
 * with "000010023.txt" (and "000010023.json"), in that order.  The images are
 * real baseline JPEGs (libjpeg-turbo): 4096 pictures are encoded once, each a
 * gradient with a pattern, and every sample takes one of them; its caption
 * is unique.  The tars are written by libarchive (ustar), streamed, so that
 * ten million samples take minutes and memory that does not grow.  A tar is
 * written under a temporary name and renamed when complete.
 *
 * Used by bench/scale.sh and by the tests that need many archive entries. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>
#include <jpeglib.h>

#define PICTURES 4096

struct options {
    const char *dir;
    uint64_t samples;
    uint64_t per_tar;
    uint64_t first_tar;
    unsigned width, height;
    int caption;
    int json;
    uint64_t seed;
};

struct picture {
    unsigned char *data;
    unsigned long len;
};

static void die(const char *what)
{
    fprintf(stderr, "gen_archives: %s\n", what);
    exit(1);
}

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static int parse_u64(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-')
        return -1;
    *out = v;
    return 0;
}

/* One picture: a gradient in the colours r drew, with stripes of its own. */
static void encode_picture(const struct options *o, uint64_t r, struct picture *p)
{
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr jerr;
    c.err = jpeg_std_error(&jerr);
    jpeg_create_compress(&c);
    p->data = NULL;
    p->len = 0;
    jpeg_mem_dest(&c, &p->data, &p->len);
    c.image_width = o->width;
    c.image_height = o->height;
    c.input_components = 3;
    c.in_color_space = JCS_RGB;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, 85, TRUE);
    jpeg_start_compress(&c, TRUE);
    unsigned char *row = malloc(3 * (size_t)o->width);
    if (!row)
        die("out of memory");
    unsigned stripe = 2 + (unsigned)(r >> 40) % 7;
    for (unsigned y = 0; y < o->height; y++) {
        for (unsigned x = 0; x < o->width; x++) {
            unsigned on = ((x + y) / stripe) & 1;
            row[3 * x + 0] = (unsigned char)((r & 0xff) + x * 4 + on * 40);
            row[3 * x + 1] = (unsigned char)(((r >> 8) & 0xff) + y * 4);
            row[3 * x + 2] = (unsigned char)(((r >> 16) & 0xff) + on * 90);
        }
        JSAMPROW rows[1] = {row};
        jpeg_write_scanlines(&c, rows, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    free(row);
}

static void add_member(struct archive *a, struct archive_entry *e, const char *name,
                       const void *data, size_t len)
{
    archive_entry_clear(e);
    archive_entry_set_pathname(e, name);
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    archive_entry_set_size(e, (la_int64_t)len);
    archive_entry_set_mtime(e, 1700000000, 0);
    if (archive_write_header(a, e) != ARCHIVE_OK ||
        archive_write_data(a, data, len) != (la_ssize_t)len)
        die(archive_error_string(a));
}

static void write_tar(const struct options *o, uint64_t tar, uint64_t first, uint64_t count,
                      const struct picture *pics)
{
    char path[4096], tmp[4096], name[64], text[256];
    snprintf(path, sizeof path, "%s/%05" PRIu64 ".tar", o->dir, tar);
    snprintf(tmp, sizeof tmp, "%s/.%05" PRIu64 ".tar.part", o->dir, tar);
    struct archive *a = archive_write_new();
    struct archive_entry *e = archive_entry_new();
    if (!a || !e)
        die("out of memory");
    archive_write_set_format_ustar(a);
    archive_write_set_bytes_in_last_block(a, 1);
    if (archive_write_open_filename(a, tmp) != ARCHIVE_OK)
        die(archive_error_string(a));
    for (uint64_t i = 0; i < count; i++) {
        uint64_t n = first + i; /* the sample's number in the whole folder */
        uint64_t s = o->seed ^ (n * 0x9e3779b97f4a7c15ULL);
        uint64_t r = splitmix(&s);
        int stem = snprintf(name, sizeof name, "%05" PRIu64 "%04" PRIu64, tar, i % 10000);
        if (o->per_tar > 10000) /* more than img2dataset's four digits */
            stem = snprintf(name, sizeof name, "%05" PRIu64 "%08" PRIu64, tar, i);
        const struct picture *p = &pics[r % PICTURES];
        memcpy(name + stem, ".jpg", 5);
        add_member(a, e, name, p->data, p->len);
        if (o->caption) {
            int len = snprintf(text, sizeof text,
                               "a picture of thing %" PRIu64 " in colour %06" PRIx64, n,
                               (r >> 8) & 0xffffff);
            memcpy(name + stem, ".txt", 5);
            add_member(a, e, name, text, (size_t)len);
        }
        if (o->json) {
            int len = snprintf(text, sizeof text,
                               "{\"url\":\"https://example.com/%" PRIu64 ".jpg\",\"width\":%u,"
                               "\"height\":%u,\"status\":\"success\"}",
                               n, o->width, o->height);
            memcpy(name + stem, ".json", 6);
            add_member(a, e, name, text, (size_t)len);
        }
    }
    if (archive_write_close(a) != ARCHIVE_OK)
        die(archive_error_string(a));
    archive_write_free(a);
    archive_entry_free(e);
    if (rename(tmp, path))
        die(strerror(errno));
}

static void usage(void)
{
    fputs("usage: gen_archives [--per-tar K] [--first-tar T] [--size WxH] [--no-caption] "
          "[--json] [--seed S] DIR SAMPLES\n",
          stderr);
    exit(2);
}

int main(int argc, char **argv)
{
    struct options o = {.per_tar = 10000, .width = 32, .height = 24, .caption = 1, .seed = 1};
    int i = 1;
    for (; i < argc && argv[i][0] == '-' && argv[i][1] == '-'; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--no-caption")) {
            o.caption = 0;
        } else if (!strcmp(a, "--json")) {
            o.json = 1;
        } else if (!strcmp(a, "--per-tar") && v) {
            if (parse_u64(v, &o.per_tar) || !o.per_tar)
                usage();
            i++;
        } else if (!strcmp(a, "--first-tar") && v) {
            if (parse_u64(v, &o.first_tar) || o.first_tar > 99999)
                usage();
            i++;
        } else if (!strcmp(a, "--seed") && v) {
            if (parse_u64(v, &o.seed))
                usage();
            i++;
        } else if (!strcmp(a, "--size") && v) {
            if (sscanf(v, "%ux%u", &o.width, &o.height) != 2 || !o.width || !o.height ||
                o.width > 4096 || o.height > 4096)
                usage();
            i++;
        } else {
            usage();
        }
    }
    if (argc - i != 2 || parse_u64(argv[i + 1], &o.samples))
        usage();
    o.dir = argv[i];

    struct picture *pics = calloc(PICTURES, sizeof *pics);
    if (!pics)
        die("out of memory");
    uint64_t s = o.seed;
    for (int k = 0; k < PICTURES; k++)
        encode_picture(&o, splitmix(&s), &pics[k]);

    uint64_t tars = (o.samples + o.per_tar - 1) / o.per_tar;
    for (uint64_t t = 0; t < tars; t++) {
        uint64_t first = t * o.per_tar;
        uint64_t count = o.samples - first < o.per_tar ? o.samples - first : o.per_tar;
        write_tar(&o, o.first_tar + t, (o.first_tar + t) * o.per_tar, count, pics);
    }
    for (int k = 0; k < PICTURES; k++)
        free(pics[k].data);
    free(pics);
    return 0;
}
