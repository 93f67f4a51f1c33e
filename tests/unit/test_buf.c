/*
 * test_buf.c - growable buffers and atomic file writes (ir/buf.c), which the
 * C emitter, CSE, the ONNX reader and writer and the machine-profile writer
 * share.
 */
#include <criterion/criterion.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"

Test(buf, printf_and_append_grow_and_stay_terminated)
{
	struct rl_buf b = {0};
	for (int i = 0; i < 3000; i++)
		rl_buf_printf(&b, "%d,", i % 10);
	cr_assert_eq(b.len, 6000);
	cr_assert_eq(strlen(b.s), 6000);
	cr_assert(b.cap > b.len);
	cr_assert_eq(memcmp(b.s, "0,1,2,", 6), 0);
	unsigned char raw[3] = {0, 7, 0};
	rl_buf_append(&b, raw, 3);
	cr_assert_eq(b.len, 6003);
	cr_assert_eq(b.s[6001], 7);
	cr_assert_eq(b.s[6003], 0);
	rl_buf_append(&b, NULL, 0);
	cr_assert_eq(b.len, 6003);
	rl_buf_free(&b);
	cr_assert_null(b.s);
	cr_assert_eq(b.len + b.cap, 0);
}

Test(buf, one_long_line)
{
	struct rl_buf b = {0};
	char big[10000];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	rl_buf_printf(&b, "<%s>", big);
	cr_assert_eq(b.len, sizeof(big) + 1);
	cr_assert_eq(b.s[0], '<');
	cr_assert_eq(b.s[b.len - 1], '>');
	rl_buf_free(&b);
}

static int count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	int n = 0;
	struct dirent *e;
	while (d && (e = readdir(d)))
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

Test(buf, atomic_write_replaces_whole_or_leaves_nothing)
{
	char dir[] = "/tmp/rl_buf_XXXXXX", path[64], err[256];
	cr_assert(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/f.txt", dir);
	cr_assert_eq(rl_write_file_atomic(path, "old", 3, err, sizeof(err)), RL_OK);
	cr_assert_eq(rl_write_file_atomic(path, "new!", 4, err, sizeof(err)), RL_OK);
	FILE *f = fopen(path, "rb");
	char got[8] = {0};
	cr_assert(f);
	cr_assert_eq(fread(got, 1, sizeof(got), f), 4);
	fclose(f);
	cr_assert_str_eq(got, "new!");
	cr_assert_eq(count_entries(dir), 1, "no temporary file left");
	/* into a folder that does not exist: an error naming the path, nothing written */
	char bad[96];
	snprintf(bad, sizeof(bad), "%s/missing/g.txt", dir);
	cr_assert_eq(rl_write_file_atomic(bad, "x", 1, err, sizeof(err)), RL_ERR_IO);
	cr_assert(strstr(err, bad), "message names the path: %s", err);
	cr_assert_eq(count_entries(dir), 1);
	unlink(path);
	rmdir(dir);
}
