/*
 * fuzz_cluster.c - libFuzzer harness for the opplace-cluster reader
 * (op_cluster_read).  A cluster that reads is written back and read again:
 * the writer must produce a file the reader accepts.
 */
#include <string.h>

#include "fuzz_common.h"
#include "opplace/io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_input_path(".cluster.json");
    if (fuzz_write_input(path, data, size))
        return 0;
    op_error err = {0};
    op_cluster *c = op_cluster_read(path, &err);
    if (!c)
        return 0;
    char again[160];
    snprintf(again, sizeof again, "%s.out", path);
    if (op_cluster_write(c, again, &err) == OP_OK) {
        op_cluster *c2 = op_cluster_read(again, &err);
        if (!c2 || c2->n_dev != c->n_dev) /* the round trip must hold */
            abort();
        op_cluster_free(c2);
    }
    op_cluster_free(c);
    return 0;
}
