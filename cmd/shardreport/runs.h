/* runs.h - the nightly job's run records (ROOT/runs/<stamp>.json), read for
 * the index.  The records are written by shardkit-nightly
 * (cmd/shardkit-nightly; docs/guide/nightly.md lists the fields); every
 * field is optional here, so a record of an older or newer job still gives a
 * row. */
#ifndef SHARDREPORT_RUNS_H
#define SHARDREPORT_RUNS_H

#include <stddef.h>
#include <stdint.h>

/* A record larger than this is not a run record. */
#define RUNS_MAX_RECORD_BYTES (1u << 20)

/* A number of a record: `known` is 0 when the record lacks it. */
struct run_number {
    int known;
    double value;
};

struct run_row {
    char *run;    /* the stamp: the record's file name without ".json" */
    char *status; /* "published", "shardify_failed", ...; "unreadable" */
    char *error;  /* why the record could not be read, or NULL */
    int published;
    struct run_number exit_code;
    char *started; /* ISO 8601, or NULL */
    char *finished;
    struct run_number seconds; /* the whole run */
    char *version;             /* versions/<stamp>, or NULL */
    struct run_number samples; /* shardify.summary */
    struct run_number rejected;
    struct run_number ignored;
    struct run_number shards;
    struct run_number bytes_out;
    struct run_number verified; /* shardcheck.verified: 1 or 0 */
    struct run_number problems; /* shardcheck.problem_count */
    struct run_number added;    /* incremental.lineage: an incremental run's counts */
    struct run_number changed;
    struct run_number removed;
    struct run_number reused;
    char *report;      /* the run's shardcheck page, relative to ROOT, when it exists */
    char *log;         /* the run's log, relative to ROOT */
    char *report_href; /* report and log as links from a page in ROOT, or NULL: */
    char *log_href;    /* not a regular file inside ROOT (runs_href) */
};

struct runs {
    struct run_row *rows; /* sorted by stamp, oldest first */
    size_t count;
    size_t unreadable; /* rows whose record could not be read */
    char *current;     /* where ROOT/current points, or NULL */
};

/* A path a run record names ("report", "log") as a link from a page in
 * ROOT: the path inside ROOT of the file it names, percent-encoded (every
 * byte but letters, digits and "-._~/"), so that it is always a relative
 * URL and never a scheme (javascript:, http:).  NULL when it names no
 * regular file inside ROOT: an empty path, a '..' component, an absolute
 * path or a symbolic link that leads out of ROOT, a file that is not there
 * (or when out of memory).  `root_real` is ROOT's realpath.  Malloc'd. */
char *runs_href(const char *root, const char *root_real, const char *path);

/* Read every run record in ROOT/runs (not latest.json, not the tools'
 * <stamp>.*.json, not hidden files).  ROOT is opened as given; inside it no
 * link is followed.  0, or -1 with *why set (ROOT/runs cannot be read, out
 * of memory).  Each row's report_href and log_href are set (runs_href).
 * Release with runs_release in both cases. */
int runs_load(struct runs *r, const char *root, char *why, size_t why_size);
void runs_release(struct runs *r);

#endif
