/*
 * fuzz_common.h - what the libFuzzer harnesses share.  The readers take a
 * path (they report errors by file name and line), so each input is written
 * to a per-process file in /dev/shm (memory-backed) and read back from
 * there.  Built only by bench/fuzz.sh with clang -fsanitize=fuzzer.
 */
#ifndef OPPLACE_FUZZ_COMMON_H
#define OPPLACE_FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static const char *fuzz_input_path(const char *suffix)
{
    static char path[128];
    if (!path[0]) {
        const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
        snprintf(path, sizeof path, "%s/opplace-fuzz-%d%s", dir, (int)getpid(), suffix);
    }
    return path;
}

/* Write the input to the harness's file; 0 on success. */
static int fuzz_write_input(const char *path, const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    int bad = size && fwrite(data, 1, size, f) != size;
    return fclose(f) != 0 || bad ? -1 : 0;
}

#endif
