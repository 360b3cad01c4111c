/* options.c - shardify's command line (see options.h). */
#include "options.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_part.h"

#define PROG "shardify"
#define MAX_SIZE 65535
#define MIN_SHARD_SIZE 4096
#define LABELS_REGEX_PREFIX "regex:"

static const char usage_text[] =
    "Usage: shardify [OPTIONS] SRC DST\n"
    "  or:  shardify merge [--json] [--quiet] DST\n"
    "Decode and resize every image of SRC once, at training resolution, and write\n"
    "large zstd-compressed shards plus a manifest that keeps every sample's identity.\n"
    "\n"
    "  SRC   a directory (walked recursively, symlinks not followed) or an archive\n"
    "        file (.tar, .tar.gz, .tar.zst, .zip ...), read in one streaming pass\n"
    "        whose converted samples are spooled in DST/.shardify until the shards\n"
    "        are written: DST needs room for about twice the dataset meanwhile;\n"
    "        or s3://BUCKET/PREFIX: every object below PREFIX/, fetched in parallel;\n"
    "        with --archives, a directory of archives read as one source;\n"
    "        or http(s):// URLs of archives (WebDataset tar shards), read as a\n"
    "        folder of them: brace lists ({00000..00099}.tar, {a,b}.tar) and\n"
    "        several URLs separated by '::' are expanded, and every archive is\n"
    "        checked to be there before any is fetched\n"
    "  DST   output directory; created if missing; must be empty unless it holds a\n"
    "        previous shardify output (see --overwrite and --resume); or\n"
    "        s3://BUCKET/PREFIX: each shard is uploaded when it is finished,\n"
    "        index.jsonl next and manifest.json last (settings: AWS_* variables\n"
    "        and ~/.aws, as the AWS CLI: docs/guide/remote.md)\n"
    "\n"
    "Options:\n"
    "  --size N              training resolution (default 512)\n"
    "  --fit short|long|crop\n"
    "                        short: shorter side becomes N (default); long: longer\n"
    "                        side becomes N; crop: shorter side N, then centre crop NxN\n"
    "  --no-upscale          keep images already smaller than the target at their size\n"
    "  --codec jpeg|png|raw  how pixels are stored (default jpeg); raw = the samples\n"
    "                        as they are, HWC\n"
    "  --pixels auto|gray|gray-alpha|rgb|rgba\n"
    "                        the channels stored (default auto: each image's own;\n"
    "                        a dataset of several reads as the widest; jpeg stores\n"
    "                        gray or rgb, alpha composited over the background)\n"
    "  --depth auto|8|16     bits per sample (default auto: 16 for 16-bit PNG and\n"
    "                        TIFF, else 8; jpeg stores 8)\n"
    "  --quality Q           JPEG quality 1..100 (default 90)\n"
    "  --zstd-level L        zstd level -131072..19, not 0 (default: -100 for raw,\n"
    "                        which reads fastest, 3 for jpeg and png); negative\n"
    "                        levels trade size for speed\n"
    "  --shard-size SIZE     target bytes per shard, K/M/G suffixes (default 256M)\n"
    "  --labels SPEC         dir (default: first path component is the class), none,\n"
    "                        a CSV file of key,label rows, regex:PATTERN (first\n"
    "                        capture group of PATTERN on the key), sidecar:SUFFIX\n"
    "                        (the text of each image's sidecar file, e.g.\n"
    "                        sidecar:.cls) or column:NAME (of --annotations)\n"
    "  --classes FILE        a fixed class list, its order the labels' numbering,\n"
    "                        whatever SRC holds: one name a line, or a JSON array\n"
    "                        of names or of {\"id\", \"name\"} (ids 0..N-1); a class of\n"
    "                        SRC it does not list is an error (a class number below\n"
    "                        N, as a numeric .cls, is the list's class of that number)\n"
    "  --keys FILE           convert only the images FILE lists, one key or stem a line\n"
    "                        (VOC's ImageSets/Segmentation/train.txt); the others\n"
    "                        are counted as ignored\n"
    "  --archives            SRC is a directory of archives (WebDataset tar shards, as\n"
    "                        img2dataset writes them): every .tar, .tar.gz, .tar.zst,\n"
    "                        .zip ... directly in it is read, in name order, as part\n"
    "                        of one source; keys name their archive\n"
    "                        (00000.tar/000123.jpg); other files are ignored\n"
    "  --order archive|global\n"
    "                        with --archives, the stored order: archive (default)\n"
    "                        archive by archive, each shuffled on its own, so that\n"
    "                        the folder converts in parts (whole archives to each)\n"
    "                        and in memory of one archive; global: every key of the\n"
    "                        folder sorted and shuffled together (one run; memory\n"
    "                        grows with the samples), for archives that each hold\n"
    "                        one class\n"
    "  --field NAME=TYPE[,from=SOURCE][,classes=FILE][,ignore=N][,replace=OLD:NEW][,required]\n"
    "                        a field each sample carries besides its image (repeat\n"
    "                        for more); TYPE: text, json, int, float, float32[N],\n"
    "                        int64[N], labels, bytes, mask, image; SOURCE: a sidecar\n"
    "                        suffix (from=.txt: a/0001.jpg's a/0001.txt;\n"
    "                        from=_mask.png: a/0001_mask.png; x.left.jpg's\n"
    "                        from=.right.jpg: x.right.jpg), a mask's folder\n"
    "                        mirroring SRC (from=../masks/: a/0001.jpg's\n"
    "                        ../masks/a/0001.png, relative to SRC) or a column of\n"
    "                        --annotations (default: that column NAME, else the\n"
    "                        sidecar .NAME); a mask is a\n"
    "                        grey or palette PNG of class ids, resized and cropped\n"
    "                        with its image, whose classes FILE lists (JSON names or\n"
    "                        {id, name}, or a name a line) and ignore=N the value of\n"
    "                        pixels of no class (VOC's 255: kept, padding writes it);\n"
    "                        a folder's replace=OLD:NEW: the image stem's ending OLD\n"
    "                        is NEW in its mask's name (Cityscapes:\n"
    "                        replace=_leftImg8bit:_gtFine_labelTrainIds); an image\n"
    "                        (a depth map, a pair's other view) is a sidecar image\n"
    "                        of its image's size, resampled and cropped as it is and\n"
    "                        stored raw;\n"
    "                        required: a sample without it is rejected (default: it\n"
    "                        may be absent)\n"
    "  --coco FILE           a COCO annotation file (instances_*.json): the field\n"
    "                        \"boxes\" of each image its file_name names (bbox,\n"
    "                        category_id, iscrowd), in the stored image's pixels\n"
    "  --coco-instances      with --coco, also the field \"masks\": one mask per box of\n"
    "                        \"boxes\", in its order (Mask R-CNN's masks), each\n"
    "                        annotation's segmentation alone\n"
    "  --boxes clamp|strict  a COCO box partly outside its image: clamp (default, as\n"
    "                        torchvision's reference) clips it to the image, and drops\n"
    "                        and counts one wholly outside it; strict rejects the image\n"
    "  --coco-mask           with --coco, also the field \"mask\": the annotations'\n"
    "                        segmentation (polygons, RLE) as class ids\n"
    "  --annotations FILE    a table of per-sample values keyed by the sample's key:\n"
    "                        JSON Lines ({\"key\": ..., \"caption\": ...}) or CSV with\n"
    "                        a header row holding \"key\"; without it, a Hugging Face\n"
    "                        metadata.jsonl or metadata.csv in SRC (or in the split\n"
    "                        folder) is read when a field or a --labels column needs\n"
    "                        a table\n"
    "  --key-column NAME     the table's key column (default: key; file_name for a\n"
    "                        table named metadata.jsonl or metadata.csv)\n"
    "  --split NAME          SRC is laid out in split folders (train/, validation/,\n"
    "                        test/ ...): convert SRC/NAME, with every split's classes\n"
    "                        as the labels; without it such a SRC is converted split\n"
    "                        by split, each into DST/NAME\n"
    "  --max-field-bytes SIZE\n"
    "                        refuse a sample whose sidecar or table value is larger\n"
    "                        (default 16M)\n"
    "  --shuffle-seed S      seed of the deterministic shuffle (default 0)\n"
    "  --no-shuffle          keep sorted key order\n"
    "  --threads N           conversion threads (default: CPUs this process may use)\n"
    "  --max-pixels N        refuse images whose header declares more pixels\n"
    "                        (default 100000000)\n"
    "  --max-file-size SIZE  refuse larger input files (default 1G)\n"
    "  --memory SIZE         the most bytes of source files (archive entries, files,\n"
    "                        S3 objects read ahead) the threads hold at once\n"
    "                        (default 1G): a file waits for room before it is\n"
    "                        read, one larger than SIZE is read alone\n"
    "  --on-error skip|fail  skip (default): record a bad input as rejected and go on;\n"
    "                        fail: stop at the first bad input, publish nothing\n"
    "  --allow-empty         publish a dataset of no sample (an empty SRC, or every\n"
    "                        candidate rejected); without it such a run publishes\n"
    "                        nothing and fails\n"
    "  --resume              continue an interrupted run in DST\n"
    "  --overwrite           replace a previous output in DST\n"
    "  --incremental PREV    reuse the records of PREV, a dataset published from an\n"
    "                        earlier state of SRC with the same options: unchanged\n"
    "                        files keep their record (copied as bytes, checked),\n"
    "                        only new and changed ones are converted; the result is\n"
    "                        the dataset a full run gives, plus the manifest's\n"
    "                        \"lineage\"; options that differ from PREV's are a usage\n"
    "                        error naming the option, and so are boxes and mask\n"
    "                        fields (made as their images are converted)\n"
    "  --incremental-or-full PREV\n"
    "                        the same, but rebuild in full (and say why) when PREV\n"
    "                        cannot serve: other options, boxes or mask fields,\n"
    "                        another format version, missing or damaged\n"
    "  --work-dir DIR        an s3:// DST's local work directory: lock, resume state,\n"
    "                        each file until it is uploaded (default\n"
    "                        $XDG_CACHE_HOME/shardkit/shardify/s3-BUCKET-HASH)\n"
    "  --part I/N            convert part I (0-based) of N into DST/parts/I-of-N:\n"
    "                        every part lists all of SRC (a directory or s3://),\n"
    "                        takes the same sample order and converts its own\n"
    "                        contiguous share of it, balanced by source bytes;\n"
    "                        parts may run at once, on other machines too, then\n"
    "                        'shardify merge DST' makes one dataset of them (a\n"
    "                        dataset published in DST, which it replaces, needs\n"
    "                        --overwrite)\n"
    "  --part auto           I and N from the job engine: a Slurm job array\n"
    "                        (SLURM_ARRAY_TASK_ID, _COUNT, _MIN, _STEP) or a\n"
    "                        Kubernetes Indexed Job (JOB_COMPLETION_INDEX, with N\n"
    "                        from --parts)\n"
    "  --parts N             the number of parts (--part auto on Kubernetes)\n"
    "  --json                print the run summary as one JSON object on stdout (a\n"
    "                        failed run too, with the counts it reached)\n"
    "  --quiet               no progress or summary on stderr (errors and warnings\n"
    "                        are still shown)\n"
    "  -h, --help            show this help\n"
    "  --version             show the version\n"
    "\n"
    "'shardify merge DST' publishes one dataset in DST from the parts in DST/parts\n"
    "(see 'shardify merge --help').\n"
    "\n"
    "Exit status (the same for every shardkit tool): 0 done (rejects allowed, and\n"
    "reported); 1 failed, nothing new published (the message says why: SRC, DST or\n"
    "the --labels file unusable, a full disk, no sample at all, a declared field\n"
    "that no sample has ...); 2 usage error, found before any work.\n";

enum {
    OPT_SIZE = CLI_FIRST_LONG_OPTION,
    OPT_FIT,
    OPT_NO_UPSCALE,
    OPT_CODEC,
    OPT_PIXELS,
    OPT_DEPTH,
    OPT_QUALITY,
    OPT_ZSTD_LEVEL,
    OPT_SHARD_SIZE,
    OPT_LABELS,
    OPT_SEED,
    OPT_NO_SHUFFLE,
    OPT_THREADS,
    OPT_MAX_PIXELS,
    OPT_MAX_FILE_SIZE,
    OPT_ON_ERROR,
    OPT_RESUME,
    OPT_OVERWRITE,
    OPT_JSON,
    OPT_QUIET,
    OPT_VERSION,
    OPT_WORK_DIR,
    OPT_PART,
    OPT_PARTS,
    OPT_INCREMENTAL,
    OPT_INCREMENTAL_OR_FULL,
    OPT_FIELD,
    OPT_ANNOTATIONS,
    OPT_COCO,
    OPT_COCO_MASK,
    OPT_MAX_FIELD_BYTES,
    OPT_ARCHIVES,
    OPT_ORDER,
    OPT_MEMORY,
    OPT_ALLOW_EMPTY,
    OPT_CLASSES,
    OPT_KEY_COLUMN,
    OPT_SPLIT,
    OPT_KEYS,
    OPT_BOXES,
    OPT_COCO_INSTANCES,
};

static const struct option long_options[] = {
    {"size", required_argument, NULL, OPT_SIZE},
    {"fit", required_argument, NULL, OPT_FIT},
    {"no-upscale", no_argument, NULL, OPT_NO_UPSCALE},
    {"codec", required_argument, NULL, OPT_CODEC},
    {"pixels", required_argument, NULL, OPT_PIXELS},
    {"depth", required_argument, NULL, OPT_DEPTH},
    {"quality", required_argument, NULL, OPT_QUALITY},
    {"zstd-level", required_argument, NULL, OPT_ZSTD_LEVEL},
    {"shard-size", required_argument, NULL, OPT_SHARD_SIZE},
    {"labels", required_argument, NULL, OPT_LABELS},
    {"classes", required_argument, NULL, OPT_CLASSES},
    {"key-column", required_argument, NULL, OPT_KEY_COLUMN},
    {"split", required_argument, NULL, OPT_SPLIT},
    {"keys", required_argument, NULL, OPT_KEYS},
    {"boxes", required_argument, NULL, OPT_BOXES},
    {"coco-instances", no_argument, NULL, OPT_COCO_INSTANCES},
    {"field", required_argument, NULL, OPT_FIELD},
    {"archives", no_argument, NULL, OPT_ARCHIVES},
    {"order", required_argument, NULL, OPT_ORDER},
    {"memory", required_argument, NULL, OPT_MEMORY},
    {"annotations", required_argument, NULL, OPT_ANNOTATIONS},
    {"coco", required_argument, NULL, OPT_COCO},
    {"coco-mask", no_argument, NULL, OPT_COCO_MASK},
    {"max-field-bytes", required_argument, NULL, OPT_MAX_FIELD_BYTES},
    {"shuffle-seed", required_argument, NULL, OPT_SEED},
    {"no-shuffle", no_argument, NULL, OPT_NO_SHUFFLE},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"max-pixels", required_argument, NULL, OPT_MAX_PIXELS},
    {"max-file-size", required_argument, NULL, OPT_MAX_FILE_SIZE},
    {"on-error", required_argument, NULL, OPT_ON_ERROR},
    {"allow-empty", no_argument, NULL, OPT_ALLOW_EMPTY},
    {"resume", no_argument, NULL, OPT_RESUME},
    {"overwrite", no_argument, NULL, OPT_OVERWRITE},
    {"work-dir", required_argument, NULL, OPT_WORK_DIR},
    {"part", required_argument, NULL, OPT_PART},
    {"parts", required_argument, NULL, OPT_PARTS},
    {"incremental", required_argument, NULL, OPT_INCREMENTAL},
    {"incremental-or-full", required_argument, NULL, OPT_INCREMENTAL_OR_FULL},
    {"json", no_argument, NULL, OPT_JSON},
    {"quiet", no_argument, NULL, OPT_QUIET},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, OPT_VERSION},
    {NULL, 0, NULL, 0},
};

/* What parsing fills: the options, and two flags that make one mode. */
struct parsing {
    struct options *o;
    int resume;
    int overwrite;
    const char *part;  /* --part, resolved once every option is read */
    uint64_t parts;    /* --parts, 0 when not given */
    int incremental;   /* --incremental and --incremental-or-full given */
    const char *order; /* --order, or NULL */
    int boxes;         /* --boxes given */
};

/* One option and its value.  CLI_EXIT_OK or the usage-error status. */
static int parse_option(int opt, void *ctx, char **argv)
{
    struct parsing *p = ctx;
    struct options *o = p->o;
    struct shard_config *cfg = &o->run.config;
    uint64_t v;
    int64_t level;
    switch (opt) {
    case OPT_SIZE:
        if (cli_parse_u64(optarg, 1, MAX_SIZE, &v))
            return cli_usage_error(PROG, "--size: '%s' is not a number in 1..%d", optarg, MAX_SIZE);
        cfg->size = (uint32_t)v;
        break;
    case OPT_FIT:
        if (shard_fit_parse(optarg, &cfg->fit))
            return cli_usage_error(PROG, "--fit: '%s' is not short, long or crop", optarg);
        break;
    case OPT_NO_UPSCALE: cfg->upscale = 0; break;
    case OPT_CODEC:
        if (shard_codec_parse(optarg, &cfg->codec))
            return cli_usage_error(PROG, "--codec: '%s' is not jpeg, png or raw", optarg);
        break;
    case OPT_PIXELS:
        if (shard_pixels_parse(optarg, &cfg->channels))
            return cli_usage_error(PROG,
                                   "--pixels: '%s' is not auto, gray, gray-alpha, rgb or rgba",
                                   optarg);
        break;
    case OPT_DEPTH:
        if (shard_depth_parse(optarg, &cfg->depth))
            return cli_usage_error(PROG, "--depth: '%s' is not auto, 8 or 16", optarg);
        break;
    case OPT_QUALITY:
        if (cli_parse_u64(optarg, 1, 100, &v))
            return cli_usage_error(PROG, "--quality: '%s' is not a number in 1..100", optarg);
        cfg->quality = (int)v;
        break;
    case OPT_ZSTD_LEVEL:
        if (cli_parse_i64(optarg, SHARD_ZSTD_LEVEL_MIN, SHARD_ZSTD_LEVEL_MAX, &level) || level == 0)
            return cli_usage_error(PROG,
                                   "--zstd-level: '%s' is not a number in %d..%d "
                                   "other than 0",
                                   optarg, SHARD_ZSTD_LEVEL_MIN, SHARD_ZSTD_LEVEL_MAX);
        cfg->zstd_level = (int)level;
        break;
    case OPT_SHARD_SIZE:
        if (cli_parse_size(optarg, &cfg->shard_size) || cfg->shard_size < MIN_SHARD_SIZE)
            return cli_usage_error(PROG,
                                   "--shard-size: '%s' is not a size of at least 4K "
                                   "(e.g. 256M, 1G)",
                                   optarg);
        break;
    case OPT_LABELS: o->run.labels = optarg; break;
    case OPT_CLASSES:
        if (o->run.classes)
            return cli_usage_error(PROG, "give one --classes file");
        o->run.classes = optarg;
        break;
    case OPT_FIELD:
        if (o->run.field_count == SHARD_FIELDS_MAX)
            return cli_usage_error(PROG, "--field: at most %u fields", SHARD_FIELDS_MAX);
        o->fields[o->run.field_count++] = optarg;
        o->run.fields = o->fields;
        break;
    case OPT_ARCHIVES: o->run.archives = 1; break;
    case OPT_ORDER:
        if (strcmp(optarg, "archive") && strcmp(optarg, "global"))
            return cli_usage_error(PROG, "--order takes archive or global, not '%s'", optarg);
        p->order = optarg;
        break;
    case OPT_ALLOW_EMPTY: o->run.allow_empty = 1; break;
    case OPT_ANNOTATIONS:
        if (o->run.annotations)
            return cli_usage_error(PROG, "give one --annotations table");
        o->run.annotations = o->annotations = optarg;
        break;
    case OPT_KEY_COLUMN:
        if (!*optarg)
            return cli_usage_error(PROG, "--key-column needs a column's name");
        o->key_column = optarg;
        break;
    case OPT_KEYS:
        if (o->run.keys)
            return cli_usage_error(PROG, "give one --keys file");
        o->run.keys = optarg;
        break;
    case OPT_SPLIT:
        if (!*optarg || strchr(optarg, '/') || !strcmp(optarg, ".") || !strcmp(optarg, ".."))
            return cli_usage_error(PROG, "--split: '%s' is not a folder's name", optarg);
        o->run.split = optarg;
        break;
    case OPT_COCO:
        if (o->run.coco)
            return cli_usage_error(PROG, "give one --coco file");
        o->run.coco = optarg;
        break;
    case OPT_COCO_MASK: o->run.coco_mask = 1; break;
    case OPT_COCO_INSTANCES: o->run.coco_instances = 1; break;
    case OPT_BOXES:
        if (strcmp(optarg, "clamp") && strcmp(optarg, "strict"))
            return cli_usage_error(PROG, "--boxes takes clamp or strict, not '%s'", optarg);
        cfg->boxes_strict = !strcmp(optarg, "strict");
        p->boxes = 1;
        break;
    case OPT_MAX_FIELD_BYTES:
        if (cli_parse_size(optarg, &cfg->max_field_bytes) || cfg->max_field_bytes == 0)
            return cli_usage_error(PROG, "--max-field-bytes: '%s' is not a size", optarg);
        break;
    case OPT_SEED:
        if (cli_parse_u64(optarg, 0, UINT64_MAX, &cfg->shuffle_seed))
            return cli_usage_error(PROG, "--shuffle-seed: '%s' is not a whole number", optarg);
        break;
    case OPT_NO_SHUFFLE: cfg->shuffle = 0; break;
    case OPT_THREADS: return cli_parse_threads(PROG, optarg, &o->run.threads);
    case OPT_MAX_PIXELS:
        if (cli_parse_u64(optarg, 1, UINT64_MAX / 8, &cfg->max_pixels))
            return cli_usage_error(PROG, "--max-pixels: '%s' is not a positive number", optarg);
        break;
    case OPT_MAX_FILE_SIZE:
        if (cli_parse_size(optarg, &cfg->max_file_bytes) || cfg->max_file_bytes == 0)
            return cli_usage_error(PROG, "--max-file-size: '%s' is not a size", optarg);
        break;
    case OPT_MEMORY:
        if (cli_parse_size(optarg, &o->run.memory) || o->run.memory == 0)
            return cli_usage_error(PROG, "--memory: '%s' is not a size", optarg);
        break;
    case OPT_ON_ERROR:
        if (!strcmp(optarg, "skip"))
            o->run.fail_on_reject = 0;
        else if (!strcmp(optarg, "fail"))
            o->run.fail_on_reject = 1;
        else
            return cli_usage_error(PROG, "--on-error: '%s' is not skip or fail", optarg);
        break;
    case OPT_RESUME: p->resume = 1; break;
    case OPT_OVERWRITE: p->overwrite = 1; break;
    case OPT_JSON: o->json = 1; break;
    case OPT_QUIET: o->quiet = 1; break;
    case OPT_WORK_DIR: o->run.work_dir = optarg; break;
    case OPT_PART: p->part = optarg; break;
    case OPT_PARTS:
        if (cli_parse_u64(optarg, 1, SHARDIFY_MAX_PARTS, &p->parts))
            return cli_usage_error(PROG, "--parts: '%s' is not a number in 1..%d", optarg,
                                   SHARDIFY_MAX_PARTS);
        break;
    case OPT_INCREMENTAL_OR_FULL:
        o->run.incremental_or_full = 1;
        /* fall through */
    case OPT_INCREMENTAL:
        if (p->incremental++)
            return cli_usage_error(PROG, "give one --incremental or --incremental-or-full");
        o->run.incremental = optarg;
        break;
    default: return cli_other_option(PROG, opt, OPT_VERSION, usage_text, long_options, argv);
    }
    return CLI_EXIT_OK;
}

/* Before any work: PREV must be usable by where it is, and for
 * --incremental have the same options (a difference is a usage error
 * naming the option; --incremental-or-full rebuilds instead). */
static int check_previous(const struct options *o)
{
    struct shard_err err;
    int rc = shardify_check_previous(o->run.incremental, o->src, o->dst, &o->run, &err);
    if (rc == SHARD_EINVAL || (rc == SHARD_EMISMATCH && !o->run.incremental_or_full))
        return cli_usage_error(PROG, "%s%s", err.msg,
                               rc == SHARD_EMISMATCH ? "; pass --incremental-or-full PREV "
                                                       "to rebuild in full"
                                                     : "");
    if (rc && !o->run.incremental_or_full) {
        fprintf(stderr, "%s: --incremental: %s\n", PROG, err.msg);
        return CLI_EXIT_FAILED;
    }
    return CLI_EXIT_OK;
}

/* A table named as the `datasets` library names its metadata table. */
static int metadata_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    return !strcmp(base, "metadata.jsonl") || !strcmp(base, "metadata.csv");
}

/* SRC laid out in split folders and no --split: each is converted on its
 * own (a local directory, not --archives). */
static int find_splits(struct options *o)
{
    struct shard_err err;
    size_t others;
    if (o->run.split || o->run.archives || !strncmp(o->src, "s3://", 5) ||
        shard_path_is_file(o->src))
        return CLI_EXIT_OK;
    if (shard_source_splits(o->src, &o->splits, &o->split_count, &others, &err) == SHARD_OK &&
        others) { /* a class folder beside "train/" is no split layout */
        shard_splits_free(o->splits, o->split_count);
        o->splits = NULL;
        o->split_count = 0;
    }
    if (o->split_count && o->run.part < o->run.parts)
        return cli_usage_error(PROG,
                               "'%s' is laid out in split folders: --part converts one "
                               "of them, named with --split",
                               o->src);
    if (o->split_count && (o->run.incremental || o->run.mode == SHARDIFY_RESUME))
        return cli_usage_error(PROG,
                               "'%s' is laid out in split folders: name the one to %s "
                               "with --split",
                               o->src, o->run.incremental ? "convert incrementally" : "resume");
    return CLI_EXIT_OK;
}

int options_for_split(struct options *o, const char *split)
{
    struct shard_err err;
    o->run.split = split;
    o->run.annotations = o->annotations;
    o->run.annotations_key = o->key_column;
    free(o->metadata);
    o->metadata = NULL;
    int wants_table = o->run.field_count ||
                      (o->run.labels && !strncmp(o->run.labels, "column:", 7));
    if (!o->annotations && wants_table && !o->run.archives && strncmp(o->src, "s3://", 5) &&
        !shard_path_is_file(o->src)) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/%s", o->src, split ? split : ".");
        int rc = shard_source_metadata(split ? dir : o->src, &o->metadata, &err);
        if (rc) {
            fprintf(stderr, "%s: %s\n", PROG, err.msg);
            return CLI_EXIT_FAILED;
        }
        o->run.annotations = o->metadata;
    }
    if (o->run.annotations && !o->key_column && metadata_name(o->run.annotations))
        o->run.annotations_key = SHARD_METADATA_KEY;
    return CLI_EXIT_OK;
}

void options_release(struct options *o)
{
    free(o->metadata);
    o->metadata = NULL;
    shard_splits_free(o->splits, o->split_count);
    o->splits = NULL;
    o->split_count = 0;
}

int options_parse(int argc, char **argv, struct options *o)
{
    memset(o, 0, sizeof *o);
    shardify_options_init(&o->run);
    struct parsing p = {o, 0, 0, NULL, 0, 0, NULL, 0};
    int rc = cli_parse_options(argc, argv, long_options, parse_option, &p);
    if (rc)
        return rc;
    if (p.resume && p.overwrite)
        return cli_usage_error(PROG, "--resume and --overwrite cannot be used together");
    const struct shard_config *cfg = &o->run.config;
    if (cfg->codec == SHARD_CODEC_JPEG &&
        (cfg->channels == SHARD_PIXELS_GRAY_ALPHA || cfg->channels == SHARD_PIXELS_RGBA))
        return cli_usage_error(PROG, "--pixels %s: jpeg stores no alpha (use --codec png or raw)",
                               shard_pixels_name(cfg->channels));
    if (cfg->codec == SHARD_CODEC_JPEG && cfg->depth == 16)
        return cli_usage_error(PROG, "--depth 16: jpeg stores 8 bits (use --codec png or raw)");
    if (p.parts && !p.part)
        return cli_usage_error(PROG, "--parts is for --part auto (or --part I/N)");
    if (p.part && p.incremental)
        return cli_usage_error(PROG, "--part and --incremental cannot be used together: convert "
                                     "the parts in full, or the whole dataset incrementally");
    if (p.order && !o->run.archives)
        return cli_usage_error(PROG, "--order is the stored order of a folder of archives: "
                                     "give --archives");
    if (argc - optind == 2 &&
        (!strncmp(argv[optind], "http://", 7) || !strncmp(argv[optind], "https://", 8)))
        o->run.archives = 1; /* archives named by URL: a folder of them */
    /* a folder of archives is stored archive by archive unless asked */
    if (o->run.archives)
        o->run.config.order = p.order && !strcmp(p.order, "global") ? SHARD_ORDER_SOURCE
                                                                    : SHARD_ORDER_ARCHIVE;
    if (p.part && o->run.archives && o->run.config.order == SHARD_ORDER_SOURCE)
        return cli_usage_error(PROG, "--part splits a folder of archives by archive: leave out "
                                     "--order global");
    if (p.part &&
        (rc = part_resolve(PROG, p.part, p.parts, SHARDIFY_MAX_PARTS, &o->run.part, &o->run.parts)))
        return rc;
    o->run.mode = p.resume ? SHARDIFY_RESUME : p.overwrite ? SHARDIFY_OVERWRITE : SHARDIFY_FRESH;
    if (argc - optind != 2)
        return cli_usage_error(PROG, "expected SRC and DST, got %d operand%s", argc - optind,
                               argc - optind == 1 ? "" : "s");
    o->src = argv[optind];
    o->dst = argv[optind + 1];
    if (o->run.work_dir && strncmp(o->dst, "s3://", 5))
        return cli_usage_error(PROG, "--work-dir is for an s3:// DST; a local DST keeps its "
                                     "work in DST/.shardify");
    if ((rc = find_splits(o)) || (rc = options_for_split(o, o->run.split)))
        return rc;
    for (uint32_t i = 0; i < o->run.field_count; i++) {
        /* a declaration that cannot be read is a usage error, named */
        struct shard_field_decl d;
        struct shard_err err;
        if (shard_field_decl_parse(o->fields[i], o->run.annotations != NULL, &d, &err))
            return cli_usage_error(PROG, "--field %s", err.msg);
        for (uint32_t k = 0; k < i; k++)
            if (!strncmp(o->fields[k], o->fields[i], strlen(d.name)) &&
                o->fields[k][strlen(d.name)] == '=') {
                shard_field_decl_release(&d);
                return cli_usage_error(PROG, "--field '%.*s' is declared twice",
                                       (int)strcspn(o->fields[i], "="), o->fields[i]);
            }
        shard_field_decl_release(&d);
    }
    if (o->key_column && !o->run.annotations)
        return cli_usage_error(PROG, "--key-column names the key column of --annotations (or "
                                     "of a metadata table in SRC), and there is none");
    if (o->run.annotations && !o->run.field_count &&
        !(o->run.labels && !strncmp(o->run.labels, "column:", 7)))
        return cli_usage_error(PROG, "--annotations is read by --field or --labels column:NAME, "
                                     "and neither is given");
    if (o->run.coco_mask && !o->run.coco)
        return cli_usage_error(PROG, "--coco-mask needs --coco FILE");
    if (o->run.coco_instances && !o->run.coco)
        return cli_usage_error(PROG, "--coco-instances needs --coco FILE");
    if (p.boxes && !o->run.coco)
        return cli_usage_error(PROG, "--boxes is for the boxes of --coco FILE");
    if (o->run.labels && !strncmp(o->run.labels, "column:", 7) && !o->run.annotations)
        return cli_usage_error(PROG, "--labels %s needs --annotations FILE", o->run.labels);
    if (o->run.labels) {
        /* checked before the run touches DST: a bad regex is a usage error;
         * a CSV file that cannot be read or used is input that fails the run */
        struct shard_labeler *lb;
        struct shard_err err;
        if (shard_labeler_new(&lb, o->run.labels, &err) == SHARD_OK)
            shard_labeler_free(lb);
        else if (!strncmp(o->run.labels, LABELS_REGEX_PREFIX, strlen(LABELS_REGEX_PREFIX)) ||
                 !strncmp(o->run.labels, "sidecar:", 8) || !strncmp(o->run.labels, "column:", 7))
            return cli_usage_error(PROG, "--labels: %s", err.msg);
        else {
            fprintf(stderr, "%s: --labels: %s\n", PROG, err.msg);
            return CLI_EXIT_FAILED;
        }
    }
    return o->run.incremental ? check_previous(o) : CLI_EXIT_OK;
}
