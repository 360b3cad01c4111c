/* fuzz_shard.c - the shard reader on arbitrary bytes.
 *
 * Each input is treated three ways:
 *  1. as a whole shard file held in memory: shard_header_parse, then
 *     shard_trailer_parse on the last 40 bytes, shard_footer_parse on the
 *     footer it points to, and shard_record_decode of every record frame the
 *     footer lists, with the footer's frame_xxh3 (what a ranged reader does);
 *  2. as one record frame: shard_record_decode without an expected hash (the
 *     zstd and record-header checks on their own);
 *  3. as a shard file on disk (a memfd): shard_file_open and
 *     shard_file_read_record of every record (what shardcheck and the
 *     dataset reader do);
 *  4. as one record frame decompressed into a caller's buffer that is kept
 *     from input to input, as a raw read decompresses into a sample's pixel
 *     buffer (sk_record_decode_into): the view must lie inside it.
 * A record's fields (format version 2) are walked and each value is given
 * to shard_field_check, shardcheck --deep's check of a value's type.
 * Whatever the parsers accept must satisfy the invariants the format
 * promises (checked below with abort(), so the fuzzer reports a violation
 * like a crash), and every byte a view points to is read, so that an
 * out-of-bounds pointer shows up under AddressSanitizer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz_target.h"
#include "format/record_internal.h" /* lib/: sk_record_decode_into */
#include "shardkit/format.h"
#include "shardkit/manifest.h"

static struct shard_record_decoder *decoder;
static int shard_fd = -1;        /* memfd holding the input for mode 3 */
static char shard_path[64];      /* "/proc/self/fd/N" */
static volatile uint8_t sink;    /* keeps the byte reads below from being optimised out */
static struct shard_buf outside; /* mode 4's buffer, reused across inputs */

#define REQUIRE(cond)                                                                      \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            fprintf(stderr, "fuzz_shard: invariant failed: %s (%s:%d)\n", #cond, __FILE__, \
                    __LINE__);                                                             \
            abort();                                                                       \
        }                                                                                  \
    } while (0)

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    struct shard_err err;
    if (shard_record_decoder_new(&decoder, &err) != 0) {
        fprintf(stderr, "fuzz_shard: %s\n", err.msg);
        abort();
    }
    shard_fd = memfd_create("fuzz-shard", MFD_CLOEXEC);
    if (shard_fd < 0) {
        perror("fuzz_shard: memfd_create");
        abort();
    }
    snprintf(shard_path, sizeof shard_path, "/proc/self/fd/%d", shard_fd);
    return 0;
}

/* The fields of a decoded record (format version 2): every value lies
 * inside the field area, in increasing field number, and shardcheck's value
 * check (shard_field_check, as if each were declared of its stored type)
 * gives a verdict on any bytes without reading past them. */
static void touch_fields(const struct shard_record_view *v)
{
    static struct shard_field_value values[SHARD_FIELDS_MAX];
    REQUIRE(v->field_count <= SHARD_FIELDS_MAX);
    REQUIRE(v->version == 2 || v->field_count == 0);
    uint32_t n = shard_record_fields(v, values, SHARD_FIELDS_MAX);
    REQUIRE(n == v->field_count);
    for (uint32_t i = 0; i < n; i++) {
        const struct shard_field_value *f = &values[i];
        REQUIRE(f->data >= v->fields && f->data + f->len <= v->fields + v->fields_len);
        REQUIRE(i == 0 || f->field > values[i - 1].field);
        REQUIRE(shard_field_type_name(f->type) != NULL);
        struct shard_field_decl decl = {.name = "fuzzed", .type = f->type, .sidecar = ".x"};
        if (f->type == SHARD_FIELD_FLOAT32)
            decl.length = (uint32_t)(f->len / 4);
        if (f->type == SHARD_FIELD_INT64)
            decl.length = (uint32_t)(f->len / 8);
        struct shard_err err;
        int rc = shard_field_check(&decl, f->data, f->len, 3, &err);
        REQUIRE(rc == 0 || rc == SHARD_ECORRUPT);
    }
}

/* Read every byte of a decoded record. */
static void touch_view(const struct shard_record_view *v)
{
    uint8_t acc = 0;
    REQUIRE(v->key_len >= 1 && v->key_len <= SHARD_KEY_MAX);
    REQUIRE(v->meta.codec <= SHARD_CODEC_PNG);
    REQUIRE(v->meta.width > 0 && v->meta.height > 0);
    REQUIRE(v->payload_len <= SHARD_RECORD_MAX_BYTES);
    if (v->meta.codec == SHARD_CODEC_RAW)
        REQUIRE(v->payload_len == (uint64_t)v->meta.width * v->meta.height * v->meta.channels);
    for (uint32_t i = 0; i < v->key_len; i++)
        acc ^= v->key[i];
    for (uint64_t i = 0; i < v->payload_len; i++)
        acc ^= v->payload[i];
    sink = acc;
    touch_fields(v);
}

/* The footer covers [32, footer_offset) with contiguous frames and its keys
 * exactly: what shard_footer_parse promises when it succeeds. */
static void check_footer(const struct shard_footer *f, const struct shard_trailer *t)
{
    uint64_t at = SHARD_HEADER_BYTES, key_at = 0;
    REQUIRE(f->record_count == t->record_count);
    for (uint64_t i = 0; i < f->record_count; i++) {
        const struct shard_index_row *r = &f->rows[i];
        REQUIRE(r->offset == at && r->frame_bytes > 0);
        REQUIRE(r->key_len >= 1 && r->key_len <= SHARD_KEY_MAX);
        REQUIRE(f->key_offsets[i] == key_at);
        at += r->frame_bytes;
        key_at += r->key_len;
    }
    REQUIRE(at == t->footer_offset);
    uint8_t acc = 0;
    for (uint64_t i = 0; i < key_at; i++)
        acc ^= f->keys[i];
    sink = acc;
}

/* Mode 1: the shard's parts parsed from memory. */
static void parse_in_memory(const uint8_t *data, size_t size)
{
    struct shard_err err;
    uint32_t index;
    (void)shard_header_parse(data, size, &index, &err);
    if (size < SHARD_TRAILER_BYTES)
        return;
    struct shard_trailer t;
    if (shard_trailer_parse(data + size - SHARD_TRAILER_BYTES, SHARD_TRAILER_BYTES, size, &t,
                            &err) != 0)
        return;
    REQUIRE(t.footer_offset >= SHARD_HEADER_BYTES);
    REQUIRE(t.footer_offset + t.footer_bytes == size - SHARD_TRAILER_BYTES);
    struct shard_footer f;
    if (shard_footer_parse(data + t.footer_offset, (size_t)t.footer_bytes, &t, &f, &err) != 0)
        return;
    check_footer(&f, &t);
    for (uint64_t i = 0; i < f.record_count; i++) {
        const struct shard_index_row *r = &f.rows[i];
        struct shard_record_view view;
        if (shard_record_decode(decoder, data + r->offset, (size_t)r->frame_bytes, &r->frame_xxh3,
                                &view, &err) == 0)
            touch_view(&view);
    }
    shard_footer_free(&f);
}

/* Mode 3: the same bytes as a file, through struct shard_file. */
static void parse_as_file(const uint8_t *data, size_t size)
{
    if (ftruncate(shard_fd, 0) != 0 || (size && pwrite(shard_fd, data, size, 0) != (ssize_t)size)) {
        perror("fuzz_shard: cannot write the memfd");
        abort();
    }
    struct shard_err err;
    struct shard_file *f;
    if (shard_file_open(&f, shard_path, &err) != 0)
        return;
    /* what the file reader accepted, the in-memory parsers accept too */
    struct shard_trailer t;
    REQUIRE(shard_file_bytes(f) == size);
    REQUIRE(shard_header_parse(data, size, NULL, &err) == 0);
    REQUIRE(shard_trailer_parse(data + size - SHARD_TRAILER_BYTES, SHARD_TRAILER_BYTES, size, &t,
                                &err) == 0);
    check_footer(shard_file_footer(f), &t);
    struct shard_record_view view;
    for (uint64_t i = 0; i < shard_file_records(f); i++)
        if (shard_file_read_record(f, i, decoder, &view, &err) == 0)
            touch_view(&view);
    REQUIRE(shard_file_read_record(f, shard_file_records(f), decoder, &view, &err) ==
            SHARD_ENOTFOUND);
    shard_file_close(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    parse_in_memory(data, size);

    /* Mode 2: the whole input as one record frame */
    struct shard_err err;
    struct shard_record_view view;
    if (shard_record_decode(decoder, data, size, NULL, &view, &err) == 0)
        touch_view(&view);

    /* Mode 4: the same, into a buffer of the caller's */
    if (sk_record_decode_into(decoder, data, size, NULL, &view, &outside, &err) == 0) {
        REQUIRE(outside.len <= outside.cap);
        REQUIRE(view.key == outside.data + SHARD_RECORD_HEADER_BYTES);
        /* a version 2 record's field area follows its payload */
        REQUIRE(view.payload + view.payload_len + view.fields_len == outside.data + outside.len);
        REQUIRE(!view.fields_len || view.fields == view.payload + view.payload_len);
        touch_view(&view);
    }

    parse_as_file(data, size);
    return 0;
}
