/*
 * profiles.c - device profiles and the roofline cost model (opplace/profile.h).
 *
 * An op's estimated time is
 *     launch_us + max(flops / peak_flops, bytes_moved / mem_bandwidth) * 1e6
 * i.e. the roofline model (Williams, Waterman, Patterson, "Roofline: an
 * insightful visual performance model for multicore architectures", CACM
 * 52(4), 2009) plus a fixed per-op overhead.  The zoo generators and the
 * ONNX importer both use it, so their graphs are costed alike.
 *
 * Peak numbers are the vendors' data-sheet values (FP32, no tensor cores, at
 * boost clock); memory is what the part is sold with and matches the cluster
 * presets of src/core/presets.c.  Sources:
 *   k80   NVIDIA Tesla K80 data sheet (2014): 8.73 TFLOP/s FP32 with GPU Boost,
 *         480 GB/s and 24 GB for the board of two GK210 dies; a framework
 *         sees each die as one device, so per die: 4.37 TFLOP/s, 240 GB/s,
 *         12 GB.
 *   p100  NVIDIA Tesla P100 PCIe data sheet (2016): 9.3 TFLOP/s FP32,
 *         732 GB/s HBM2, 16 GB.
 *   v100  NVIDIA Tesla V100 data sheet (2017/2018), SXM2: 15.7 TFLOP/s FP32,
 *         900 GB/s HBM2, 16 GB (the Pesto testbed's part).
 *   a100  NVIDIA A100 Tensor Core GPU data sheet (2020), SXM4 40 GB:
 *         19.5 TFLOP/s FP32 (non-tensor-core), 1,555 GB/s HBM2, 40 GB.
 *   h100  NVIDIA H100 Tensor Core GPU data sheet (2022), SXM5: 67 TFLOP/s
 *         FP32, 3.35 TB/s HBM3, 80 GB.
 *   cpu   Intel Xeon E5-2686 v4 (the host CPU of AWS p2/p3 instances, where
 *         the SGDP and Celeritas style K80/V100 experiments run; Intel ARK):
 *         18 cores x 2.3 GHz x 32 FP32 FLOP/cycle (two AVX2 FMA units) =
 *         1.32 TFLOP/s; 4 channels of DDR4-2400 = 76.8 GB/s; 64 GiB, the
 *         host memory of the cluster presets.
 * Launch overhead: a CUDA kernel launch plus the framework's per-op dispatch
 * costs a few microseconds (CUDA launch latency is ~3-5 us on these parts;
 * TensorFlow's executor adds a few more), so GPUs take 5 us (K80: 8 us, its
 * slower host path), A100/H100 4 us; the CPU runs ops inline and takes 2 us.
 * These are assumptions, not data-sheet numbers.
 *
 * Simplification: the model assumes peak throughput.  Real kernels reach a
 * fraction of it (typically 30-70% for GEMM-heavy ops), so estimated times
 * are optimistic; ratios between ops and between devices are what placement
 * needs, and those the roofline keeps.
 */
#include <string.h>

#include "opplace/profile.h"

#define GB 1e9
#define TFLOPS 1e12
#define GIB (1024LL * 1024LL * 1024LL)

static const op_device_profile PROFILES[] = {
    {"k80", "gpu", 4.37 * TFLOPS, 240 * GB, 8.0, 12 * GIB,
     "NVIDIA Tesla K80 data sheet, per GK210 die (half the board's 8.73 TFLOP/s, 480 GB/s, 24 GB)"},
    {"p100", "gpu", 9.3 * TFLOPS, 732 * GB, 5.0, 16 * GIB,
     "NVIDIA Tesla P100 PCIe data sheet: 9.3 TFLOP/s FP32, 732 GB/s, 16 GB"},
    {"v100", "gpu", 15.7 * TFLOPS, 900 * GB, 5.0, 16 * GIB,
     "NVIDIA Tesla V100 SXM2 data sheet: 15.7 TFLOP/s FP32, 900 GB/s, 16 GB"},
    {"a100", "gpu", 19.5 * TFLOPS, 1555 * GB, 4.0, 40 * GIB,
     "NVIDIA A100 SXM4 40 GB data sheet: 19.5 TFLOP/s FP32, 1,555 GB/s, 40 GB"},
    {"h100", "gpu", 67.0 * TFLOPS, 3350 * GB, 4.0, 80 * GIB,
     "NVIDIA H100 SXM5 data sheet: 67 TFLOP/s FP32, 3.35 TB/s, 80 GB"},
    {"cpu", "cpu", 1.3248 * TFLOPS, 76.8 * GB, 2.0, 64 * GIB,
     "Intel Xeon E5-2686 v4 (Intel ARK): 18 cores x 2.3 GHz x 32 FLOP/cycle, DDR4-2400 x 4"},
};
#define N_PROFILES ((int)(sizeof PROFILES / sizeof PROFILES[0]))

const op_device_profile *op_profiles(int *count)
{
    *count = N_PROFILES;
    return PROFILES;
}

const op_device_profile *op_profile_find(const char *name)
{
    if (!name)
        return NULL;
    for (int i = 0; i < N_PROFILES; i++)
        if (strcmp(PROFILES[i].name, name) == 0)
            return &PROFILES[i];
    return NULL;
}

double op_roofline_us(const op_device_profile *p, double flops, double bytes_moved)
{
    double compute_s = flops > 0 ? flops / p->peak_flops : 0;
    double memory_s = bytes_moved > 0 ? bytes_moved / p->mem_bandwidth : 0;
    return p->launch_us + (compute_s > memory_s ? compute_s : memory_s) * 1e6;
}
