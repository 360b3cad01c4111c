/* cold.c - making a file cold: drop its pages from the page cache and
 * check that they are gone (see internal.h).
 *
 * POSIX_FADV_DONTNEED is advice: the kernel drops clean, unmapped pages,
 * but not dirty ones (a file just written and not yet flushed) nor pages
 * mapped by another process.  So every drop is followed by mincore() on a
 * fresh read-only mapping, which reports the pages that are still
 * resident: the run can say how cold it really was.  (Caches below the
 * page cache - a disk's, a hypervisor's - cannot be seen or dropped from
 * here.) */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

/* mincore's vector for this many pages at a time. */
#define MINCORE_CHUNK_PAGES 4096u

static void fail(struct cold_stats *st, int e)
{
    if (!st->failed++)
        st->first_errno = e;
}

void cold_drop_file(int dir_fd, const char *name, struct cold_stats *st)
{
    st->files++;
    int fd = openat(dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW);
    if (fd < 0) {
        fail(st, errno);
        st->measured = 0;
        return;
    }
    struct stat sb;
    int rc = fstat(fd, &sb) == 0 ? posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) : errno;
    if (rc) {
        fail(st, rc);
        st->measured = 0;
        close(fd);
        return;
    }
    long page = sysconf(_SC_PAGESIZE);
    uint64_t size = (uint64_t)sb.st_size, pages = (size + (uint64_t)page - 1) / (uint64_t)page;
    st->pages += pages;
    if (!pages) {
        close(fd);
        return;
    }
    void *map = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (map == MAP_FAILED) {
        st->measured = 0;
        return;
    }
    unsigned char vec[MINCORE_CHUNK_PAGES];
    for (uint64_t first = 0; first < pages; first += MINCORE_CHUNK_PAGES) {
        uint64_t n = pages - first < MINCORE_CHUNK_PAGES ? pages - first : MINCORE_CHUNK_PAGES;
        uint64_t bytes = first + n == pages ? size - first * (uint64_t)page : n * (uint64_t)page;
        if (mincore((char *)map + first * (uint64_t)page, (size_t)bytes, vec) != 0) {
            st->measured = 0;
            break;
        }
        for (uint64_t i = 0; i < n; i++)
            st->resident += vec[i] & 1;
    }
    munmap(map, (size_t)size);
}
