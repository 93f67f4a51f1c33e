/*
 * testutil.c - helpers shared by the Criterion unit tests.
 */
#include "testutil.h"

#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const char *tu_onnx_data_dir(void)
{
	static char found[4096];
	const char *env = getenv("RL_ONNX_DATA");
	struct stat st;
	if (env && stat(env, &st) == 0)
		return env;
	if (found[0])
		return found;
	const char *pats[] = {
		RL_BINARY_DIR "/venv/lib/python3*/site-packages/onnx/backend/test/data",
		"/tmp/venv/lib/python3*/site-packages/onnx/backend/test/data",
	};
	for (size_t i = 0; i < sizeof(pats) / sizeof(pats[0]); i++) {
		glob_t g;
		if (glob(pats[i], 0, NULL, &g) == 0 && g.gl_pathc) {
			snprintf(found, sizeof(found), "%s", g.gl_pathv[0]);
			globfree(&g);
			return found;
		}
	}
	return NULL;
}

char *tu_tmpdir(void)
{
	char *d = strdup("/tmp/rlopt-test-XXXXXX");
	return mkdtemp(d);
}

void tu_rmtree(const char *dir)
{
	char cmd[4200];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "testutil: could not remove %s\n", dir);
}

int tu_write(const char *path, const void *data, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	size_t w = fwrite(data, 1, n, f);
	return fclose(f) == 0 && w == n ? 0 : -1;
}
