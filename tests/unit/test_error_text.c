/* test_error_text.c - error messages are one line whatever text they carry:
 * a library's trailing newline (libarchive's) or a line break inside never
 * reaches a message, whichever setter recorded it. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "shardkit/error.h"

static void test_set_drops_a_trailing_newline_and_white_space(void **state)
{
    (void)state;
    struct shard_err err;
    const char *from_libarchive = "ZIP uncompressed data is wrong size (read 395, expected 295)\n";
    assert_int_equal(shard_err_set(&err, SHARD_ECORRUPT, "entry 'a/x.jpg': %s", from_libarchive),
                     SHARD_ECORRUPT);
    assert_string_equal(err.msg, "entry 'a/x.jpg': ZIP uncompressed data is wrong size (read 395, "
                                 "expected 295)");
    shard_err_set(&err, SHARD_EIO, "trailing \r\n \t\n");
    assert_string_equal(err.msg, "trailing");
}

static void test_line_breaks_inside_become_spaces(void **state)
{
    (void)state;
    struct shard_err err;
    shard_err_set(&err, SHARD_ENET, "cannot read 'u': %s", "first line\nsecond\r\nthird\n");
    assert_null(strchr(err.msg, '\n'));
    assert_null(strchr(err.msg, '\r'));
    assert_string_equal(err.msg, "cannot read 'u': first line second  third");
}

static void test_errno_message_joins_on_one_line(void **state)
{
    (void)state;
    struct shard_err err;
    shard_err_errno(&err, SHARD_EIO, ENOSPC, "cannot write '%s'\n", "d/run.json");
    assert_string_equal(err.msg, "cannot write 'd/run.json': No space left on device");
}

static void test_prefix_keeps_one_line(void **state)
{
    (void)state;
    struct shard_err err;
    shard_err_set(&err, SHARD_ECORRUPT, "Truncated input\n");
    assert_int_equal(shard_err_prefix(&err, SHARD_ECORRUPT, "cannot read archive '%s'", "a.zip"),
                     SHARD_ECORRUPT);
    assert_string_equal(err.msg, "cannot read archive 'a.zip': Truncated input");
    assert_int_equal(err.code, SHARD_ECORRUPT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_set_drops_a_trailing_newline_and_white_space),
        cmocka_unit_test(test_line_breaks_inside_become_spaces),
        cmocka_unit_test(test_errno_message_joins_on_one_line),
        cmocka_unit_test(test_prefix_keeps_one_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
