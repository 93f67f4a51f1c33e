/*
 * main.c - runs the C that rlopt_add_model() generated from examples/mlp.onnx
 * (mlp_opt.h/.c, made at build time) on a fixed ramp input and prints the
 * scores and their argmax. The input is the one examples/run_mlp.c uses, so
 * the two programs print the same answer. With constants in a side file
 * (OPTIONS --weights-max N), pass its path as the first argument.
 */
#include <stdio.h>
#include <stdlib.h>

#include "mlp_opt.h"

int main(int argc, char **argv)
{
	const struct mlp_opt_tensor_info *in = &mlp_opt_inputs[0];
	const struct mlp_opt_tensor_info *out = &mlp_opt_outputs[0];
	float *x = malloc(sizeof(float) * (size_t)in->numel);
	float *y = malloc(sizeof(float) * (size_t)out->numel);
	if (!x || !y || mlp_opt_init(argc > 1 ? argv[1] : NULL) != 0) {
		fprintf(stderr, "mlp_demo: cannot initialize the model\n");
		return 1;
	}
	for (long long i = 0; i < in->numel; i++)
		x[i] = (float)((i % 17) - 8) / 8.0f;
	if (mlp_opt_run(x, y) != 0) {
		fprintf(stderr, "mlp_demo: model failed\n");
		return 1;
	}
	int best = 0;
	for (long long i = 0; i < out->numel; i++) {
		printf("score %lld: %.6f\n", i, y[i]);
		if (y[i] > y[best])
			best = (int)i;
	}
	printf("argmax: %d\n", best);
	mlp_opt_free();
	free(x);
	free(y);
	return 0;
}
