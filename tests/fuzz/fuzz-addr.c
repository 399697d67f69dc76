/*
 * fuzz-addr.c: libFuzzer harness for the pure parts of src/addr.c (no name
 * resolution: addr_resolve is left out).
 *
 * 1. The input, NUL-terminated, as a Unix socket operand: addr_unix_check,
 *    then addr_unix, then addr_format back; an accepted path or @name must
 *    come back as typed.
 * 2. The input's bytes as a socket address: a family chosen by the first
 *    byte, an output size by the second, the rest as the address itself;
 *    addr_format must write a terminated string that fits (getnameinfo is
 *    asked for numeric hosts and ports only, so it never resolves).
 */
#include "config.h"

#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "fastcat.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_NAME "fuzz-addr"
#include "fuzz-check.h"
#include "net/net.h"

#define SUN_PATH_LEN sizeof(((struct sockaddr_un *)0)->sun_path)

static void unix_operand(const uint8_t *data, size_t size)
{
	struct sockaddr_storage ss;
	socklen_t len = 0;
	char *path = malloc(size + 1), err[256], *out;
	struct failure fail;
	size_t n;
	int rc, filled;

	if (path == NULL)
		return;
	memcpy(path, data, size);
	path[size] = '\0';
	n = strlen(path);

	fail = (struct failure){EXIT_OK, ""};
	rc = addr_unix_check(path, &fail);
	snprintf(err, sizeof err, "%s", fail.why);
	CHECK(rc == 0 || rc == EXIT_USAGE, "addr_unix_check: %d", rc);
	CHECK(rc == 0 || err[0] != '\0', "no message");
	CHECK(strchr(err, '\n') == NULL || strchr(path, '\n') != NULL, "message '%s'", err);
	CHECK((rc == 0) == (n >= 1 && n < SUN_PATH_LEN && strcmp(path, "@") != 0),
	      "'%s' (%zu bytes): check says %d", path, n, rc);

	memset(&ss, 0xa5, sizeof ss);
	filled = addr_unix(path, &ss, &len);
	CHECK(filled == 0 || filled == -1, "addr_unix: %d", filled);
	CHECK((filled == 0) == (n < SUN_PATH_LEN), "addr_unix of %zu bytes: %d", n, filled);
	if (rc != 0 || filled != 0) {
		free(path);
		return;
	}
	CHECK(len <= sizeof(struct sockaddr_un), "length %u", (unsigned)len);
	CHECK(((struct sockaddr_un *)&ss)->sun_family == AF_UNIX, "family");

	/* back to text: the listening line and the report print it this way */
	out = malloc(SUN_PATH_LEN + 2);
	if (out == NULL)
		abort();
	addr_format((struct sockaddr *)&ss, len, out, SUN_PATH_LEN + 2);
	CHECK(strcmp(out, path) == 0, "'%s' formats as '%s'", path, out);
	free(out);
	free(path);
}

static void socket_address(const uint8_t *data, size_t size)
{
	static const int families[] = {AF_UNIX, AF_INET, AF_INET6, AF_UNSPEC};
	struct sockaddr_storage ss;
	size_t outlen, len;
	char *out;

	if (size < 2)
		return;
	outlen = 1 + data[1] % 128;
	len = size - 2 < sizeof ss ? size - 2 : sizeof ss;
	memset(&ss, 0, sizeof ss);
	memcpy(&ss, data + 2, len);
	ss.ss_family = (sa_family_t)families[data[0] % 4];
	if (data[0] & 0x80) /* as getsockname reports them: the whole structure */
		len = ss.ss_family == AF_UNIX    ? sizeof(struct sockaddr_un)
		      : ss.ss_family == AF_INET  ? sizeof(struct sockaddr_in)
		      : ss.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
		                                 : len;
	out = malloc(outlen);
	if (out == NULL)
		abort();
	memset(out, 'x', outlen);
	addr_format((struct sockaddr *)&ss, (socklen_t)len, out, outlen);
	CHECK(memchr(out, '\0', outlen) != NULL, "output not terminated in %zu bytes", outlen);
	free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unix_operand(data, size);
	socket_address(data, size);
	return 0;
}
