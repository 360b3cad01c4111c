/* cli_part.c - --part I/N and --part auto (see cli_part.h). */
#include "cli_part.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define SLURM_ID "SLURM_ARRAY_TASK_ID"
#define SLURM_COUNT "SLURM_ARRAY_TASK_COUNT"
#define SLURM_MIN "SLURM_ARRAY_TASK_MIN"
#define SLURM_STEP "SLURM_ARRAY_TASK_STEP"
#define K8S_INDEX "JOB_COMPLETION_INDEX"

/* The whole number in variable `name`: CLI_EXIT_OK, or a usage error. */
static int env_number(const char *prog, const char *name, uint64_t *out)
{
    const char *v = getenv(name);
    if (!v)
        return cli_usage_error(prog, "--part auto: %s is not set", name);
    if (cli_parse_u64(v, 0, UINT32_MAX, out))
        return cli_usage_error(prog, "--part auto: %s='%s' is not a whole number", name, v);
    return CLI_EXIT_OK;
}

/* A Slurm job array: task IDs MIN, MIN+STEP, ... (COUNT of them). */
static int from_slurm(const char *prog, uint64_t parts_option, uint64_t *index, uint64_t *count)
{
    uint64_t id, min = 0, step = 1;
    int rc = env_number(prog, SLURM_ID, &id);
    if (!rc)
        rc = env_number(prog, SLURM_COUNT, count);
    if (!rc && getenv(SLURM_MIN))
        rc = env_number(prog, SLURM_MIN, &min);
    if (!rc && getenv(SLURM_STEP))
        rc = env_number(prog, SLURM_STEP, &step);
    if (rc)
        return rc;
    if (step == 0)
        return cli_usage_error(prog, "--part auto: %s is 0", SLURM_STEP);
    if (id < min || (id - min) % step != 0 || (id - min) / step >= *count)
        return cli_usage_error(prog,
                               "--part auto: %s=%llu is not one of the %llu tasks of an "
                               "array from %s=%llu by %llu",
                               SLURM_ID, (unsigned long long)id, (unsigned long long)*count,
                               SLURM_MIN, (unsigned long long)min, (unsigned long long)step);
    if (parts_option && parts_option != *count)
        return cli_usage_error(prog, "--part auto: --parts %llu, but %s is %llu",
                               (unsigned long long)parts_option, SLURM_COUNT,
                               (unsigned long long)*count);
    *index = (id - min) / step;
    return CLI_EXIT_OK;
}

/* A Kubernetes Indexed Job: the index; the count is the job's completions,
 * which the pod is not told: --parts gives it. */
static int from_kubernetes(const char *prog, uint64_t parts_option, uint64_t *index,
                           uint64_t *count)
{
    int rc = env_number(prog, K8S_INDEX, index);
    if (rc)
        return rc;
    if (!parts_option)
        return cli_usage_error(prog,
                               "--part auto: %s is set (a Kubernetes Indexed Job): give "
                               "the job's completions with --parts N",
                               K8S_INDEX);
    *count = parts_option;
    if (*index >= *count)
        return cli_usage_error(prog, "--part auto: %s=%llu is not below --parts %llu", K8S_INDEX,
                               (unsigned long long)*index, (unsigned long long)*count);
    return CLI_EXIT_OK;
}

int part_resolve(const char *prog, const char *value, uint64_t parts_option, uint32_t max,
                 uint32_t *part, uint32_t *parts)
{
    uint64_t index = 0, count = 0;
    int rc = CLI_EXIT_OK;
    if (!strcmp(value, "auto")) {
        int slurm = getenv(SLURM_ID) != NULL, k8s = getenv(K8S_INDEX) != NULL;
        if (slurm && k8s)
            return cli_usage_error(prog,
                                   "--part auto: both %s (Slurm) and %s (Kubernetes) are "
                                   "set",
                                   SLURM_ID, K8S_INDEX);
        if (!slurm && !k8s)
            return cli_usage_error(prog,
                                   "--part auto: neither %s (a Slurm job array) nor %s (a "
                                   "Kubernetes Indexed Job) is set",
                                   SLURM_ID, K8S_INDEX);
        rc = slurm ? from_slurm(prog, parts_option, &index, &count)
                   : from_kubernetes(prog, parts_option, &index, &count);
        if (rc)
            return rc;
    } else {
        const char *slash = strchr(value, '/');
        char first[32];
        size_t len = slash ? (size_t)(slash - value) : 0;
        if (!slash || len == 0 || len >= sizeof first)
            return cli_usage_error(prog, "--part: '%s' is not I/N or auto", value);
        memcpy(first, value, len);
        first[len] = '\0';
        if (cli_parse_u64(first, 0, UINT32_MAX, &index) ||
            cli_parse_u64(slash + 1, 1, UINT32_MAX, &count))
            return cli_usage_error(prog, "--part: '%s' is not I/N or auto", value);
        if (index >= count)
            return cli_usage_error(prog, "--part: '%s': parts are numbered 0..N-1", value);
        if (parts_option && parts_option != count)
            return cli_usage_error(prog, "--part %s and --parts %llu disagree", value,
                                   (unsigned long long)parts_option);
    }
    if (count > max)
        return cli_usage_error(prog, "--part: %llu parts; at most %u", (unsigned long long)count,
                               max);
    *part = (uint32_t)index;
    *parts = (uint32_t)count;
    return CLI_EXIT_OK;
}
