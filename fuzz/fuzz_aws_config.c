/* fuzz_aws_config.c - the AWS shared config and credentials files on
 * arbitrary bytes.
 *
 * Each input is written to a private temporary directory and read:
 *  1. by sk_aws_file_read, twice (the same answer both times); an accepted
 *     file is asked for profiles, services sections and values, plain and
 *     nested;
 *  2. by sk_s3_open, as the config file and then as the credentials file
 *     (AWS_PROFILE unset, then set to "p"): an accepted location has an
 *     http(s) endpoint, a region and, unless unsigned, credentials; a
 *     refusal is one of the documented codes with a message.
 * Invariant violations abort(), so the fuzzer reports them like crashes. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_target.h"
#include "net/aws_config.h"
#include "net/s3.h"

#define REQUIRE(cond)                                                                           \
    do {                                                                                        \
        if (!(cond)) {                                                                          \
            fprintf(stderr, "fuzz_aws_config: invariant failed: %s (%s:%d)\n", #cond, __FILE__, \
                    __LINE__);                                                                  \
            abort();                                                                            \
        }                                                                                       \
    } while (0)

static char dir[256];        /* the private temporary directory (HOME) */
static char input_path[300]; /* the input */
static char empty_path[300]; /* a file that is not there */

static void remove_dir(void)
{
    unlink(input_path);
    rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/shardkit-fuzz-aws.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        perror("fuzz_aws_config: mkdtemp");
        abort();
    }
    atexit(remove_dir);
    snprintf(input_path, sizeof input_path, "%s/input", dir);
    snprintf(empty_path, sizeof empty_path, "%s/none", dir);
    setenv("HOME", dir, 1);
    static const char *const cleared[] = {
        "AWS_PROFILE",
        "AWS_DEFAULT_PROFILE",
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_ENDPOINT_URL",
        "AWS_ENDPOINT_URL_S3",
        "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_SECURITY_TOKEN",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_ROLE_ARN",
        "SHARDKIT_S3_NO_SIGN_REQUEST",
        "SHARDKIT_S3_PART_SIZE",
    };
    for (size_t i = 0; i < sizeof cleared / sizeof cleared[0]; i++)
        unsetenv(cleared[i]);
    return 0;
}

static void write_input(const uint8_t *data, size_t size)
{
    int fd = open(input_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size) || close(fd) != 0) {
        perror("fuzz_aws_config: cannot write the input");
        abort();
    }
}

static void ask(const struct sk_aws_section *s)
{
    static const char *const keys[] = {"region", "endpoint_url",      "services",
                                       "s3",     "aws_access_key_id", ""};
    if (!s)
        return;
    REQUIRE(sk_aws_section_name(s) && sk_aws_section_path(s));
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const char *v = sk_aws_get(s, keys[i], NULL);
        const char *n = sk_aws_get(s, keys[i], "endpoint_url");
        REQUIRE(!v || sk_aws_has(s, keys[i]));
        REQUIRE(!n || (sk_aws_has(s, keys[i]) && !v));
    }
}

static void read_file(void)
{
    struct sk_aws_file *f = NULL, *g = NULL;
    struct shard_err err, err2;
    int rc = sk_aws_file_read(&f, input_path, &err);
    int rc2 = sk_aws_file_read(&g, input_path, &err2);
    REQUIRE(rc == rc2);
    REQUIRE(rc == SHARD_OK || rc == SHARD_EINVAL);
    REQUIRE(rc ? !f && err.msg[0] && !strcmp(err.msg, err2.msg) : f != NULL);
    if (f) {
        static const char *const names[] = {"default", "p", "a b", "s3", "DEFAULT", ""};
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
            ask(sk_aws_section(f, names[i]));
            ask(sk_aws_profile(f, names[i]));
            ask(sk_aws_services(f, names[i]));
        }
    }
    sk_aws_file_free(f);
    sk_aws_file_free(g);
}

static void open_with(const char *config, const char *credentials, const char *profile)
{
    setenv("AWS_CONFIG_FILE", config, 1);
    setenv("AWS_SHARED_CREDENTIALS_FILE", credentials, 1);
    if (profile)
        setenv("AWS_PROFILE", profile, 1);
    else
        unsetenv("AWS_PROFILE");
    struct sk_s3 *s3 = NULL;
    struct shard_err err;
    int rc = sk_s3_open(&s3, "s3://bucket/prefix", &err);
    if (rc) {
        REQUIRE(!s3 && err.msg[0]);
        REQUIRE(rc == SHARD_EINVAL || rc == SHARD_EUNSUPPORTED || rc == SHARD_EIO);
        return;
    }
    REQUIRE(!strncmp(s3->endpoint, "http://", 7) || !strncmp(s3->endpoint, "https://", 8));
    REQUIRE(s3->region[0] && strlen(s3->region) <= 63);
    REQUIRE(s3->anonymous || s3->userpwd);
    sk_s3_free(s3);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    write_input(data, size);
    read_file();
    open_with(input_path, empty_path, NULL);
    open_with(input_path, empty_path, "p");
    open_with(empty_path, input_path, NULL);
    open_with(empty_path, input_path, "p");
    return 0;
}
