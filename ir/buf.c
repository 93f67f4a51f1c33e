/*
 * buf.c - growable byte buffers, atomic file writes and page advice (buf.h).
 */
#include "buf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

void rl_buf_reserve(struct rl_buf *b, size_t n)
{
	if (b->s && b->len + n < b->cap)
		return;
	size_t ncap = b->cap ? b->cap * 2 : 4096;
	while (ncap < b->len + n + 1)
		ncap *= 2;
	b->s = realloc(b->s, ncap);
	RL_ASSERT(b->s);
	b->cap = ncap;
}

void rl_buf_append(struct rl_buf *b, const void *data, size_t n)
{
	rl_buf_reserve(b, n);
	if (n)
		memcpy(b->s + b->len, data, n);
	b->len += n;
	b->s[b->len] = 0;
}

void rl_buf_printf(struct rl_buf *b, const char *fmt, ...)
{
	va_list ap;
	for (;;) {
		size_t room = b->cap - b->len;
		va_start(ap, fmt);
		int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? room : 0, fmt, ap);
		va_end(ap);
		RL_ASSERT(n >= 0);
		if (b->s && (size_t)n < room) {
			b->len += (size_t)n;
			return;
		}
		rl_buf_reserve(b, (size_t)n);
	}
}

void rl_buf_free(struct rl_buf *b)
{
	free(b->s);
	memset(b, 0, sizeof(*b));
}

enum rl_status rl_write_file_atomic(const char *path, const void *data,
                                    size_t len, char *err, size_t errlen)
{
	size_t pl = strlen(path);
	char *tmp = malloc(pl + 16);
	if (!tmp) {
		snprintf(err, errlen, "%s: out of memory", path);
		return RL_ERR_NOMEM;
	}
	snprintf(tmp, pl + 16, "%s.tmpXXXXXX", path);
	int fd = mkstemp(tmp);
	if (fd < 0) {
		snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
		free(tmp);
		return RL_ERR_IO;
	}
	const char *p = data;
	size_t left = len;
	while (left) {
		ssize_t w = write(fd, p, left);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			snprintf(err, errlen, "%s: write failed: %s", path, strerror(errno));
			close(fd);
			unlink(tmp);
			free(tmp);
			return RL_ERR_IO;
		}
		p += w;
		left -= (size_t)w;
	}
	/* mkstemp makes 0600; give the file the usual permissions */
	mode_t um = umask(0);
	umask(um);
	fchmod(fd, 0666 & ~um);
	if (close(fd) != 0 || rename(tmp, path) != 0) {
		snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
		unlink(tmp);
		free(tmp);
		return RL_ERR_IO;
	}
	free(tmp);
	return RL_OK;
}


/* The whole pages that [p, p + len) touches, for madvise; false if none. */
static bool page_span(const void *p, size_t len, void **a, size_t *n)
{
	long pg = sysconf(_SC_PAGESIZE);
	if (pg <= 0 || !p || len == 0)
		return false;
	uintptr_t lo = (uintptr_t)p & ~(uintptr_t)(pg - 1);
	*a = (void *)lo;
	*n = (size_t)((uintptr_t)p + len - lo);
	return true;
}

void rl_page_out(const void *p, size_t len)
{
#ifdef MADV_PAGEOUT
	void *a;
	size_t n;
	if (page_span(p, len, &a, &n))
		(void)madvise(a, n, MADV_PAGEOUT);
#else
	(void)p, (void)len;
#endif
}

void rl_page_random(const void *p, size_t len)
{
	void *a;
	size_t n;
	if (page_span(p, len, &a, &n))
		(void)madvise(a, n, MADV_RANDOM);
}
