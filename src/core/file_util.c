/* file_util.c - whole-file reads, atomic writes, JSON text output. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/file_util.h"
#include "core/strtab.h"

op_status op_read_whole_file(const char *path, char **text, size_t *len, op_error *err)
{
    *text = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return op_fail(err, OP_EIO, "%s: cannot open: %s", path, strerror(errno));
    /* bounded reads: only regular files and pipes; a regular file's size
     * is checked before reading, a pipe's while reading */
    struct stat st;
    if (fstat(fileno(f), &st) == 0) {
        const char *what = S_ISDIR(st.st_mode)                          ? "a directory"
                           : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                           : S_ISSOCK(st.st_mode)                       ? "a socket"
                                                                        : NULL;
        if (what) {
            fclose(f);
            return op_fail(err, OP_EIO, "%s: is %s, not a file", path, what);
        }
        if (S_ISREG(st.st_mode) && (uint64_t)st.st_size > OP_MAX_INPUT_BYTES) {
            fclose(f);
            return op_fail(err, OP_EINPUT, "%s: %lld bytes, larger than %zu; refusing to read it",
                           path, (long long)st.st_size, OP_MAX_INPUT_BYTES);
        }
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

/*
 * The one output writer.  Rules (bench/RESULTS.md, "Hostile inputs and budgets"):
 *   - "-" is standard output (op_output_claimed_stdout() then says so, and
 *     commands print their tables on stderr);
 *   - a symlink is written through: the file it points to is replaced, the
 *     link stays (a dangling link is refused);
 *   - only regular files are replaced: a FIFO, a device node, a socket or a
 *     directory is refused before anything is written;
 *   - an existing file keeps its permission bits; a new one gets 0666 & ~umask;
 *   - the temporary is ".opplace-XXXXXX" in the target's directory (short, so
 *     any legal file name works);
 *   - in a transaction (op_output_begin .. op_output_end), commits only
 *     flush and close; op_output_end renames every output or removes every
 *     temporary, so a command writes all its outputs or none.
 */
static int claimed_stdout;

int op_output_claimed_stdout(void)
{
    return claimed_stdout;
}

typedef struct pending {
    char *tmp, *final;
} pending;

static struct {
    int active;
    int n, cap;
    pending *p;
} tx;

void op_output_begin(void)
{
    tx.active = 1;
}

static void tx_clear(void)
{
    for (int i = 0; i < tx.n; i++) {
        free(tx.p[i].tmp);
        free(tx.p[i].final);
    }
    free(tx.p);
    tx.p = NULL;
    tx.n = tx.cap = 0;
}

op_status op_output_end(int commit, op_error *err)
{
    op_status st = OP_OK;
    tx.active = 0;
    for (int i = 0; i < tx.n; i++) {
        if (commit && !st && rename(tx.p[i].tmp, tx.p[i].final) != 0)
            st = op_fail(err, OP_EIO, "%s: write failed: %s", tx.p[i].final, strerror(errno));
        if (!commit || st)
            unlink(tx.p[i].tmp); /* fails harmlessly for ones already renamed */
    }
    tx_clear();
    return st;
}

/* The directory part of path ("." when there is none), in buf. */
static void dir_of(const char *path, char *buf, size_t cap)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(buf, cap, ".");
    else if (slash == path)
        snprintf(buf, cap, "/");
    else
        snprintf(buf, cap, "%.*s", (int)(slash - path), path);
}

/* Resolve where the data goes: through a symlink to its target; refuse what
 * is not a regular file.  *mode: the permission bits the file gets. */
static op_status resolve_target(const char *path, char **final, mode_t *mode, op_error *err)
{
    struct stat st;
    *final = NULL;
    if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
        char *real = realpath(path, NULL);
        if (!real)
            return op_fail(err, OP_EIO, "%s: a symbolic link to a missing file (%s); remove the "
                           "link or create its target", path, strerror(errno));
        *final = real;
    } else {
        *final = op_strdup(path, err);
        if (!*final)
            return OP_ENOMEM;
    }
    if (stat(*final, &st) == 0) {
        if (!S_ISREG(st.st_mode)) {
            const char *what = S_ISDIR(st.st_mode)    ? "a directory"
                               : S_ISFIFO(st.st_mode) ? "a FIFO"
                               : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                               : "not a regular file";
            op_status r = op_fail(err, OP_EIO, "%s: is %s; opplace writes only regular files "
                                  "(use - for standard output)", path, what);
            free(*final);
            *final = NULL;
            return r;
        }
        *mode = st.st_mode & 07777;
    } else {
        mode_t um = umask(0);
        umask(um);
        *mode = 0666 & ~um;
    }
    return OP_OK;
}

op_status op_output_check(const char *path, op_error *err)
{
    if (!path || strcmp(path, "-") == 0)
        return OP_OK;
    char *final = NULL;
    mode_t mode;
    op_status st = resolve_target(path, &final, &mode, err);
    if (st)
        return st;
    char dir[4096];
    dir_of(final, dir, sizeof dir);
    free(final);
    if (access(dir, W_OK) != 0)
        return op_fail(err, OP_EIO, "%s: cannot create: %s%s", path, strerror(errno),
                       errno == ENOENT ? " (the directory does not exist)" : "");
    return OP_OK;
}

static volatile sig_atomic_t results_begun;

void op_output_results_begin(void)
{
    results_begun = 1;
}

int op_output_results_begun(void)
{
    return results_begun;
}

op_status op_atomic_open(op_atomic *a, const char *path, op_error *err)
{
    results_begun = 1;
    memset(a, 0, sizeof *a);
    if (strcmp(path, "-") == 0) {
        a->f = stdout;
        claimed_stdout = 1;
        return OP_OK;
    }
    mode_t mode = 0644;
    op_status st = resolve_target(path, &a->final_path, &mode, err);
    if (st)
        return st;
    char dir[4096];
    dir_of(a->final_path, dir, sizeof dir);
    size_t n = strlen(dir) + 32;
    a->tmp_path = op_malloc(n, err);
    if (!a->tmp_path) {
        op_atomic_abort(a);
        return OP_ENOMEM;
    }
    snprintf(a->tmp_path, n, "%s/.opplace-XXXXXX", dir);
    int fd = mkstemp(a->tmp_path);
    if (fd < 0) {
        st = op_fail(err, OP_EIO, "%s: cannot create: %s", path, strerror(errno));
        free(a->tmp_path);
        a->tmp_path = NULL;
        op_atomic_abort(a);
        return st;
    }
    if (fchmod(fd, mode) != 0) { /* keep the mode the target had */
        st = op_fail(err, OP_EIO, "%s: cannot set its mode: %s", path, strerror(errno));
        close(fd);
        op_atomic_abort(a);
        return st;
    }
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
    if (!bad && tx.active) { /* renamed by op_output_end */
        if (tx.n == tx.cap) {
            int cap = tx.cap ? 2 * tx.cap : 4;
            pending *q = op_realloc(tx.p, (size_t)cap * sizeof *q, err);
            if (!q) {
                op_atomic_abort(a);
                return OP_ENOMEM;
            }
            tx.p = q;
            tx.cap = cap;
        }
        tx.p[tx.n++] = (pending){a->tmp_path, a->final_path};
        a->tmp_path = a->final_path = NULL;
        return OP_OK;
    }
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

FILE *op_json_doc_open(op_atomic *a, const char *path, const char *format, op_error *err)
{
    if (op_atomic_open(a, path, err))
        return NULL;
    fprintf(a->f, "{\n  \"format\": \"%s\",\n  \"version\": 1", format);
    return a->f;
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
