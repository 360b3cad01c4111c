/* report.c - what shardbench's report writers share (see report.h). */
#include "report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "cli.h"

const struct bench_phase *report_headline(const struct bench_result *r)
{
    return r->steady.epochs ? &r->steady : &r->first;
}

double report_ratio(const struct report *r)
{
    double files = report_headline(r->files)->samples_per_second;
    return files > 0 ? report_headline(r->shards)->samples_per_second / files : 0;
}

const char *report_ratio_basis(const struct report *r)
{
    return r->files->steady.epochs && r->shards->steady.epochs ? "steady epochs" : "first epoch";
}

const struct bench_result *report_single(const struct report *r, const char **location)
{
    *location = r->command == CMD_SHARDS ? r->dst : r->src;
    return r->command == CMD_SHARDS ? r->shards : r->files;
}

uint64_t report_errors(const struct bench_result *r)
{
    return r->first.errors + r->steady.errors;
}

int report_stage_shown(enum bench_mode m, enum bench_stage s)
{
    if (s == STAGE_DECOMPRESS)
        return m == BENCH_SHARDS;
    if (s == STAGE_RESIZE)
        return m == BENCH_FILES;
    return 1;
}

double report_stage_ms(const struct bench_phase *ph, enum bench_stage s)
{
    return ph->samples ? ph->stage_seconds[s] / (double)ph->samples * REPORT_MS : 0;
}

const struct run_view *report_view(const struct report *r, const struct bench_result *result)
{
    return result == r->shards ? &r->shards_view : &r->files_view;
}

/* ---- what report_prepare computes ------------------------------------------------------ */

/* The consumer's wait per batch over the run: every batch, or the means of
 * REPORT_WAIT_POINTS equal slices of the run's time. */
static int wait_over_time(const struct bench_result *res, struct run_view *v)
{
    uint64_t n = res->batch_count;
    if (res->step_ms <= 0 || !n)
        return 0;
    size_t points = n <= REPORT_WAIT_POINTS ? (size_t)n : REPORT_WAIT_POINTS;
    v->wait = calloc(points, sizeof *v->wait);
    if (!v->wait)
        return -1;
    if (n <= REPORT_WAIT_POINTS) {
        for (uint64_t i = 0; i < n; i++)
            v->wait[i] = (struct wait_point){res->batches[i].start_seconds,
                                             res->batches[i].latency_seconds * REPORT_MS, 1};
        v->wait_count = points;
        return 0;
    }
    double end = res->batches[n - 1].start_seconds, slice = end / (double)points;
    for (uint64_t i = 0; i < n; i++) {
        size_t k = slice > 0 ? (size_t)(res->batches[i].start_seconds / slice) : 0;
        k = k < points ? k : points - 1;
        v->wait[k].wait_ms += res->batches[i].latency_seconds * REPORT_MS;
        v->wait[k].batches++;
    }
    size_t kept = 0;
    for (size_t k = 0; k < points; k++) {
        if (!v->wait[k].batches)
            continue; /* no batch began in this slice (a long wait spans it) */
        v->wait[kept] = v->wait[k];
        v->wait[kept].seconds = slice * ((double)k + 0.5);
        v->wait[kept].wait_ms /= v->wait[kept].batches;
        kept++;
    }
    v->wait_count = kept;
    return 0;
}

static int view_run(const struct bench_result *res, struct run_view *v)
{
    if (!res)
        return 0;
    double *ms = malloc((res->batch_count ? res->batch_count : 1) * sizeof *ms);
    if (!ms)
        return -1;
    double lo = INFINITY, hi = 0;
    for (uint64_t i = 0; i < res->batch_count; i++) {
        ms[i] = res->batches[i].latency_seconds * REPORT_MS;
        lo = ms[i] > 0 && ms[i] < lo ? ms[i] : lo;
        hi = ms[i] > hi ? ms[i] : hi;
    }
    /* latencies spread over decades read best on a log scale */
    enum cli_scale scale = isfinite(lo) && hi / lo > 50 ? CLI_SCALE_LOG : CLI_SCALE_LINEAR;
    int rc = cli_histogram_make(&v->latency_ms, ms, res->batch_count, REPORT_LATENCY_BINS, scale);
    free(ms);
    return rc ? rc : wait_over_time(res, v);
}

/* The first "model name" of /proc/cpuinfo, or "". */
static void cpu_model(char *out, size_t size)
{
    out[0] = '\0';
    FILE *f = fopen("/proc/cpuinfo", "r"); /* nofollow: a kernel file */
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) || !colon)
            continue;
        colon += 1 + strspn(colon + 1, " \t");
        colon[strcspn(colon, "\n")] = '\0';
        snprintf(out, size, "%s", colon);
        break;
    }
    fclose(f);
}

int report_prepare(struct report *r)
{
    struct report_machine *m = &r->machine;
    m->cpus_available = shard_available_cpus();
    m->cpus_online = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_model(m->cpu, sizeof m->cpu);
    struct utsname u;
    if (uname(&u) == 0)
        snprintf(m->system, sizeof m->system, "%s %s %s", u.sysname, u.release, u.machine);
    if (r->command != CMD_SHARDS && view_run(r->files, &r->files_view))
        return -1;
    if (r->command != CMD_FILES && view_run(r->shards, &r->shards_view))
        return -1;
    return 0;
}

static void view_release(struct run_view *v)
{
    cli_histogram_release(&v->latency_ms);
    free(v->wait);
    memset(v, 0, sizeof *v);
}

void report_release(struct report *r)
{
    view_release(&r->files_view);
    view_release(&r->shards_view);
}
