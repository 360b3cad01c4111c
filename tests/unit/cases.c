/* cases.c - one case of a unit test alone: linked into every test program of
 * tests/unit, it hands SHARDKIT_CASE (`make test TESTS=test_x CASE=GLOB`) to
 * cmocka as its test filter before main runs, so that only the tests whose
 * names match the pattern (cmocka's * and ?) run.  cmocka runs every test of
 * a group whatever the others did: a failure hides nothing after it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

__attribute__((constructor)) static void case_filter(void)
{
    const char *pattern = getenv("SHARDKIT_CASE");
    if (pattern && *pattern)
        cmocka_set_test_filter(pattern);
}
