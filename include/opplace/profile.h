/*
 * opplace/profile.h - device profiles and the roofline cost model.
 *
 * An op's time on a device is estimated as
 *     launch_us + max(flops / peak_flops, bytes_moved / mem_bandwidth) * 1e6
 * (the roofline model: an op is bound by compute or by memory traffic).
 * Profiles exist for "k80", "p100", "v100", "a100", "h100" and "cpu"; their
 * numbers and sources are in src/cost/profiles.c.  The zoo generators and
 * the ONNX importer both cost ops with this model.
 */
#ifndef OPPLACE_PROFILE_H
#define OPPLACE_PROFILE_H

#include <stdint.h>

typedef struct op_device_profile {
    const char *name;      /* "v100" */
    const char *kind;      /* "gpu" or "cpu" */
    double peak_flops;     /* FP32 FLOP/s the model assumes */
    double mem_bandwidth;  /* bytes/s of device memory */
    double launch_us;      /* per-op launch / framework overhead */
    int64_t memory_bytes;  /* device memory */
    const char *source;    /* where the numbers come from */
} op_device_profile;

const op_device_profile *op_profile_find(const char *name);
const op_device_profile *op_profiles(int *count);
double op_roofline_us(const op_device_profile *p, double flops, double bytes_moved);

#endif
