/* test_boxes_format.c - the boxes and mask field types in the format: their
 * type numbers and names, the sizes a record accepts, shard_field_check_image
 * on hand-made values, the declarations' classes in a manifest and the
 * command line's syntax; their decoders (boxes, masks of 1- and 2-byte
 * values, instance masks, image fields) and a batch's instance masks.
 * Values are built here byte by byte, as manifests/FORMAT.md lays them out,
 * never by the code under test. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "shardkit.h"

static void le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void lef32(uint8_t *p, float f)
{
    uint32_t bits;
    memcpy(&bits, &f, 4);
    le32(p, bits);
}

/* One box as FORMAT.md lays it out: x0 y0 x1 y1 (f32), class (i32), flags (u32). */
static void put_box(uint8_t *p, float x0, float y0, float x1, float y1, int32_t cls, uint32_t flags)
{
    lef32(p, x0);
    lef32(p + 4, y0);
    lef32(p + 8, x1);
    lef32(p + 12, y1);
    le32(p + 16, (uint32_t)cls);
    le32(p + 20, flags);
}

static struct shard_field_class person_car[] = {{1, "person"}, {3, "car"}};
static struct shard_field_class voc[] = {{0, "background"}, {1, "cat"}, {255, "void"}};
static struct shard_field_class wide[] = {{0, "background"}, {300, "many"}};

static void test_type_numbers_and_names(void **state)
{
    (void)state;
    assert_int_equal(SHARD_FIELD_BOXES, 9);
    assert_int_equal(SHARD_FIELD_MASK, 10);
    assert_string_equal(shard_field_type_name(SHARD_FIELD_BOXES), "boxes");
    assert_string_equal(shard_field_type_name(SHARD_FIELD_MASK), "mask");
    assert_int_equal(SHARD_FIELD_INSTANCES, 11);
    assert_int_equal(SHARD_FIELD_IMAGE, 12);
    assert_string_equal(shard_field_type_name(SHARD_FIELD_IMAGE), "image");
    assert_null(shard_field_type_name((enum shard_field_type)13));
    enum shard_field_type t;
    uint32_t length = 7;
    struct shard_err err;
    assert_int_equal(shard_field_type_parse("boxes", &t, &length, &err), 0);
    assert_int_equal(t, SHARD_FIELD_BOXES);
    assert_int_equal(length, 0);
    assert_int_equal(shard_field_type_parse("mask", &t, &length, &err), 0);
    assert_int_equal(t, SHARD_FIELD_MASK);
    assert_int_equal(shard_field_type_parse("boxes[4]", &t, &length, &err), SHARD_EINVAL);
}

/* An image value: its 12-byte header, RGB raw pixels of the record's size. */
static void test_an_image_value_is_rgb_raw_at_the_record_size(void **state)
{
    (void)state;
    struct shard_field_decl d = {.type = SHARD_FIELD_IMAGE};
    uint8_t v[SHARD_IMAGE_HEADER_BYTES + 2 * 1 * 3] = {2, 0, 0, 0, 1, 0, 0, 0, 3, 0, 0, 0};
    struct shard_err err;
    struct shard_field_set set = {0};
    assert_int_equal(shard_field_set_add(&set, 0, SHARD_FIELD_IMAGE, v, 11, &err), SHARD_EINVAL);
    assert_int_equal(shard_field_set_add(&set, 0, SHARD_FIELD_IMAGE, v, sizeof v, &err), 0);
    shard_field_set_release(&set);
    assert_int_equal(shard_field_check_image(&d, v, sizeof v, 0, 2, 1, &err), 0);
    assert_int_equal(shard_field_check(&d, v, sizeof v, 0, &err), 0);
    assert_int_equal(shard_field_check_image(&d, v, sizeof v, 0, 1, 2, &err), SHARD_ECORRUPT);
    assert_string_equal(err.msg, "a 2x1 image field on a 1x2 image");
    assert_int_equal(shard_field_check(&d, v, sizeof v - 1, 0, &err), SHARD_ECORRUPT);
    assert_string_equal(err.msg, "a 2x1 image of 17 bytes");
    v[9] = SHARD_CODEC_JPEG;
    assert_int_equal(shard_field_check(&d, v, sizeof v, 0, &err), SHARD_ECORRUPT);
    assert_string_equal(err.msg, "an image of 3 channels and codec 1 (3 and raw are known)");
    v[9] = 0;
    v[11] = 1;
    assert_int_equal(shard_field_check(&d, v, sizeof v, 0, &err), SHARD_ECORRUPT);
    assert_string_equal(err.msg, "an image's reserved bytes are not 0");
}

static void test_a_record_takes_whole_boxes_and_a_mask_header(void **state)
{
    (void)state;
    struct shard_field_set set = {0};
    struct shard_err err;
    uint8_t bytes[48] = {0};
    assert_int_equal(shard_field_set_add(&set, 0, SHARD_FIELD_BOXES, bytes, 48, &err), 0);
    assert_int_equal(shard_field_set_add(&set, 1, SHARD_FIELD_BOXES, bytes, 0, &err), 0);
    assert_int_equal(shard_field_set_add(&set, 2, SHARD_FIELD_BOXES, bytes, 20, &err),
                     SHARD_EINVAL);
    assert_int_equal(shard_field_set_add(&set, 3, SHARD_FIELD_MASK, bytes, 11, &err), SHARD_EINVAL);
    assert_int_equal(shard_field_set_add(&set, 4, SHARD_FIELD_MASK, bytes, 13, &err), 0);
    assert_int_equal(set.count, 3);
    /* each entry's header carries its type number */
    assert_int_equal(set.area.data[2], 9);
    assert_int_equal(set.area.data[8 + 48 + 2], 9);
    assert_int_equal(set.area.data[8 + 48 + 8 + 2], 10);
    shard_field_set_release(&set);
}

static void test_boxes_are_checked_against_the_image(void **state)
{
    (void)state;
    struct shard_field_decl d = {.name = "boxes",
                                 .type = SHARD_FIELD_BOXES,
                                 .classes = person_car,
                                 .class_count = 2};
    struct shard_err err;
    uint8_t v[3 * SHARD_BOX_BYTES];
    put_box(v, 0, 0, 640, 480, 1, 0); /* the whole image */
    put_box(v + 24, 10.5f, 20.25f, 11, 21, 3, SHARD_BOX_CROWD);
    put_box(v + 48, 100, 100, 200, 300, 1, 0);
    assert_int_equal(shard_field_check_image(&d, v, sizeof v, 0, 640, 480, &err), 0);
    assert_int_equal(shard_field_check_image(&d, v, 0, 0, 640, 480, &err), 0); /* none */
    /* outside the image: past the right edge, before the top */
    put_box(v + 48, 100, 100, 640.5f, 300, 1, 0);
    assert_int_equal(shard_field_check_image(&d, v, sizeof v, 0, 640, 480, &err), SHARD_ECORRUPT);
    assert_string_equal(err.msg, "box 2 (100, 100, 640.5, 300) is not inside the 640x480 image");
    /* without the size, only what a box is by itself */
    assert_int_equal(shard_field_check(&d, v, sizeof v, 0, &err), 0);
    put_box(v + 48, 100, -1, 200, 300, 1, 0);
    assert_int_equal(shard_field_check_image(&d, v, sizeof v, 0, 640, 480, &err), SHARD_ECORRUPT);
    /* empty and reversed */
    put_box(v + 48, 100, 100, 100, 300, 1, 0);
    assert_int_equal(shard_field_check(&d, v, sizeof v, 0, &err), SHARD_ECORRUPT);
    assert_string_equal(err.msg, "box 2 (100, 100, 100, 300) is empty or reversed");
    put_box(v + 48, 100, 300, 200, 100, 1, 0);
    assert_int_equal(shard_field_check(&d, v, sizeof v, 0, &err), SHARD_ECORRUPT);
    put_box(v + 48, NAN, 100, 200, 300, 1, 0);
    assert_int_equal(shard_field_check(&d, v, sizeof v, 0, &err), SHARD_ECORRUPT);
    assert_string_equal(err.msg, "box 2 has a coordinate that is not finite");
    /* an undeclared class, a negative one, unknown flags */
    put_box(v + 48, 100, 100, 200, 300, 2, 0);
    assert_int_equal(shard_field_check(&d, v, sizeof v, 0, &err), SHARD_ECORRUPT);
    assert_string_equal(err.msg, "box 2 has class 2, which the field does not declare");
    put_box(v + 48, 100, 100, 200, 300, -1, 0);
    assert_int_equal(shard_field_check(&d, v, sizeof v, 0, &err), SHARD_ECORRUPT);
    put_box(v + 48, 100, 100, 200, 300, 3, 2);
    assert_int_equal(shard_field_check(&d, v, sizeof v, 0, &err), SHARD_ECORRUPT);
    assert_string_equal(err.msg, "box 2 has unknown flags 0x2");
    /* not whole boxes */
    assert_int_equal(shard_field_check(&d, v, 25, 0, &err), SHARD_ECORRUPT);
}

/* A mask value: header, then values of `bytes` each. */
static uint8_t *make_mask(uint32_t w, uint32_t h, uint32_t bytes, size_t *len)
{
    *len = SHARD_MASK_HEADER_BYTES + (size_t)w * h * bytes;
    uint8_t *m = calloc(1, *len);
    le32(m, w);
    le32(m + 4, h);
    m[8] = (uint8_t)bytes;
    return m;
}

static void test_masks_are_checked_against_the_image_and_classes(void **state)
{
    (void)state;
    struct shard_field_decl d = {.name = "seg",
                                 .type = SHARD_FIELD_MASK,
                                 .classes = voc,
                                 .class_count = 3};
    struct shard_err err;
    assert_int_equal(shard_field_mask_value_bytes(&d), 1);
    size_t len;
    uint8_t *m = make_mask(4, 3, 1, &len);
    uint8_t *px = m + SHARD_MASK_HEADER_BYTES;
    px[0] = 1;
    px[11] = 255;
    assert_int_equal(shard_field_check_image(&d, m, len, 0, 4, 3, &err), 0);
    /* another size than the image's */
    assert_int_equal(shard_field_check_image(&d, m, len, 0, 3, 4, &err), SHARD_ECORRUPT);
    assert_string_equal(err.msg, "a 4x3 mask on a 3x4 image");
    /* an undeclared value, named with its place */
    px[6] = 2;
    assert_int_equal(shard_field_check(&d, m, len, 0, &err), SHARD_ECORRUPT);
    assert_string_equal(err.msg, "mask value 2 at (2, 1) is no declared class");
    px[6] = 0;
    /* sizes that do not add up, reserved bytes, the value size */
    assert_int_equal(shard_field_check(&d, m, len - 1, 0, &err), SHARD_ECORRUPT);
    m[10] = 1;
    assert_int_equal(shard_field_check(&d, m, len, 0, &err), SHARD_ECORRUPT);
    m[10] = 0;
    m[8] = 2;
    assert_int_equal(shard_field_check(&d, m, len, 0, &err), SHARD_ECORRUPT);
    assert_string_equal(err.msg, "a mask of 2-byte values, declared 1");
    free(m);

    /* a class id above 255: two bytes per value, little-endian */
    struct shard_field_decl w = {.name = "seg",
                                 .type = SHARD_FIELD_MASK,
                                 .classes = wide,
                                 .class_count = 2};
    assert_int_equal(shard_field_mask_value_bytes(&w), 2);
    m = make_mask(2, 2, 2, &len);
    px = m + SHARD_MASK_HEADER_BYTES;
    px[2] = 300 & 0xff;
    px[3] = 300 >> 8;
    assert_int_equal(shard_field_check_image(&w, m, len, 0, 2, 2, &err), 0);
    px[3] = 0; /* 44 */
    assert_int_equal(shard_field_check(&w, m, len, 0, &err), SHARD_ECORRUPT);
    assert_string_equal(err.msg, "mask value 44 at (1, 0) is no declared class");
    free(m);
    assert_int_equal(shard_field_class_find(&w, 300), 1);
    assert_int_equal(shard_field_class_find(&w, 299), -1);
}

/* A config with a boxes field from a COCO file and a mask from a sidecar. */
static void make_config(struct shard_config *c)
{
    shard_config_init(c);
    c->labels = strdup("none");
    c->field_count = 2;
    c->fields = calloc(2, sizeof *c->fields);
    struct shard_field_decl *b = &c->fields[0], *m = &c->fields[1];
    b->name = strdup("boxes");
    b->type = SHARD_FIELD_BOXES;
    b->coco = strdup("bbox");
    b->class_count = 2;
    b->classes = calloc(2, sizeof *b->classes);
    b->classes[0] = (struct shard_field_class){1, strdup("person")};
    b->classes[1] = (struct shard_field_class){90, strdup("toothbrush")};
    m->name = strdup("seg");
    m->type = SHARD_FIELD_MASK;
    m->sidecar = strdup("_mask.png");
    m->required = 1;
    m->class_count = 2;
    m->classes = calloc(2, sizeof *m->classes);
    m->classes[0] = (struct shard_field_class){0, strdup("background")};
    m->classes[1] = (struct shard_field_class){300, strdup("caf\xc3\xa9")};
    c->coco = strdup("file:instances.json:0123456789abcdef");
    c->max_field_bytes = 1000;
}

/* The manifest text of config c (samples none), malloc'd. */
static char *dump(struct shard_config *c)
{
    struct shard_manifest m = {0};
    m.config = *c;
    m.source_kind = "directory";
    uint64_t counts[2] = {0, 0};
    m.field_samples = counts;
    m.index_file = "index.jsonl";
    struct shard_err err;
    char *text;
    assert_int_equal(shard_manifest_dump(&m, &text, &err), 0);
    return text;
}

/* text with the first `from` replaced by `to` (the same length or not). */
static char *edit(const char *text, const char *from, const char *to)
{
    const char *at = strstr(text, from);
    assert_non_null(at);
    size_t n = strlen(text) - strlen(from) + strlen(to) + 1;
    char *out = malloc(n);
    snprintf(out, n, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    return out;
}

static void refused(const char *text, const char *from, const char *to, const char *why)
{
    char *bad = edit(text, from, to);
    struct shard_manifest m;
    struct shard_err err;
    assert_int_equal(shard_manifest_load_buffer(bad, strlen(bad), &m, &err), SHARD_ECORRUPT);
    if (!strstr(err.msg, why))
        fail_msg("'%s' -> '%s': %s", from, to, err.msg);
    free(bad);
}

/* A mask's ignore value is kept (255 among classes 0..2: VOC's void), never
 * a class; it counts in the value size. */
static void test_a_masks_ignore_value_is_valid_and_sizes_its_values(void **state)
{
    (void)state;
    struct shard_field_class three[] = {{0, "background"}, {1, "cat"}, {2, "dog"}};
    struct shard_field_decl d = {.name = "seg",
                                 .type = SHARD_FIELD_MASK,
                                 .classes = three,
                                 .class_count = 3};
    struct shard_err err;
    size_t len;
    uint8_t *m = make_mask(4, 3, 1, &len);
    m[SHARD_MASK_HEADER_BYTES + 5] = 255;
    m[SHARD_MASK_HEADER_BYTES + 7] = 254;
    assert_int_equal(shard_field_check(&d, m, len, 0, &err), SHARD_ECORRUPT);
    d.has_ignore = 1;
    d.ignore = 255;
    assert_false(shard_field_mask_value_valid(&d, 3));
    assert_true(shard_field_mask_value_valid(&d, 255));
    assert_int_equal(shard_field_check(&d, m, len, 0, &err), SHARD_ECORRUPT);
    assert_string_equal(err.msg, "mask value 254 at (3, 1) is no declared class");
    m[SHARD_MASK_HEADER_BYTES + 7] = 2;
    assert_int_equal(shard_field_check_image(&d, m, len, 0, 4, 3, &err), 0);
    assert_int_equal(shard_field_mask_value_bytes(&d), 1);
    d.ignore = 256;
    assert_int_equal(shard_field_mask_value_bytes(&d), 2);
    free(m);
}

/* An instances value as FORMAT.md lays it out: 2x3 masks, each its runs
 * over the pixels in column-major order, summing to 6. */
static void test_instance_masks_are_checked_run_by_run(void **state)
{
    (void)state;
    struct shard_field_decl d = {.name = "masks", .type = SHARD_FIELD_INSTANCES};
    struct shard_err err;
    uint8_t v[16 + 4 * 4 + 4 * 2];
    memset(v, 0, sizeof v);
    le32(v, 2);      /* width */
    le32(v + 4, 3);  /* height */
    le32(v + 8, 2);  /* two masks */
    le32(v + 16, 3); /* mask 0: 1 zero, 2 ones, 3 zeros */
    le32(v + 20, 1);
    le32(v + 24, 2);
    le32(v + 28, 3);
    le32(v + 32, 1); /* mask 1: 6 zeros */
    le32(v + 36, 6);
    assert_string_equal(shard_field_type_name(SHARD_FIELD_INSTANCES), "instances");
    assert_int_equal(shard_field_check_image(&d, v, sizeof v, 0, 2, 3, &err), 0);
    assert_int_equal(shard_field_check_image(&d, v, sizeof v, 0, 3, 2, &err), SHARD_ECORRUPT);
    assert_string_equal(err.msg, "2x3 instance masks on a 3x2 image");
    le32(v + 28, 2);
    assert_int_equal(shard_field_check(&d, v, sizeof v, 0, &err), SHARD_ECORRUPT);
    assert_string_equal(err.msg, "instance mask 0 covers 5 pixels, not 6");
    le32(v + 28, 3);
    le32(v + 8, 3); /* a third mask the bytes do not hold */
    assert_int_equal(shard_field_check(&d, v, sizeof v, 0, &err), SHARD_ECORRUPT);
    assert_string_equal(err.msg, "instance mask 2 is cut short");
    le32(v + 8, 1); /* bytes after the last mask */
    assert_int_equal(shard_field_check(&d, v, sizeof v, 0, &err), SHARD_ECORRUPT);
    assert_string_equal(err.msg, "8 bytes follow the 1 instance masks");
    le32(v + 8, 2);
    le32(v + 12, 1);
    assert_int_equal(shard_field_check(&d, v, sizeof v, 0, &err), SHARD_ECORRUPT);
    assert_string_equal(err.msg, "instance masks' reserved bytes are not 0");
}

static void test_classes_round_trip_through_the_manifest(void **state)
{
    (void)state;
    struct shard_config c;
    make_config(&c);
    char *text = dump(&c);
    assert_non_null(strstr(text, "\"coco\": \"bbox\""));
    assert_non_null(strstr(text, "\"coco\": \"file:instances.json:0123456789abcdef\""));
    assert_non_null(strstr(text, "\"sidecar\": \"_mask.png\""));
    assert_non_null(strstr(text, "\"id\": 90"));
    struct shard_manifest back;
    struct shard_err err;
    assert_int_equal(shard_manifest_load_buffer(text, strlen(text), &back, &err), 0);
    const struct shard_field_decl *b = &back.config.fields[0], *m = &back.config.fields[1];
    assert_int_equal(b->type, SHARD_FIELD_BOXES);
    assert_string_equal(b->coco, "bbox");
    assert_null(b->sidecar);
    assert_int_equal(b->class_count, 2);
    assert_int_equal(b->classes[1].id, 90);
    assert_string_equal(b->classes[1].name, "toothbrush");
    assert_int_equal(m->type, SHARD_FIELD_MASK);
    assert_string_equal(m->sidecar, "_mask.png");
    assert_true(m->required);
    assert_string_equal(m->classes[1].name, "caf\xc3\xa9");
    assert_string_equal(back.config.coco, "file:instances.json:0123456789abcdef");
    char *again;
    assert_int_equal(shard_manifest_dump(&back, &again, &err), 0);
    assert_string_equal(text, again);
    free(again);
    shard_manifest_release(&back);

    refused(text, "\"id\": 90", "\"id\": 1", "ids must increase");
    refused(text, "\"id\": 300", "\"id\": 65536", "ids must increase within 0..65535");
    refused(text, "\"name\": \"toothbrush\"", "\"name\": \"person\"", "names class 'person' twice");
    refused(text, "\"name\": \"toothbrush\"", "\"name\": \"\"", "names be non-empty");
    refused(text, "\"coco\": \"bbox\"", "\"coco\": \"segmentation\"", "a boxes field takes");
    refused(text, "\"coco\": \"bbox\"", "\"sidecar\": \".box\"", "cannot come from a sidecar");
    refused(text, "\"coco\": \"file:", "\"cocoa\": \"file:", "config.coco is missing");
    refused(text, "\"type\": \"mask\"", "\"type\": \"text\"", "only boxes and mask fields");
    /* without classes */
    json_t *j = json_loads(text, 0, NULL);
    json_object_del(json_array_get(json_object_get(json_object_get(j, "config"), "fields"), 0),
                    "classes");
    char *none = json_dumps(j, JSON_INDENT(2));
    json_decref(j);
    struct shard_manifest loaded;
    assert_int_equal(shard_manifest_load_buffer(none, strlen(none), &loaded, &err), SHARD_ECORRUPT);
    assert_non_null(strstr(err.msg, "needs \"classes\""));
    free(none);
    free(text);
    shard_config_release(&c);
}

static void test_the_command_line_declares_masks_with_classes(void **state)
{
    (void)state;
    struct shard_field_decl d;
    struct shard_err err;
    assert_int_equal(shard_field_decl_parse("seg=mask,from=_mask.png,classes=voc.txt,required", 0,
                                            &d, &err),
                     0);
    assert_int_equal(d.type, SHARD_FIELD_MASK);
    assert_string_equal(d.sidecar, "_mask.png");
    assert_string_equal(d.classes_file, "voc.txt");
    assert_true(d.required);
    shard_field_decl_release(&d);
    /* with a table, a mask still comes from its sidecar */
    assert_int_equal(shard_field_decl_parse("seg=mask,classes=c.json", 1, &d, &err), 0);
    assert_string_equal(d.sidecar, ".seg");
    assert_null(d.column);
    shard_field_decl_release(&d);
    assert_int_equal(shard_field_decl_parse("seg=mask,from=_mask.png", 0, &d, &err), SHARD_EINVAL);
    assert_non_null(strstr(err.msg, "needs classes=FILE"));
    assert_int_equal(shard_field_decl_parse("t=text,classes=c.json", 0, &d, &err), SHARD_EINVAL);
    assert_non_null(strstr(err.msg, "only a mask field takes classes=FILE"));
    assert_int_equal(shard_field_decl_parse("b=boxes", 0, &d, &err), SHARD_EINVAL);
    assert_non_null(strstr(err.msg, "--coco FILE"));
    assert_int_equal(shard_field_decl_parse("seg=mask,from=col,classes=c.json", 1, &d, &err),
                     SHARD_EINVAL);
    assert_non_null(strstr(err.msg, "from a sidecar image"));
    /* an '_' suffix serves any type; a '/' in it none */
    assert_int_equal(shard_field_decl_parse("t=text,from=_caption.txt", 0, &d, &err), 0);
    assert_string_equal(d.sidecar, "_caption.txt");
    shard_field_decl_release(&d);
    assert_int_equal(shard_field_decl_parse("t=text,from=_a/b", 0, &d, &err), SHARD_EINVAL);
}

static void test_a_mask_folder_is_declared_and_kept_in_the_manifest(void **state)
{
    (void)state;
    struct shard_field_decl d;
    struct shard_err err;
    /* a SOURCE ending in '/' is a folder, even one starting with '.' */
    assert_int_equal(shard_field_decl_parse("seg=mask,from=../masks/,classes=c.txt", 0, &d, &err),
                     0);
    assert_string_equal(d.folder, "../masks/");
    assert_null(d.sidecar);
    assert_null(d.column);
    shard_field_decl_release(&d);
    assert_int_equal(shard_field_decl_parse("t=text,from=../texts/", 1, &d, &err), SHARD_EINVAL);
    assert_non_null(strstr(err.msg, "only a mask comes from a folder"));

    struct shard_config c;
    make_config(&c);
    char *text = dump(&c);
    shard_config_release(&c);
    char *folder = edit(text, "\"sidecar\": \"_mask.png\"", "\"folder\": \"../masks/\"");
    struct shard_manifest back;
    assert_int_equal(shard_manifest_load_buffer(folder, strlen(folder), &back, &err), 0);
    assert_string_equal(back.config.fields[1].folder, "../masks/");
    assert_null(back.config.fields[1].sidecar);
    char *again;
    assert_int_equal(shard_manifest_dump(&back, &again, &err), 0);
    assert_string_equal(folder, again);
    free(again);
    shard_manifest_release(&back);
    refused(folder, "\"../masks/\"", "\"../masks\"", "needs one source");
    refused(folder, "\"coco\": \"bbox\"", "\"folder\": \"../boxes/\"",
            "only a mask field comes from a \"folder\"");
    free(folder);
    free(text);
}

/* ---- the decoders (shardkit/format.h "the structured values, decoded"), and a
 * batch's instance masks (shard_batch_instances): the decoded numbers are
 * written out by hand, never taken from the code under test ---- */

static void assert_grid(const struct shard_field_grid *g, uint32_t width, uint32_t height,
                        uint32_t channels, uint32_t value_bytes)
{
    assert_int_equal(g->width, width);
    assert_int_equal(g->height, height);
    assert_int_equal(g->channels, channels);
    assert_int_equal(g->value_bytes, value_bytes);
}

static void test_boxes_decode_in_stored_order(void **state)
{
    (void)state;
    uint8_t v[2 * 24];
    lef32(v, 1.5f), lef32(v + 4, 2.0f), lef32(v + 8, 10.25f), lef32(v + 12, 20.0f);
    le32(v + 16, 3), le32(v + 20, 0);
    lef32(v + 24, 0.0f), lef32(v + 28, 0.5f), lef32(v + 32, 4.0f), lef32(v + 36, 8.0f);
    le32(v + 40, 70000), le32(v + 44, 1); /* a crowd region */
    struct shard_box out[2];
    uint64_t count = 9;
    struct shard_err err;
    assert_int_equal(shard_field_boxes_decode(v, sizeof v, NULL, &count, &err), 0);
    assert_int_equal(count, 2);
    assert_int_equal(shard_field_boxes_decode(v, sizeof v, out, &count, &err), 0);
    assert_true(out[0].x0 == 1.5f && out[0].y0 == 2.0f && out[0].x1 == 10.25f &&
                out[0].y1 == 20.0f);
    assert_int_equal(out[0].cls, 3);
    assert_int_equal(out[0].flags, 0);
    assert_true(out[1].x0 == 0.0f && out[1].y0 == 0.5f && out[1].x1 == 4.0f && out[1].y1 == 8.0f);
    assert_int_equal(out[1].cls, 70000);
    assert_int_equal(out[1].flags, SHARD_BOX_CROWD);
    assert_int_equal(shard_field_boxes_decode(v, 0, out, &count, &err), 0);
    assert_int_equal(count, 0);
    assert_int_equal(shard_field_boxes_decode(v, 30, out, &count, &err), SHARD_ECORRUPT);
    assert_string_equal(err.msg, "30 bytes are no whole boxes (24 each)");
}

static void test_masks_decode_with_one_and_two_byte_values(void **state)
{
    (void)state;
    /* 3 x 2, 1-byte values 0 1 2 / 255 4 5 */
    uint8_t m1[12 + 6] = {3, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, 1, 2, 255, 4, 5};
    struct shard_field_grid g;
    struct shard_err err;
    assert_int_equal(shard_field_mask_decode(m1, sizeof m1, &g, &err), 0);
    assert_grid(&g, 3, 2, 1, 1);
    assert_ptr_equal(g.values, m1 + 12);
    uint8_t out1[6];
    shard_field_grid_copy(&g, out1);
    assert_memory_equal(out1, ((uint8_t[]){0, 1, 2, 255, 4, 5}), 6);
    /* 2 x 1, 2-byte values 300 and 2 (little-endian) */
    uint8_t m2[12 + 4] = {2, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0x2c, 0x01, 2, 0};
    assert_int_equal(shard_field_mask_decode(m2, sizeof m2, &g, &err), 0);
    assert_int_equal(g.value_bytes, 2);
    uint16_t out2[2];
    shard_field_grid_copy(&g, out2);
    assert_int_equal(out2[0], 300);
    assert_int_equal(out2[1], 2);
    /* what is refused */
    assert_int_equal(shard_field_mask_decode(m2, 11, &g, &err), SHARD_ECORRUPT);
    assert_string_equal(err.msg, "a mask of 11 bytes has no header");
    assert_int_equal(shard_field_mask_decode(m2, sizeof m2 - 1, &g, &err), SHARD_ECORRUPT);
    assert_string_equal(err.msg, "a 2x1 mask of 15 bytes");
    m2[8] = 3;
    assert_int_equal(shard_field_mask_decode(m2, sizeof m2, &g, &err), SHARD_ECORRUPT);
    assert_string_equal(err.msg, "a mask of 3-byte values (1 or 2)");
    m2[8] = 2, m2[10] = 1;
    assert_int_equal(shard_field_mask_decode(m2, sizeof m2, &g, &err), SHARD_ECORRUPT);
    assert_string_equal(err.msg, "a mask's reserved bytes are not 0");
}

static void test_an_image_field_decodes_as_rgb_rows(void **state)
{
    (void)state;
    /* 1 x 2 RGB, raw: (1,2,3) over (4,5,6) */
    uint8_t v[12 + 6] = {1, 0, 0, 0, 2, 0, 0, 0, 3, SHARD_CODEC_RAW, 0, 0, 1, 2, 3, 4, 5, 6};
    struct shard_field_grid g;
    struct shard_err err;
    assert_int_equal(shard_field_image_decode(v, sizeof v, &g, &err), 0);
    assert_grid(&g, 1, 2, 3, 1);
    uint8_t out[6];
    shard_field_grid_copy(&g, out);
    assert_memory_equal(out, ((uint8_t[]){1, 2, 3, 4, 5, 6}), 6);
    v[9] = SHARD_CODEC_JPEG;
    assert_int_equal(shard_field_image_decode(v, sizeof v, &g, &err), SHARD_ECORRUPT);
    assert_string_equal(err.msg, "an image of 3 channels and codec 1 (3 and raw are known)");
    v[9] = SHARD_CODEC_RAW;
    assert_int_equal(shard_field_image_decode(v, sizeof v - 3, &g, &err), SHARD_ECORRUPT);
    assert_string_equal(err.msg, "a 1x2 image of 15 bytes");
}

/* Two masks of 2 x 3 (width 2, height 3): runs over the pixels column
 * after column (COCO's uncompressed RLE). */
static void test_instances_decode_column_major_runs_to_rows(void **state)
{
    (void)state;
    uint8_t v[16 + 4 + 12 + 4 + 12];
    memset(v, 0, sizeof v);
    le32(v, 2), le32(v + 4, 3), le32(v + 8, 2);
    /* mask 0: 1 zero, 2 ones, 3 zeros: column 0 is 0 1 1, column 1 is 0 0 0 */
    le32(v + 16, 3), le32(v + 20, 1), le32(v + 24, 2), le32(v + 28, 3);
    /* mask 1: 3 zeros, 3 ones: column 1 is all 1 */
    le32(v + 32, 3), le32(v + 36, 3), le32(v + 40, 3), le32(v + 44, 0);
    uint32_t w = 0, h = 0, n = 0;
    struct shard_err err;
    assert_int_equal(shard_field_instances_decode(v, sizeof v, &w, &h, &n, NULL, &err), 0);
    assert_int_equal(w, 2);
    assert_int_equal(h, 3);
    assert_int_equal(n, 2);
    uint8_t masks[2 * 3 * 2];
    memset(masks, 7, sizeof masks);
    assert_int_equal(shard_field_instances_decode(v, sizeof v, &w, &h, &n, masks, &err), 0);
    /* rows of mask 0: (0 0) (1 0) (1 0); of mask 1: (0 1) (0 1) (0 1) */
    assert_memory_equal(masks, ((uint8_t[]){0, 0, 1, 0, 1, 0, 0, 1, 0, 1, 0, 1}), 12);
    le32(v + 44, 1); /* mask 1 now covers 7 pixels */
    assert_int_equal(shard_field_instances_decode(v, sizeof v, &w, &h, &n, NULL, &err),
                     SHARD_ECORRUPT);
    assert_string_equal(err.msg, "instance mask 1 covers 7 pixels, not 6");
    le32(v + 44, 0);
    le32(v + 8, 3);
    assert_int_equal(shard_field_instances_decode(v, sizeof v, &w, &h, &n, NULL, &err),
                     SHARD_ECORRUPT);
    assert_string_equal(err.msg, "instance mask 2 is cut short");
    le32(v + 8, 0); /* no object: the header alone, and the runs left over */
    assert_int_equal(shard_field_instances_decode(v, 16, &w, &h, &n, masks, &err), 0);
    assert_int_equal(n, 0);
    assert_int_equal(shard_field_instances_decode(v, sizeof v, &w, &h, &n, NULL, &err),
                     SHARD_ECORRUPT);
    assert_string_equal(err.msg, "32 bytes follow the 0 instance masks");
}

/* A batch's INSTANCES field as the loader lays it out (the stored header's
 * width, height and count, then the masks decoded), made by hand: sample 0
 * has two 2 x 1 masks, sample 1 none, sample 2 lacks the field. */
static void test_a_batchs_instance_masks_are_found_per_sample(void **state)
{
    (void)state;
    uint8_t data[16 + 4 + 16];
    memset(data, 0, sizeof data);
    le32(data, 2), le32(data + 4, 1), le32(data + 8, 2);
    data[16] = 1, data[19] = 1;
    le32(data + 20, 2), le32(data + 24, 1);
    const uint64_t offsets[] = {0, 20, 36, 36};
    const uint8_t present[] = {1, 1, 0};
    struct shard_batch_field f = {.type = SHARD_FIELD_INSTANCES,
                                  .present = present,
                                  .data = data,
                                  .offsets = offsets};
    uint32_t w, h, n;
    const uint8_t *masks;
    assert_int_equal(shard_batch_instances(&f, 3, 0, &w, &h, &n, &masks), 0);
    assert_true(w == 2 && h == 1 && n == 2);
    assert_ptr_equal(masks, data + 16);
    assert_memory_equal(masks, ((uint8_t[]){1, 0, 0, 1}), 4);
    assert_int_equal(shard_batch_instances(&f, 3, 1, &w, &h, &n, &masks), 0);
    assert_true(w == 2 && h == 1 && n == 0);
    assert_int_equal(shard_batch_instances(&f, 3, 2, &w, &h, &n, &masks), SHARD_ENOTFOUND);
    assert_int_equal(shard_batch_instances(&f, 3, 3, &w, &h, &n, &masks), SHARD_EINVAL);
    f.type = SHARD_FIELD_MASK;
    assert_int_equal(shard_batch_instances(&f, 3, 0, &w, &h, &n, &masks), SHARD_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_type_numbers_and_names),
        cmocka_unit_test(test_an_image_value_is_rgb_raw_at_the_record_size),
        cmocka_unit_test(test_a_record_takes_whole_boxes_and_a_mask_header),
        cmocka_unit_test(test_boxes_are_checked_against_the_image),
        cmocka_unit_test(test_masks_are_checked_against_the_image_and_classes),
        cmocka_unit_test(test_a_masks_ignore_value_is_valid_and_sizes_its_values),
        cmocka_unit_test(test_instance_masks_are_checked_run_by_run),
        cmocka_unit_test(test_classes_round_trip_through_the_manifest),
        cmocka_unit_test(test_the_command_line_declares_masks_with_classes),
        cmocka_unit_test(test_a_mask_folder_is_declared_and_kept_in_the_manifest),
        cmocka_unit_test(test_boxes_decode_in_stored_order),
        cmocka_unit_test(test_masks_decode_with_one_and_two_byte_values),
        cmocka_unit_test(test_an_image_field_decodes_as_rgb_rows),
        cmocka_unit_test(test_instances_decode_column_major_runs_to_rows),
        cmocka_unit_test(test_a_batchs_instance_masks_are_found_per_sample),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
