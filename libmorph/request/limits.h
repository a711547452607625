/* The limits of every number in a Morph request, plan and record: one set, in C, shared
 * by the option checks (spank_morph, slurmctld), the planner, the record writer and the
 * record reader, so that nothing the planner produces is refused by the reader. */
#ifndef MORPH_REQUEST_LIMITS_H
#define MORPH_REQUEST_LIMITS_H

#include <stdint.h>

/* The request (--morph-* values, inline model specifications, catalog entries). */
#define MORPH_MAX_BATCH (INT64_C(1) << 30)
#define MORPH_MAX_SEQ (INT64_C(1) << 24)
#define MORPH_MAX_GPUS 65536
#define MORPH_MAX_LAYERS 100000
#define MORPH_MAX_HIDDEN (INT64_C(1) << 20)
#define MORPH_MAX_VOCAB 100000000
#define MORPH_MAX_PARAMS 1e15
/* --morph-iterations: the training iterations a job declares (10^12, as the simulator's
 * workload steps). */
#define MORPH_MAX_ITERATIONS (INT64_C(1000000000000))

/* A plan: dp, tp, pp, ga, mb, mbs and dp*tp*pp. */
#define MORPH_MAX_PLAN_VALUE (1 << 20)

/* A placement: nodes, GPUs per node, CPUs per GPU (Slurm's cpus_per_task is 16 bits). */
#define MORPH_MAX_NODES 65536
#define MORPH_MAX_GPUS_PER_NODE 1024
#define MORPH_MAX_CPUS_PER_GPU 4096
/* A heterogeneous placement: the GPU types (groups) it spans. */
#define MORPH_MAX_GPU_GROUPS 64

/* The user's floors per node that a record keeps across replans: --mincpus (Slurm's
 * pn_min_cpus is 16 bits, below NO_VAL16) and --mem in MB (2^40 MB, far below the
 * MEM_PER_CPU flag of pn_min_memory). */
#define MORPH_MAX_MIN_CPUS 65533
#define MORPH_MAX_MEMORY_MB (INT64_C(1) << 40)

/* A predicted iteration (about 31 years). */
#define MORPH_MAX_ITER_MS 1e12

#endif /* MORPH_REQUEST_LIMITS_H */
