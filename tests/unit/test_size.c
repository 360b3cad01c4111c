/* test_size.c - sizes are read and printed in one unit system, powers of
 * 1024, everywhere (shardx_size_parse, shardx_size_format, shardx_size_unit: lib/shardx). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "shardkit.h"
#include "shardx/shardx.h"

static void test_sizes_parse_in_powers_of_1024(void **state)
{
    (void)state;
    struct {
        const char *s;
        uint64_t v;
    } good[] = {
        {"0", 0},           {"4096", 4096},         {"16K", 16384},
        {"16k", 16384},     {"16KB", 16384},        {"16KiB", 16384},
        {"16kib", 16384},   {"256M", 256ull << 20}, {"256MB", 256ull << 20},
        {"1G", 1ull << 30}, {"2T", 2ull << 40},     {"16777215T", 16777215ull << 40},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        uint64_t v = 1;
        assert_int_equal(shardx_size_parse(good[i].s, &v), 0);
        assert_true(v == good[i].v);
    }
    const char *bad[] = {"",   "-1",   "K",   "1.5M",      "1 M",
                         "1Q", "1MBB", "1Mi", "16777216T", "99999999999999999999",
                         " 1", NULL};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t v = 7;
        assert_int_equal(shardx_size_parse(bad[i], &v), -1);
        assert_true(v == 7);
    }
}

static void test_sizes_print_in_the_units_they_are_read_in(void **state)
{
    (void)state;
    char out[32];
    assert_string_equal(shardx_size_format(0, out, sizeof out), "0 B");
    assert_string_equal(shardx_size_format(1023, out, sizeof out), "1023 B");
    assert_string_equal(shardx_size_format(1024, out, sizeof out), "1.0 KiB");
    assert_string_equal(shardx_size_format(1536, out, sizeof out), "1.5 KiB");
    assert_string_equal(shardx_size_format(256ull << 20, out, sizeof out), "256.0 MiB");
    assert_string_equal(shardx_size_format(3ull << 40, out, sizeof out), "3.0 TiB");
    assert_string_equal(shardx_size_format(UINT64_MAX, out, sizeof out), "16777216.0 TiB");
    /* what is printed reads back as (about) what was printed */
    const char *name;
    assert_true(shardx_size_unit(1000, &name) == 1.0);
    assert_string_equal(name, "B");
    assert_true(shardx_size_unit(5ull << 20, &name) == 1048576.0);
    assert_string_equal(name, "MiB");
    uint64_t v;
    assert_int_equal(shardx_size_parse("5MiB", &v), 0);
    assert_string_equal(shardx_size_format(v, out, sizeof out), "5.0 MiB");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes_parse_in_powers_of_1024),
        cmocka_unit_test(test_sizes_print_in_the_units_they_are_read_in),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
