/* out_dir.h - shardcat's output directory, written without ever following
 * a link planted in it.
 *
 * The directory is opened once (O_DIRECTORY | O_NOFOLLOW) and every file is
 * reached through that descriptor: a file is written as a temporary created
 * with O_CREAT | O_EXCL | O_NOFOLLOW under a name no sample has (a leading
 * '.'), then renamed over its final name.  A rename replaces a directory
 * entry and never writes through it, so whatever a link or a hard link
 * planted in DIR points to is left as it was; a symbolic link or a
 * directory standing where a file would go is refused with an error naming
 * it.
 *
 * A name is written once per run: every file is written for an owner (a
 * sample's image, or one of its fields), and a name that another owner of
 * the same run took already is refused with an error naming both, never
 * overwritten (two keys can give one name: the image of "b.jpg", "b.jpg.png",
 * and the mask of "b.jpg.jpeg" from its sidecar ".png", "b.jpg" + ".png").
 * The listing's name, keys.tsv, is never a sample's.
 *
 * Shortened names (safe_name.h) are listed with their keys in DIR/keys.tsv:
 * a header line "file<TAB>key", then one line per name, sorted, the key
 * written as safe_name.h's shown_key writes it (%XX for '%', control bytes
 * and bytes that are not UTF-8).  A later run into the same DIR adds its
 * names to the listing; it never drops one. */
#ifndef SHARDCAT_OUT_DIR_H
#define SHARDCAT_OUT_DIR_H

#include <stddef.h>
#include <stdint.h>

#define OUT_DIR_LISTING "keys.tsv"

/* What a file of the run holds: sample `index` (its place in stored order),
 * its image (what == OUT_DIR_IMAGE) or its field number `what`.  The
 * listing is {OUT_DIR_NO_SAMPLE, OUT_DIR_IMAGE}. */
struct out_owner {
    uint64_t index;
    uint32_t what;
};
#define OUT_DIR_IMAGE UINT32_MAX
#define OUT_DIR_NO_SAMPLE UINT64_MAX

/* Describe `who` for a message ("the image of 'b.jpg'") into buf. */
typedef void (*out_owner_name_fn)(void *ctx, struct out_owner who, char *buf, size_t size);

struct out_name; /* a name written in this run (out_dir.c) */

struct out_dir {
    char *path; /* as given, without trailing '/' */
    int fd;
    unsigned temporaries; /* temporary names tried so far */
    char **listed;        /* "NAME\tKEY" lines of shortened names (malloc'd) */
    size_t listed_count;
    size_t listed_cap;
    struct out_name *names; /* the names written, by hash (open addressing) */
    size_t name_count;
    size_t name_slots; /* a power of 2, or 0 */
    out_owner_name_fn owner_name;
    void *owner_ctx;
};

/* Before any work: DIR must not be a symbolic link or something other than
 * a directory, its parent must exist, and it must not lie inside the
 * dataset `dst`.  CLI_EXIT_OK, or the usage-error status (message printed). */
int out_dir_check(const char *prog, const char *path, const char *dst);

/* Create DIR (one level) if missing and open it.  CLI_EXIT_OK, or the
 * usage-error status (message printed; d->fd stays -1). */
int out_dir_open(struct out_dir *d, const char *prog, const char *path);

/* Write DIR/name with `len` bytes of data for `who`, as described above:
 * not when another owner wrote that name in this run.  0, or -1 with a
 * message naming DIR/name printed (and both owners, by d->owner_name). */
int out_dir_write(struct out_dir *d, const char *prog, const char *name, struct out_owner who,
                  const void *data, size_t len);

/* Note that `name` is the shortened name of `key`.  0, or -1 when out of
 * memory (message printed). */
int out_dir_list(struct out_dir *d, const char *prog, const char *name, const char *key,
                 size_t key_len);

/* Merge the noted names into DIR/keys.tsv (nothing to do when none were
 * noted).  0, or -1 with a message printed. */
int out_dir_write_listing(struct out_dir *d, const char *prog);

/* Close and free.  Accepts a directory that was never opened. */
void out_dir_close(struct out_dir *d);

#endif
