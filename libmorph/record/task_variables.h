/* The variables spank_morph gives a Morph job's tasks (the plan, plan_env.h; the job's
 * record; why no plan could be given), in C for the SPANK plugin: an sbatch or salloc run
 * inside a Morph job drops them from what it exports, so that the new job, plain or Morph,
 * never reads the surrounding job's plan as its own. PlanEnv.EveryVariableOfAPlanIsATaskVariable
 * keeps this list and plan_environment() in step. */
#ifndef MORPH_RECORD_TASK_VARIABLES_H
#define MORPH_RECORD_TASK_VARIABLES_H

#define MORPH_TASK_VARIABLES                                                                                   \
  "MORPH_PLAN", "MORPH_DP", "MORPH_TP", "MORPH_PP", "MORPH_ZERO", "MORPH_OFFLOAD", "MORPH_GC",                 \
      "MORPH_MICRO_BATCH", "MORPH_MICRO_BATCHES", "MORPH_GLOBAL_BATCH", "MORPH_MODEL", "MORPH_SEQ",            \
      "MORPH_FRAMEWORK", "MORPH_LOCAL_BATCH", "MORPH_GPU_TYPE", "MORPH_NODES", "MORPH_GPUS_PER_NODE",          \
      "MORPH_GA", "MORPH_GPU_GROUPS", "MORPH_ADAPTIVE_BATCH", "MORPH_RECORD", "MORPH_RECORD_JOB",              \
      "MORPH_PLAN_ERROR"

#endif /* MORPH_RECORD_TASK_VARIABLES_H */
