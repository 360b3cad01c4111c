/* test_s3_settings.c - an s3:// location finds its settings as the AWS CLI
 * v2 does (variables before profiles, the credentials file before the
 * config file, [services] sections, ignore_configured_endpoint_urls, the
 * files parsed as configparser parses them), maps to path-style URLs on a
 * custom endpoint and virtual-hosted ones on AWS, encodes keys as SigV4
 * wants, signs unless asked not to (no credentials is an error, not
 * anonymous requests), refuses a missing profile and a malformed setting
 * naming it, and never puts the secret in a name, URL or message; S3 error
 * documents give their code.  (tests/cli/test_s3_botocore.sh compares the
 * same rules with boto3's own resolution.) */
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
    "AWS_ACCESS_KEY_ID",           "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",           "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",         "AWS_REGION",
    "AWS_DEFAULT_REGION",          "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_S3",         "AWS_CONFIG_FILE",
    "AWS_SHARED_CREDENTIALS_FILE", "SHARDKIT_S3_PART_SIZE",
    "AWS_SECURITY_TOKEN",          "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS",
    "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN",
    "SHARDKIT_S3_NO_SIGN_REQUEST",
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
    snprintf(home, sizeof home, "%s/shardkit-s3-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
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

/* Keys in the environment, for the tests that are not about credentials. */
static void with_keys(void)
{
    setenv("AWS_ACCESS_KEY_ID", "ENVKEY", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "envsecret", 1);
}

/* sk_s3_open must fail with `code`, its message holding each of the
 * NULL-terminated strings that follow. */
static void open_fails(const char *location, int code, ...)
{
    struct sk_s3 *s3 = NULL;
    struct shard_err err;
    int rc = sk_s3_open(&s3, location, &err);
    if (rc != code)
        fail_msg("expected %d, got %d: %s", code, rc, rc ? err.msg : "opened");
    assert_null(s3);
    va_list ap;
    va_start(ap, code);
    for (const char *want; (want = va_arg(ap, const char *));)
        if (!strstr(err.msg, want))
            fail_msg("'%s' is not in: %s", want, err.msg);
    va_end(ap);
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
    with_keys();
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
    with_keys();
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
    setenv("AWS_ENDPOINT_URL_S3", "ftp://x", 1);
    open_fails("s3://bucket/p", SHARD_EINVAL, "'ftp://x' (AWS_ENDPOINT_URL_S3)", NULL);
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
    /* the profile's endpoint_url (the AWS CLI does not read one nested
     * under "s3 =" in a profile), the nested addressing style kept */
    assert_string_equal(s3->endpoint, "http://127.0.0.1:8000");
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

static void test_no_credentials_is_an_error_and_unsigned_only_when_asked(void **state)
{
    (void)state;
    /* none found: an error saying how to ask for unsigned requests */
    open_fails("s3://public-bucket/x", SHARD_EINVAL, "no AWS credentials for the profile 'default'",
               "SHARDKIT_S3_NO_SIGN_REQUEST=true", NULL);
    setenv("SHARDKIT_S3_NO_SIGN_REQUEST", "true", 1);
    struct sk_s3 *s3 = open_ok("s3://public-bucket/x");
    assert_true(s3->anonymous);
    assert_null(s3->userpwd);
    assert_string_equal(s3->region, "us-east-1");
    assert_non_null(s3->headers);
    assert_string_equal(s3->headers->data, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
    assert_null(s3->headers->next);
    sk_s3_free(s3);
    /* asked for, even with credentials there: unsigned */
    with_keys();
    s3 = open_ok("s3://public-bucket/x");
    assert_true(s3->anonymous);
    assert_null(s3->userpwd);
    sk_s3_free(s3);
    setenv("SHARDKIT_S3_NO_SIGN_REQUEST", "false", 1);
    s3 = open_ok("s3://public-bucket/x");
    assert_false(s3->anonymous);
    assert_string_equal(s3->userpwd, "ENVKEY:envsecret");
    sk_s3_free(s3);
    setenv("SHARDKIT_S3_NO_SIGN_REQUEST", "maybe", 1);
    open_fails("s3://public-bucket/x", SHARD_EINVAL,
               "'maybe' (SHARDKIT_S3_NO_SIGN_REQUEST) is not true or false", NULL);
    /* half a key pair is an error naming what is missing */
    unsetenv("SHARDKIT_S3_NO_SIGN_REQUEST");
    unsetenv("AWS_SECRET_ACCESS_KEY");
    open_fails("s3://b", SHARD_EINVAL, "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not",
               NULL);
    unsetenv("AWS_ACCESS_KEY_ID");
    write_file("credentials", "[default]\naws_access_key_id = K\n");
    open_fails("s3://b", SHARD_EINVAL, "[default] in '",
               "/.aws/credentials' has aws_access_key_id but no aws_secret_access_key", NULL);
}

static void test_a_profile_named_by_a_variable_must_exist(void **state)
{
    (void)state;
    with_keys();
    write_file("config", "[profile \"two words\"]\nregion = eu-north-1\n"
                         "[profilex]\nregion = eu-south-1\n"
                         "[profile a b]\nregion = eu-south-2\n");
    write_file("credentials", "[only-here]\nregion = sa-east-1\n");
    setenv("AWS_PROFILE", "nosuch", 1);
    open_fails("s3://b", SHARD_EINVAL, "the profile 'nosuch' (AWS_PROFILE) is in neither '",
               "/.aws/config' nor '", "/.aws/credentials'", NULL);
    unsetenv("AWS_PROFILE");
    setenv("AWS_DEFAULT_PROFILE", "nosuch", 1);
    open_fails("s3://b", SHARD_EINVAL, "'nosuch' (AWS_DEFAULT_PROFILE)", NULL);
    /* asked for by name, default too must exist; not asked for, it may not */
    setenv("AWS_DEFAULT_PROFILE", "default", 1);
    open_fails("s3://b", SHARD_EINVAL, "'default' (AWS_DEFAULT_PROFILE)", NULL);
    unsetenv("AWS_DEFAULT_PROFILE");
    struct sk_s3 *s3 = open_ok("s3://b");
    assert_string_equal(s3->region, "us-east-1");
    sk_s3_free(s3);
    /* AWS_PROFILE first, as the AWS CLI v2 reads them */
    setenv("AWS_DEFAULT_PROFILE", "nosuch", 1);
    setenv("AWS_PROFILE", "only-here", 1);
    s3 = open_ok("s3://b");
    assert_string_equal(s3->region, "sa-east-1");
    sk_s3_free(s3);
    unsetenv("AWS_DEFAULT_PROFILE");
    /* section names split as a shell splits them: quotes; not one word or three */
    setenv("AWS_PROFILE", "two words", 1);
    s3 = open_ok("s3://b");
    assert_string_equal(s3->region, "eu-north-1");
    sk_s3_free(s3);
    setenv("AWS_PROFILE", "x", 1);
    open_fails("s3://b", SHARD_EINVAL, "'x' (AWS_PROFILE)", NULL);
    setenv("AWS_PROFILE", "a", 1);
    open_fails("s3://b", SHARD_EINVAL, "'a' (AWS_PROFILE)", NULL);
}

static void test_endpoints_come_in_the_order_of_the_aws_cli(void **state)
{
    (void)state;
    with_keys();
    write_file("config", "[profile p]\nservices = local\nendpoint_url = http://global:1\n"
                         "[services local]\ns3 =\n  endpoint_url = http://service:2\n"
                         "sts =\n  endpoint_url = http://other:9\n"
                         "[profile ignoring]\nendpoint_url = http://global:1\n"
                         "ignore_configured_endpoint_urls = TRUE\n"
                         "[profile lost]\nservices = missing\n"
                         "[profile plain]\nendpoint_url = http://global:1/\n");
    setenv("AWS_PROFILE", "p", 1);
    setenv("AWS_REGION", "eu-west-1", 1);
    struct sk_s3 *s3 = open_ok("s3://b");
    assert_string_equal(s3->endpoint, "http://service:2");
    assert_true(s3->path_style);
    sk_s3_free(s3);
    setenv("AWS_ENDPOINT_URL", "http://env-global:3", 1);
    s3 = open_ok("s3://b");
    assert_string_equal(s3->endpoint, "http://env-global:3");
    sk_s3_free(s3);
    setenv("AWS_ENDPOINT_URL_S3", "http://env-s3:4", 1);
    s3 = open_ok("s3://b");
    assert_string_equal(s3->endpoint, "http://env-s3:4");
    sk_s3_free(s3);
    /* ignored: AWS itself, virtual-hosted */
    setenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "true", 1);
    s3 = open_ok("s3://b");
    assert_string_equal(s3->endpoint, "https://s3.eu-west-1.amazonaws.com");
    assert_false(s3->custom_endpoint);
    assert_false(s3->path_style);
    sk_s3_free(s3);
    setenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "yes please", 1);
    open_fails("s3://b", SHARD_EINVAL,
               "'yes please' (AWS_IGNORE_CONFIGURED_ENDPOINT_URLS) is not true or false", NULL);
    unsetenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS");
    unsetenv("AWS_ENDPOINT_URL_S3");
    unsetenv("AWS_ENDPOINT_URL");
    setenv("AWS_PROFILE", "ignoring", 1);
    s3 = open_ok("s3://b");
    assert_false(s3->custom_endpoint);
    sk_s3_free(s3);
    setenv("AWS_PROFILE", "plain", 1);
    s3 = open_ok("s3://b");
    assert_string_equal(s3->endpoint, "http://global:1");
    sk_s3_free(s3);
    setenv("AWS_PROFILE", "lost", 1);
    open_fails("s3://b", SHARD_EINVAL,
               "has no section [services missing] for the 'services' of [profile lost]", NULL);
    /* an endpoint from a variable does not need the services section */
    setenv("AWS_ENDPOINT_URL", "http://env-global:3", 1);
    s3 = open_ok("s3://b");
    assert_string_equal(s3->endpoint, "http://env-global:3");
    sk_s3_free(s3);
}

static void test_a_malformed_setting_is_an_error_naming_it(void **state)
{
    (void)state;
    with_keys();
    /* configparser keeps an inline comment in the value, as botocore does */
    write_file("config", "[default]\nregion = us-east-1 # the main one\n"
                         "[profile ep]\nendpoint_url = http://127.0.0.1:9000 ; local\n"
                         "[profile style]\ns3 =\n  addressing_style = sideways\n"
                         "[profile nested]\ns3 =\n  endpoint_url = http://127.0.0.1:7000\n");
    open_fails("s3://b", SHARD_EINVAL,
               "the region 'us-east-1 # the main one' (the 'region' of [default] in '",
               "/.aws/config') is not a region name; a comment ('#' or "
               "';') must be on a line of its own",
               NULL);
    setenv("AWS_REGION", "eu west", 1);
    open_fails("s3://b", SHARD_EINVAL, "the region 'eu west' (AWS_REGION)", NULL);
    setenv("AWS_REGION", "eu-west-3", 1);
    struct sk_s3 *s3 = open_ok("s3://b");
    sk_s3_free(s3);
    setenv("AWS_PROFILE", "ep", 1);
    open_fails("s3://b", SHARD_EINVAL,
               "the S3 endpoint 'http://127.0.0.1:9000 ; local' (the "
               "'endpoint_url' of [profile ep] in '",
               "is not an http:// or https:// URL", NULL);
    setenv("AWS_PROFILE", "style", 1);
    open_fails("s3://b", SHARD_EINVAL,
               "the addressing style 'sideways' (the 'addressing_style' "
               "under 's3' of [profile style]",
               NULL);
    /* the old nesting the AWS CLI does not read is no silent trip to AWS */
    setenv("AWS_PROFILE", "nested", 1);
    open_fails("s3://b", SHARD_EINVAL, "the 'endpoint_url' under 's3' of [profile nested]",
               "is not read by the AWS CLI", NULL);
    setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9", 1);
    s3 = open_ok("s3://b");
    assert_string_equal(s3->endpoint, "http://127.0.0.1:9");
    sk_s3_free(s3);
    setenv("AWS_ENDPOINT_URL", "http://user:pw@host", 1);
    open_fails("s3://b", SHARD_EINVAL, "(AWS_ENDPOINT_URL) is not an http", NULL);
    setenv("AWS_ENDPOINT_URL", "127.0.0.1:9000", 1);
    open_fails("s3://b", SHARD_EINVAL, "(AWS_ENDPOINT_URL) is not an http", NULL);
}

static void test_files_are_parsed_as_configparser_parses_them(void **state)
{
    (void)state;
    with_keys();
    /* CRLF, ':' as the delimiter, keys in any case, continuation lines,
     * comment lines inside a nested block, [DEFAULT] inherited, and the
     * later of [default] and [profile default] */
    write_file("config", "# comment\r\n; another\r\n[DEFAULT]\r\nregion = ap-east-1\r\n"
                         "[default]\r\nREGION: eu-central-1\r\n"
                         "[profile x]\r\ns3 =\r\n\r\n  # note\r\n"
                         "  addressing_style = path\r\n"
                         "[profile default]\r\nregion = me-south-1\r\n");
    struct sk_s3 *s3 = open_ok("s3://b");
    assert_string_equal(s3->region, "me-south-1");
    sk_s3_free(s3);
    setenv("AWS_PROFILE", "x", 1);
    s3 = open_ok("s3://b");
    assert_string_equal(s3->region, "ap-east-1");
    assert_true(s3->path_style);
    sk_s3_free(s3);
    /* what is not a regular file is not there, as for botocore (a FIFO is
     * not waited on) */
    char fifo[400];
    snprintf(fifo, sizeof fifo, "%s/fifo", home);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    setenv("AWS_CONFIG_FILE", fifo, 1);
    open_fails("s3://b", SHARD_EINVAL, "the profile 'x' (AWS_PROFILE) is in neither '", fifo, NULL);
    unsetenv("AWS_CONFIG_FILE");
    unsetenv("AWS_PROFILE");
    /* what configparser refuses, the file's path and line named; a secret
     * on the line is not repeated */
    write_file("config", "region = us-east-1\n");
    open_fails("s3://b", SHARD_EINVAL, "/.aws/config': line 1 comes before any [section]", NULL);
    write_file("config", "[default]\nregion = us-east-1\nRegion = us-east-2\n");
    open_fails("s3://b", SHARD_EINVAL, "line 3 sets 'region' a second time in its section", NULL);
    write_file("config", "[default]\n[a]\n[default]\n");
    open_fails("s3://b", SHARD_EINVAL, "line 3 starts a second section [default]", NULL);
    write_file("config", "[default]\ns3 =\n  addressing_style path\n");
    open_fails("s3://b", SHARD_EINVAL,
               "line 2 starts nested values ('s3 =' then indented lines), one of which has no '='",
               NULL);
    write_file("config", "");
    write_file("credentials", "[default]\naws_secret_access_key wJalrXUtnFEMIK7MDENG\n");
    struct shard_err err;
    assert_int_equal(sk_s3_open(&s3, "s3://b", &err), SHARD_EINVAL);
    assert_non_null(strstr(err.msg, "/.aws/credentials': line 2 is neither a [section], a "
                                    "'key = value' nor a comment"));
    assert_null(strstr(err.msg, "wJalr"));
}

static void test_credentials_from_elsewhere_are_refused_saying_how(void **state)
{
    (void)state;
    write_file("config", "[profile role]\nrole_arn = arn:aws:iam::1:role/r\n"
                         "source_profile = default\n"
                         "[profile proc]\ncredential_process = /bin/false\n"
                         "[profile sso]\nsso_account_id = 1\nsso_role_name = r\n"
                         "[profile both]\ncredential_process = /bin/false\n");
    write_file("credentials", "[both]\naws_access_key_id = FILEKEY\n"
                              "aws_secret_access_key = filesecret\n");
    setenv("AWS_PROFILE", "role", 1);
    open_fails("s3://b", SHARD_EUNSUPPORTED,
               "the profile 'role' gets its credentials from a role to assume ('role_arn')",
               "aws configure export-credentials --profile role", NULL);
    setenv("AWS_PROFILE", "proc", 1);
    open_fails("s3://b", SHARD_EUNSUPPORTED, "('credential_process')", NULL);
    setenv("AWS_PROFILE", "sso", 1);
    open_fails("s3://b", SHARD_EUNSUPPORTED, "IAM Identity Center", NULL);
    /* keys in the credentials file come before a process */
    setenv("AWS_PROFILE", "both", 1);
    struct sk_s3 *s3 = open_ok("s3://b");
    assert_string_equal(s3->userpwd, "FILEKEY:filesecret");
    sk_s3_free(s3);
    /* keys in the environment come before everything */
    setenv("AWS_PROFILE", "role", 1);
    with_keys();
    setenv("AWS_SESSION_TOKEN", "session", 1);
    setenv("AWS_SECURITY_TOKEN", "security", 1);
    s3 = open_ok("s3://b");
    assert_string_equal(s3->userpwd, "ENVKEY:envsecret");
    assert_string_equal(s3->headers->next->data, "x-amz-security-token: security");
    sk_s3_free(s3);
}

static void test_names_and_urls_never_hold_the_secret(void **state)
{
    (void)state;
    with_keys();
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
    with_keys();
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
    with_keys();
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
        cmocka_unit_test_setup_teardown(test_aws_is_virtual_hosted_and_a_custom_endpoint_path_style,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_variables_come_before_the_profile_and_credentials_before_config, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_no_credentials_is_an_error_and_unsigned_only_when_asked, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_profile_named_by_a_variable_must_exist, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_endpoints_come_in_the_order_of_the_aws_cli, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_malformed_setting_is_an_error_naming_it, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_files_are_parsed_as_configparser_parses_them, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_credentials_from_elsewhere_are_refused_saying_how,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_names_and_urls_never_hold_the_secret, setup, teardown),
        cmocka_unit_test_setup_teardown(test_encoding_keeps_unreserved_bytes_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_part_size_comes_from_the_environment_and_has_a_floor,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_error_documents_give_their_code, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
