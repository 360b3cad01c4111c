/*
 * shardkit/loader.h - training-ready batches: sample transforms run by the
 * reader's threads, and a batch loader that writes each transformed sample in
 * place into its batch's contiguous buffer.  This is what the Python package
 * (python/shardkit) wraps; any other binding can use it the same way.
 *
 * Two pieces, each an opaque handle with a create/free pair (every free
 * accepts NULL); plain structs in and out, no callbacks:
 *
 *   struct shard_transforms  a list of transforms (torchvision's names and
 *                            rules) and the output format (layout, dtype).
 *                            Immutable once made; any number of threads
 *                            may apply it at once, each with its own
 *                            workspace.
 *   struct shard_loader      batches of an epoch plan (shardkit/dataset.h):
 *                            threads read, decode and transform samples
 *                            ahead of the consumer; see "The loader" below.
 *
 * ---- transforms -----------------------------------------------------------
 *
 * Images enter as the reader decodes them: H x W x C, C 1 (grey), 2 (grey
 * and alpha), 3 (RGB) or 4 (RGBA), of 8 or 16 bits; every step works on each
 * channel alike.  The steps run in list order, with torchvision's semantics:
 *
 *   RANDOM_RESIZED_CROP(height, width, scale, ratio)  a random box (the rule
 *       below), resampled to height x width.
 *   CENTER_CROP(height, width)  the centred box, top = round((H - height) / 2)
 *       and left = round((W - width) / 2) with ties to even (Python's round);
 *       an image smaller than the box is first padded with zeros, (d // 2)
 *       before and ((d + 1) // 2) after on each short axis, as torchvision does.
 *   RESIZE(height, width)  resample to height x width; with width 0 the
 *       shorter side becomes `height` and the longer floor(height * long /
 *       short) (torchvision's Resize(int)).
 *   HORIZONTAL_FLIP(p)  mirror left-right with probability p.
 *   NORMALIZE(mean, std)  out = (x / 255 - mean[c]) / std[c] (x / 65535 for
 *       16 bits), computed in float32 in that order (torchvision's ToTensor
 *       then Normalize, bit for bit), for channels 0..2 (RGBA's alpha is
 *       x / 255); it must be the last step but for flips, and needs a float
 *       dtype.
 *
 * Resampling (RANDOM_RESIZED_CROP, RESIZE) uses the library's separable
 * resampler with Pillow's antialiased BILINEAR filter: a triangle whose
 * support grows with the reduction factor (bilinear interpolation when
 * enlarging).  That is what torchvision applies to PIL images, and to tensors
 * with antialias=True; results agree with it within one level of 255.  A
 * RESIZE followed by a CENTER_CROP is resampled as one window (the same pixels
 * as resizing then cropping, without the discarded part).  A flip followed by
 * a geometric step is applied to the pixels before that step (exact);
 * a flip after the last geometric step costs nothing: the output is written
 * mirrored.
 *
 * Output: dtype UINT8 writes the pixels (a 16-bit sample x rounded to
 * x * 255 / 65535); UINT16 writes 16-bit samples (an 8-bit one as x * 257);
 * FLOAT32 and FLOAT16 write x / 255 (x / 65535 for 16 bits: torchvision's
 * ToTensor), or NORMALIZE's values; FLOAT16 rounds the float32 value to
 * nearest, ties to even (torch's .half()).  Layout NHWC writes H x W x C,
 * NCHW C x H x W, contiguous.
 *
 * ---- the random stream (specified: a Python loader can reproduce it) ------
 *
 * Every random choice for the sample of index i (its position in stored
 * order) in epoch e with seed s comes from one SplitMix64 stream (the
 * generator of manifests/FORMAT.md "Sample order") whose state starts at
 *
 *     derive(s, 3, e, 0, i)
 *
 * with derive() as in shardkit/dataset.h (XXH3-64 with seed s of le64(3)
 * le64(e) le64(0) le64(i)); in a mixture's loader, i is the mixture's sample
 * number (shardkit/mixture.h).  So the transforms of a sample depend on (seed,
 * epoch, index) and the transform list only: not on the thread count, the
 * rank, the batch or the order samples are read in (a sample repeated by
 * remainder padding gets the same transforms both times).  From the stream:
 *
 *     uniform(a, b) = a + (b - a) * ((next() >> 11) * 2^-53)
 *     below(n)      = a value in [0, n) by Lemire's multiply-and-reject
 *                     (manifests/FORMAT.md "Sample order"'s bounded(n))
 *
 * and the steps draw, in list order:
 *
 *   RANDOM_RESIZED_CROP on a W x H image (torchvision's get_params): up to
 *       ten attempts of
 *           area   = W * H * uniform(scale[0], scale[1])
 *           aspect = exp(uniform(log(ratio[0]), log(ratio[1])))
 *           w = round(sqrt(area * aspect)), h = round(sqrt(area / aspect))
 *               (ties to even)
 *       and at the first attempt with 0 < w <= W and 0 < h <= H:
 *           top = below(H - h + 1), then left = below(W - w + 1).
 *       When no attempt fits, the centre fallback draws nothing more: with
 *       W/H below ratio[0], w = W and h = round(W / ratio[0]); above
 *       ratio[1], h = H and w = round(H * ratio[1]); else the whole image;
 *       top = (H - h) / 2, left = (W - w) / 2 (floor).
 *   HORIZONTAL_FLIP: one uniform(0, 1); the image is flipped when it is < p.
 *   CENTER_CROP, RESIZE, NORMALIZE: nothing.
 *
 * shard_transforms_draw() returns those choices for a sample without pixels.
 *
 * Tiers (shardkit/api.h): stable, but for shard_loader_new_mixture
 * (experimental, as mixture.h is); the older names at the end are deprecated.
 */
#ifndef SHARDKIT_LOADER_H
#define SHARDKIT_LOADER_H

#include <stddef.h>
#include <stdint.h>

#include "shardkit/api.h"
#include "shardkit/dataset.h"
#include "shardkit/error.h"
#include "shardkit/image.h"
#include "shardkit/mixture.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- transforms ---------------------------------------------------------- */

enum shard_transform_op {
    SHARD_TRANSFORM_RANDOM_RESIZED_CROP = 1,
    SHARD_TRANSFORM_CENTER_CROP = 2,
    SHARD_TRANSFORM_RESIZE = 3,
    SHARD_TRANSFORM_HORIZONTAL_FLIP = 4,
    SHARD_TRANSFORM_NORMALIZE = 5,
    /* the older names (deprecated, see the end of this header) */
    SHARD_AUGMENT_RANDOM_RESIZED_CROP SHARD_DEPRECATED(
        "use SHARD_TRANSFORM_RANDOM_RESIZED_CROP") = 1,
    SHARD_AUGMENT_CENTER_CROP SHARD_DEPRECATED("use SHARD_TRANSFORM_CENTER_CROP") = 2,
    SHARD_AUGMENT_RESIZE SHARD_DEPRECATED("use SHARD_TRANSFORM_RESIZE") = 3,
    SHARD_AUGMENT_HORIZONTAL_FLIP SHARD_DEPRECATED("use SHARD_TRANSFORM_HORIZONTAL_FLIP") = 4,
    SHARD_AUGMENT_NORMALIZE SHARD_DEPRECATED("use SHARD_TRANSFORM_NORMALIZE") = 5,
};

/* One step; the fields its op does not use are ignored. */
struct shard_transform_step {
    enum shard_transform_op op;
    uint32_t height; /* crops, resize: the output size (see RESIZE for width 0) */
    uint32_t width;
    double scale[2]; /* RANDOM_RESIZED_CROP: area fraction range, 0 < [0] <= [1]
                      * (above 1 is allowed, as in torchvision: such draws never fit) */
    double ratio[2]; /* RANDOM_RESIZED_CROP: aspect (w/h) range, 0 < [0] <= [1] */
    double p;        /* HORIZONTAL_FLIP: probability, 0..1 */
    double mean[3];  /* NORMALIZE: per channel (R, G, B), in units of x / 255 */
    double std[3];   /* NORMALIZE: per channel, non-zero */
};

/* A step with torchvision's defaults for `op`: scale (0.08, 1), ratio
 * (3/4, 4/3), p 0.5, mean 0 and std 1; sizes 0 (to be set). */
SHARD_API void shard_transform_step_init(struct shard_transform_step *s,
                                         enum shard_transform_op op);

enum shard_layout {
    SHARD_LAYOUT_NHWC = 0, /* a sample is H x W x C */
    SHARD_LAYOUT_NCHW = 1, /* a sample is C x H x W */
};

enum shard_dtype {
    SHARD_DTYPE_UINT8 = 0,
    SHARD_DTYPE_FLOAT32 = 1,
    SHARD_DTYPE_FLOAT16 = 2, /* IEEE binary16 */
    SHARD_DTYPE_UINT16 = 3,  /* 16-bit samples (an 8-bit one's x * 257); no NORMALIZE */
};

/* "NHWC"/"NCHW", "uint8"/"float32"/"float16"/"uint16".  0 or SHARD_EINVAL. */
SHARD_API int shard_layout_parse(const char *s, enum shard_layout *out);
SHARD_API int shard_dtype_parse(const char *s, enum shard_dtype *out);
/* Bytes per value of a dtype (1, 4, 2, 2). */
SHARD_API size_t shard_dtype_size(enum shard_dtype d);

/* Most steps in one list, and the largest output side. */
#define SHARD_TRANSFORMS_MAX_STEPS 32
#define SHARD_TRANSFORMS_MAX_SIDE 32768u
/* Largest output of one sample, in pixels (a RESIZE of a sliver could ask for
 * more: that sample fails with SHARD_ELIMIT). */
#define SHARD_TRANSFORMS_MAX_PIXELS (1ull << 28)

struct shard_transforms;

/* Check steps[0..count) (count may be 0: the image as it is, converted to the
 * output format) and make the transform list.  The steps are copied.
 * SHARD_EINVAL names the step and the parameter ("step 2 (normalize): std[1]
 * is 0"); SHARD_ENOMEM. */
SHARD_API int shard_transforms_new(struct shard_transforms **out,
                                   const struct shard_transform_step *steps, size_t count,
                                   enum shard_layout layout, enum shard_dtype dtype,
                                   struct shard_err *err);
SHARD_API void shard_transforms_free(struct shard_transforms *a); /* accepts NULL */

SHARD_API enum shard_layout shard_transforms_layout(const struct shard_transforms *a);
SHARD_API enum shard_dtype shard_transforms_dtype(const struct shard_transforms *a);

/* 1 and the size when every input gives an output of the same size (a crop
 * or a two-sided resize fixes it), else 0. */
SHARD_API int shard_transforms_fixed_size(const struct shard_transforms *a, uint32_t *width,
                                          uint32_t *height);

/* What a step decided for one sample. */
struct shard_transform_choice {
    uint32_t in_width, in_height;   /* the image the step received */
    uint32_t out_width, out_height; /* the image it made */
    /* crops: the box in the received image (CENTER_CROP: may start before it,
     * negative, when the image is padded); RESIZE: the whole image */
    int32_t left, top;
    uint32_t box_width, box_height;
    int attempts; /* RANDOM_RESIZED_CROP: the attempt that fitted (1..10), 0 for
                   * the centre fallback */
    int flip;     /* HORIZONTAL_FLIP: 1 when flipped */
};

struct shard_transforms_draws {
    uint32_t steps;
    struct shard_transform_choice step[SHARD_TRANSFORMS_MAX_STEPS];
    uint32_t out_width, out_height; /* the final size */
    size_t out_bytes;               /* bytes of the output in the output format */
};

/* The choices (and the output size) for the sample of `index` in `epoch`
 * with `seed`, for an input of width x height, without touching pixels.
 * 0, SHARD_EINVAL (zero sizes) or SHARD_ELIMIT (the output would exceed
 * SHARD_TRANSFORMS_MAX_PIXELS or MAX_SIDE). */
SHARD_API int shard_transforms_draw(const struct shard_transforms *a, uint32_t width,
                                    uint32_t height, uint64_t seed, uint64_t epoch, uint64_t index,
                                    struct shard_transforms_draws *out, struct shard_err *err);

/* Per-thread working memory for shard_transforms_apply (its buffers grow to the
 * largest image seen and are kept). */
struct shard_transforms_workspace;
SHARD_API int shard_transforms_workspace_new(struct shard_transforms_workspace **out,
                                             struct shard_err *err);
SHARD_API void
shard_transforms_workspace_free(struct shard_transforms_workspace *w); /* accepts NULL */

/* Apply the transforms to src (8-bit RGB) with the choices of `draws`
 * (shard_transforms_draw for src's size) and write the result in the output
 * format to dst, which has room for draws->out_bytes.  dst must not overlap
 * src.  0, SHARD_EINVAL (draws made for another size), SHARD_ENOMEM. */
SHARD_API int shard_transforms_apply(const struct shard_transforms *a,
                                     const struct shard_image *src,
                                     const struct shard_transforms_draws *draws,
                                     struct shard_transforms_workspace *w, void *dst,
                                     struct shard_err *err);

/* Boxes and masks through the same choices as their image (torchvision
 * transforms.v2's semantics for BoundingBoxes in XYXY format and Mask):
 *
 *   RANDOM_RESIZED_CROP  boxes moved by the box's corner, scaled to the output
 *                        and clamped to it; the mask's box resampled
 *   CENTER_CROP          boxes moved and clamped; the mask cropped, 0 where
 *                        the image is padded
 *   RESIZE               boxes scaled (not clamped: nothing leaves the image);
 *                        the mask resampled
 *   HORIZONTAL_FLIP      x becomes width - x (x0 and x1 trade places); the
 *                        mask mirrored
 *
 * Masks are resampled by nearest neighbour, each output pixel taking the
 * value of the input pixel holding its centre (Pillow's NEAREST, torch's
 * "nearest-exact"): a class id is never blended with another, and the mask
 * stays on the pixels of its image, which is resampled about the same
 * centres.  torchvision's tensor path uses torch's legacy "nearest" (the
 * pixel holding the output pixel's top-left corner), which shifts a
 * downscaled mask by up to one input pixel towards the top-left; this is
 * the one place the two differ, chosen so.  After the last step a box
 * narrower or lower than min_size is removed with its class and flags (as
 * SanitizeBoundingBoxes(min_size) does; torchvision's default is 1), and so
 * is an empty box whatever min_size. */

/* The n boxes at `in` (SHARD_BOX_BYTES each, as stored: x0, y0, x1, y1
 * float32, class int32, flags uint32, little-endian), of the image the
 * draws were made for, moved by (-dx, -dy) first (the draws made for a
 * region of the image starting at (dx, dy)), through the choices: the kept
 * boxes are written to out (room for n; out may be in), in order and in the
 * same layout; returns how many. */
SHARD_API size_t shard_transforms_boxes(const struct shard_transforms *a,
                                        const struct shard_transforms_draws *d, double dx,
                                        double dy, double min_size, const uint8_t *in, size_t n,
                                        uint8_t *out);

/* A mask (channels 1 or 2: the bytes of one value, little-endian) of the
 * size the draws were made for, through the choices: out_width x
 * out_height values, row-major, written to dst, 0 where a CENTER_CROP's
 * padding reaches outside the mask.  0, SHARD_EINVAL (draws for another
 * size), SHARD_ENOMEM. */
SHARD_API int shard_transforms_mask(const struct shard_transforms *a,
                                    const struct shard_image *mask,
                                    const struct shard_transforms_draws *d,
                                    struct shard_transforms_workspace *w, void *dst,
                                    struct shard_err *err);
/* The same with `fill` where the padding reaches outside (a mask field's
 * ignore value, as torchvision's segmentation reference pads with 255);
 * SHARD_EINVAL when fill does not fit the mask's values. */
SHARD_API int shard_transforms_mask_fill(const struct shard_transforms *a,
                                         const struct shard_image *mask,
                                         const struct shard_transforms_draws *d,
                                         struct shard_transforms_workspace *w, uint32_t fill,
                                         void *dst, struct shard_err *err);

/* ---- the loader ------------------------------------------------------------
 *
 * A loader walks this rank's epoch plan (shardkit/dataset.h: seed, epoch,
 * rank, world_size, shuffle buffer, remainder) in batches of batch_size
 * consecutive plan entries: batch b holds entries [b*B, (b+1)*B); the last
 * one is shorter, or dropped with drop_last.  The threads claim entries
 * in plan order, read and decode each sample, apply the transforms and write
 * the result straight into its place in its batch's buffer; the consumer
 * takes whole batches in order.  At most `prefetch` batches are being filled
 * or ready at a time (the bound on memory).  When the transforms start with
 * RANDOM_RESIZED_CROP or CENTER_CROP, a JPEG record is decoded only around
 * the crop's box (the choices are drawn from the record's stored size before
 * decoding); the pixels, and the damage reported, are those of a whole
 * decode.  Like shard_iter, the threads ask the dataset for the next
 * entries' bytes ahead of reading them (the kernel's read-ahead, window
 * fetches over HTTP).
 *
 * Batch contents depend on (dataset, seed, epoch, rank, world_size, shuffle
 * buffer, remainder, batch_size, transforms) only: never on the thread
 * count or timing.  The position of a loader is (epoch, batches handed out);
 * starting at (e, k) gives exactly the batches k, k+1, ... that an
 * uninterrupted run of epoch e gives after its first k.  That is how a
 * training job restores a checkpoint.
 *
 * Output.  With a transform list of fixed output size (a crop, or a
 * two-sided resize: shard_transforms_fixed_size), a batch is one contiguous
 * array of count x (H x W x C or C x H x W) values, as is a batch without
 * one that changes the size when every sample has the manifest's one stored
 * size.  Otherwise each sample has its own size and its own memory.  Without
 * a transform list (or with one of no step, NHWC and the dataset's dtype:
 * uint8, uint16 for 16 bits), samples are the stored pixels, H x W x C in the
 * dataset's form (a raw record's are handed over where they were
 * decompressed, without a copy).
 *
 * Damaged samples.  By default a sample that cannot be read (a damaged
 * record, an I/O error) fails its batch: shard_loader_next returns the error
 * (the message names shard, record and key) and the loader moves on to the
 * next batch.  With skip_errors, a damaged sample (SHARD_ECORRUPT,
 * SHARD_ENOTIMAGE, SHARD_EUNSUPPORTED, SHARD_ELIMIT: the same every time it
 * is read) is left out of its batch, which is then shorter (the others keep
 * their order), and counted in the stats; an I/O or network error still
 * fails the batch, since leaving out whatever a failing disk could not read
 * would silently change the epoch.
 *
 * Fields.  A loader of a dataset with fields (format version 2) carries the
 * fields that options.fields selects, by number (the position of the
 * declaration in the manifest's config.fields), in that order: each batch
 * then has, per selected field, a struct shard_batch_field made without an
 * allocation per sample: a presence flag per sample, and the values either
 * stacked (a number or a fixed-length vector: one array of count x length,
 * zeros where the sample lacks the field) or back to back in one buffer with
 * offsets (text, JSON, bytes, label lists).  Each value was checked against
 * its declaration when read (shard_dataset_read): a sample whose fields are
 * damaged is damaged like any other (skip_errors leaves it out, and every
 * array of the batch stays aligned with `indices`).  With no field selected
 * the records' fields are neither copied nor checked.
 */

struct shard_loader_options {
    uint32_t batch_size; /* samples per batch, >= 1 */
    int drop_last;       /* leave out this rank's last, partial batch */
    /* the epoch plan: shuffle, seed, rank, world_size, shuffle_buffer,
     * remainder (its epoch is the one started) */
    struct shard_plan_options plan;
    int threads;       /* threads (0..1024); 0: the consumer's
                        * own thread does the work inside next() */
    uint32_t prefetch; /* batches in flight; 0: 2 */
    int skip_errors;   /* 1: leave damaged samples out, counted */
    /* Worker `worker` of `workers` loaders sharing this rank's epoch (e.g.
     * DataLoader worker processes): this one makes only the batches b with
     * b % workers == worker, numbered as in the whole epoch.  workers 0 or 1:
     * all.  `part` and `parts` are the deprecated older names of the same
     * members (shardkit 0.1.0's; same offsets, same layout). */
    union {
        uint32_t worker;
        uint32_t part SHARD_DEPRECATED("use worker");
    };
    union {
        uint32_t workers;
        uint32_t parts SHARD_DEPRECATED("use workers");
    };
    /* The fields each batch carries: field_count field numbers (indices into
     * the manifest's config.fields, none twice), copied; NULL and 0: none. */
    const uint32_t *fields;
    uint32_t field_count;
    /* (in what was padding before box_min_size: 0.1.0's layout and size are
     * kept, tests/fixtures/older_names.c)
     * The channels each sample is given in: 0 (the default) the dataset's
     * stored form; 1..4 each sample converted to that many first, before
     * any transform (shard_image_convert: 3 gives a grey dataset's samples
     * as RGB to a model that wants three channels, 1 an RGB one's as grey). */
    uint32_t channels;
    /* Selected BOXES fields: after the transforms, a box narrower or lower
     * than this (pixels) is removed with its class (shard_transforms_boxes);
     * default 1, torchvision's SanitizeBoundingBoxes. */
    double box_min_size;
};

/* Defaults: batch 64, drop_last 0, shard_plan_options_init's plan but with
 * remainder SHARD_REMAINDER_PAD, 2 threads, prefetch 0 (= 2), skip_errors
 * 0, worker 0 of 1, no fields, box_min_size 1, channels 0 (the stored form).
 *
 * Ranks in step.  With world_size > 1 every rank must make the same number
 * of batches in every epoch (a distributed training loop whose ranks run
 * out at different batches waits forever in its collectives): pad (the
 * default: every rank ceil(N/W) samples, a few repeated) and drop (floor(N/W),
 * a few left out) always do; keep (every sample exactly once) gives ranks
 * floor(N/W) or ceil(N/W) samples, and a loader whose ranks would then make
 * different batch counts is refused (SHARD_EINVAL naming the counts).  With
 * one rank the three are the same plan. */
SHARD_API void shard_loader_options_init(struct shard_loader_options *o);

struct shard_loader;

/* A loader over ds (which must stay open until the loader is freed) with the
 * transforms of `transforms` (NULL: none, NHWC in the stored dtype; else it must outlive the
 * loader).  No thread runs until shard_loader_start.
 * 0, SHARD_EINVAL (batch_size 0, rank >= world_size, threads out of range,
 * a field the dataset does not declare or selected twice, remainder keep
 * giving ranks unequal batch counts (above): the message names the option),
 * SHARD_ENOMEM. */
SHARD_API int shard_loader_new(struct shard_loader **out, struct shard_dataset *ds,
                               const struct shard_transforms *transforms,
                               const struct shard_loader_options *o, struct shard_err *err);

#ifdef SHARDKIT_EXPERIMENTAL
/* A loader over the mixture mix (shardkit/mixture.h; it and its sources
 * must stay until the loader is freed), as shard_loader_new: the plans are
 * the mixture's (o->plan: seed, shuffle, shuffle_buffer, remainder, rank,
 * world_size), batches say each sample's source (shard_batch_info.sources)
 * and give its index in that source, and its label as the mixture's labels
 * option says.  No fields (SHARD_EINVAL: a mixture's sources number their
 * fields each their own way). */
SHARD_API int shard_loader_new_mixture(struct shard_loader **out, const struct shard_mixture *mix,
                                       const struct shard_transforms *transforms,
                                       const struct shard_loader_options *o, struct shard_err *err);
#endif /* SHARDKIT_EXPERIMENTAL */

/* Stop the threads and free the loader: a read under way ends within 50 ms
 * (one waiting for a server that stalls, a cache lock or another thread's
 * open stops waiting: the dataset's own fetches go on), so this returns
 * within one sample's decoding.  Batches already handed out stay valid.
 * Accepts NULL. */
SHARD_API void shard_loader_free(struct shard_loader *l);

/* Batches per epoch this loader makes (for this rank and worker; the same for
 * every epoch). */
SHARD_API uint64_t shard_loader_batch_count(const struct shard_loader *l);
/* Plan entries per epoch for this rank, and how many of them drop_last
 * leaves out. */
SHARD_API uint64_t shard_loader_sample_count(const struct shard_loader *l);
SHARD_API uint64_t shard_loader_dropped(const struct shard_loader *l);

/* Start epoch `epoch` at batch `first` (0 for a fresh epoch; a restored
 * position's batch count otherwise): whatever was in flight is dropped, the
 * plan is made and the threads begin.  first may equal the batch count (the
 * epoch is then over at once).  0, SHARD_EINVAL (first beyond the epoch),
 * SHARD_ENOMEM, SHARD_EIO (threads could not start). */
SHARD_API int shard_loader_start(struct shard_loader *l, uint64_t epoch, uint64_t first,
                                 struct shard_err *err);

/* Start what is left of epoch `epoch` after the segments done[0..count)
 * (shardkit/dataset.h, "The rest of an epoch": the job's ranks stopped the
 * epoch in lockstep at another world size, or batch size, and this
 * loader's rank reads its plan of the rest), from the rank's batch `from`
 * of it on: with workers, worker k of n makes batches from + k, from + k +
 * n, ... (numbered in the rank's plan of the rest, batch.number), so a
 * restart at `from` works with any number of workers.  count 0: the
 * ordinary plan of the epoch (from first * workers is shard_loader_start's
 * first).  The position counts from `from`.  0, SHARD_EINVAL (from beyond
 * the batches; a segment of no ranks; remainder keep whose new ranks would
 * make different batch counts: named as shard_loader_new names them),
 * SHARD_ENOMEM, SHARD_EIO. */
SHARD_API int shard_loader_start_resumed(struct shard_loader *l, uint64_t epoch,
                                         const struct shard_plan_segment *done, size_t count,
                                         uint64_t from, struct shard_err *err);

/* The rank's batches in the rest of epoch `epoch` after done[0..count)
 * (every worker's; count 0: an epoch's), checked as start_resumed checks
 * them, without starting anything.  0 or SHARD_EINVAL, SHARD_ENOMEM. */
SHARD_API int shard_loader_resumed_batch_count(const struct shard_loader *l, uint64_t epoch,
                                               const struct shard_plan_segment *done, size_t count,
                                               uint64_t *batches, struct shard_err *err);

/* The rank's batches in the epoch started last (every worker's: the whole
 * epoch's, or with start_resumed the rest's); 0 before any start. */
SHARD_API uint64_t shard_loader_started_batch_count(const struct shard_loader *l);

/* Stop the threads (as shard_loader_free does: within 50 ms of a read
 * under way) and drop what is in flight (an iteration abandoned
 * mid-epoch); the position stays.  next() then needs a new start. */
SHARD_API void shard_loader_stop(struct shard_loader *l);

/* The position: the epoch started, and the batches handed out in it
 * (counting the start's `first`). */
SHARD_API uint64_t shard_loader_epoch(const struct shard_loader *l);
SHARD_API uint64_t shard_loader_position(const struct shard_loader *l);

/* Returned by shard_loader_next when timeout_ms passed before the batch was
 * ready: call again (a binding checks for Ctrl-C in between). */
#define SHARD_LOADER_WAITING 2

struct shard_batch;

/* The next batch of the started epoch: 1 with *out (the caller owns it; free
 * with shard_batch_free), 0 when the epoch is over, SHARD_LOADER_WAITING when
 * it was not ready within timeout_ms (< 0: wait as long as it takes), or the
 * error of a sample that failed it (the position then moves past the batch;
 * shard_loader_failed_index says which sample).  SHARD_EINVAL before any
 * start. */
SHARD_API int shard_loader_next(struct shard_loader *l, int timeout_ms, struct shard_batch **out,
                                struct shard_err *err);

/* Have shard_loader_next, when it fills a batch itself (threads 0), call
 * interrupted(user) on its thread at most every 50 ms while it reads, and
 * while a read waits (an HTTP transfer, a window, a cache lock, another
 * thread's open), and stop once it returns non-zero: next() then returns
 * SHARD_EINTR, the batch not handed out and the position unchanged (the
 * next call makes it again).  interrupted must be quick and must not call
 * the library (the reader's locks may be held).  NULL: none.  With threads,
 * next() waits at most its timeout_ms, and the caller looks in between. */
SHARD_API void shard_loader_set_interrupt(struct shard_loader *l, int (*interrupted)(void *user),
                                          void *user);

/* The sample index whose failure the last shard_loader_next returned, and
 * (a mixture's loader) its source; 0 otherwise. */
SHARD_API uint64_t shard_loader_failed_index(const struct shard_loader *l);
SHARD_API uint32_t shard_loader_failed_source(const struct shard_loader *l);

/* One selected field's values in a batch (see "Fields" above).  Row j is the
 * batch's sample j (indices[j]). */
struct shard_batch_field {
    uint32_t field;             /* field number: index into the manifest's config.fields */
    enum shard_field_type type; /* the declared type */
    uint32_t length;            /* values per sample of a stacked field: 1 for INT and FLOAT,
                                 * the vector length for FLOAT32 and INT64; 0 for the others */
    const uint8_t *present;     /* count flags: 1 where the sample has the field, 0 where
                                 * it is absent */
    /* INT, FLOAT, FLOAT32, INT64: count x length values in host byte order,
     * int64_t, double, float, int64_t; a row of zeros where absent.  NULL for
     * the other types. */
    const void *values;
    /* TEXT, JSON, BYTES, LABELS, BOXES, MASK: sample j's value is
     * data[offsets[j] .. offsets[j + 1]) (empty where absent): the stored
     * bytes, for LABELS uint32_t label numbers in host byte order, and for
     * BOXES and MASK the value in its stored layout (little-endian) after
     * the transforms (shard_transforms_boxes, shard_transforms_mask: a mask of the
     * sample's output size), read with shard_field_boxes_decode and
     * shard_field_mask_decode (shardkit/format.h).  IMAGE: the value in its
     * stored layout at the sample's output size (shard_field_image_decode).
     * INSTANCES: the masks decoded, through the transforms, as
     * shard_batch_instances reads them.  NULL for the other types. */
    const uint8_t *data;
    const uint64_t *offsets; /* count + 1 offsets, offsets[0] = 0 */
};

struct shard_batch_info {
    uint64_t epoch;
    uint64_t number;         /* the batch's number in its epoch */
    uint32_t count;          /* samples in it */
    uint32_t skipped;        /* damaged samples left out (skip_errors) */
    const uint64_t *indices; /* count sample indices, stored order */
    const int32_t *labels;   /* count labels; SHARD_NO_LABEL when none */
    enum shard_layout layout;
    enum shard_dtype dtype;
    int fixed;              /* 1: every sample is width x height, and `data` holds
                             * them back to back */
    uint32_t width, height; /* with fixed */
    void *data;             /* with fixed: count * sample bytes */
    void *const *samples;   /* count pointers: each sample's values */
    const uint32_t *widths; /* count sizes */
    const uint32_t *heights;
    /* with skip_errors: the samples left out, and why (names shard, record, key) */
    const uint64_t *skipped_indices;
    const struct shard_err *skipped_errors;
    /* the selected fields (shard_loader_options.fields), in that order */
    uint32_t field_count;
    const struct shard_batch_field *fields;
    /* each sample's source in a mixture's loader (0 in a dataset's), count of
     * them; `indices` are then indices in those sources */
    const uint32_t *sources;
    const uint32_t *skipped_sources; /* the same for skipped_indices */
    /* channels of each sample (the dataset's stored form: 1 grey, 2 grey and
     * alpha, 3 RGB, 4 RGBA), the last axis in NHWC, the first in NCHW */
    uint32_t channels;
};

/* What a batch holds (owned by the batch; valid until it is freed). */
SHARD_API const struct shard_batch_info *shard_batch_info(const struct shard_batch *b);

/* Sample j's instance masks in a batch's INSTANCES field f: their width and
 * height (the sample's output size), their count (those of the boxes the
 * transforms kept, when the batch carries the boxes field too) and *masks,
 * count x height x width bytes into the batch's memory, mask after mask,
 * row-major, 1 inside the object and 0 elsewhere.  0, SHARD_ENOTFOUND when
 * the sample lacks the field, SHARD_EINVAL when f is no INSTANCES field or
 * j no sample of it (count: the batch's). */
SHARD_API int shard_batch_instances(const struct shard_batch_field *f, uint32_t count, uint32_t j,
                                    uint32_t *width, uint32_t *height, uint32_t *masks_count,
                                    const uint8_t **masks);

/* Free a batch; its memory goes back to its loader for later batches when
 * the loader still exists.  Thread-safe; accepts NULL. */
SHARD_API void shard_batch_free(struct shard_batch *b);

/* What the loader has done since it was made.  The reading stages (read,
 * decompress, decode, bytes, requests) are the dataset's counters
 * (shard_dataset_stats: take a snapshot when the loader starts and
 * subtract); these are the loader's own. */
struct shard_loader_stats {
    uint64_t samples;        /* samples delivered in batches */
    uint64_t batches;        /* batches delivered */
    uint64_t skipped;        /* samples left out as damaged (skip_errors) */
    uint64_t failed_batches; /* batches that failed with an error */
    uint64_t transform_ns;   /* transform and output writing, summed over threads */
    uint64_t wait_ns;        /* the consumer blocked in shard_loader_next */
    uint64_t busy_ns;        /* wall time with an epoch started and not yet over */
};

/* Fill *s.  Thread-safe (a snapshot: counters are updated as work is done). */
SHARD_API void shard_loader_stats(const struct shard_loader *l, struct shard_loader_stats *s);

/* ---- older names (deprecated) --------------------------------------------
 *
 * shardkit 0.1.0's names, kept so that a program written against them still
 * compiles (the compiler warns at each function and constant and names the
 * new one) and one built against them still links and runs: each function
 * is exported under its old name and does exactly what the new one does.
 * The types' old names are macros for the new ones (`struct shard_augment`
 * is `struct shard_transforms`), so old and new code pass the same objects;
 * shard_loader_options' `part` and `parts` share their unions with `worker`
 * and `workers`.  CONTRIBUTING.md's "Words" says why the names changed. */

#define shard_augment shard_transforms
#define shard_augment_step shard_transform_step
#define shard_augment_op shard_transform_op
#define shard_augment_choice shard_transform_choice
#define shard_augment_draws shard_transforms_draws
#define shard_augment_workspace shard_transforms_workspace
#define SHARD_AUGMENT_MAX_STEPS SHARD_TRANSFORMS_MAX_STEPS
#define SHARD_AUGMENT_MAX_SIDE SHARD_TRANSFORMS_MAX_SIDE
#define SHARD_AUGMENT_MAX_PIXELS SHARD_TRANSFORMS_MAX_PIXELS

SHARD_API void shard_augment_step_init(struct shard_transform_step *s, enum shard_transform_op op)
    SHARD_DEPRECATED("use shard_transform_step_init");
SHARD_API int shard_augment_new(struct shard_transforms **out,
                                const struct shard_transform_step *steps, size_t count,
                                enum shard_layout layout, enum shard_dtype dtype,
                                struct shard_err *err) SHARD_DEPRECATED("use shard_transforms_new");
SHARD_API void shard_augment_free(struct shard_transforms *a)
    SHARD_DEPRECATED("use shard_transforms_free");
SHARD_API enum shard_layout shard_augment_layout(const struct shard_transforms *a)
    SHARD_DEPRECATED("use shard_transforms_layout");
SHARD_API enum shard_dtype shard_augment_dtype(const struct shard_transforms *a)
    SHARD_DEPRECATED("use shard_transforms_dtype");
SHARD_API int shard_augment_fixed_size(const struct shard_transforms *a, uint32_t *width,
                                       uint32_t *height)
    SHARD_DEPRECATED("use shard_transforms_fixed_size");
SHARD_API int shard_augment_draw(const struct shard_transforms *a, uint32_t width, uint32_t height,
                                 uint64_t seed, uint64_t epoch, uint64_t index,
                                 struct shard_transforms_draws *out, struct shard_err *err)
    SHARD_DEPRECATED("use shard_transforms_draw");
SHARD_API int shard_augment_workspace_new(struct shard_transforms_workspace **out,
                                          struct shard_err *err)
    SHARD_DEPRECATED("use shard_transforms_workspace_new");
SHARD_API void shard_augment_workspace_free(struct shard_transforms_workspace *w)
    SHARD_DEPRECATED("use shard_transforms_workspace_free");
SHARD_API int shard_augment_apply(const struct shard_transforms *a, const struct shard_image *src,
                                  const struct shard_transforms_draws *draws,
                                  struct shard_transforms_workspace *w, void *dst,
                                  struct shard_err *err)
    SHARD_DEPRECATED("use shard_transforms_apply");
SHARD_API size_t shard_augment_boxes(const struct shard_transforms *a,
                                     const struct shard_transforms_draws *d, double dx, double dy,
                                     double min_size, const uint8_t *in, size_t n, uint8_t *out)
    SHARD_DEPRECATED("use shard_transforms_boxes");
SHARD_API int shard_augment_mask(const struct shard_transforms *a, const struct shard_image *mask,
                                 const struct shard_transforms_draws *d,
                                 struct shard_transforms_workspace *w, void *dst,
                                 struct shard_err *err)
    SHARD_DEPRECATED("use shard_transforms_mask");

#ifdef __cplusplus
}
#endif
#endif
