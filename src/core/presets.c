/*
 * presets.c - ready-made clusters: `opplace cluster --gpus N --preset NAME`.
 *
 * Numbers and where they come from:
 *   memory   the GPU's on-board memory as sold (NVIDIA data sheets: K80 12 GB
 *            per GK210 die, P100 PCIe 16 GB, V100 PCIe 32 GB as in the
 *            Celeritas testbed, V100 SXM2 16 GB as in the Pesto testbed,
 *            A100 SXM4 40 GB, H100 SXM5 80 GB).
 *   links    T = latency + bytes / bandwidth (Pesto section 3.1, Celeritas
 *            section 4).  Bandwidths are effective peer-to-peer rates, below
 *            the marketing peak, as measured by Li et al., "Evaluating Modern
 *            GPU Interconnect: PCIe, NVLink, NV-SLI, NVSwitch and GPUDirect",
 *            IEEE TPDS 31(1), 2019 (Pesto's reference [42]):
 *              PCIe 3.0 x16 ~10 GB/s (through a PLX switch on K80: ~8 GB/s),
 *              NVLink 2 (V100, one brick) ~25 GB/s per direction,
 *              NVSwitch A100 ~200 GB/s, H100 NVLink 4 ~350 GB/s
 *            (NVIDIA's A100/H100 data sheets give 300 and 450 GB/s per
 *            direction peak; ~70-80% of peak is what all-to-all benchmarks
 *            reach).  Latencies of 2-20 us are the cudaMemcpyPeer start-up
 *            costs reported there.
 *   speed    1.0 for every device: graph times are per device kind and
 *            measured or estimated for that kind (`opplace zoo --profile`),
 *            so a preset does not rescale them.  A graph with a single
 *            time_us for all kinds runs as fast on the CPU as on a GPU; give
 *            per-kind times when the cluster has a CPU.
 *   host     the optional CPU ("cpu:0", --cpu) has 64 GiB and talks to each
 *            GPU over PCIe (gen3 12 GB/s for K80-V100, gen4 24 GB/s for A100,
 *            gen5 48 GB/s for H100, effective).
 * Every ordered pair has its own channel (full-duplex point-to-point links).
 */
#include <stdio.h>
#include <string.h>

#include "opplace/cluster.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

typedef struct preset {
    const char *name, *summary;
    double gpu_mem_gib;
    double gpu_lat_us, gpu_gbps;  /* GPU <-> GPU */
    double host_lat_us, host_gbps; /* CPU <-> GPU */
} preset;

static const preset PRESETS[] = {
    {"k80-pcie", "Tesla K80 (12 GB per GK210), PCIe 3.0 via PLX switch, ~8 GB/s", 12, 20, 8, 20, 12},
    {"p100-pcie", "Tesla P100 PCIe 16 GB, PCIe 3.0 x16, ~10 GB/s", 16, 10, 10, 10, 12},
    {"v100-pcie", "Tesla V100 PCIe 32 GB (Celeritas testbed), PCIe 3.0 x16, ~10 GB/s", 32, 10, 10, 10, 12},
    {"v100-nvlink", "Tesla V100 SXM2 16 GB (Pesto testbed), NVLink 2, ~25 GB/s", 16, 5, 25, 10, 12},
    {"a100-nvlink", "A100 SXM4 40 GB, NVLink 3 / NVSwitch, ~200 GB/s", 40, 3, 200, 8, 24},
    {"h100-nvlink", "H100 SXM5 80 GB, NVLink 4 / NVSwitch, ~350 GB/s", 80, 2, 350, 6, 48},
};
#define N_PRESETS ((int)(sizeof PRESETS / sizeof PRESETS[0]))

const op_preset_info *op_cluster_presets(int *count)
{
    static op_preset_info info[N_PRESETS];
    for (int i = 0; i < N_PRESETS; i++) {
        info[i].name = PRESETS[i].name;
        info[i].summary = PRESETS[i].summary;
    }
    *count = N_PRESETS;
    return info;
}

/* bandwidth in GB/s (1e9 bytes) -> microseconds per byte */
static double us_per_byte(double gbps)
{
    return 1e6 / (gbps * 1e9);
}

op_cluster *op_cluster_preset(const char *name, int n_gpus, int with_cpu, op_error *err)
{
    const preset *p = NULL;
    for (int i = 0; i < N_PRESETS; i++)
        if (strcmp(PRESETS[i].name, name) == 0)
            p = &PRESETS[i];
    if (!p) {
        char list[512] = "";
        for (int i = 0; i < N_PRESETS; i++) {
            strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
            strncat(list, PRESETS[i].name, sizeof list - strlen(list) - 1);
        }
        op_fail(err, OP_EUSAGE, "unknown preset '%s' (known: %s)", name, list);
        return NULL;
    }
    if (n_gpus < 1 || n_gpus > 64) {
        op_fail(err, OP_EUSAGE, "--gpus must be between 1 and 64 (got %d)", n_gpus);
        return NULL;
    }
    int nd = n_gpus + (with_cpu ? 1 : 0);
    op_device devs[65];
    char names[65][16];
    for (int i = 0; i < n_gpus; i++) {
        snprintf(names[i], sizeof names[i], "gpu:%d", i);
        devs[i] = (op_device){names[i], "gpu", (int64_t)(p->gpu_mem_gib * GIB), 1.0};
    }
    if (with_cpu) {
        snprintf(names[n_gpus], sizeof names[n_gpus], "cpu:0");
        devs[n_gpus] = (op_device){names[n_gpus], "cpu", (int64_t)(64 * GIB), 1.0};
    }
    op_link_spec links[65 * 64];
    int nl = 0;
    for (int s = 0; s < nd; s++)
        for (int d = 0; d < nd; d++) {
            if (s == d)
                continue;
            int host = (with_cpu && (s == n_gpus || d == n_gpus));
            links[nl++] = (op_link_spec){
                .src = names[s], .dst = names[d], .channel = NULL,
                .latency_us = host ? p->host_lat_us : p->gpu_lat_us,
                .us_per_byte = us_per_byte(host ? p->host_gbps : p->gpu_gbps)};
        }
    return op_cluster_new(devs, nd, links, nl, NULL, name, err);
}
