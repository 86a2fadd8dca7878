/*
 * params_io.c - saving and loading a model's weights (nn_params_save/load).
 *
 * Format (little-endian, see nn.h): "OPNN", u32 version, u32 count, then per
 * parameter u32 name length, the name, u32 rows, u32 cols, binary64 values,
 * and a CRC-32 of everything before it.  The whole image is built in memory
 * and written to a temporary file next to the target, fsynced and renamed
 * over it (mode 0644), so readers see the old file or the new one, never
 * half of one.
 * Load reads the whole file, checks in order magic, version, checksum and
 * structure, and matches every entry to the model by name and shape before
 * copying any value, so a rejected file leaves the model untouched.  Each
 * failure names the file and what to do about it.
 */
#include "nn/nn.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc_hooks.h"

#define NN_FILE_MAGIC "OPNN"
#define NN_FILE_MAX_BYTES ((size_t)1 << 34) /* 16 GiB: far above any placer */

/* ------------------------------------------------------------- CRC-32 */

/* CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320, as zlib), four bits
 * at a time from a constant table: no lazy initialisation, so it is safe to
 * call from several threads. */
static const uint32_t crc_nibble[16] = {
    0x00000000u, 0x1DB71064u, 0x3B6E20C8u, 0x26D930ACu, 0x76DC4190u, 0x6B6B51F4u,
    0x4DB26158u, 0x5005713Cu, 0xEDB88320u, 0xF00F9344u, 0xD6D6A3E8u, 0xCB61B38Cu,
    0x9B64C2B0u, 0x86D3D2D4u, 0xA00AE278u, 0xBDBDF21Cu};

uint32_t nn_crc32(uint32_t crc, const void *data, size_t n)
{
    const unsigned char *p = data;
    crc = ~crc;
    for (size_t i = 0; i < n; i++) {
        crc ^= p[i];
        crc = (crc >> 4) ^ crc_nibble[crc & 15];
        crc = (crc >> 4) ^ crc_nibble[crc & 15];
    }
    return ~crc;
}

/* ------------------------------------------------- byte buffer writing */

typedef struct byte_buf {
    unsigned char *data;
    size_t len, cap;
} byte_buf;

static op_status buf_put(byte_buf *b, const void *src, size_t n, op_error *err)
{
    op_status st = op_reserve((void **)&b->data, 1, &b->cap, b->len + n, err);
    if (st != OP_OK)
        return st;
    memcpy(b->data + b->len, src, n);
    b->len += n;
    return OP_OK;
}

static op_status buf_put_u32(byte_buf *b, uint32_t v, op_error *err)
{
    unsigned char le[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                           (unsigned char)(v >> 24)};
    return buf_put(b, le, 4, err);
}

static op_status buf_put_f64(byte_buf *b, double x, op_error *err)
{
    uint64_t v;
    memcpy(&v, &x, sizeof v);
    unsigned char le[8];
    for (int i = 0; i < 8; i++)
        le[i] = (unsigned char)(v >> (8 * i));
    return buf_put(b, le, 8, err);
}

static op_status encode_params(const nn_params *ps, byte_buf *b, op_error *err)
{
    op_status st = buf_put(b, NN_FILE_MAGIC, 4, err);
    if (st == OP_OK) st = buf_put_u32(b, NN_FILE_VERSION, err);
    if (st == OP_OK) st = buf_put_u32(b, (uint32_t)ps->count, err);
    for (size_t i = 0; i < ps->count && st == OP_OK; i++) {
        const nn_param *p = ps->items[i];
        size_t name_len = strlen(p->name);
        st = buf_put_u32(b, (uint32_t)name_len, err);
        if (st == OP_OK) st = buf_put(b, p->name, name_len, err);
        if (st == OP_OK) st = buf_put_u32(b, (uint32_t)p->value.rows, err);
        if (st == OP_OK) st = buf_put_u32(b, (uint32_t)p->value.cols, err);
        size_t n = nn_tensor_size(&p->value);
        for (size_t k = 0; k < n && st == OP_OK; k++)
            st = buf_put_f64(b, p->value.data[k], err);
    }
    if (st == OP_OK)
        st = buf_put_u32(b, nn_crc32(0, b->data, b->len), err);
    return st;
}

/* ------------------------------------------------------------- saving */

static op_status write_all(int fd, const unsigned char *p, size_t n, const char *path,
                           op_error *err)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return op_fail(err, OP_EIO, "%s: cannot write weights: %s", path, strerror(errno));
        p += w;
        n -= (size_t)w;
    }
    return OP_OK;
}

static op_status write_atomically(const char *path, const byte_buf *b, op_error *err)
{
    size_t tmp_len = strlen(path) + 16;
    char *tmp = op_malloc(tmp_len, err);
    if (!tmp)
        return OP_ENOMEM;
    snprintf(tmp, tmp_len, "%s.tmp.XXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        op_status st = op_fail(err, OP_EIO, "%s: cannot create a temporary file next to it: %s",
                               path, strerror(errno));
        free(tmp);
        return st;
    }
    op_status st = OP_OK;
    if (fchmod(fd, 0644) != 0) /* mkstemp made it 0600 */
        st = op_fail(err, OP_EIO, "%s: cannot set permissions: %s", path, strerror(errno));
    if (st == OP_OK)
        st = write_all(fd, b->data, b->len, path, err);
    if (st == OP_OK && fsync(fd) != 0)
        st = op_fail(err, OP_EIO, "%s: cannot flush weights to disk: %s", path, strerror(errno));
    if (close(fd) != 0 && st == OP_OK)
        st = op_fail(err, OP_EIO, "%s: cannot close weights file: %s", path, strerror(errno));
    if (st == OP_OK && rename(tmp, path) != 0)
        st = op_fail(err, OP_EIO, "%s: cannot move the new weights into place: %s", path,
                     strerror(errno));
    if (st != OP_OK)
        unlink(tmp);
    free(tmp);
    return st;
}

op_status nn_params_save(const nn_params *ps, const char *path, op_error *err)
{
    byte_buf b = {0};
    op_status st = encode_params(ps, &b, err);
    if (st == OP_OK)
        st = write_atomically(path, &b, err);
    free(b.data);
    return st;
}

/* ------------------------------------------------------------ loading */

static op_status read_file(const char *path, byte_buf *b, op_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return op_fail(err, OP_EIO, "%s: cannot open weights file: %s", path, strerror(errno));
    op_status st = OP_OK;
    unsigned char chunk[1 << 16];
    size_t got;
    while (st == OP_OK && (got = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (b->len + got > NN_FILE_MAX_BYTES)
            st = op_fail(err, OP_EINPUT, "%s: larger than any weights file (over %zu bytes)",
                         path, NN_FILE_MAX_BYTES);
        else
            st = buf_put(b, chunk, got, err);
    }
    if (st == OP_OK && ferror(f))
        st = op_fail(err, OP_EIO, "%s: cannot read weights file: %s", path, strerror(errno));
    fclose(f);
    return st;
}

typedef struct reader {
    const unsigned char *p, *end;
} reader;

static bool take(reader *r, size_t n, const unsigned char **out)
{
    if ((size_t)(r->end - r->p) < n)
        return false;
    *out = r->p;
    r->p += n;
    return true;
}

static uint32_t le_u32(const unsigned char *q)
{
    return (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24;
}

static bool take_u32(reader *r, uint32_t *v)
{
    const unsigned char *q;
    if (!take(r, 4, &q))
        return false;
    *v = le_u32(q);
    return true;
}

static double le_f64(const unsigned char *q)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)q[i] << (8 * i);
    double x;
    memcpy(&x, &v, sizeof x);
    return x;
}

/* One entry of the file, located but not yet copied. */
typedef struct entry {
    nn_param *param;
    const unsigned char *values;
} entry;

static op_status parse_entry(nn_params *ps, reader *r, const char *path, uint32_t index,
                             entry *e, op_error *err)
{
    uint32_t name_len, rows, cols;
    const unsigned char *name;
    char namebuf[NN_NAME_MAX];
    if (!take_u32(r, &name_len) || !take(r, name_len, &name))
        return op_fail(err, OP_EINPUT, "%s: truncated in the name of tensor %u", path, index);
    if (name_len == 0 || name_len >= NN_NAME_MAX)
        return op_fail(err, OP_EINPUT, "%s: tensor %u has a name of %u bytes", path, index,
                       name_len);
    memcpy(namebuf, name, name_len);
    namebuf[name_len] = '\0';
    if (!take_u32(r, &rows) || !take_u32(r, &cols))
        return op_fail(err, OP_EINPUT, "%s: truncated in the shape of '%s'", path, namebuf);
    e->param = nn_params_find(ps, namebuf);
    if (!e->param)
        return op_fail(err, OP_EINPUT,
                       "%s: tensor '%s' is not part of this model (weights saved by a "
                       "different architecture?)", path, namebuf);
    const nn_tensor *v = &e->param->value;
    if (rows != (uint32_t)v->rows || cols != (uint32_t)v->cols)
        return op_fail(err, OP_EINPUT, "%s: tensor '%s' is %ux%u in the file, the model needs %dx%d",
                       path, namebuf, rows, cols, v->rows, v->cols);
    if (!take(r, nn_tensor_size(v) * 8, &e->values))
        return op_fail(err, OP_EINPUT, "%s: truncated in the values of '%s'", path, namebuf);
    return OP_OK;
}

static op_status check_header(const byte_buf *b, const char *path, op_error *err)
{
    if (b->len < 4 || memcmp(b->data, NN_FILE_MAGIC, 4) != 0)
        return op_fail(err, OP_EINPUT, "%s: not an opplace weights file (no OPNN header)", path);
    if (b->len < 12 + 4)
        return op_fail(err, OP_EINPUT, "%s: truncated (%zu bytes)", path, b->len);
    uint32_t version = le_u32(b->data + 4);
    if (version != NN_FILE_VERSION)
        return op_fail(err, OP_EINPUT,
                       "%s: weights format version %u, this build reads version %u; re-train or "
                       "re-save with a matching opplace", path, version, NN_FILE_VERSION);
    uint32_t stored = le_u32(b->data + b->len - 4);
    if (nn_crc32(0, b->data, b->len - 4) != stored)
        return op_fail(err, OP_EINPUT, "%s: checksum mismatch: the file is corrupted or truncated",
                       path);
    return OP_OK;
}

static op_status parse_entries(nn_params *ps, const byte_buf *b, const char *path,
                               entry *entries, op_error *err)
{
    reader r = {b->data + 12, b->data + b->len - 4};
    uint32_t count = le_u32(b->data + 8);
    if (count != ps->count)
        return op_fail(err, OP_EINPUT, "%s: holds %u tensors, the model has %zu", path, count,
                       ps->count);
    for (uint32_t i = 0; i < count; i++) {
        op_status st = parse_entry(ps, &r, path, i, &entries[i], err);
        if (st != OP_OK)
            return st;
        for (uint32_t k = 0; k < i; k++)
            if (entries[k].param == entries[i].param)
                return op_fail(err, OP_EINPUT, "%s: tensor '%s' appears twice", path,
                               entries[i].param->name);
    }
    if (r.p != r.end)
        return op_fail(err, OP_EINPUT, "%s: %zu unexpected bytes after the last tensor", path,
                       (size_t)(r.end - r.p));
    return OP_OK;
}

/* Every value finite: a NaN or inf weight would only show up later as a
 * softmax with every entry masked, far from the file that caused it. */
static op_status check_values(const unsigned char *q, size_t n, const char *path,
                              const char *name, op_error *err)
{
    for (size_t k = 0; k < n; k++) {
        double x = le_f64(q + 8 * k);
        if (!isfinite(x))
            return op_fail(err, OP_EINPUT, "%s: tensor '%s' holds a non-finite value (%g) at "
                           "index %zu; the file is damaged: re-train or restore it", path,
                           name, x, k);
    }
    return OP_OK;
}

op_status nn_params_check_file(const char *path, size_t *n_values, op_error *err)
{
    byte_buf b = {0};
    size_t total = 0;
    op_status st = read_file(path, &b, err);
    if (st == OP_OK)
        st = check_header(&b, path, err);
    if (st == OP_OK) {
        reader r = {b.data + 12, b.data + b.len - 4};
        uint32_t count = le_u32(b.data + 8);
        for (uint32_t i = 0; i < count && st == OP_OK; i++) {
            uint32_t name_len, rows, cols;
            const unsigned char *name, *values;
            char namebuf[NN_NAME_MAX];
            if (!take_u32(&r, &name_len) || name_len == 0 || name_len >= NN_NAME_MAX ||
                !take(&r, name_len, &name) || !take_u32(&r, &rows) || !take_u32(&r, &cols)) {
                st = op_fail(err, OP_EINPUT, "%s: tensor %u: a damaged entry header", path, i);
                break;
            }
            memcpy(namebuf, name, name_len);
            namebuf[name_len] = '\0';
            uint64_t n = (uint64_t)rows * cols;
            if (n > (uint64_t)(r.end - r.p) / 8 || !take(&r, (size_t)n * 8, &values)) {
                st = op_fail(err, OP_EINPUT, "%s: tensor '%s' (%ux%u) is larger than the file",
                             path, namebuf, rows, cols);
                break;
            }
            st = check_values(values, (size_t)n, path, namebuf, err);
            total += (size_t)n;
        }
        if (st == OP_OK && r.p != r.end)
            st = op_fail(err, OP_EINPUT, "%s: %zu unexpected bytes after the last tensor", path,
                         (size_t)(r.end - r.p));
    }
    free(b.data);
    if (st == OP_OK && n_values)
        *n_values = total;
    return st;
}

op_status nn_params_load(nn_params *ps, const char *path, op_error *err)
{
    byte_buf b = {0};
    entry *entries = NULL;
    op_status st = read_file(path, &b, err);
    if (st == OP_OK)
        st = check_header(&b, path, err);
    if (st == OP_OK) {
        entries = op_calloc(ps->count ? ps->count : 1, sizeof *entries, err);
        st = entries ? parse_entries(ps, &b, path, entries, err) : OP_ENOMEM;
    }
    for (size_t i = 0; st == OP_OK && i < ps->count; i++)
        st = check_values(entries[i].values, nn_tensor_size(&entries[i].param->value), path,
                          entries[i].param->name, err);
    for (size_t i = 0; st == OP_OK && i < ps->count; i++) {
        nn_tensor *v = &entries[i].param->value;
        size_t n = nn_tensor_size(v);
        for (size_t k = 0; k < n; k++)
            v->data[k] = le_f64(entries[i].values + 8 * k);
    }
    free(entries);
    free(b.data);
    return st;
}
