/*
 * emit_tidy.c - drop the filler the emitters' generic pieces leave in a
 * kernel body, before it is written (issue 14: the C is read by people).
 *
 * The emitters build index expressions from strides and offsets that are
 * often 1 or 0 (`(r + 0) * 64 + 0`, `j1 * 1`), bind the indices of a loop
 * nest that has no loop left to 0 (`const size_t o = 0;`), open loops of
 * extent 1 and initialize accumulators with `(float)(0)`. Every such piece
 * is correct, and the C compiler removes it; but a reader has to see
 * through it. Rather than teach each of the ~20 emitters about each case,
 * this pass rewrites the finished body, token by token, with rules that
 * keep the value of every expression:
 *
 *   X * 1, X / 1 -> X     1 * X -> X   (after ( [ , = + - and the like)
 *   X % 1 -> 0            X an integer literal or local
 *   X + 0 -> X, X - 0 -> X  when no * / % [ ( binds the 0 on its right
 *   0 + X -> X            only after ( [ , = + and the like, not after -
 *   0 * X, X * 0 -> 0     X a literal or an integer local of the body
 *                         (never a float: NaN * 0 is not 0)
 *   (T)0 -> 0             T an integer type, where a product or `;` follows
 *   (x) -> x              one name or literal in parentheses that are not
 *                         a call's or a cast's
 *   (float)(N) -> N.0f    (double)(N) -> N.0, N an integer literal
 *   N * M, N + M -> value N, M decimal literals, where the grouping stays
 *
 * then, per block: `const T NAME = 0;` (T an integer type) is substituted
 * into the rest of its block and dropped, which cascades through index
 * chains (`xo1 = xo0 + j1 * 64` with xo0 = 0); and a loop
 * `for (T V = 0; V < 1; V++)` (or `V < S; V += S`, S a literal: one
 * iteration) becomes a plain block with V = 0 (or, with
 * one statement for a body, that statement with V = 0); a local that only
 * its declaration and a `(void)NAME;` name goes with its cast. Anything
 * the rules cannot prove (a name redeclared or assigned in the scope, a
 * break or continue in the loop, preprocessor lines) is left as it was.
 * Comments and string literals are never touched. tests/py/test_filler.py
 * checks the generated C of the examples and a sample of the node tests
 * for what is left.
 */
#include "emit_impl.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define TK_MAX 1024

enum { T_ID, T_NUM, T_PUNCT, T_OPAQUE };

struct tok {
	const char *s;
	int n;
	int kind;
	bool sp; /* whitespace before it */
};

struct line {
	char *s; /* owned, no newline */
	bool dead;
};

static bool tok_is(const struct tok *t, const char *w)
{
	return (int)strlen(w) == t->n && memcmp(t->s, w, (size_t)t->n) == 0;
}

static bool is_int_lit(const struct tok *t, const char *v)
{
	return t->kind == T_NUM && tok_is(t, v);
}

/* Split one line into tokens; false when it does not fit (left as is). */
static bool tokenize(const char *s, struct tok *t, int *nt)
{
	static const char *const puncts[] = {"<<=", ">>=", "->", "++", "--", "<<", ">>", "<=",
	                                     ">=", "==", "!=", "&&", "||", "+=", "-=", "*=",
	                                     "/=", "%=", "&=", "|=", "^="};
	int n = 0;
	bool sp = false;
	while (*s) {
		if (*s == ' ' || *s == '\t' || *s == '\n') {
			sp = true;
			s++;
			continue;
		}
		if (n == TK_MAX)
			return false;
		struct tok *k = &t[n++];
		k->s = s;
		k->sp = sp;
		sp = false;
		if (isalpha((unsigned char)*s) || *s == '_') {
			while (isalnum((unsigned char)*s) || *s == '_')
				s++;
			k->kind = T_ID;
		} else if (isdigit((unsigned char)*s) || (*s == '.' && isdigit((unsigned char)s[1]))) {
			/* a number with its suffix, exponent sign included */
			while (isalnum((unsigned char)*s) || *s == '.' ||
			       ((*s == '+' || *s == '-') && (s[-1] == 'e' || s[-1] == 'E' ||
			                                     s[-1] == 'p' || s[-1] == 'P')))
				s++;
			k->kind = T_NUM;
		} else if (s[0] == '/' && s[1] == '*') {
			const char *e = strstr(s + 2, "*/");
			s = e ? e + 2 : s + strlen(s);
			k->kind = T_OPAQUE;
		} else if (s[0] == '/' && s[1] == '/') {
			s += strlen(s);
			k->kind = T_OPAQUE;
		} else if (*s == '"' || *s == '\'') {
			char q = *s++;
			while (*s && *s != q)
				s += s[0] == '\\' && s[1] ? 2 : 1;
			if (*s)
				s++;
			k->kind = T_OPAQUE;
		} else {
			k->kind = T_PUNCT;
			int len = 1;
			for (size_t p = 0; p < sizeof(puncts) / sizeof(puncts[0]); p++)
				if (strncmp(s, puncts[p], strlen(puncts[p])) == 0) {
					len = (int)strlen(puncts[p]);
					break;
				}
			s += len;
		}
		k->n = (int)(s - k->s);
	}
	*nt = n;
	return true;
}

static bool is_int_type(const struct tok *t)
{
	static const char *const ty[] = {"size_t",   "int64_t", "int32_t", "int",     "long",
	                                 "ptrdiff_t", "uint64_t", "uint32_t", "unsigned"};
	for (size_t i = 0; i < sizeof(ty) / sizeof(ty[0]); i++)
		if (tok_is(t, ty[i]))
			return true;
	return false;
}

/* a name that may be a type (so `(NAME)` may be a cast) */
static bool maybe_type(const struct tok *t)
{
	static const char *const ty[] = {"float", "double", "char", "short", "signed", "bool",
	                                 "_Bool", "void", "const"};
	if (t->kind != T_ID)
		return false;
	if (is_int_type(t))
		return true;
	for (size_t i = 0; i < sizeof(ty) / sizeof(ty[0]); i++)
		if (tok_is(t, ty[i]))
			return true;
	if (t->n > 2 && memcmp(t->s + t->n - 2, "_t", 2) == 0)
		return true;
	return t->n > 3 && memcmp(t->s, "rl_", 3) == 0;
}

/* A token after which an operand starts an expression at + precedence or
 * lower: `1 * X` and `0 + X` may drop their literal there. */
static bool low_before(const struct tok *t, int i)
{
	if (i < 0)
		return true;
	const struct tok *p = &t[i];
	if (p->kind == T_ID)
		return tok_is(p, "return");
	if (p->kind != T_PUNCT)
		return false;
	static const char *const ok[] = {"(", "[", ",", "=", "+", "?", ":", "{", ";", "<",
	                                 ">", "<=", ">=", "==", "!=", "&&", "||", "+=", "-=",
	                                 "*=", "/=", "%=", "|=", "^=", "&=", "<<=", ">>=", "<<",
	                                 ">>", "|", "^"};
	for (size_t k = 0; k < sizeof(ok) / sizeof(ok[0]); k++)
		if (tok_is(p, ok[k]))
			return true;
	return false;
}

/* the token ends an operand (so a following + or * is binary) */
static bool ends_operand(const struct tok *t)
{
	return t->kind == T_ID || t->kind == T_NUM || tok_is(t, ")") || tok_is(t, "]");
}

/* nothing binds tighter than + on the right of token i (exclusive) */
static bool loose_after(const struct tok *t, int n, int i)
{
	if (i >= n)
		return true;
	static const char *const tight[] = {"*", "/", "%", "[", "(", ".", "->", "++", "--"};
	for (size_t k = 0; k < sizeof(tight) / sizeof(tight[0]); k++)
		if (tok_is(&t[i], tight[k]))
			return false;
	return true;
}

/* a literal or a name with nothing postfix after it */
static bool simple_operand(const struct tok *t, int n, int i)
{
	if (i < 0 || i >= n || (t[i].kind != T_ID && t[i].kind != T_NUM))
		return false;
	if (i + 1 < n && !loose_after(t, n, i + 1) && !tok_is(&t[i + 1], "*") &&
	    !tok_is(&t[i + 1], "/") && !tok_is(&t[i + 1], "%"))
		return false;
	return true;
}

struct names {
	char **v;
	int n, cap;
};

static bool names_has(const struct names *nm, const struct tok *t)
{
	for (int i = 0; i < nm->n; i++)
		if (tok_is(t, nm->v[i]))
			return true;
	return false;
}

/* an integer-valued operand: an integer literal or an integer local */
static bool int_operand(const struct tok *t, const struct names *ints)
{
	if (t->kind == T_NUM) {
		for (int k = 0; k < t->n; k++)
			if (!isdigit((unsigned char)t->s[k]))
				return false;
		return true;
	}
	return t->kind == T_ID && names_has(ints, t);
}

static void del(struct tok *t, int *n, int at, int cnt, bool keep_sp)
{
	bool sp = t[at].sp;
	memmove(t + at, t + at + cnt, (size_t)(*n - at - cnt) * sizeof(*t));
	*n -= cnt;
	if (keep_sp && at < *n)
		t[at].sp = sp;
}

/* a decimal integer literal of at most 9 digits, no suffix (0 alone, or no
 * leading 0: that would be octal) */
static bool dec_lit(const struct tok *t)
{
	if (t->kind != T_NUM || t->n < 1 || t->n > 9 || (t->n > 1 && t->s[0] == '0'))
		return false;
	for (int k = 0; k < t->n; k++)
		if (!isdigit((unsigned char)t->s[k]))
			return false;
	return true;
}

/* One pass of the expression rules; true if anything changed. */
static bool simplify(struct tok *t, int *np, const struct names *ints, char *arena, size_t *used,
                     size_t cap)
{
	int n = *np;
	bool ch = false;
	for (int i = 0; i < n; i++) {
		/* (float)(N) / (float)N -> N.0f */
		if (tok_is(&t[i], "(") && i + 3 < n && t[i + 1].kind == T_ID &&
		    (tok_is(&t[i + 1], "float") || tok_is(&t[i + 1], "double")) && tok_is(&t[i + 2], ")") &&
		    (i == 0 || t[i - 1].kind != T_ID)) {
			int lit = i + 3, end = i + 3;
			if (tok_is(&t[lit], "(") && lit + 2 < n && tok_is(&t[lit + 2], ")")) {
				lit++;
				end = lit + 1;
			}
			bool digits = t[lit].kind == T_NUM && t[lit].n <= 7;
			for (int k = 0; digits && k < t[lit].n; k++)
				digits = isdigit((unsigned char)t[lit].s[k]) != 0;
			if (digits && *used + (size_t)t[lit].n + 4 <= cap) {
				bool dbl = tok_is(&t[i + 1], "double");
				char *o = arena + *used;
				int len = snprintf(o, cap - *used, "%.*s.0%s", t[lit].n, t[lit].s, dbl ? "" : "f");
				*used += (size_t)len + 1;
				bool sp = t[i].sp;
				del(t, &n, i, end - i, false);
				t[i] = (struct tok){o, len, T_NUM, sp};
				ch = true;
				continue;
			}
		}
		/* (T)0 -> 0 before a product or the end of a statement */
		if (tok_is(&t[i], "(") && i + 3 < n && is_int_type(&t[i + 1]) && tok_is(&t[i + 2], ")") &&
		    is_int_lit(&t[i + 3], "0") && (i == 0 || t[i - 1].kind != T_ID) &&
		    (i + 4 == n || tok_is(&t[i + 4], "*") || tok_is(&t[i + 4], ";"))) {
			del(t, &n, i, 3, true);
			ch = true;
			continue;
		}
		/* (x) -> x */
		if (tok_is(&t[i], "(") && i + 2 < n && tok_is(&t[i + 2], ")") &&
		    (t[i + 1].kind == T_NUM || (t[i + 1].kind == T_ID && !maybe_type(&t[i + 1]))) &&
		    (i == 0 || (t[i - 1].kind != T_ID && !tok_is(&t[i - 1], ")") &&
		                !tok_is(&t[i - 1], "]"))) &&
		    (i + 3 == n || (t[i + 3].kind == T_PUNCT && !tok_is(&t[i + 3], "(") &&
		                    !tok_is(&t[i + 3], "{") && !tok_is(&t[i + 3], "~") &&
		                    !tok_is(&t[i + 3], "!")))) {
			del(t, &n, i + 2, 1, false);
			del(t, &n, i, 1, true);
			ch = true;
			continue;
		}
		/* N * M, N + M -> their value (decimal literals: int arithmetic, as C
		 * does it), where nothing before takes N (a product or a sum on its
		 * left would change the grouping: x * 3 * 5 in float is not x * 15)
		 * and, for +, nothing after takes M */
		if (i + 2 < n && dec_lit(&t[i]) && dec_lit(&t[i + 2]) &&
		    (tok_is(&t[i + 1], "*") || tok_is(&t[i + 1], "+")) &&
		    (tok_is(&t[i + 1], "*") ? low_before(t, i - 1) || tok_is(&t[i - 1], "-")
		                            : low_before(t, i - 1) && !(i > 0 && tok_is(&t[i - 1], "+"))) &&
		    (tok_is(&t[i + 1], "*") || loose_after(t, n, i + 3)) && *used + 24 <= cap) {
			long long a = strtoll(t[i].s, NULL, 10), c = strtoll(t[i + 2].s, NULL, 10);
			char *o = arena + *used;
			int len = snprintf(o, cap - *used, "%lld", tok_is(&t[i + 1], "*") ? a * c : a + c);
			*used += (size_t)len + 1;
			bool sp = t[i].sp;
			del(t, &n, i, 2, false);
			t[i] = (struct tok){o, len, T_NUM, sp};
			ch = true;
			continue;
		}
		/* X * 1 */
		if (tok_is(&t[i], "*") && i > 0 && ends_operand(&t[i - 1]) && i + 1 < n &&
		    is_int_lit(&t[i + 1], "1")) {
			del(t, &n, i, 2, false);
			ch = true;
			continue;
		}
		/* X / 1 */
		if (tok_is(&t[i], "/") && i > 0 && ends_operand(&t[i - 1]) && i + 1 < n &&
		    is_int_lit(&t[i + 1], "1")) {
			del(t, &n, i, 2, false);
			ch = true;
			continue;
		}
		/* X % 1 -> 0, X an integer */
		if (i + 2 < n && tok_is(&t[i + 1], "%") && is_int_lit(&t[i + 2], "1") &&
		    int_operand(&t[i], ints) && (low_before(t, i - 1) || tok_is(&t[i - 1], "-")) &&
		    (i + 3 == n || (!tok_is(&t[i + 3], "[") && !tok_is(&t[i + 3], "(")))) {
			del(t, &n, i, 2, true); /* X and %: the 1 is left, and becomes 0 */
			t[i].s = "0";
			ch = true;
			continue;
		}
		/* 1 * X */
		if (is_int_lit(&t[i], "1") && i + 1 < n && tok_is(&t[i + 1], "*") &&
		    (low_before(t, i - 1) || tok_is(&t[i - 1], "-"))) {
			del(t, &n, i, 2, true);
			ch = true;
			continue;
		}
		/* X + 0, X - 0 */
		if ((tok_is(&t[i], "+") || tok_is(&t[i], "-")) && i > 0 &&
		    (ends_operand(&t[i - 1]) || tok_is(&t[i - 1], "}")) &&
		    i + 1 < n && is_int_lit(&t[i + 1], "0") && loose_after(t, n, i + 2)) {
			del(t, &n, i, 2, false);
			ch = true;
			continue;
		}
		/* 0 + X */
		if (is_int_lit(&t[i], "0") && i + 1 < n && tok_is(&t[i + 1], "+") && low_before(t, i - 1) &&
		    i + 2 < n && (t[i + 2].kind != T_PUNCT || tok_is(&t[i + 2], "("))) {
			del(t, &n, i, 2, true);
			ch = true;
			continue;
		}
		/* 0 * X -> 0 */
		if (is_int_lit(&t[i], "0") && i + 2 < n && tok_is(&t[i + 1], "*") &&
		    (low_before(t, i - 1) || tok_is(&t[i - 1], "-")) && simple_operand(t, n, i + 2) &&
		    int_operand(&t[i + 2], ints)) {
			del(t, &n, i + 1, 2, false);
			ch = true;
			continue;
		}
		/* X * 0 -> 0 */
		if (i + 2 < n && tok_is(&t[i + 1], "*") && is_int_lit(&t[i + 2], "0") &&
		    int_operand(&t[i], ints) && (low_before(t, i - 1) || tok_is(&t[i - 1], "-")) &&
		    (i + 3 == n || !tok_is(&t[i + 3], "[")) && (i + 3 == n || !tok_is(&t[i + 3], "("))) {
			del(t, &n, i, 2, true);
			ch = true;
			continue;
		}
	}
	*np = n;
	return ch;
}

static char *join(const char *indent, int ind, const struct tok *t, int n)
{
	size_t len = (size_t)ind + 1;
	for (int i = 0; i < n; i++)
		len += (size_t)t[i].n + 1;
	char *o = malloc(len), *p = o;
	if (!o)
		return NULL;
	memcpy(p, indent, (size_t)ind);
	p += ind;
	for (int i = 0; i < n; i++) {
		if (t[i].sp && i > 0)
			*p++ = ' ';
		memcpy(p, t[i].s, (size_t)t[i].n);
		p += t[i].n;
	}
	*p = 0;
	return o;
}

/* s past its leading spaces (the emitter indents with spaces only) */
static const char *lskip(const char *s)
{
	while (*s == ' ')
		s++;
	return s;
}

static bool is_pp(const char *s)
{
	return *lskip(s) == '#';
}

/* Simplify one line in place (a new string when changed). */
static void tidy_line(struct line *l, const struct names *ints)
{
	if (is_pp(l->s))
		return;
	struct tok t[TK_MAX];
	char arena[1024];
	size_t used = 0;
	int n, ind = 0;
	while (l->s[ind] == ' ')
		ind++;
	if (!tokenize(l->s + ind, t, &n))
		return;
	bool any = false;
	while (simplify(t, &n, ints, arena, &used, sizeof(arena)))
		any = true;
	if (!any)
		return;
	char *o = join(l->s, ind, t, n);
	if (o) {
		free(l->s);
		l->s = o;
	}
}

/* ---- block passes -------------------------------------------------------- */

static int brace_delta(const char *s)
{
	if (is_pp(s))
		return 0;
	struct tok t[TK_MAX];
	int n, d = 0;
	if (!tokenize(s, t, &n))
		return 0;
	for (int i = 0; i < n; i++)
		d += tok_is(&t[i], "{") - tok_is(&t[i], "}");
	return d;
}

/* The line index one past the end of the block that line `at` is in (the
 * line holding the closing brace). */
static int scope_end(struct line *L, int nl, int at)
{
	int depth = 0;
	for (int i = at + 1; i < nl; i++) {
		if (L[i].dead)
			continue;
		depth += brace_delta(L[i].s);
		if (depth < 0)
			return i;
	}
	return nl;
}

static bool name_tok(const struct tok *t, const char *name)
{
	return t->kind == T_ID && tok_is(t, name);
}

static bool has_word(const char *s, const char *w)
{
	size_t n = strlen(w);
	for (const char *p = strstr(s, w); p; p = strstr(p + 1, w))
		if ((p == s || !(isalnum((unsigned char)p[-1]) || p[-1] == '_')) &&
		    !(isalnum((unsigned char)p[n]) || p[n] == '_'))
			return true;
	return false;
}

/* Can name be replaced by 0 on every line of (from, to)? */
static bool substitutable(struct line *L, int from, int to, const char *name, bool is_int)
{
	struct tok t[TK_MAX];
	for (int i = from; i < to; i++) {
		if (L[i].dead || !has_word(L[i].s, name))
			continue;
		int n;
		if (is_pp(L[i].s) || !tokenize(L[i].s, t, &n))
			return false;
		for (int k = 0; k < n; k++) {
			if (!name_tok(&t[k], name))
				continue;
			if (k > 0) {
				const struct tok *b = &t[k - 1];
				bool binary_star = tok_is(b, "*") && k > 1 && ends_operand(&t[k - 2]);
				if (b->kind == T_ID || tok_is(b, "&") || tok_is(b, ".") || tok_is(b, "->") ||
				    tok_is(b, "++") || tok_is(b, "--") || (tok_is(b, "*") && !binary_star))
					return false; /* a declaration, an address, a member */
			}
			/* only added, multiplied, indexed with or passed on: there a
			 * literal 0 of type int means what the size_t 0 meant (in
			 * `x - NAME` or `NAME < n` the types could differ) */
			/* an int NAME is an int 0 anywhere; `(T)NAME` is typed by the cast */
			bool cast = k > 2 && tok_is(&t[k - 1], ")") && maybe_type(&t[k - 2]) &&
			            tok_is(&t[k - 3], "(");
			if (is_int || cast) {
				if (k + 1 < n && (tok_is(&t[k + 1], "=") || tok_is(&t[k + 1], "++") ||
				                  tok_is(&t[k + 1], "--") || tok_is(&t[k + 1], "[") ||
				                  tok_is(&t[k + 1], "(") || tok_is(&t[k + 1], ".") ||
				                  tok_is(&t[k + 1], "->") ||
				                  (t[k + 1].n >= 2 && t[k + 1].s[t[k + 1].n - 1] == '=' &&
				                   !tok_is(&t[k + 1], "==") && !tok_is(&t[k + 1], "!=") &&
				                   !tok_is(&t[k + 1], "<=") && !tok_is(&t[k + 1], ">="))))
					return false;
				continue;
			}
			if (k > 0) {
				const struct tok *b = &t[k - 1];
				if (!(tok_is(b, "+") || tok_is(b, "*") || tok_is(b, "(") || tok_is(b, "[") ||
				      tok_is(b, "=") || tok_is(b, ",") || tok_is(b, ")")))
					return false;
			}
			if (k + 1 < n) {
				const struct tok *a = &t[k + 1];
				if (!(tok_is(a, "+") || tok_is(a, "*") || tok_is(a, ")") || tok_is(a, "]") ||
				      tok_is(a, ";") || tok_is(a, ",")))
					return false;
			}
		}
	}
	return true;
}

static void substitute(struct line *L, int from, int to, const char *name, const struct names *ints)
{
	struct tok t[TK_MAX];
	static const char zero[] = "0";
	for (int i = from; i < to; i++) {
		if (L[i].dead || !strstr(L[i].s, name))
			continue;
		int n, ind = 0;
		while (L[i].s[ind] == ' ')
			ind++;
		if (!tokenize(L[i].s + ind, t, &n))
			continue;
		bool any = false;
		for (int k = 0; k < n; k++)
			if (name_tok(&t[k], name)) {
				t[k].s = zero;
				t[k].n = 1;
				t[k].kind = T_NUM;
				any = true;
			}
		if (!any)
			continue;
		/* `(void)0;` is nothing */
		if (n == 5 && tok_is(&t[0], "(") && tok_is(&t[1], "void") && tok_is(&t[2], ")") &&
		    is_int_lit(&t[3], "0") && tok_is(&t[4], ";")) {
			L[i].dead = true;
			continue;
		}
		char *o = join(L[i].s, ind, t, n);
		if (o) {
			free(L[i].s);
			L[i].s = o;
			tidy_line(&L[i], ints);
		}
	}
}

/* `const T NAME = 0;` -> NAME */
static bool zero_decl(const char *s, char *name, size_t cap, bool *is_int)
{
	struct tok t[TK_MAX];
	int n;
	if (is_pp(s) || !tokenize(s, t, &n) || n != 6)
		return false;
	if (!tok_is(&t[0], "const") || !is_int_type(&t[1]) || t[2].kind != T_ID || !tok_is(&t[3], "=") ||
	    !is_int_lit(&t[4], "0") || !tok_is(&t[5], ";") || (size_t)t[2].n >= cap)
		return false;
	memcpy(name, t[2].s, (size_t)t[2].n);
	name[t[2].n] = 0;
	*is_int = tok_is(&t[1], "int") || tok_is(&t[1], "int32_t");
	return true;
}

/* `for (T V = 0; V < 1; V++) {` -> V; *brace false when it has no `{`
 * (its body is the next line) */
static bool unit_loop(const char *s, char *name, size_t cap, bool *brace)
{
	struct tok t[TK_MAX];
	int n;
	if (is_pp(s) || !tokenize(s, t, &n) || n < 14)
		return false;
	/* `V < S; V += S` (a loop stepped by its own bound runs once, V = 0:
	 * a register-blocked loop over a dimension of one block) and `V += 1`
	 * for `V < 1; V++` */
	if (n >= 15 && tok_is(&t[12], "+=") && t[13].kind == T_NUM && t[9].kind == T_NUM &&
	    t[13].n == t[9].n && !memcmp(t[13].s, t[9].s, (size_t)t[9].n) &&
	    strspn(t[9].s, "0123456789") == (size_t)t[9].n && !is_int_lit(&t[9], "0")) {
		memmove(t + 13, t + 14, (size_t)(n - 14) * sizeof(*t));
		t[12].s = "++";
		t[12].n = 2;
		t[9].s = "1";
		t[9].n = 1;
		n--;
	}
	if (n != 15 && n != 14)
		return false;
	*brace = n == 15;
	const struct tok *v = &t[3];
	if (!tok_is(&t[0], "for") || !tok_is(&t[1], "(") || !is_int_type(&t[2]) || v->kind != T_ID ||
	    !tok_is(&t[4], "=") || !is_int_lit(&t[5], "0") || !tok_is(&t[6], ";") ||
	    t[7].n != v->n || memcmp(t[7].s, v->s, (size_t)v->n) || !tok_is(&t[8], "<") ||
	    !is_int_lit(&t[9], "1") || !tok_is(&t[10], ";") || t[11].n != v->n ||
	    memcmp(t[11].s, v->s, (size_t)v->n) || !tok_is(&t[12], "++") || !tok_is(&t[13], ")") ||
	    (size_t)v->n >= cap)
		return false;
	if (n == 15 && !tok_is(&t[14], "{"))
		return false;
	memcpy(name, v->s, (size_t)v->n);
	name[v->n] = 0;
	return true;
}


/* the line opens a for, while or do loop */
static bool starts_loop(const char *t)
{
	struct tok k[TK_MAX];
	int n;
	if (!tokenize(t, k, &n) || n == 0)
		return false;
	return tok_is(&k[0], "for") || tok_is(&k[0], "while") || tok_is(&k[0], "do");
}

/* a line that is one expression statement: `...;`, no keyword, no braces */
static bool simple_statement(const char *s)
{
	struct tok t[TK_MAX];
	int n;
	if (is_pp(s) || !tokenize(s, t, &n) || n < 2 || !tok_is(&t[n - 1], ";"))
		return false;
	static const char *const kw[] = {"for", "if", "while", "do", "else", "switch", "return",
	                                 "break", "continue", "goto", "case", "default"};
	for (int k = 0; k < n; k++) {
		if (tok_is(&t[k], "{") || tok_is(&t[k], "}") || (k < n - 1 && tok_is(&t[k], ";")))
			return false;
		for (size_t w = 0; w < sizeof(kw) / sizeof(kw[0]); w++)
			if (tok_is(&t[k], kw[w]))
				return false;
	}
	return true;
}

/* `(void)NAME;` -> NAME */
static bool void_cast(const char *s, char *name, size_t cap)
{
	struct tok t[TK_MAX];
	int n;
	if (is_pp(s) || !tokenize(s, t, &n) || n != 5 || !tok_is(&t[0], "(") ||
	    !tok_is(&t[1], "void") || !tok_is(&t[2], ")") || t[3].kind != T_ID ||
	    !tok_is(&t[4], ";") || (size_t)t[3].n >= cap)
		return false;
	memcpy(name, t[3].s, (size_t)t[3].n);
	name[t[3].n] = 0;
	return true;
}

/* tokens [a, b) free of calls, assignments and side effects */
static bool pure(const struct tok *t, int a, int b)
{
	for (int k = a; k < b; k++) {
		if (t[k].kind == T_OPAQUE || tok_is(&t[k], "=") || tok_is(&t[k], "++") ||
		    tok_is(&t[k], "--") || tok_is(&t[k], ";"))
			return false;
		if (tok_is(&t[k], "(") && k > a && t[k - 1].kind == T_ID && !maybe_type(&t[k - 1]))
			return false;
		if (t[k].kind == T_PUNCT && t[k].n >= 2 && t[k].s[t[k].n - 1] == '=' &&
		    !tok_is(&t[k], "==") && !tok_is(&t[k], "!=") && !tok_is(&t[k], "<=") &&
		    !tok_is(&t[k], ">="))
			return false;
	}
	return true;
}

/* If line l declares NAME (`[const] T a = E, NAME = E2;`, T an integer type,
 * the initializer pure), drop that declarator, or the line if it is the
 * only one; true when done. */
static bool drop_declarator(struct line *l, const char *name)
{
	struct tok t[TK_MAX];
	int n, ind = 0;
	while (l->s[ind] == ' ')
		ind++;
	if (is_pp(l->s) || !tokenize(l->s + ind, t, &n) || n < 5 || !tok_is(&t[n - 1], ";"))
		return false;
	int k = tok_is(&t[0], "const");
	if (!is_int_type(&t[k]))
		return false;
	k++;
	/* declarators [k, ...), split at depth-0 commas */
	int starts[64], ns = 0, depth = 0;
	starts[ns++] = k;
	for (int q = k; q < n - 1; q++) {
		depth += tok_is(&t[q], "(") - tok_is(&t[q], ")");
		if (depth == 0 && tok_is(&t[q], ",")) {
			if (ns == 63)
				return false;
			starts[ns++] = q + 1;
		}
	}
	starts[ns] = n; /* one past the `;` (or the comma) */
	for (int d = 0; d < ns; d++) {
		int a = starts[d], b = starts[d + 1] - 1; /* [a, b): the declarator, b its , or ; */
		if (!name_tok(&t[a], name) || a + 1 >= b || !tok_is(&t[a + 1], "=") || !pure(t, a + 2, b))
			continue;
		if (ns == 1) {
			l->dead = true;
			return true;
		}
		/* with the comma after it, or (the last one) the comma before it */
		int from = d + 1 < ns ? a : a - 1, cnt = d + 1 < ns ? b + 1 - a : b - (a - 1);
		bool sp = t[from].sp;
		memmove(t + from, t + from + cnt, (size_t)(n - from - cnt) * sizeof(*t));
		n -= cnt;
		if (d + 1 < ns)
			t[from].sp = sp;
		char *o = join(l->s, ind, t, n);
		if (!o)
			return false;
		free(l->s);
		l->s = o;
		return true;
	}
	return false;
}

/* A local that only its declaration and `(void)NAME;` name, in the block
 * around the cast, is dead: both lines go. */
static void drop_dead_locals(struct line *L, int nl)
{
	for (int i = 0; i < nl; i++) {
		char v[64];
		if (L[i].dead || !void_cast(L[i].s, v, sizeof(v)))
			continue;
		/* the innermost block around the cast */
		int lo = i, depth = 0;
		while (lo > 0) {
			lo--;
			if (L[lo].dead)
				continue;
			depth += brace_delta(L[lo].s);
			if (depth > 0)
				break;
		}
		int hi = scope_end(L, nl, i);
		int decl = -1, uses = 0;
		for (int k = lo; k < hi && k < nl; k++) {
			if (k == i || L[k].dead || !has_word(L[k].s, v))
				continue;
			if (decl < 0)
				decl = k; /* the first naming: its declaration, if anything */
			uses++;
		}
		if (decl >= 0 && uses == 1 && drop_declarator(&L[decl], v))
			L[i].dead = true;
	}
}

/* The next live line after `at` that is not a preprocessor line, or nl. */
static int next_stmt(struct line *L, int nl, int at)
{
	for (int i = at + 1; i < nl; i++)
		if (!L[i].dead && !is_pp(L[i].s))
			return i;
	return nl;
}

/* A block whose only statement is another block (`for (...) { { ... } }`,
 * `{ {` where two unit loops stood, or an emitter's block written inside a
 * loop of its own) loses the inner braces: the inner block's scope is the
 * outer one's, so every name means the same. A comment on the inner `{` line
 * stays, as a line of its own. */
static void merge_nested_blocks(struct line *L, int nl)
{
	for (int i = 0; i < nl; i++) {
		if (L[i].dead || is_pp(L[i].s) || brace_delta(L[i].s) != 1)
			continue;
		size_t n = strlen(L[i].s);
		while (n && L[i].s[n - 1] == ' ')
			n--;
		if (!n || L[i].s[n - 1] != '{')
			continue;
		size_t p = n - 1; /* an initializer's brace follows = , or ( */
		while (p && L[i].s[p - 1] == ' ')
			p--;
		if (p && strchr("=,(", L[i].s[p - 1]))
			continue;
		int j = next_stmt(L, nl, i);
		if (j == nl)
			continue;
		const char *t = lskip(L[j].s);
		const char *after = lskip(t + 1);
		if (t[0] != '{' || (*after && strncmp(after, "/*", 2) != 0) || brace_delta(t) != 1)
			continue;
		int cj = scope_end(L, nl, j);
		if (cj == nl)
			continue;
		const char *c = lskip(L[cj].s);
		if (strcmp(c, "}") != 0)
			continue;
		int ci = next_stmt(L, nl, cj);
		if (ci == nl)
			continue;
		c = lskip(L[ci].s);
		if (c[0] != '}' || scope_end(L, nl, i) != ci)
			continue;
		if (*after) { /* keep the comment, one level out */
			size_t ind = (size_t)(t - L[j].s);
			memmove(L[j].s + ind, after, strlen(after) + 1);
			if (ind >= 4)
				memmove(L[j].s, L[j].s + 4, strlen(L[j].s + 4) + 1);
		} else {
			L[j].dead = true;
		}
		L[cj].dead = true;
		for (int k = j + 1; k < cj; k++)
			if (!L[k].dead && strncmp(L[k].s, "    ", 4) == 0)
				memmove(L[k].s, L[k].s + 4, strlen(L[k].s + 4) + 1);
		i--; /* the merged block may hold another lone block */
	}
}

/* integer locals: names declared with an integer type anywhere in the body */
static void collect_ints(struct line *L, int nl, struct names *nm)
{
	struct tok t[TK_MAX];
	for (int i = 0; i < nl; i++) {
		int n;
		if (is_pp(L[i].s) || !tokenize(L[i].s, t, &n))
			continue;
		int depth = 0;
		bool decl = false; /* inside `T a = ..., b = ...;` */
		for (int k = 0; k + 1 < n; k++) {
			depth += tok_is(&t[k], "(") - tok_is(&t[k], ")");
			if (tok_is(&t[k], ";"))
				decl = false;
			bool first = is_int_type(&t[k]) && t[k + 1].kind == T_ID && !is_int_type(&t[k + 1]) &&
			             !(k + 2 < n && tok_is(&t[k + 2], "("));
			bool more = decl && depth == 0 && tok_is(&t[k], ",") && t[k + 1].kind == T_ID &&
			            k + 2 < n && (tok_is(&t[k + 2], "=") || tok_is(&t[k + 2], ",") ||
			                          tok_is(&t[k + 2], ";"));
			if (first && depth == 0)
				decl = true;
			if (first || more) {
				if (nm->n == nm->cap) {
					int c = nm->cap ? 2 * nm->cap : 32;
					char **v = realloc(nm->v, (size_t)c * sizeof(*v));
					if (!v)
						return;
					nm->v = v;
					nm->cap = c;
				}
				char *s = malloc((size_t)t[k + 1].n + 1);
				if (!s)
					return;
				memcpy(s, t[k + 1].s, (size_t)t[k + 1].n);
				s[t[k + 1].n] = 0;
				nm->v[nm->n++] = s;
			}
		}
	}
}

void cg_tidy(struct rl_buf *b)
{
	if (!b->s || !b->len)
		return;
	/* split into lines */
	int nl = 0, cap = 0;
	struct line *L = NULL;
	for (char *r = b->s; *r;) {
		char *eol = strchr(r, '\n');
		size_t len = eol ? (size_t)(eol - r) : strlen(r);
		if (nl + 2 >= cap) {
			cap = cap ? 2 * cap : 256;
			struct line *nL = realloc(L, (size_t)cap * sizeof(*L));
			if (!nL)
				goto out;
			L = nL;
		}
		L[nl].s = malloc(len + 1);
		if (!L[nl].s)
			goto out;
		memcpy(L[nl].s, r, len);
		L[nl].s[len] = 0;
		L[nl].dead = false;
		nl++;
		r += len + (eol ? 1 : 0);
	}
	struct names ints = {0};
	collect_ints(L, nl, &ints);
	for (int i = 0; i < nl; i++)
		tidy_line(&L[i], &ints);
	/* loops of extent 1 become blocks with the index bound to 0 */
	for (int i = 0; i < nl; i++) {
		char v[64];
		bool brace;
		if (L[i].dead || !unit_loop(L[i].s, v, sizeof(v), &brace))
			continue;
		if (!brace) {
			/* one statement for a body (the lines indented deeper, a
			 * simple statement or an unbraced for/if over one): V = 0 in
			 * it, the loop line goes, the body moves out one level */
			int ind0 = 0, e = i + 1, bd = 0;
			while (L[i].s[ind0] == ' ')
				ind0++;
			for (; e < nl && !L[e].dead; e++) {
				int ind = 0;
				while (L[e].s[ind] == ' ')
					ind++;
				if (ind <= ind0 || is_pp(L[e].s))
					break;
				bd += brace_delta(L[e].s);
				if (bd < 0)
					break;
			}
			const char *last = lskip(L[e - 1].s);
			if (e == i + 1 || bd || (!simple_statement(last) && strcmp(last, "}") != 0) ||
			    !substitutable(L, i + 1, e, v, false))
				continue;
			bool jump = false;
			for (int k = i + 1; k < e; k++) {
				const char *t = lskip(L[k].s);
				if (starts_loop(t))
					break; /* jumps below are the inner loop's */
				jump |= has_word(t, "break") || has_word(t, "continue");
			}
			if (jump)
				continue;
			L[i].dead = true;
			substitute(L, i + 1, e, v, &ints);
			for (int k = i + 1; k < e; k++)
				if (strncmp(L[k].s, "    ", 4) == 0)
					memmove(L[k].s, L[k].s + 4, strlen(L[k].s + 4) + 1);
			continue;
		}
		/* the loop body: from i+1 to the line that closes it */
		int depth = 1, end = nl;
		for (int k = i + 1; k < nl; k++) {
			if (L[k].dead)
				continue;
			depth += brace_delta(L[k].s);
			if (depth == 0) {
				end = k;
				break;
			}
		}
		bool jumps = false;
		/* a break or continue of this loop (not of one nested in it: those
		 * are inside a braced inner loop, or the line after an unbraced
		 * one) would mean something else in a block */
		int inner = 0, d2 = 0, stack[64], ns = 0;
		for (int k = i + 1; k < end && !jumps; k++) {
			if (L[k].dead)
				continue;
			const char *t = lskip(L[k].s);
			bool loop = starts_loop(t);
			size_t tl = strlen(t);
			bool oneline = loop && tl && t[tl - 1] == ';'; /* `for (...) stmt;` */
			if ((has_word(t, "break") || has_word(t, "continue")) && !ns && !inner &&
			    !oneline)
				jumps = true;
			int dd = brace_delta(t);
			if (loop && dd > 0 && ns < 64)
				stack[ns++] = d2 + dd;
			d2 += dd;
			while (ns && d2 < stack[ns - 1])
				ns--;
			/* an unbraced loop's body is the next line (or an if and its line) */
			inner = loop && dd == 0 && !oneline ? 1
			      : inner > 0 && !strncmp(t, "if", 2) && t[tl - 1] != ';' ? 1
			                                                               : 0;
		}
		if (jumps || end == nl || !substitutable(L, i + 1, end, v, false))
			continue;
		int ind = 0;
		while (L[i].s[ind] == ' ')
			ind++;
		char *o = malloc((size_t)ind + 2);
		if (!o)
			continue;
		memset(o, ' ', (size_t)ind);
		o[ind] = '{';
		o[ind + 1] = 0;
		free(L[i].s);
		L[i].s = o;
		substitute(L, i + 1, end, v, &ints);
	}
	/* constant-zero indices are substituted into their scope */
	for (bool again = true; again;) {
		again = false;
		for (int i = 0; i < nl; i++) {
			char v[64];
			bool is_int;
			if (L[i].dead || !zero_decl(L[i].s, v, sizeof(v), &is_int))
				continue;
			int end = scope_end(L, nl, i);
			if (!substitutable(L, i + 1, end, v, is_int))
				continue;
			L[i].dead = true;
			substitute(L, i + 1, end, v, &ints);
			again = true;
		}
	}
	drop_dead_locals(L, nl);
	merge_nested_blocks(L, nl);
	/* write back */
	b->len = 0;
	b->s[0] = 0;
	{
		struct rl_buf o = {0};
		for (int i = 0; i < nl; i++)
			if (!L[i].dead)
				rl_buf_printf(&o, "%s\n", L[i].s);
		rl_buf_free(b);
		*b = o;
	}
	for (int i = 0; i < ints.n; i++)
		free(ints.v[i]);
	free(ints.v);
out:
	for (int i = 0; i < nl; i++)
		free(L[i].s);
	free(L);
}
