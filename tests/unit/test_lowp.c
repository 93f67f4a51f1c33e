/*
 * test_lowp.c - the low-precision dtypes: packing, the scalar conversions of
 * ir/lowp.c against ONNX's Cast tables, and the helpers backends/c/emit_lowp.c
 * writes into generated code against ir/lowp.c on every stored byte and on
 * every float16 value (which holds every float8/float4 rounding midpoint)
 * plus pseudo-random float32 bit patterns, compiled with cc -std=c11 -O2.
 */
#include <criterion/criterion.h>

#include "backends/c/emit_lowp.h"
#include "frontends/onnx/onnx.h"
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const enum rl_dtype lp_types[] = {
	RL_DT_FLOAT8E4M3FN, RL_DT_FLOAT8E4M3FNUZ, RL_DT_FLOAT8E5M2, RL_DT_FLOAT8E5M2FNUZ,
	RL_DT_UINT4, RL_DT_INT4, RL_DT_FLOAT4E2M1, RL_DT_FLOAT8E8M0, RL_DT_UINT2, RL_DT_INT2,
};
#define NLP (sizeof(lp_types) / sizeof(lp_types[0]))

static float bits_f(uint32_t u)
{
	float f;
	memcpy(&f, &u, 4);
	return f;
}

Test(lowp, pack_unpack_round_trip)
{
	/* int4: -8..7 sign-extended; an odd count leaves the last high nibble 0 */
	uint8_t v[5] = {(uint8_t)-8, 7, (uint8_t)-1, 0, 3}, p[3], u[5];
	rl_lowp_pack(RL_DT_INT4, v, 5, p);
	cr_assert_eq(rl_dtype_packed_size(RL_DT_INT4, 5), 3);
	cr_assert_eq(p[0], 0x78);
	cr_assert_eq(p[1], 0x0f);
	cr_assert_eq(p[2], 0x03);
	rl_lowp_unpack(RL_DT_INT4, p, 5, u);
	cr_assert_arr_eq(u, v, 5);
	/* int2: four a byte, first in bits 0-1 */
	uint8_t w[5] = {(uint8_t)-2, 1, (uint8_t)-1, 0, 1}, q[2], r[5];
	rl_lowp_pack(RL_DT_INT2, w, 5, q);
	cr_assert_eq(rl_dtype_packed_size(RL_DT_INT2, 5), 2);
	cr_assert_eq(q[0], 0x02 | 0x01 << 2 | 0x03 << 4);
	cr_assert_eq(q[1], 0x01);
	rl_lowp_unpack(RL_DT_INT2, q, 5, r);
	cr_assert_arr_eq(r, w, 5);
	cr_assert_eq(rl_dtype_packed_size(RL_DT_FLOAT8E5M2, 5), 5);
}

/* TensorProto files: int4 in int32_data (one packed byte each), float8 in
 * int32_data (one code each), and a written int4 tensor read back. */
Test(lowp, tensor_files_unpack_and_pack)
{
	static const uint8_t i4[] = {0x08, 0x03, 0x10, 22, 0x2a, 0x02, 0x78, 0x0f};
	static const uint8_t f8[] = {0x08, 0x02, 0x10, 17, 0x2a, 0x02, 0x38, 0x7e};
	char *dir = tu_tmpdir(), path[4096], err[256];
	struct rl_tensor t, u;
	snprintf(path, sizeof(path), "%s/i4.pb", dir);
	cr_assert_eq(tu_write(path, i4, sizeof(i4)), 0);
	cr_assert_eq(rl_tensor_read(path, &t, err, sizeof(err)), RL_OK, "%s", err);
	cr_assert_eq(t.dtype, RL_DT_INT4);
	cr_assert_eq(t.nbytes, 3);
	const int8_t *v = t.data;
	cr_assert(v[0] == -8 && v[1] == 7 && v[2] == -1);
	snprintf(path, sizeof(path), "%s/out.pb", dir);
	cr_assert_eq(rl_tensor_write(path, &t, err, sizeof(err)), RL_OK, "%s", err);
	cr_assert_eq(rl_tensor_read(path, &u, err, sizeof(err)), RL_OK, "%s", err);
	cr_assert_eq(u.nbytes, 3);
	cr_assert_arr_eq(u.data, t.data, 3);
	rl_tensor_free(&t);
	rl_tensor_free(&u);
	snprintf(path, sizeof(path), "%s/f8.pb", dir);
	cr_assert_eq(tu_write(path, f8, sizeof(f8)), 0);
	cr_assert_eq(rl_tensor_read(path, &t, err, sizeof(err)), RL_OK, "%s", err);
	cr_assert_eq(t.dtype, RL_DT_FLOAT8E4M3FN);
	cr_assert(t.nbytes == 2 && ((uint8_t *)t.data)[0] == 0x38 && ((uint8_t *)t.data)[1] == 0x7e);
	rl_tensor_free(&t);
	tu_rmtree(dir);
	free(dir);
}

Test(lowp, cast_tables)
{
	/* the saturate table of the ONNX Cast docs */
	cr_assert_eq(rl_lowp_from_double(RL_DT_FLOAT8E4M3FN, INFINITY, true, 0), 0x7e);
	cr_assert_eq(rl_lowp_from_double(RL_DT_FLOAT8E4M3FN, -1e6, true, 0), 0xfe);
	cr_assert_eq(rl_lowp_from_double(RL_DT_FLOAT8E4M3FNUZ, -0.0, true, 0), 0);
	cr_assert_eq(rl_lowp_from_double(RL_DT_FLOAT8E5M2, -0.0, true, 0), 0x80);
	cr_assert_eq(rl_lowp_from_double(RL_DT_FLOAT8E5M2FNUZ, 1e9, true, 0), 0x7f);
	/* without saturation */
	cr_assert_eq(rl_lowp_from_double(RL_DT_FLOAT8E4M3FN, 465, false, 0) & 0x7f, 0x7f);
	cr_assert_eq(rl_lowp_from_double(RL_DT_FLOAT8E4M3FN, 464, false, 0), 0x7e); /* tie: 448 */
	cr_assert_eq(rl_lowp_from_double(RL_DT_FLOAT8E5M2, -INFINITY, false, 0), 0xfc);
	cr_assert_eq(rl_lowp_from_double(RL_DT_FLOAT8E5M2FNUZ, INFINITY, false, 0), 0x80);
	cr_assert_eq(rl_lowp_from_double(RL_DT_FLOAT8E4M3FNUZ, NAN, false, 0), 0x80);
	/* round to nearest even, subnormals: e4m3fn's smallest is 2^-9 */
	cr_assert_eq(rl_lowp_from_double(RL_DT_FLOAT8E4M3FN, 0x1p-10, true, 0), 0); /* tie: even */
	cr_assert_eq(rl_lowp_from_double(RL_DT_FLOAT8E4M3FN, 0x1.8p-9, true, 0), 2); /* tie: even */
	cr_assert_eq(rl_lowp_from_double(RL_DT_FLOAT8E4M3FN, 0x1.0000002p-10, true, 0), 1);
	cr_assert_eq(rl_lowp_from_double(RL_DT_FLOAT8E4M3FN, 1.0625, true, 0), 0x38); /* tie down */
	cr_assert_eq(rl_lowp_from_double(RL_DT_FLOAT8E4M3FN, 1.1875, true, 0), 0x3a); /* tie up */
	/* float4: saturates always, NaN to 0x8 as ml_dtypes */
	cr_assert_eq(rl_lowp_from_double(RL_DT_FLOAT4E2M1, 1e6, false, 0), 0x7);
	cr_assert_eq(rl_lowp_from_double(RL_DT_FLOAT4E2M1, -3.5, true, 0), 0xe); /* -4 */
	cr_assert_eq(rl_lowp_from_double(RL_DT_FLOAT4E2M1, NAN, true, 0), 0x8);
	cr_assert_eq(rl_lowp_from_double(RL_DT_FLOAT4E2M1, -NAN, true, 0), 0);
	cr_assert_eq(rl_lowp_to_double(RL_DT_FLOAT4E2M1, 0xf), -6.0);
	/* e8m0: round_mode; 0xff is NaN */
	cr_assert_eq(rl_lowp_from_double(RL_DT_FLOAT8E8M0, 1.1, true, RL_LOWP_ROUND_UP), 128);
	cr_assert_eq(rl_lowp_from_double(RL_DT_FLOAT8E8M0, 1.9, true, RL_LOWP_ROUND_DOWN), 127);
	cr_assert_eq(rl_lowp_from_double(RL_DT_FLOAT8E8M0, 1.4, true, RL_LOWP_ROUND_NEAREST), 127);
	cr_assert_eq(rl_lowp_from_double(RL_DT_FLOAT8E8M0, 1.6, true, RL_LOWP_ROUND_NEAREST), 128);
	cr_assert_eq(rl_lowp_from_double(RL_DT_FLOAT8E8M0, 0x1.8p127, true, RL_LOWP_ROUND_UP), 254);
	cr_assert_eq(rl_lowp_from_double(RL_DT_FLOAT8E8M0, 0x1.8p127, false, RL_LOWP_ROUND_UP), 255);
	cr_assert_eq(rl_lowp_to_double(RL_DT_FLOAT8E8M0, 0), 0x1p-127);
	cr_assert(isnan(rl_lowp_to_double(RL_DT_FLOAT8E8M0, 255)));
	/* integers truncate and wrap; with saturate they clamp */
	cr_assert_eq((int8_t)rl_lowp_from_double(RL_DT_INT4, -9, false, 0), 7);
	cr_assert_eq((int8_t)rl_lowp_from_double(RL_DT_INT4, 8.7, false, 0), -8);
	cr_assert_eq((int8_t)rl_lowp_from_double(RL_DT_INT4, -9, true, 0), -8);
	cr_assert_eq(rl_lowp_from_int(RL_DT_UINT2, -3, false), 1);
	cr_assert_eq(rl_lowp_from_int(RL_DT_UINT4, 99, true), 15);
	/* a double rounds once: just above a float8 midpoint, below float's ulp */
	cr_assert_eq(rl_lowp_from_double(RL_DT_FLOAT8E4M3FN, 1.0625 + 0x1p-40, true, 0), 0x39);
}

Test(lowp, cast_array_declines_undefined)
{
	uint8_t f8[2] = {0x7f, 0x38}; /* NaN, 1.0 */
	int32_t out[2];
	cr_assert_not(rl_lowp_cast(f8, RL_DT_FLOAT8E4M3FN, out, RL_DT_INT32, 2, true, 0));
	cr_assert(rl_lowp_cast(f8 + 1, RL_DT_FLOAT8E4M3FN, out, RL_DT_INT32, 1, true, 0));
	cr_assert_eq(out[0], 1);
	float in[2] = {0.3f, -1.0f};
	uint8_t o4[2];
	cr_assert(rl_lowp_cast(in, RL_DT_FLOAT, o4, RL_DT_FLOAT4E2M1, 2, true, 0));
	cr_assert_eq(o4[0], 0x1); /* 0.5 */
	cr_assert_eq(o4[1], 0xa);
}

/* ---- generated helpers against the library -------------------------------- */

#define NRAND 200000

static uint32_t xorshift(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

Test(lowp, generated_helpers_match_library, .timeout = 120)
{
	struct rl_graph *g = rl_graph_new();
	struct rl_cgen cg;
	memset(&cg, 0, sizeof(cg));
	cg.g = g;
	struct rl_buf calls = {0};
	/* one line of output per conversion and input: decode every byte,
	 * encode every input float with and without saturation */
	for (size_t k = 0; k < NLP; k++) {
		enum rl_dtype t = lp_types[k];
		const char *dec = cg_lowp_to_float(&cg, t, t == RL_DT_INT4 || t == RL_DT_INT2
		                                                ? "(int8_t)b" : "(uint8_t)b");
		rl_buf_printf(&calls, "    for (b = 0; b < 256; b++) { float r = %s; fwrite(&r, 4, 1, o); }\n",
		              dec);
		for (int sat = 0; sat < 2; sat++)
			for (int mode = 0; mode < (t == RL_DT_FLOAT8E8M0 ? 3 : 1); mode++) {
				bool isint = t == RL_DT_INT4 || t == RL_DT_INT2 || t == RL_DT_UINT4 ||
				             t == RL_DT_UINT2;
				/* integer kinds from in-range values only: C leaves others undefined */
				const char *enc = cg_lowp_from_float(&cg, t, isint ? "(x[i] > -100.0f && "
				                                     "x[i] < 100.0f ? x[i] : 0.0f)" : "x[i]",
				                                     sat, mode);
				rl_buf_printf(&calls, "    for (i = 0; i < n; i++) { uint8_t r = (uint8_t)%s; "
				              "fwrite(&r, 1, 1, o); }\n", enc);
			}
	}
	struct rl_buf src = {0};
	rl_buf_printf(&src, "#include <math.h>\n#include <stdint.h>\n#include <stdio.h>\n"
	              "#include <stdlib.h>\n#include <string.h>\n\n");
	rl_emit_lowp_helpers(&src, cg.need_lowp);
	rl_buf_printf(&src, "int main(void)\n{\n    FILE *f = fopen(\"in.bin\", \"rb\"), *o = fopen(\"out.bin\", \"wb\");\n"
	              "    static float x[%d];\n    size_t n, i;\n    int b;\n"
	              "    if (!f || !o) return 1;\n    n = fread(x, 4, %d, f);\n", 65536 + NRAND,
	              65536 + NRAND);
	rl_buf_printf(&src, "%s    fclose(f);\n    return fclose(o) != 0;\n}\n", calls.s);

	/* inputs: every float16 value, then random float32 bit patterns */
	size_t n = 65536 + NRAND;
	float *x = malloc(n * sizeof(float));
	uint32_t seed = 12345;
	for (size_t i = 0; i < 65536; i++)
		x[i] = rl_half_to_float((uint16_t)i);
	for (size_t i = 65536; i < n; i++)
		x[i] = bits_f(xorshift(&seed));
	char *dir = tu_tmpdir();
	char path[4096], cmd[8192];
	snprintf(path, sizeof(path), "%s/in.bin", dir);
	cr_assert_eq(tu_write(path, x, n * sizeof(float)), 0);
	snprintf(path, sizeof(path), "%s/h.c", dir);
	cr_assert_eq(tu_write(path, src.s, src.len), 0);
	snprintf(cmd, sizeof(cmd), "cd %s && cc -std=c11 -O2 -Wall -Wextra -pedantic -Werror -o h h.c -lm "
	         "&& ./h", dir);
	cr_assert_eq(system(cmd), 0, "generated helpers failed to build or run");
	snprintf(path, sizeof(path), "%s/out.bin", dir);
	FILE *f = fopen(path, "rb");
	cr_assert(f);
	for (size_t k = 0; k < NLP; k++) {
		enum rl_dtype t = lp_types[k];
		bool isint = t == RL_DT_INT4 || t == RL_DT_INT2 || t == RL_DT_UINT4 || t == RL_DT_UINT2;
		for (int b = 0; b < 256; b++) {
			float r;
			cr_assert_eq(fread(&r, 4, 1, f), 1);
			uint8_t sb = (uint8_t)b;
			if (isint)
				continue; /* any byte is no valid int4; the cast is plain C */
			double want = rl_lowp_to_double(t, sb);
			cr_assert((isnan(want) && isnan(r)) || (double)r == want,
			          "%s decode 0x%02x: got %g, want %g", rl_dtype_name(t), b, r, want);
		}
		for (int sat = 0; sat < 2; sat++)
			for (int mode = 0; mode < (t == RL_DT_FLOAT8E8M0 ? 3 : 1); mode++)
				for (size_t i = 0; i < n; i++) {
					uint8_t r;
					cr_assert_eq(fread(&r, 1, 1, f), 1);
					float v = isint ? (x[i] > -100.0f && x[i] < 100.0f ? x[i] : 0.0f) : x[i];
					uint8_t want = rl_lowp_from_double(t, v, sat, mode);
					cr_assert_eq(r, want, "%s encode %a (sat %d, mode %d): got 0x%02x, want 0x%02x",
					             rl_dtype_name(t), (double)v, sat, mode, r, want);
				}
	}
	fclose(f);
	tu_rmtree(dir);
	free(dir);
	free(x);
	rl_buf_free(&src);
	rl_buf_free(&calls);
	rl_graph_free(g);
}
