/*
 * options.c - the options the learned placers share (learn/options.h).
 */
#include "learn/options.h"

#include <math.h>
#include <string.h>

#include "learn/units.h"

static op_status refuse_beyond(op_options *o, const learn_option_defaults *d, op_error *err)
{
    for (int i = 0; d->beyond && d->beyond[i]; i++)
        if (op_options_has(o, d->beyond[i]))
            return op_fail(err, OP_EUSAGE, "%s: --%s is beyond the paper; drop it or drop --paper",
                           d->who, d->beyond[i]);
    return OP_OK;
}

static op_status read_placer(op_options *o, const learn_option_defaults *d, learn_options *out,
                             op_error *err)
{
    out->weights = op_options_str(o, "weights", NULL);
    out->save = op_options_str(o, "save-weights", NULL);
    op_status st;
    if ((st = op_options_int(o, "finetune", 0, 0, 1000000, &out->finetune, err)) ||
        (st = op_options_int(o, "iterations", 0, 0, 100000000, &out->iterations, err)))
        return st;
    if (out->finetune && !out->weights)
        return op_fail(err, OP_EUSAGE, "%s: --finetune needs --weights FILE", d->who);
    return OP_OK;
}

static op_status read_reference(op_options *o, const learn_option_defaults *d, learn_options *out,
                                op_error *err)
{
    if (out->paper)
        return OP_OK;
    out->heuristics = op_options_str(o, "heuristics", d->heuristics);
    if (!strcmp(out->heuristics, "none"))
        out->heuristics = NULL;
    return op_options_int(o, "units", LEARN_DEFAULT_UNITS, 0, 100000000, &out->units, err);
}

op_status learn_options_read(op_options *o, const learn_option_defaults *d, int placer,
                             learn_options *out, op_error *err)
{
    memset(out, 0, sizeof *out);
    out->paper = op_options_has(o, "paper");
    op_status st;
    if ((out->paper && (st = refuse_beyond(o, d, err))) ||
        (st = op_options_int(o, "samples", d->samples, 1, 4096, &out->samples, err)) ||
        (st = op_options_int(o, "threads", 0, 0, 64, &out->threads, err)) ||
        (st = op_options_int(o, "epochs", d->epochs, 1, 1000, &out->epochs, err)) ||
        (st = op_options_double(o, "lr", NAN, 0, 10, &out->lr, err)) ||
        (st = op_options_double(o, "entropy", NAN, 0, 100, &out->entropy, err)) ||
        (st = read_reference(o, d, out, err)))
        return st;
    return placer ? read_placer(o, d, out, err) : OP_OK;
}

double learn_or(double v, double def)
{
    return isnan(v) ? def : v;
}
