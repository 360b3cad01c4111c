/* fuzz_target.h - the entry points every fuzz target defines.
 *
 * Each fuzz/fuzz_<target>.c is linked two ways:
 *  - with libFuzzer (clang -fsanitize=fuzzer,address,undefined) by `make fuzz`;
 *  - with fuzz/replay.c, a plain main() that feeds it every file of the given
 *    corpus directories, by `make test` and `make sanitize` (any compiler).
 * The names and signatures are libFuzzer's. */
#ifndef SHARDKIT_FUZZ_TARGET_H
#define SHARDKIT_FUZZ_TARGET_H

#include <stddef.h>
#include <stdint.h>

/* Run one input.  Must not crash, leak or keep state that changes the
 * outcome of a later input; always returns 0. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* One-time set-up before the first input (optional in libFuzzer; every
 * target here defines it so that replay.c can call it unconditionally). */
int LLVMFuzzerInitialize(int *argc, char ***argv);

#endif
