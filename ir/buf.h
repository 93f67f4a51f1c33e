/*
 * buf.h - growable byte buffers and atomic file writes.
 *
 * Two things several modules used to write for themselves: a buffer that
 * grows by doubling (the C emitter's text, CSE's structural keys, the ONNX
 * reader's file contents) and writing a file so that it is either wholly
 * there or not touched (generated C, ONNX models, reports, machine profiles,
 * tensors). Out of memory in a buffer is our error, not the user's: it
 * asserts, like the graph's own arrays.
 */
#ifndef RL_BUF_H
#define RL_BUF_H

#include <stddef.h>

#include "ir.h"

/* A growable buffer; zero-initialize it. s is NUL-terminated after
 * rl_buf_printf and rl_buf_append (cap > len), NULL while empty. */
struct rl_buf {
	char *s;
	size_t len, cap;
};

/* Make room for n more bytes (and a terminating NUL). */
void rl_buf_reserve(struct rl_buf *b, size_t n);
/* Append n bytes. */
void rl_buf_append(struct rl_buf *b, const void *data, size_t n);
/* Append formatted text. */
void rl_buf_printf(struct rl_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void rl_buf_free(struct rl_buf *b);

/* Write `len` bytes to path atomically: a temporary file in the same folder,
 * renamed over path on success; nothing is left behind on failure (err:
 * "PATH: reason"). The file gets the usual permissions (0666 less umask). */
enum rl_status rl_write_file_atomic(const char *path, const void *data,
                                    size_t len, char *err, size_t errlen);

#endif /* RL_BUF_H */
