/*
 * fuzz_file.h - for fuzz targets whose loader reads a path: the input is
 * written to NAME in a private folder made once per process (under $TMPDIR,
 * else /tmp), so each call costs one small write and nothing leaks between
 * processes. Header-only: each target is one executable.
 */
#ifndef RL_FUZZ_FILE_H
#define RL_FUZZ_FILE_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char rl_fuzz_dir_path[512];

/* At exit: empty the folder and remove it. */
static inline void rl_fuzz_cleanup(void)
{
	DIR *d = opendir(rl_fuzz_dir_path);
	if (d) {
		struct dirent *e;
		char p[800];
		while ((e = readdir(d)))
			if (e->d_name[0] != '.') {
				snprintf(p, sizeof p, "%s/%s", rl_fuzz_dir_path, e->d_name);
				unlink(p);
			}
		closedir(d);
	}
	rmdir(rl_fuzz_dir_path);
}

/* The folder, made on first use; NULL when it cannot be made. */
static inline const char *rl_fuzz_dir(void)
{
	if (!rl_fuzz_dir_path[0]) {
		const char *t = getenv("TMPDIR");
		snprintf(rl_fuzz_dir_path, sizeof rl_fuzz_dir_path, "%s/rlopt-fuzz-XXXXXX",
		         t && *t ? t : "/tmp");
		if (!mkdtemp(rl_fuzz_dir_path)) {
			rl_fuzz_dir_path[0] = 0;
			return NULL;
		}
		atexit(rl_fuzz_cleanup);
	}
	return rl_fuzz_dir_path;
}

/* Write data to DIR/name; returns the path (static) or NULL. */
static inline const char *rl_fuzz_write(const char *name, const uint8_t *data, size_t size)
{
	static char path[600];
	const char *dir = rl_fuzz_dir();
	if (!dir)
		return NULL;
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	if (!f)
		return NULL;
	size_t w = size ? fwrite(data, 1, size, f) : 0;
	if (fclose(f) != 0 || w != size)
		return NULL;
	return path;
}

/* Remove DIR/name (ignores a missing file). */
static inline void rl_fuzz_unlink(const char *name)
{
	char path[600];
	const char *dir = rl_fuzz_dir();
	if (dir) {
		snprintf(path, sizeof path, "%s/%s", dir, name);
		unlink(path);
	}
}

#endif
