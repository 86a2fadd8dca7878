/*
 * fuzz_onnx.c - libFuzzer harness for the ONNX importer (op_onnx_import):
 * protobuf decoding by protobuf-c, then shapes, sizes and FLOP counts from
 * whatever the model claims.
 */
#include "fuzz_common.h"
#include "opplace/io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_input_path(".onnx");
    if (fuzz_write_input(path, data, size))
        return 0;
    op_error err = {0};
    op_graph *g = op_onnx_import(path, NULL, &err);
    op_graph_free(g);
    return 0;
}
