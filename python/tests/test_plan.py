"""morph.plan(): the plan and the rank's coordinates, checked as morphrun checks them."""
import unittest

import morph
from support import PLAN, env


class PlanTest(unittest.TestCase):
    def test_reads_the_plan_and_the_ranks_coordinates(self):
        p = morph.plan(env())
        self.assertEqual((p.dp, p.tp, p.pp, p.zero, p.micro_batches, p.micro_batch), (2, 2, 2, 1, 2, 4))
        self.assertEqual((p.global_batch, p.batch), (16, 16))
        self.assertEqual((p.rank, p.world_size, p.local_rank), (5, 8, 1))
        # Megatron order, TP innermost: 5 = pp 1 * 4 + dp 0 * 2 + tp 1.
        self.assertEqual((p.dp_rank, p.tp_rank, p.pp_rank), (0, 1, 1))
        self.assertEqual(p.layout, "dp=2,tp=2,pp=2,zero=1")
        self.assertEqual(p.text, PLAN)
        self.assertEqual(p.model, "gpt-tiny")
        self.assertEqual(p.rank_of(1, 0, 1), 6)

    def test_groups_cover_the_world_once_in_one_order(self):
        p = morph.plan(env())
        self.assertEqual(p.groups("tp"), [[0, 1], [2, 3], [4, 5], [6, 7]])
        self.assertEqual(p.groups("dp"), [[0, 2], [1, 3], [4, 6], [5, 7]])
        self.assertEqual(p.groups("pp"), [[0, 4], [1, 5], [2, 6], [3, 7]])
        self.assertEqual((p.group("tp"), p.group("dp"), p.group("pp")), ([4, 5], [5, 7], [1, 5]))
        with self.assertRaisesRegex(morph.MorphError, "group kind 'ep'"):
            p.groups("ep")

    def test_bad_input_names_what_is_wrong(self):
        cases = [
            (env(MORPH_PLAN=None), "MORPH_PLAN is not set"),
            (env(WORLD_SIZE="4"), "needs 8 ranks .*WORLD_SIZE is 4"),
            (env(RANK="8"), "RANK"),
            (env(WORLD_SIZE=None), "WORLD_SIZE is not set"),
            (env(MORPH_TP_RANK="0"), "MORPH_TP_RANK=0 disagrees with RANK 5"),
            (env(MORPH_PLAN="dp=2 tp=2"), "MORPH_PLAN"),
            (env(MORPH_GLOBAL_BATCH="32"), "MORPH_GLOBAL_BATCH=32 disagrees"),
        ]
        for e, message in cases:
            with self.subTest(message=message), self.assertRaisesRegex(morph.MorphError, message):
                morph.plan(e)

    def test_the_job_record_gives_the_predicted_iteration_time(self):
        self.assertEqual(morph.plan(env()).predicted_iteration_s, 0)
        record = ("morph:v1 model=gpt-tiny batch=16 seq=0 sla=best-effort sla_given=0 framework=torch plans=all "
                  "gpus=1-8 gpu_types=- base_plan=- type=a100-80g nodes=1 gpus_per_node=8 cpus_per_gpu=1 "
                  "dp=2 tp=2 pp=2 zero=1 offload=0 gc=0 ga=1 mb=2 mbs=4 iter_ms=250.000")
        self.assertEqual(morph.plan(env(MORPH_RECORD=record)).predicted_iteration_s, 0.25)
        with self.assertRaisesRegex(morph.MorphError, "MORPH_RECORD's plan .*dp=4.* is not MORPH_PLAN"):
            morph.plan(env(MORPH_RECORD=record.replace("dp=2 tp=2", "dp=4 tp=1").replace("mbs=4", "mbs=2")))
        with self.assertRaisesRegex(morph.MorphError, "AdminComment"):
            morph.plan(env(MORPH_RECORD="morph:v1 model=x"))

    def test_a_heterogeneous_or_adaptive_batch_record_lets_the_batch_differ_from_the_plans(self):
        plan = "dp=8 tp=1 pp=1 zero=0 offload=0 gc=0 ga=1 mb=1 mbs=8"
        hetero = ("morph:v1 model=gpt2-1.5b batch=128 seq=0 sla=best-effort sla_given=0 framework=torch plans=all "
                  "gpus=1-0 gpu_types=- base_plan=- type=- nodes=2 gpus_per_node=4 cpus_per_gpu=4 " + plan +
                  " iter_ms=250.000 groups=a100-80g:nodes=1:workers=1:ga=3,v100-32g:nodes=1:workers=1:ga=1")
        ranks = dict(MORPH_PLAN=plan, MORPH_DP_RANK="5", MORPH_TP_RANK="0", MORPH_PP_RANK="0", MORPH_GLOBAL_BATCH="128")
        p = morph.plan(env(MORPH_RECORD=hetero, **ranks))
        self.assertEqual((p.global_batch, p.batch, p.dp_rank), (64, 128, 5))
        uniform = hetero.replace("type=-", "type=a100-80g").split(" groups=")[0].replace("batch=128", "batch=64")
        adaptive = uniform + " adaptive_batch=64:256"
        self.assertEqual(morph.plan(env(MORPH_RECORD=adaptive, **ranks)).batch, 128)
        self.assertEqual(morph.plan(env(MORPH_RECORD=uniform, **dict(ranks, MORPH_GLOBAL_BATCH="64"))).batch, 64)
        with self.assertRaisesRegex(morph.MorphError, "MORPH_GLOBAL_BATCH=128 disagrees"):
            morph.plan(env(MORPH_RECORD=uniform, **ranks))

    def test_a_plan_outside_morphrun_is_refused(self):
        with self.assertRaisesRegex(morph.MorphError, "run under morphrun"):
            morph.plan({})


if __name__ == "__main__":
    unittest.main()
