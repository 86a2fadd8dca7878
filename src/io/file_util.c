/* file_util.c - whole-file reads, atomic writes, JSON text output. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/strtab.h"
#include "io/file_util.h"

op_status op_read_whole_file(const char *path, char **text, size_t *len, op_error *err)
{
    *text = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return op_fail(err, OP_EIO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(f);
        return op_fail(err, OP_EIO, "%s: is a directory, not a file", path);
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = op_malloc(cap + 1, err);
    while (buf) {
        if (n == cap) {
            if (cap >= OP_MAX_INPUT_BYTES) {
                free(buf);
                fclose(f);
                return op_fail(err, OP_EINPUT, "%s: larger than %zu bytes; refusing to read it",
                               path, OP_MAX_INPUT_BYTES);
            }
            cap *= 2;
            char *q = op_realloc(buf, cap + 1, err);
            if (!q) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = q;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    int failed = ferror(f);
    fclose(f);
    if (!buf)
        return OP_ENOMEM;
    if (failed) {
        free(buf);
        return op_fail(err, OP_EIO, "%s: read error", path);
    }
    buf[n] = '\0';
    *text = buf;
    *len = n;
    return OP_OK;
}

op_status op_atomic_open(op_atomic *a, const char *path, op_error *err)
{
    memset(a, 0, sizeof *a);
    if (strcmp(path, "-") == 0) {
        a->f = stdout;
        return OP_OK;
    }
    a->final_path = op_strdup(path, err);
    size_t n = strlen(path) + 32;
    a->tmp_path = op_malloc(n, err);
    if (!a->final_path || !a->tmp_path) {
        op_atomic_abort(a);
        return OP_ENOMEM;
    }
    snprintf(a->tmp_path, n, "%s.tmp.XXXXXX", path);
    int fd = mkstemp(a->tmp_path);
    if (fd < 0) {
        op_status st = op_fail(err, OP_EIO, "%s: cannot create: %s", path, strerror(errno));
        free(a->tmp_path);
        a->tmp_path = NULL;
        op_atomic_abort(a);
        return st;
    }
    fchmod(fd, 0644);
    a->f = fdopen(fd, "w");
    if (!a->f) {
        close(fd);
        op_atomic_abort(a);
        return op_fail(err, OP_EIO, "%s: cannot open for writing", path);
    }
    return OP_OK;
}

op_status op_atomic_commit(op_atomic *a, op_error *err)
{
    if (!a->tmp_path) { /* stdout */
        int bad = fflush(a->f) != 0 || ferror(a->f);
        a->f = NULL;
        return bad ? op_fail(err, OP_EIO, "error writing to standard output") : OP_OK;
    }
    int bad = fflush(a->f) != 0 || ferror(a->f);
    if (fclose(a->f) != 0)
        bad = 1;
    a->f = NULL;
    if (bad || rename(a->tmp_path, a->final_path) != 0) {
        op_status st = op_fail(err, OP_EIO, "%s: write failed: %s", a->final_path,
                               strerror(errno));
        op_atomic_abort(a);
        return st;
    }
    free(a->tmp_path);
    free(a->final_path);
    a->tmp_path = a->final_path = NULL;
    return OP_OK;
}

void op_atomic_abort(op_atomic *a)
{
    if (a->f && a->tmp_path)
        fclose(a->f);
    if (a->tmp_path)
        unlink(a->tmp_path);
    free(a->tmp_path);
    free(a->final_path);
    memset(a, 0, sizeof *a);
}

void op_json_put_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            if (*p < 0x20)
                fprintf(f, "\\u%04x", *p);
            else
                fputc(*p, f);
        }
    }
    fputc('"', f);
}

void op_json_put_number(FILE *f, double x)
{
    if (!isfinite(x)) { /* JSON has no inf/nan; callers avoid them, be safe */
        fputs("null", f);
        return;
    }
    if (x == floor(x) && fabs(x) < 9.0e15) {
        fprintf(f, "%.0f", x);
        return;
    }
    char buf[40];
    for (int prec = 6; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, x);
        if (strtod(buf, NULL) == x)
            break;
    }
    fputs(buf, f);
}
