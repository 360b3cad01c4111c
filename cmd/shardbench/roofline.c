/* roofline.c - `shardbench roofline` (see roofline.h).  One result, two
 * writers, as the benchmark's report has. */
#include "roofline.h"

#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "cli_json.h"

#define PROG "shardbench"

struct roofline_result {
    double bandwidth;        /* B/s */
    double intensity;        /* FLOP/B */
    double peak;             /* FLOP/s */
    double bandwidth_prefix; /* the multiplier of the unit the user wrote (1e9 for GB/s) */
    double peak_prefix;
    struct roofline model;
};

/* A value with up to 3 decimals, trailing zeros dropped: 200, 0.5, 1234.567. */
static const char *plain(double v, char *buf, size_t size)
{
    snprintf(buf, size, "%.3f", v);
    char *dot = strchr(buf, '.');
    if (dot) {
        char *end = buf + strlen(buf) - 1;
        while (end > dot && *end == '0')
            *end-- = '\0';
        if (end == dot)
            *end = '\0';
    }
    return buf;
}

/* "G" for 1e9, "Gi" for 2^30, "" for 1. */
static const char *prefix_name(double factor)
{
    static const struct {
        double f;
        const char *name;
    } names[] = {
        {1e3, "k"},
        {1e6, "M"},
        {1e9, "G"},
        {1e12, "T"},
        {1e15, "P"},
        {1e18, "E"},
        {1024.0, "Ki"},
        {1048576.0, "Mi"},
        {1073741824.0, "Gi"},
        {1099511627776.0, "Ti"},
        {1125899906842624.0, "Pi"},
        {1152921504606846976.0, "Ei"},
    };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (names[i].f == factor)
            return names[i].name;
    return "";
}

static void write_text(const struct roofline_result *r, FILE *out)
{
    const struct roofline *m = &r->model;
    double b = r->bandwidth, i = r->intensity, p = r->peak;
    double bp = r->bandwidth_prefix, pp = r->peak_prefix;
    char t1[64], t2[64], t3[64], t4[64], t5[64];
    const char *bu = prefix_name(bp), *pu = prefix_name(pp);
    fprintf(out, "attainable: %s %sFLOP/s (%s)\n", plain(m->attainable / pp, t1, sizeof t1), pu,
            m->memory_bound ? "memory-bound" : "compute-bound");
    if (m->memory_bound)
        fprintf(out,
                "  bandwidth x intensity = %s %sB/s x %s FLOP/B = %s %sFLOP/s, below the "
                "peak of %s %sFLOP/s\n",
                plain(b / bp, t2, sizeof t2), bu, plain(i, t3, sizeof t3),
                plain(b * i / pp, t4, sizeof t4), pu, plain(p / pp, t5, sizeof t5), pu);
    else
        fprintf(out,
                "  capped at the peak of %s %sFLOP/s: bandwidth x intensity = %s %sB/s x "
                "%s FLOP/B = %s %sFLOP/s\n",
                plain(p / pp, t2, sizeof t2), pu, plain(b / bp, t3, sizeof t3), bu,
                plain(i, t4, sizeof t4), plain(b * i / pp, t5, sizeof t5), pu);
    fprintf(out,
            "ridge point: %s FLOP/B (below it a kernel is memory-bound, at or above it "
            "compute-bound)\n",
            plain(m->ridge, t1, sizeof t1));
}

static void write_json(const struct roofline_result *r, FILE *out)
{
    const struct roofline *m = &r->model;
    cli_json_print(json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:s}", "bandwidth_bytes_per_second",
                             r->bandwidth, "intensity_flop_per_byte", r->intensity,
                             "peak_flop_per_second", r->peak, "memory_limit_flop_per_second",
                             r->bandwidth * r->intensity, "attainable_flop_per_second",
                             m->attainable, "ridge_flop_per_byte", m->ridge, "bound",
                             m->memory_bound ? "memory" : "compute"),
                   out, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
}

int roofline_run(const struct options *o)
{
    struct roofline_result r;
    struct shard_err err;
    if (quantity_parse(o->bandwidth, QUANTITY_BANDWIDTH, &r.bandwidth, &r.bandwidth_prefix, &err) ||
        quantity_parse(o->intensity, QUANTITY_INTENSITY, &r.intensity, NULL, &err) ||
        quantity_parse(o->peak, QUANTITY_COMPUTE, &r.peak, &r.peak_prefix, &err) ||
        roofline_model(r.bandwidth, r.intensity, r.peak, &r.model, &err))
        return cli_usage_error(PROG, "%s", err.msg);
    if (o->json)
        write_json(&r, stdout);
    else
        write_text(&r, stdout);
    return CLI_EXIT_OK;
}
