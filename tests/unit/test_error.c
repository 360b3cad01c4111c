/* test_error.c - the error helpers return the code they are given whether
 * or not there is a shard_err to fill, a prefix keeps the message on one
 * line, shardx_quote escapes a key as lib/shardx/shardx.h says, and no message names a
 * password given in a URL. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "shardkit.h"
#include "shardx/shardx.h"

static void test_every_helper_returns_its_code_with_a_null_err(void **state)
{
    (void)state;
    assert_int_equal(shard_err_set(NULL, SHARD_ECORRUPT, "x %d", 1), SHARD_ECORRUPT);
    assert_int_equal(shard_err_errno(NULL, SHARD_EIO, 2, "x"), SHARD_EIO);
    /* the old prefix returned SHARD_OK here, turning a failure into success */
    assert_int_equal(shard_err_prefix(NULL, SHARD_ECORRUPT, "file %s", "a"), SHARD_ECORRUPT);
    assert_int_equal(shard_err_prefix(NULL, SHARD_ENOMEM, "file"), SHARD_ENOMEM);
}

static void test_prefix_puts_the_subject_first_and_records_the_code(void **state)
{
    (void)state;
    struct shard_err err;
    shard_err_set(&err, SHARD_ENOTIMAGE, "bad magic");
    assert_int_equal(shard_err_prefix(&err, SHARD_ECORRUPT, "'%s' record %d", "s.shard", 3),
                     SHARD_ECORRUPT);
    assert_int_equal(err.code, SHARD_ECORRUPT);
    assert_string_equal(err.msg, "'s.shard' record 3: bad magic");
    /* an empty message gets the prefix alone */
    shard_err_clear(&err);
    shard_err_prefix(&err, SHARD_EIO, "alone");
    assert_string_equal(err.msg, "alone");
    /* a long result is cut at the buffer, still NUL-terminated */
    char big[SHARD_ERRMSG_SIZE * 2];
    memset(big, 'k', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    shard_err_set(&err, SHARD_EIO, "tail");
    shard_err_prefix(&err, SHARD_EIO, "%s", big);
    assert_int_equal(strlen(err.msg), SHARD_ERRMSG_SIZE - 1);
}

static void test_quote_escapes_control_bytes_and_invalid_utf8_and_doubles_backslash(void **state)
{
    (void)state;
    char out[SHARDX_QUOTE_SIZE];
    const char key[] = "a\\b\n\x7f\xff/\xc3\xbc.jpg";
    assert_string_equal(shardx_quote(key, sizeof key - 1, out, sizeof out),
                        "a\\\\b\\x0a\\x7f\\xff/\xc3\xbc.jpg");
    /* a key longer than the buffer is cut and says so */
    char long_key[SHARDX_QUOTE_SIZE * 2];
    memset(long_key, 'x', sizeof long_key);
    shardx_quote(long_key, sizeof long_key, out, sizeof out);
    assert_true(strlen(out) < sizeof out);
    assert_string_equal(out + strlen(out) - 3, "...");
}

/* A name cannot lie in a message: a character that shows as nothing, as a
 * space or reorders the text around it (U+202E makes "x.exe" look like
 * "exe.x") is quoted as its bytes, and so are C1 controls; other text,
 * accents, CJK and emoji, is kept. */
static void test_quote_shows_the_bytes_of_characters_that_would_lie(void **state)
{
    (void)state;
    char out[SHARDX_QUOTE_SIZE];
    /* clang-format off */
    static const char key[] = "rlo\xe2\x80\xae" "gpj.exe zw\xe2\x80\x8b" "b nb\xc2\xa0" "sp "
                              "nel\xc2\x85 lri\xe2\x81\xa7 bom\xef\xbb\xbf \xc3\xa9\xe6\x97\xa5\xf0\x9f\x98\x80";
    assert_string_equal(shardx_quote(key, sizeof key - 1, out, sizeof out),
                        "rlo\\xe2\\x80\\xaegpj.exe zw\\xe2\\x80\\x8bb nb\\xc2\\xa0sp nel\\xc2\\x85 "
                        "lri\\xe2\\x81\\xa7 bom\\xef\\xbb\\xbf \xc3\xa9\xe6\x97\xa5\xf0\x9f\x98\x80");
    /* clang-format on */
    static const unsigned char rlo[] = {0xe2, 0x80, 0xae}, e_acute[] = {0xc3, 0xa9};
    assert_int_equal(shardx_utf8_shown_len(rlo, 3), 0);
    assert_int_equal(shardx_utf8_len(rlo, 3), 3);
    assert_int_equal(shardx_utf8_shown_len(e_acute, 2), 2);
    assert_int_equal(shardx_utf8_shown_len((const unsigned char *)"\t", 1), 0);
    assert_int_equal(shardx_utf8_shown_len((const unsigned char *)" ", 1), 1);
}

static void test_a_password_in_a_url_reaches_no_message(void **state)
{
    (void)state;
    struct shard_err err;
    shard_err_set(&err, SHARD_ENET, "cannot read '%s': %s",
                  "https://alice:s3cr%40t@example.com:8443/d/manifest.json", "HTTP 401");
    assert_string_equal(err.msg, "cannot read 'https://***@example.com:8443/d/manifest.json': "
                                 "HTTP 401");
    shard_err_errno(&err, SHARD_EIO, 2, "'http://token@h/x' and 'ftp://u:p@h'");
    assert_string_equal(err.msg, "'http://***@h/x' and 'ftp://***@h': No such file or directory");
    shard_err_set(&err, SHARD_ENET, "HTTP 404");
    shard_err_prefix(&err, SHARD_ENET, "'%s'", "http://u:p@h");
    assert_string_equal(err.msg, "'http://***@h': HTTP 404");

    char *s = shardx_redact_urls("a user:pw@host, an e-mail a@b, a path x//y@z, "
                                 "'http://h/p@q', http://u@ 'http://@h' s3://b/k@1 "
                                 "1http://u:p@h http://u:'p'@h?x@y");
    assert_non_null(s);
    /* no URL, no user, '@' past the authority: kept */
    assert_string_equal(s, "a user:pw@host, an e-mail a@b, a path x//y@z, "
                           "'http://h/p@q', http://***@ 'http://@h' s3://b/k@1 "
                           "1http://***@h http://***@h?x@y");
    free(s);
    assert_null(shardx_redact_urls(NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_helper_returns_its_code_with_a_null_err),
        cmocka_unit_test(test_prefix_puts_the_subject_first_and_records_the_code),
        cmocka_unit_test(test_quote_escapes_control_bytes_and_invalid_utf8_and_doubles_backslash),
        cmocka_unit_test(test_quote_shows_the_bytes_of_characters_that_would_lie),
        cmocka_unit_test(test_a_password_in_a_url_reaches_no_message),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
