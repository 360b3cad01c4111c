/* cli_part.h - which part of a job in parts this process runs (a
 * conversion's, shardify --part; a check's, shardcheck --part): --part I/N,
 * or --part auto from the job engine's environment. */
#ifndef SHARDKIT_CLI_PART_H
#define SHARDKIT_CLI_PART_H

#include <stdint.h>

/* --part VALUE and --parts N (0 when not given) into *part and *parts.
 * VALUE is "I/N" (0 <= I < N <= max) or "auto": a Slurm job array
 * (SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_COUNT, and SLURM_ARRAY_TASK_MIN and
 * SLURM_ARRAY_TASK_STEP when set) or a Kubernetes Indexed Job
 * (JOB_COMPLETION_INDEX, with N from --parts).  CLI_EXIT_OK, or the
 * usage-error status with the message (naming the variable) printed. */
int part_resolve(const char *prog, const char *value, uint64_t parts_option, uint32_t max,
                 uint32_t *part, uint32_t *parts);

#endif
