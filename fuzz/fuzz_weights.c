/*
 * fuzz_weights.c - libFuzzer harness for the weights-file checks
 * (nn_params_check_file, issue 22: a weights file is validated before the
 * model it describes is built).  A small input that passes is also offered
 * to the SGDP architecture reader; any error must be a clean op_error.
 * bench/fuzz.sh seeds the corpus with a valid two-tensor file.
 */
#include "fuzz_common.h"
#include "nn/nn.h"
#include "placers/sgdp/sgdp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_input_path(".bin");
    if (fuzz_write_input(path, data, size))
        return 0;
    op_error err = {0};
    size_t n_values = 0;
    if (nn_params_check_file(path, &n_values, &err) == OP_OK && n_values < ((size_t)1 << 16)) {
        /* small valid files only: a valid file may legitimately describe a
         * large model, which is not what this harness measures */
        sgdp_config cfg;
        op_error e2 = {0};
        sgdp_weights_config(path, &cfg, &e2);
    }
    return 0;
}
