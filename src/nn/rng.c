/*
 * rng.c - the deterministic random numbers of opplace (nn_rng).
 *
 * xoshiro256** (Blackman and Vigna, 2018) with its state filled by
 * splitmix64, as its authors recommend.  Every draw in the learned placers
 * (weight init, dropout masks, action sampling, minibatch shuffles) goes
 * through an nn_rng the caller seeded, so a run is reproduced exactly by its
 * seed.  Box-Muller keeps no spare value, so the stream position after a
 * call depends only on the number of calls.  Other modules may use it too.
 */
#include "nn/nn.h"

#include <assert.h>
#include <math.h>

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

void nn_rng_seed(nn_rng *rng, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++)
        rng->s[i] = splitmix64(&x);
}

uint64_t nn_rng_next(nn_rng *rng)
{
    uint64_t *s = rng->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double nn_rng_uniform(nn_rng *rng)
{
    return (double)(nn_rng_next(rng) >> 11) * 0x1.0p-53;
}

double nn_rng_normal(nn_rng *rng)
{
    double u1 = 1.0 - nn_rng_uniform(rng); /* (0, 1]: log is finite */
    double u2 = nn_rng_uniform(rng);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

uint64_t nn_rng_below(nn_rng *rng, uint64_t n)
{
    assert(n > 0);
    uint64_t threshold = (0 - n) % n; /* 2^64 mod n: reject below it */
    for (;;) {
        uint64_t r = nn_rng_next(rng);
        if (r >= threshold)
            return r % n;
    }
}

nn_rng nn_rng_fork(nn_rng *parent, uint64_t stream)
{
    nn_rng child;
    nn_rng_seed(&child, nn_rng_next(parent) ^ (stream * 0xd1342543de82ef95ULL));
    return child;
}

void nn_rng_shuffle_int(nn_rng *rng, int *a, size_t n)
{
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)nn_rng_below(rng, i);
        int t = a[i - 1];
        a[i - 1] = a[j];
        a[j] = t;
    }
}
