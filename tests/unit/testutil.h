/*
 * testutil.h - helpers shared by the Criterion unit tests.
 */
#ifndef RL_TESTUTIL_H
#define RL_TESTUTIL_H

#include <stddef.h>

#include "ir.h"

/* The onnx wheel's backend test data (…/onnx/backend/test/data), found in
 * $RL_ONNX_DATA or the build's venv; NULL if absent. */
const char *tu_onnx_data_dir(void);
/* A fresh temporary folder (removed by tu_rmtree). */
char *tu_tmpdir(void);
void tu_rmtree(const char *dir);
/* Write bytes to a file; returns 0 on success. */
int tu_write(const char *path, const void *data, size_t n);

#endif
