/*
 * buf.h - growable byte buffers and atomic file writes.
 *
 * Two things several modules used to write for themselves: a buffer that
 * grows by doubling (the C emitter's text, CSE's structural keys, the ONNX
 * reader's file contents) and writing a file so that it is either wholly
 * there or not touched (generated C, ONNX models, reports, machine profiles,
 * tensors). Out of memory in a buffer is our error, not the user's: it
 * asserts, like the graph's own arrays. And the page advice the streaming
 * paths (quantize, the judge's sampling, the ONNX writer) give the kernel
 * about mmapped weights they are done with.
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

/* Page advice for borrowed bytes (usually an mmapped weight file), rounded
 * out to whole pages; both are hints: on memory that is not a file mapping,
 * or without MADV_PAGEOUT, they change nothing the program sees.
 * rl_page_out: done with these bytes; hand their pages back (they are read
 * again from the file if ever needed), so that streaming a model keeps one
 * weight resident at a time, not the model.
 * rl_page_random: only sampled pages will be read; no readahead. */
void rl_page_out(const void *p, size_t len);
void rl_page_random(const void *p, size_t len);

#endif /* RL_BUF_H */
