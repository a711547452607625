/* The --morph-* option table and the checks of their values; see option_check.h. */
#include "libmorph/request/option_check.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const morph_option_info morph_option_table[] = {
    {"model", "NAME|SPEC", "model to train: a catalog name or layers=..,hidden=..,heads=..,seq=..,vocab=..",
     "MORPH_REQUEST_MODEL"},
    {"batch", "N", "global batch size (samples per iteration), kept constant across plans", "MORPH_REQUEST_BATCH"},
    {"seq", "N", "sequence length (default: the model's)", "MORPH_REQUEST_SEQ"},
    {"sla", "guaranteed|best-effort", "service level: guaranteed jobs never run slower than their baseline",
     "MORPH_REQUEST_SLA"},
    {"plans", "LIST", "allowed plan features: dp,zero,offload,tp,pp,3d,gc,all", "MORPH_REQUEST_PLANS"},
    {"gpus", "MIN[-MAX]", "bounds on the number of GPUs", "MORPH_REQUEST_GPUS"},
    {"gpu-type", "LIST", "allowed GPU types (comma separated)", "MORPH_REQUEST_GPU_TYPE"},
    {"framework", "megatron|deepspeed|torch", "training framework the launcher renders arguments for",
     "MORPH_REQUEST_FRAMEWORK"},
    {"plan", "PLAN", "with --gres/--gpus: the plan of that request, the job's SLA baseline (dp=4,tp=2,...)",
     "MORPH_REQUEST_PLAN"},
    {"iterations", "N", "training iterations the job runs (its length, for the scheduler; default: its time limit)",
     "MORPH_REQUEST_ITERATIONS"},
    {"adaptive-batch", "MIN:MAX",
     "let the trainer adapt the global batch within MIN:MAX by gradient similarity (JABAS); --morph-batch starts it",
     "MORPH_REQUEST_ADAPTIVE_BATCH"},
};
const int morph_option_count = (int)(sizeof morph_option_table / sizeof morph_option_table[0]);

#define MAX_BATCH MORPH_MAX_BATCH
#define MAX_SEQ MORPH_MAX_SEQ
#define MAX_GPUS MORPH_MAX_GPUS
#define MAX_LAYERS MORPH_MAX_LAYERS
#define MAX_HIDDEN MORPH_MAX_HIDDEN
#define MAX_VOCAB MORPH_MAX_VOCAB
#define MAX_PARAMS MORPH_MAX_PARAMS
#define MAX_PLAN_VALUE MORPH_MAX_PLAN_VALUE
#define MAX_NAME 64

/* A piece of a value: not NUL-terminated. */
typedef struct {
  const char *p;
  size_t n;
} span;

static int fail(char *error, size_t size, const char *format, ...) {
  va_list args;
  va_start(args, format);
  if (size > 0) vsnprintf(error, size, format, args);
  va_end(args);
  return -1;
}

/* A span for a message: at most 40 characters, non-printable ones as '?'. */
static const char *shown(span s, char *buffer, size_t size) {
  size_t i, n = s.n < 40 ? s.n : 40;
  if (n + 8 > size) n = size - 8;
  buffer[0] = '\'';
  for (i = 0; i < n; ++i) buffer[i + 1] = isprint((unsigned char)s.p[i]) ? s.p[i] : '?';
  strcpy(buffer + n + 1, s.n > n ? "...'" : "'");
  return buffer;
}

static int span_is(span s, const char *word) { return strlen(word) == s.n && strncasecmp(s.p, word, s.n) == 0; }

/* The next item of a `separator`-separated list; 0 at the end. */
static int next_item(span *rest, char separator, span *item) {
  const char *end;
  if (rest->p == NULL) return 0;
  end = memchr(rest->p, separator, rest->n);
  item->p = rest->p;
  item->n = end ? (size_t)(end - rest->p) : rest->n;
  if (end) {
    rest->n -= item->n + 1;
    rest->p = end + 1;
  } else {
    rest->p = NULL;
  }
  return 1;
}

/* Splits "key=value"; 0 when `item` is not key=value. */
static int split_key_value(span item, span *key, span *value) {
  const char *eq = memchr(item.p, '=', item.n);
  if (eq == NULL || eq == item.p) return 0;
  key->p = item.p;
  key->n = (size_t)(eq - item.p);
  value->p = eq + 1;
  value->n = item.n - key->n - 1;
  return 1;
}

/* Index of `key` in `keys`, or -1. */
static int key_index(span key, const char *const keys[], int count) {
  int k;
  for (k = 0; k < count; ++k)
    if (span_is(key, keys[k])) return k;
  return -1;
}

/* Decimal integer in [min, max], an optional leading '+'. A negative one, "-0" too, is
 * out of range (no option takes one), not malformed. */
static int integer(span s, int64_t min, int64_t max, int64_t *out) {
  size_t i = 0;
  int64_t v = 0;
  const int negative = s.n > 0 && s.p[0] == '-';
  if (s.n > 0 && (s.p[0] == '+' || negative)) i = 1;
  if (i == s.n) return -1;
  for (; i < s.n; ++i) {
    if (!isdigit((unsigned char)s.p[i])) return -1;
    if (v > (INT64_MAX - (s.p[i] - '0')) / 10) return -2; /* overflow */
    v = v * 10 + (s.p[i] - '0');
  }
  if (negative || v < min || v > max) return -2;
  *out = v;
  return 0;
}

/* Decimal number: [+]DIGITS[.DIGITS][e[+-]DIGITS] or [+].DIGITS...; no hexadecimal, inf
 * or nan, which strtod alone would take. */
static int decimal(span s, double *out) {
  char number[64];
  size_t i = 0, digits = 0;
  char *end = NULL;
  if (s.n == 0 || s.n >= sizeof number) return -1;
  if (s.p[0] == '+') i = 1;
  for (; i < s.n && isdigit((unsigned char)s.p[i]); ++i) ++digits;
  if (i < s.n && s.p[i] == '.')
    for (++i; i < s.n && isdigit((unsigned char)s.p[i]); ++i) ++digits;
  if (digits == 0) return -1;
  if (i < s.n && (s.p[i] == 'e' || s.p[i] == 'E')) {
    size_t exponent = 0;
    ++i;
    if (i < s.n && (s.p[i] == '+' || s.p[i] == '-')) ++i;
    for (; i < s.n && isdigit((unsigned char)s.p[i]); ++i) ++exponent;
    if (exponent == 0) return -1;
  }
  if (i != s.n) return -1;
  memcpy(number, s.p, s.n);
  number[s.n] = '\0';
  *out = strtod(number, &end);
  return end == number + s.n && isfinite(*out) ? 0 : -1; /* all of it: a locale's comma stops strtod */
}

static int check_integer(const char *what, const char *key, span s, int64_t min, int64_t max, int64_t *out, char *error,
                         size_t size) {
  char b[64];
  const int rc = integer(s, min, max, out);
  if (rc == -1) return fail(error, size, "%s: %s%s is not an integer", what, key, shown(s, b, sizeof b));
  if (rc == -2)
    return fail(error, size, "%s: %s%s is out of range [%lld, %lld]", what, key, shown(s, b, sizeof b), (long long)min,
                (long long)max);
  return 0;
}

static int name_ok(span s) {
  size_t i;
  if (s.n == 0 || s.n > MAX_NAME) return 0;
  for (i = 0; i < s.n; ++i)
    if (!(isalnum((unsigned char)s.p[i]) || s.p[i] == '-' || s.p[i] == '_' || s.p[i] == '.')) return 0;
  return 1;
}

static int parse_model_spec(const char *what, span spec, morph_model_values *out, char *error, size_t size) {
  static const char *const keys[] = {"name", "layers", "hidden", "heads", "seq", "vocab", "params"};
  enum { kName, kLayers, kHidden, kHeads, kSeq, kVocab, kParams, kKeys };
  static const int64_t lo[kKeys] = {0, 1, 1, 1, 1, 0, 0};
  const int64_t hi[kKeys] = {0, MAX_LAYERS, MAX_HIDDEN, MAX_HIDDEN, MAX_SEQ, MAX_VOCAB, 0};
  int64_t value[kKeys] = {0};
  int seen[kKeys] = {0};
  span rest = spec, item;
  char b[64], key[16];
  int k;
  memset(out, 0, sizeof *out);
  while (next_item(&rest, ',', &item)) {
    span name, v;
    if (!split_key_value(item, &name, &v))
      return fail(error, size, "%s: %s is not key=value", what, shown(item, b, sizeof b));
    k = key_index(name, keys, kKeys);
    if (k < 0)
      return fail(error, size, "%s: unknown key %s (expected layers, hidden, heads, seq, vocab, params, name)", what,
                  shown(name, b, sizeof b));
    if (seen[k]) return fail(error, size, "%s: %s given twice", what, keys[k]);
    seen[k] = 1;
    snprintf(key, sizeof key, "%s=", keys[k]);
    if (k == kName) {
      if (!name_ok(v)) return fail(error, size, "%s: name=%s is not a name", what, shown(v, b, sizeof b));
      memcpy(out->name, v.p, v.n);
      out->name[v.n] = '\0';
    } else if (k == kParams) {
      if (decimal(v, &out->params) != 0)
        return fail(error, size, "%s: params=%s is not a decimal number", what, shown(v, b, sizeof b));
      if (out->params < 1 || out->params > MAX_PARAMS)
        return fail(error, size, "%s: params=%s is out of range [1, %g]", what, shown(v, b, sizeof b), MAX_PARAMS);
    } else if (check_integer(what, key, v, lo[k], hi[k], &value[k], error, size) != 0) {
      return -1;
    }
  }
  for (k = kLayers; k <= kSeq; ++k)
    if (!seen[k]) return fail(error, size, "%s: missing %s=", what, keys[k]);
  if (value[kHeads] > value[kHidden])
    return fail(error, size, "%s: heads=%lld is more than hidden=%lld", what, (long long)value[kHeads],
                (long long)value[kHidden]);
  if (value[kHidden] % value[kHeads] != 0)
    return fail(error, size, "%s: hidden=%lld is not divisible by heads=%lld", what, (long long)value[kHidden],
                (long long)value[kHeads]);
  if (seen[kParams] && out->params <= (double)value[kVocab] * (double)value[kHidden])
    return fail(error, size, "%s: params=%g does not exceed the embedding (vocab x hidden = %g)", what, out->params,
                (double)value[kVocab] * (double)value[kHidden]);
  out->layers = value[kLayers];
  out->hidden = value[kHidden];
  out->heads = value[kHeads];
  out->seq = value[kSeq];
  out->vocab = value[kVocab];
  return 0;
}

static int check_features(const char *what, span list, char *error, size_t size) {
  static const char *const names[] = {"dp", "zero", "offload", "tp", "pp", "3d", "gc", "all"};
  span rest = list, item;
  char b[64];
  while (next_item(&rest, ',', &item)) {
    if (key_index(item, names, 8) < 0)
      return fail(error, size, "%s: unknown plan feature %s (expected dp, zero, offload, tp, pp, 3d, gc, all)", what,
                  shown(item, b, sizeof b));
  }
  return 0;
}

static int check_partial_plan(const char *what, span plan, char *error, size_t size) {
  static const char *const keys[] = {"dp", "tp", "pp", "zero", "offload", "gc", "ga", "mb", "mbs"};
  /* ZeRO stages 0-3, offload and gc flags; the sizes and counts at least 1. */
  static const int64_t lows[] = {1, 1, 1, 0, 0, 0, 1, 1, 1};
  static const int64_t highs[] = {MAX_PLAN_VALUE, MAX_PLAN_VALUE, MAX_PLAN_VALUE, 3, 1, 1,
                                  MAX_PLAN_VALUE, MAX_PLAN_VALUE, MAX_PLAN_VALUE};
  int seen[9] = {0};
  span rest = plan, item;
  char b[64], key[16];
  while (next_item(&rest, ',', &item)) {
    span name, v;
    int k;
    int64_t ignored;
    if (!split_key_value(item, &name, &v))
      return fail(error, size, "%s: %s is not key=value", what, shown(item, b, sizeof b));
    k = key_index(name, keys, 9);
    if (k < 0) return fail(error, size, "%s: unknown plan key %s", what, shown(name, b, sizeof b));
    if (seen[k]) return fail(error, size, "%s: %s given twice", what, keys[k]);
    seen[k] = 1;
    snprintf(key, sizeof key, "%s=", keys[k]);
    if (check_integer(what, key, v, lows[k], highs[k], &ignored, error, size) != 0) return -1;
  }
  return 0;
}

int morph_option_index(const char *name) {
  int i;
  for (i = 0; i < morph_option_count; ++i)
    if (name != NULL && strcmp(name, morph_option_table[i].name) == 0) return i;
  return -1;
}

int morph_parse_integer(const char *what, const char *text, int64_t min, int64_t max, int64_t *out, char *error,
                        size_t error_size) {
  span s;
  s.p = text;
  s.n = text ? strlen(text) : 0;
  if (error_size > 0) error[0] = '\0';
  return check_integer(what, "", s, min, max, out, error, error_size);
}

int morph_parse_model_spec(const char *what, const char *spec, morph_model_values *out, char *error,
                           size_t error_size) {
  span s;
  s.p = spec;
  s.n = spec ? strlen(spec) : 0;
  if (error_size > 0) error[0] = '\0';
  return parse_model_spec(what, s, out, error, error_size);
}

int morph_check_plan_features(const char *what, const char *list, char *error, size_t error_size) {
  span s;
  s.p = list;
  s.n = list ? strlen(list) : 0;
  return check_features(what, s, error, error_size);
}

/* "MIN:MAX", global batch sizes with MIN <= MAX. */
static int parse_batch_range(const char *what, span v, int64_t *lo, int64_t *hi, char *error, size_t size) {
  char b[64];
  const char *colon = memchr(v.p, ':', v.n);
  span low = v, high = v;
  if (colon == NULL) return fail(error, size, "%s: %s is not MIN:MAX (global batch sizes)", what, shown(v, b, sizeof b));
  low.n = (size_t)(colon - v.p);
  high.p = colon + 1;
  high.n = v.n - low.n - 1;
  if (integer(low, 1, MAX_BATCH, lo) != 0 || integer(high, 1, MAX_BATCH, hi) != 0)
    return fail(error, size, "%s: %s is not MIN:MAX with batch sizes from 1 to %lld", what, shown(v, b, sizeof b),
                (long long)MAX_BATCH);
  if (*hi < *lo) return fail(error, size, "%s: %s has MAX below MIN", what, shown(v, b, sizeof b));
  return 0;
}

int morph_check_option(const char *name, const char *value, char *error, size_t size) {
  char what[40], b[64];
  span v, rest, item;
  size_t i, length;
  int64_t lo, hi;
  if (size > 0) error[0] = '\0';
  if (morph_option_index(name) < 0) return fail(error, size, "--morph-%.20s: unknown option", name ? name : "");
  snprintf(what, sizeof what, "--morph-%s", name);
  length = value ? strlen(value) : 0;
  if (length == 0) return fail(error, size, "%s: empty value", what);
  if (length > MORPH_OPTION_MAX_VALUE)
    return fail(error, size, "%s: value of %zu bytes is too long (at most %d)", what, length, MORPH_OPTION_MAX_VALUE);
  v.p = value;
  v.n = length;
  for (i = 0; i < length; ++i)
    if (!isprint((unsigned char)value[i]) || value[i] == ' ')
      return fail(error, size, "%s: %s contains spaces or control characters", what, shown(v, b, sizeof b));

  if (strcmp(name, "model") == 0) {
    if (memchr(value, '=', length)) {
      morph_model_values ignored;
      return parse_model_spec(what, v, &ignored, error, size);
    }
    if (!name_ok(v))
      return fail(error, size,
                  "%s: %s is not a model name (letters, digits, '.', '-', '_') or an inline spec "
                  "layers=..,hidden=..,heads=..,seq=..",
                  what, shown(v, b, sizeof b));
    return 0;
  }
  if (strcmp(name, "batch") == 0) return check_integer(what, "", v, 1, MAX_BATCH, &lo, error, size);
  if (strcmp(name, "seq") == 0) return check_integer(what, "", v, 1, MAX_SEQ, &lo, error, size);
  if (strcmp(name, "iterations") == 0) return check_integer(what, "", v, 1, MORPH_MAX_ITERATIONS, &lo, error, size);
  if (strcmp(name, "sla") == 0) {
    if (span_is(v, "guaranteed") || span_is(v, "best-effort") || span_is(v, "besteffort")) return 0;
    return fail(error, size, "%s: %s is not guaranteed or best-effort", what, shown(v, b, sizeof b));
  }
  if (strcmp(name, "framework") == 0) {
    if (span_is(v, "megatron") || span_is(v, "deepspeed") || span_is(v, "torch")) return 0;
    return fail(error, size, "%s: %s is not megatron, deepspeed or torch", what, shown(v, b, sizeof b));
  }
  if (strcmp(name, "plans") == 0) return check_features(what, v, error, size);
  if (strcmp(name, "plan") == 0) return check_partial_plan(what, v, error, size);
  if (strcmp(name, "gpus") == 0) {
    const char *dash = memchr(value, '-', length);
    span low = v, high = v;
    if (dash) {
      low.n = (size_t)(dash - value);
      high.p = dash + 1;
      high.n = length - low.n - 1;
    }
    {
      const int low_rc = integer(low, 1, MAX_GPUS, &lo), high_rc = integer(high, 1, MAX_GPUS, &hi);
      if (low_rc == -1 || high_rc == -1)
        return fail(error, size, "%s: %s is not MIN or MIN-MAX (GPU counts from 1 to %d)", what, shown(v, b, sizeof b),
                    MAX_GPUS);
      if (low_rc != 0 || high_rc != 0)
        return fail(error, size, "%s: %s is out of range [1, %d]", what, shown(v, b, sizeof b), MAX_GPUS);
    }
    if (hi < lo) return fail(error, size, "%s: %s has MAX below MIN", what, shown(v, b, sizeof b));
    return 0;
  }
  if (strcmp(name, "adaptive-batch") == 0) return parse_batch_range(what, v, &lo, &hi, error, size);
  /* gpu-type */
  rest = v;
  while (next_item(&rest, ',', &item))
    if (!name_ok(item)) return fail(error, size, "%s: %s is not a GPU type name", what, shown(item, b, sizeof b));
  return 0;
}

int morph_check_request(const char *const values[], char *error, size_t size) {
  int i;
  int64_t batch, lo, hi;
  const char *adaptive = values[morph_option_index("adaptive-batch")];
  for (i = 0; i < morph_option_count; ++i)
    if (values[i] != NULL && morph_check_option(morph_option_table[i].name, values[i], error, size) != 0) return -1;
  if (values[morph_option_index("model")] == NULL)
    return fail(error, size, "--morph-model: missing (every Morph job names its model)");
  if (values[morph_option_index("batch")] == NULL)
    return fail(error, size, "--morph-batch: missing (the global batch size is required)");
  if (adaptive != NULL) {
    span v;
    v.p = adaptive;
    v.n = strlen(adaptive);
    batch = strtoll(values[morph_option_index("batch")], NULL, 10);
    parse_batch_range("--morph-adaptive-batch", v, &lo, &hi, error, size);
    if (batch < lo || batch > hi)
      return fail(error, size, "--morph-adaptive-batch: the starting batch %lld (--morph-batch) is outside %s",
                  (long long)batch, adaptive);
  }
  return 0;
}
