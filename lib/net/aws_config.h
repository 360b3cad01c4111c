/* aws_config.h - the AWS shared config and credentials files, read as the
 * AWS CLI reads them (private).
 *
 * The AWS CLI (v1 and v2) and boto3 read both files with botocore, which
 * parses them with Python's configparser.RawConfigParser and then maps
 * sections to profiles; this reader follows both, rule for rule:
 *  - "[NAME]" starts a section (NAME is everything between the first '['
 *    and the last ']'); "[DEFAULT]" holds values every section inherits;
 *  - "key = value" or "key: value" (the first '=' or ':'); keys are
 *    lower-cased, keys and values stripped of white space; a line whose
 *    first non-blank character is '#' or ';' is a comment, but only a whole
 *    line: "region = us-east-1 # eu" is the value "us-east-1 # eu";
 *  - a line indented deeper than its key's line continues the value (a new
 *    line of it; blank lines inside a value are kept, trailing ones are
 *    not); a value that begins with a new line ("s3 =" then indented
 *    "name = value" lines) is nested: the key "s3" holds "name" (not
 *    lower-cased) = value pairs;
 *  - the file is refused (botocore's ConfigParseError) for a key before any
 *    section, a line that is none of the above, an empty key, a section or
 *    a key given twice in one file, a nested line without '='.
 * In the config file, a section "profile NAME" is the profile NAME, as is
 * "default" the profile default ("profile default" too; the later section
 * wins), and "services NAME" a services section; NAME is the second word of
 * the section name split as a POSIX shell would split it (quotes allowed),
 * and a section name that does not split into two words names nothing.  In
 * the credentials file a section is the profile of its own name. */
#ifndef SHARDKIT_NET_AWS_CONFIG_H
#define SHARDKIT_NET_AWS_CONFIG_H

#include "shardkit/error.h"

struct sk_aws_file;
struct sk_aws_section;

/* Read the INI file at `path` (a leading "~/" is $HOME).  A file that does
 * not exist reads as one without sections.  SHARD_EINVAL for a file the
 * AWS CLI refuses, naming the file, the line and why; SHARD_EIO when it
 * cannot be read; SHARD_ENOMEM. */
int sk_aws_file_read(struct sk_aws_file **out, const char *path, struct shard_err *err);

void sk_aws_file_free(struct sk_aws_file *f); /* accepts NULL */

/* The file's path as read (after "~/" expansion), for messages. */
const char *sk_aws_file_path(const struct sk_aws_file *f);

/* The section named exactly `name` (a credentials file's profile), or NULL. */
const struct sk_aws_section *sk_aws_section(const struct sk_aws_file *f, const char *name);

/* The section that is the config file's profile `profile`, or its services
 * section `name`, as botocore maps them (see above); NULL when none. */
const struct sk_aws_section *sk_aws_profile(const struct sk_aws_file *f, const char *profile);
const struct sk_aws_section *sk_aws_services(const struct sk_aws_file *f, const char *name);

/* The section's name as written ("profile work") and its file's path, for
 * messages. */
const char *sk_aws_section_name(const struct sk_aws_section *s);
const char *sk_aws_section_path(const struct sk_aws_section *s);

/* Is `key` set in section s (or in its file's [DEFAULT]), plain or nested? */
int sk_aws_has(const struct sk_aws_section *s, const char *key);

/* The plain value of `key`; NULL when it is not set or nested.  With sub
 * non-NULL: the value of `sub` nested under `key`; NULL when `key` is not
 * set, not nested, or has no `sub`.  Owned by the file. */
const char *sk_aws_get(const struct sk_aws_section *s, const char *key, const char *sub);

#endif
