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

static int hex4(const char *p, const char *end, unsigned *out)
{
    if (end - p < 4)
        return 0;
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (unsigned)(c - 'A' + 10);
        else
            return 0;
    }
    *out = v;
    return 1;
}

/* 1 when the raw JSON string text raw[0..n) (escapes undecoded) spells key:
 * a key written "\u0074ime_us" is the key time_us. */
static int raw_key_equals(const char *raw, size_t n, const char *key, size_t klen)
{
    const char *p = raw, *end = raw + n;
    size_t k = 0;
    while (p < end) {
        unsigned char buf[4];
        int nb = 1;
        if (*p != '\\') {
            buf[0] = (unsigned char)*p++;
        } else {
            if (end - p < 2)
                return 0;
            char e = p[1];
            p += 2;
            unsigned cp;
            switch (e) {
            case 'b': buf[0] = '\b'; break;
            case 'f': buf[0] = '\f'; break;
            case 'n': buf[0] = '\n'; break;
            case 'r': buf[0] = '\r'; break;
            case 't': buf[0] = '\t'; break;
            case 'u':
                if (!hex4(p, end, &cp))
                    return 0;
                p += 4;
                if (cp >= 0xD800 && cp < 0xDC00) { /* a surrogate pair */
                    unsigned lo;
                    if (end - p < 6 || p[0] != '\\' || p[1] != 'u' || !hex4(p + 2, end, &lo))
                        return 0;
                    p += 6;
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                }
                if (cp < 0x80) {
                    buf[0] = (unsigned char)cp;
                } else if (cp < 0x800) {
                    buf[0] = (unsigned char)(0xC0 | (cp >> 6));
                    buf[1] = (unsigned char)(0x80 | (cp & 0x3F));
                    nb = 2;
                } else if (cp < 0x10000) {
                    buf[0] = (unsigned char)(0xE0 | (cp >> 12));
                    buf[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
                    buf[2] = (unsigned char)(0x80 | (cp & 0x3F));
                    nb = 3;
                } else {
                    buf[0] = (unsigned char)(0xF0 | (cp >> 18));
                    buf[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
                    buf[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
                    buf[3] = (unsigned char)(0x80 | (cp & 0x3F));
                    nb = 4;
                }
                break;
            default: buf[0] = (unsigned char)e; break; /* \" \\ \/ */
            }
        }
        if (k + (size_t)nb > klen || memcmp(key + k, buf, (size_t)nb) != 0)
            return 0;
        k += (size_t)nb;
    }
    return k == klen;
}

/* Move to the member `key` of the object at s->p; 0 if absent.  Keys are
 * compared after decoding their escapes. */
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
        if (raw_key_equals(k, n, key, klen))
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
