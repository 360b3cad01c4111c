/* skip.h - skip_because(WHY): cmocka's skip(), saying why.  cmocka's skip()
 * takes no reason; tests/run.sh reads the "SKIP: WHY" line printed after
 * "[ RUN      ] test" and counts the skip under it (tests/skips.allowed). */
#ifndef SHARDKIT_TEST_SKIP_H
#define SHARDKIT_TEST_SKIP_H

#define skip_because(why)                   \
    do {                                    \
        print_message("SKIP: %s\n", (why)); \
        skip();                             \
    } while (0)

#endif
