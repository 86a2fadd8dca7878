/*
 * json_locate.c - find the line where a value starts in raw JSON text.
 *
 * A minimal scanner: it skips strings (with escapes), and nested values by
 * counting brackets outside strings, without building anything.  It runs
 * only when a reader reports an error, so simplicity beats speed.  It
 * assumes the text already parsed successfully with jansson.
 */
#include <string.h>

#include "io/json_in.h"

typedef struct scan {
    const char *p, *end;
    int line;
} scan;

static void skip_ws(scan *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r')) {
        if (*s->p == '\n')
            s->line++;
        s->p++;
    }
}

/* At an opening quote: skip the string, return its start and length. */
static void skip_string(scan *s, const char **start, size_t *len)
{
    s->p++;
    *start = s->p;
    while (s->p < s->end && *s->p != '"') {
        if (*s->p == '\\' && s->p + 1 < s->end)
            s->p++;
        s->p++;
    }
    *len = (size_t)(s->p - *start);
    if (s->p < s->end)
        s->p++;
}

static void skip_value(scan *s)
{
    skip_ws(s);
    if (s->p >= s->end)
        return;
    if (*s->p == '"') {
        const char *a;
        size_t n;
        skip_string(s, &a, &n);
        return;
    }
    if (*s->p != '{' && *s->p != '[') {
        while (s->p < s->end && !strchr(",]}", *s->p) && *s->p != '\n')
            s->p++;
        return;
    }
    int depth = 0;
    while (s->p < s->end) {
        char c = *s->p;
        if (c == '"') {
            const char *a;
            size_t n;
            skip_string(s, &a, &n);
            continue;
        }
        if (c == '\n')
            s->line++;
        s->p++;
        if (c == '{' || c == '[')
            depth++;
        else if ((c == '}' || c == ']') && --depth == 0)
            return;
    }
}

/* Move to the member `key` of the object at s->p; 0 if absent. Compares the
 * raw key text, so keys with escapes are not matched (good enough for ours). */
static int enter_key(scan *s, const char *key)
{
    skip_ws(s);
    if (s->p >= s->end || *s->p != '{')
        return 0;
    s->p++;
    size_t klen = strlen(key);
    for (;;) {
        skip_ws(s);
        if (s->p >= s->end || *s->p != '"')
            return 0;
        const char *k;
        size_t n;
        skip_string(s, &k, &n);
        skip_ws(s);
        if (s->p < s->end && *s->p == ':')
            s->p++;
        skip_ws(s);
        if (n == klen && memcmp(k, key, n) == 0)
            return 1;
        skip_value(s);
        skip_ws(s);
        if (s->p >= s->end || *s->p != ',')
            return 0;
        s->p++;
    }
}

static int enter_index(scan *s, long index)
{
    skip_ws(s);
    if (s->p >= s->end || *s->p != '[')
        return 0;
    s->p++;
    for (long i = 0;; i++) {
        skip_ws(s);
        if (i == index)
            return s->p < s->end && *s->p != ']';
        skip_value(s);
        skip_ws(s);
        if (s->p >= s->end || *s->p != ',')
            return 0;
        s->p++;
    }
}

int json_locate_line(const char *text, size_t len, const json_step *steps, int n)
{
    scan s = {text, text + len, 1};
    int line = 1;
    for (int i = 0; i < n; i++) {
        int found = steps[i].key ? enter_key(&s, steps[i].key) : enter_index(&s, steps[i].index);
        if (!found)
            break;
        skip_ws(&s);
        line = s.line;
    }
    return line;
}
