/* test_s3_settings.c - an s3:// location finds its settings as the AWS CLI
 * does (variables before profiles, the credentials file before the config
 * file, nested "s3 =" settings), maps to path-style URLs on a custom
 * endpoint and virtual-hosted ones on AWS, encodes keys as SigV4 wants, is
 * anonymous without credentials, and never puts the secret in a name or URL;
 * S3 error documents give their code. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "net/s3.h"

static char home[256];

static const char *const variables[] = {
    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_S3", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE",
    "SHARDKIT_S3_PART_SIZE",
};

static void write_file(const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/.aws/%s", home, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* A fresh HOME with an empty ~/.aws, and no AWS variable set. */
static int setup(void **state)
{
    (void)state;
    snprintf(home, sizeof home, "%s/shardkit-s3-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR")
                                                                          : "/tmp");
    if (!mkdtemp(home))
        return -1;
    char aws[300];
    snprintf(aws, sizeof aws, "%s/.aws", home);
    mkdir(aws, 0700);
    setenv("HOME", home, 1);
    for (size_t i = 0; i < sizeof variables / sizeof variables[0]; i++)
        unsetenv(variables[i]);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", home);
    return system(cmd) == 0 ? 0 : -1;
}

static struct sk_s3 *open_ok(const char *location)
{
    struct sk_s3 *s3 = NULL;
    struct shard_err err;
    int rc = sk_s3_open(&s3, location, &err);
    if (rc)
        fail_msg("%s", err.msg);
    return s3;
}

static void test_location_gives_bucket_and_prefix_without_slashes(void **state)
{
    (void)state;
    struct sk_s3 *s3 = open_ok("s3://my-bucket//data/train/");
    assert_string_equal(s3->bucket, "my-bucket");
    assert_string_equal(s3->prefix, "data/train");
    char *key = sk_s3_key(s3, "shard-000001.shard");
    assert_string_equal(key, "data/train/shard-000001.shard");
    free(key);
    sk_s3_free(s3);
    s3 = open_ok("s3://bucket");
    assert_string_equal(s3->prefix, "");
    key = sk_s3_key(s3, "manifest.json");
    assert_string_equal(key, "manifest.json");
    free(key);
    sk_s3_free(s3);
    struct shard_err err;
    assert_int_equal(sk_s3_open(&s3, "s3:///prefix", &err), SHARD_EINVAL);
    assert_non_null(strstr(err.msg, "names no bucket"));
    assert_int_equal(sk_s3_open(&s3, "s3://bad bucket/x", &err), SHARD_EINVAL);
}

static void test_aws_is_virtual_hosted_and_a_custom_endpoint_path_style(void **state)
{
    (void)state;
    setenv("AWS_REGION", "eu-west-3", 1);
    struct sk_s3 *s3 = open_ok("s3://bucket/p");
    assert_false(s3->path_style);
    char *url = sk_s3_url(s3, "p/a b+c.jpg", NULL);
    assert_string_equal(url, "https://bucket.s3.eu-west-3.amazonaws.com/p/a%20b%2Bc.jpg");
    free(url);
    assert_string_equal(s3->sigv4, "aws:amz:eu-west-3:s3");
    sk_s3_free(s3);
    /* a dotted bucket cannot be a TLS host name: path-style */
    s3 = open_ok("s3://my.bucket/p");
    assert_true(s3->path_style);
    sk_s3_free(s3);
    setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9000/", 1);
    s3 = open_ok("s3://bucket/p");
    assert_true(s3->path_style);
    url = sk_s3_url(s3, NULL, "list-type=2&prefix=p%2F");
    assert_string_equal(url, "http://127.0.0.1:9000/bucket/?list-type=2&prefix=p%2F");
    free(url);
    sk_s3_free(s3);
    /* the S3-only variable wins over the general one */
    setenv("AWS_ENDPOINT_URL_S3", "https://minio.example:9443", 1);
    s3 = open_ok("s3://bucket/p");
    assert_string_equal(s3->endpoint, "https://minio.example:9443");
    sk_s3_free(s3);
    struct shard_err err;
    setenv("AWS_ENDPOINT_URL_S3", "ftp://x", 1);
    assert_int_equal(sk_s3_open(&s3, "s3://bucket/p", &err), SHARD_EINVAL);
}

static void test_variables_come_before_the_profile_and_credentials_before_config(void **state)
{
    (void)state;
    write_file("credentials", "[default]\naws_access_key_id = FILEKEY\n"
                              "aws_secret_access_key = filesecret\n"
                              "[work]\naws_access_key_id = WORKKEY\n"
                              "aws_secret_access_key = worksecret\n"
                              "aws_session_token = worktoken\n");
    write_file("config", "[default]\nregion = ap-south-1\n"
                         "[profile work]\nregion = ca-central-1\n"
                         "aws_access_key_id = CONFIGKEY\n"
                         "s3 =\n  endpoint_url = http://127.0.0.1:7000\n"
                         "  addressing_style = virtual\n"
                         "endpoint_url = http://127.0.0.1:8000\n");
    struct sk_s3 *s3 = open_ok("s3://bucket");
    assert_false(s3->anonymous);
    assert_string_equal(s3->userpwd, "FILEKEY:filesecret");
    assert_string_equal(s3->region, "ap-south-1");
    assert_false(s3->custom_endpoint);
    sk_s3_free(s3);

    setenv("AWS_PROFILE", "work", 1);
    s3 = open_ok("s3://bucket");
    assert_string_equal(s3->userpwd, "WORKKEY:worksecret");
    assert_string_equal(s3->region, "ca-central-1");
    /* the nested s3 endpoint before the general one, its addressing style kept */
    assert_string_equal(s3->endpoint, "http://127.0.0.1:7000");
    assert_false(s3->path_style);
    int token = 0;
    for (struct curl_slist *h = s3->headers; h; h = h->next)
        token |= !strcmp(h->data, "x-amz-security-token: worktoken");
    assert_true(token);
    sk_s3_free(s3);

    setenv("AWS_ACCESS_KEY_ID", "ENVKEY", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "envsecret", 1);
    setenv("AWS_DEFAULT_REGION", "us-west-2", 1);
    s3 = open_ok("s3://bucket");
    assert_string_equal(s3->userpwd, "ENVKEY:envsecret");
    assert_string_equal(s3->region, "us-west-2");
    sk_s3_free(s3);
}

static void test_no_credentials_means_anonymous_but_the_content_header_stays(void **state)
{
    (void)state;
    struct sk_s3 *s3 = open_ok("s3://public-bucket/x");
    assert_true(s3->anonymous);
    assert_null(s3->userpwd);
    assert_string_equal(s3->region, "us-east-1");
    assert_non_null(s3->headers);
    assert_string_equal(s3->headers->data, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
    assert_null(s3->headers->next);
    sk_s3_free(s3);
}

static void test_names_and_urls_never_hold_the_secret(void **state)
{
    (void)state;
    setenv("AWS_ACCESS_KEY_ID", "KEY", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "very-secret-value", 1);
    setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9000", 1);
    struct sk_s3 *s3 = open_ok("s3://bucket/p");
    char *url = sk_s3_url(s3, "p/k", "uploads=");
    char *name = sk_s3_name(s3, "p/k");
    assert_string_equal(name, "s3://bucket/p/k");
    assert_null(strstr(url, "secret"));
    assert_null(strstr(name, "secret"));
    free(url);
    free(name);
    sk_s3_free(s3);
}

static void test_encoding_keeps_unreserved_bytes_only(void **state)
{
    (void)state;
    char *e = sk_s3_encode("a/b c~d_e.f-g%h\xc3\xa9", 1);
    assert_string_equal(e, "a/b%20c~d_e.f-g%25h%C3%A9");
    free(e);
    e = sk_s3_encode("a/b", 0);
    assert_string_equal(e, "a%2Fb");
    free(e);
}

static void test_part_size_comes_from_the_environment_and_has_a_floor(void **state)
{
    (void)state;
    struct sk_s3 *s3 = open_ok("s3://bucket");
    assert_int_equal(s3->part_bytes, SK_S3_DEFAULT_PART);
    sk_s3_free(s3);
    setenv("SHARDKIT_S3_PART_SIZE", "64M", 1);
    s3 = open_ok("s3://bucket");
    assert_int_equal(s3->part_bytes, 64ull << 20);
    sk_s3_free(s3);
    struct shard_err err;
    setenv("SHARDKIT_S3_PART_SIZE", "1M", 1);
    assert_int_equal(sk_s3_open(&s3, "s3://bucket", &err), SHARD_EINVAL);
    assert_non_null(strstr(err.msg, "SHARDKIT_S3_PART_SIZE"));
}

static void test_error_documents_give_their_code(void **state)
{
    (void)state;
    static const char doc[] = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>"
                              "NoSuchBucket</Code><Message>The specified bucket does not "
                              "exist</Message></Error>";
    char code[SK_S3_CODE_SIZE];
    sk_s3_error_code(doc, sizeof doc - 1, code, sizeof code);
    assert_string_equal(code, "NoSuchBucket");
    sk_s3_error_code("not xml", 7, code, sizeof code);
    assert_string_equal(code, "");
    sk_s3_error_code("<Other><Code>X</Code></Other>", 29, code, sizeof code);
    assert_string_equal(code, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_location_gives_bucket_and_prefix_without_slashes,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_aws_is_virtual_hosted_and_a_custom_endpoint_path_style, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_variables_come_before_the_profile_and_credentials_before_config, setup,
            teardown),
        cmocka_unit_test_setup_teardown(
            test_no_credentials_means_anonymous_but_the_content_header_stays, setup, teardown),
        cmocka_unit_test_setup_teardown(test_names_and_urls_never_hold_the_secret, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_encoding_keeps_unreserved_bytes_only, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_part_size_comes_from_the_environment_and_has_a_floor, setup, teardown),
        cmocka_unit_test_setup_teardown(test_error_documents_give_their_code, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
