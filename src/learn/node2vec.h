/*
 * learn/node2vec.h - Node2vec structure embeddings of an op graph (Grover
 * and Leskovec, KDD 2016), the "structure" feature of Trinity (the Trinity
 * paper, section 4.1.1, Table 1).
 *
 * The graph is viewed undirected (an edge a->b links a and b both ways).
 * From every op, `walks` biased second-order random walks of `length` ops
 * are drawn: having come from t to v, the walk moves to a neighbour x of v
 * with weight 1/p if x == t (return), 1 if x is also a neighbour of t, and
 * 1/q otherwise (in-out).  Skip-gram with negative sampling then learns a
 * `dim`-wide vector per op: each (centre, context) pair within `window`
 * steps of a walk is pushed together and `negatives` ops drawn from the
 * unigram^0.75 table are pushed apart, by plain SGD with a learning rate
 * decaying linearly from lr to lr/1e4 (word2vec's schedule).
 *
 * Everything is sequential and seeded, so one seed gives the same vectors
 * on every run.  Cost: O(n * walks * length * window * negatives * dim);
 * the defaults embed a 10^4-op graph in about a second on one core.
 *
 *     node2vec_config c = node2vec_defaults();
 *     double *emb = op_malloc(sizeof(double) * g->n_ops * c.dim, &err);
 *     node2vec_embed(g, &c, emb, &err);      // row i = op i's vector
 */
#ifndef OPPLACE_NODE2VEC_H
#define OPPLACE_NODE2VEC_H

#include <stdint.h>

#include "opplace/error.h"
#include "opplace/graph.h"

typedef struct node2vec_config {
    int dim;        /* embedding width (16) */
    int walks;      /* walks started from every op (4) */
    int length;     /* ops per walk (20) */
    int window;     /* context radius in a walk (4) */
    int negatives;  /* negative samples per pair (4) */
    int epochs;     /* passes of skip-gram over the walks (1) */
    double p, q;    /* return and in-out parameters (1, 1) */
    double lr;      /* initial SGD learning rate (0.025) */
    uint64_t seed;  /* walks, negatives and initial vectors (1) */
    double deadline; /* op_seconds_now() time after which node2vec stops early with the
                        vectors as trained so far (the initial ones if the walks were not
                        done); 0: none.  Ctrl-C: an error (OP_EINTERNAL) */
} node2vec_config;

node2vec_config node2vec_defaults(void);

/* emb: n_ops x dim doubles, row-major (op index order).  An op with no
 * neighbour keeps a small random vector.  OP_EUSAGE for a bad config,
 * OP_ENOMEM on allocation failure. */
op_status node2vec_embed(const op_graph *g, const node2vec_config *cfg, double *emb,
                         op_error *err);

/* The walks alone, as node2vec_embed draws them (from the same seed, but
 * without the initial vectors' draws first): walks[w * length + s], walk w
 * starting at op w % n_ops, cfg->walks of them per op; a walk stuck at an
 * isolated op is padded with -1.  *stopped = 1 when the deadline or Ctrl-C
 * ended them early (the rest unset). */
op_status node2vec_walks(const op_graph *g, const node2vec_config *cfg, int *walks, int *stopped,
                         op_error *err);

#endif
