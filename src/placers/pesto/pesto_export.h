/*
 * pesto_export.h - writing a placement and order as TF-Pesto's part.json and
 * cdep.json (see pesto_export.c for the format and the choice of cdep).
 */
#ifndef OPPLACE_PESTO_EXPORT_H
#define OPPLACE_PESTO_EXPORT_H

#include "opplace/cluster.h"
#include "opplace/graph.h"
#include "opplace/placement.h"

/* Creates dir if needed; writes dir/part.json and dir/cdep.json atomically. */
op_status pesto_export_tf(const op_graph *g, const op_cluster *c, const op_placement *pl,
                          const char *dir, op_error *err);

#endif
