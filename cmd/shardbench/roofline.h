/* roofline.h - `shardbench roofline`: the roofline model's bound for a
 * kernel, from the engine's calculator (engine/bench.h). */
#ifndef SHARDBENCH_ROOFLINE_H
#define SHARDBENCH_ROOFLINE_H

#include "options.h"

/* Parse --bandwidth, --intensity and --peak, compute, and write the result
 * as text or (--json) JSON on stdout.  The exit status: CLI_EXIT_OK, or
 * CLI_EXIT_USAGE for a value that is not a quantity of its kind. */
int roofline_run(const struct options *o);

#endif
