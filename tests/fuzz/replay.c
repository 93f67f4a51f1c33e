/*
 * replay.c - run the fuzz target over every file given (or every file in
 * the folders given), for builds without libFuzzer. Prints one line per
 * folder and exits non-zero only if a sanitizer aborts the process.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return 0;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
	size_t got = buf && n > 0 ? fread(buf, 1, (size_t)n, f) : 0;
	fclose(f);
	LLVMFuzzerTestOneInput(buf, got);
	free(buf);
	return 1;
}

int main(int argc, char **argv)
{
	int total = 0;
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) != 0)
			continue;
		if (!S_ISDIR(st.st_mode)) {
			total += run_file(argv[i]);
			continue;
		}
		struct dirent **list;
		int n = scandir(argv[i], &list, NULL, alphasort);
		int count = 0;
		for (int k = 0; k < n; k++) {
			char p[4096];
			if (list[k]->d_name[0] != '.') {
				snprintf(p, sizeof(p), "%s/%s", argv[i], list[k]->d_name);
				count += run_file(p);
			}
			free(list[k]);
		}
		free(list);
		printf("replay: %d inputs from %s\n", count, argv[i]);
		total += count;
	}
	if (total == 0) {
		fprintf(stderr, "replay: no inputs found\n");
		return 1;
	}
	printf("replay: %d inputs, no crash\n", total);
	return 0;
}
