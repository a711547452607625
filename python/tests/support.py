"""Shared fixtures of the module's tests: the reference trainer's model as a spec."""
import morph

PLAN = "dp=2 tp=2 pp=2 zero=1 offload=0 gc=0 ga=1 mb=2 mbs=4"


def env(**overrides):
    """What morphrun exports to rank 5 of PLAN, with `overrides`."""
    e = {"MORPH_PLAN": PLAN, "WORLD_SIZE": "8", "RANK": "5", "LOCAL_RANK": "1", "MORPH_DP_RANK": "0",
         "MORPH_TP_RANK": "1", "MORPH_PP_RANK": "1", "MORPH_MODEL": "gpt-tiny"}
    e.update(overrides)
    return {k: v for k, v in e.items() if v is not None}


def trainer_tensors(vocab=50, hidden=16, layers=2):
    """The reference trainer's parameters (tests/trainer/model_spec.cc), in order."""
    h = hidden
    out = [("embedding.word_embeddings.weight", [vocab, h])]
    for l in range(layers):
        p = f"layers.{l}."
        out += [(p + "post_attention_layernorm.weight", [h]), (p + "mlp.dense_h_to_4h.weight", [4 * h, h]),
                (p + "mlp.dense_h_to_4h.bias", [4 * h]), (p + "mlp.dense_4h_to_h.weight", [h, 4 * h]),
                (p + "mlp.dense_4h_to_h.bias", [h])]
    return out + [("final_layernorm.weight", [h]), ("output_layer.weight", [vocab, h])]


def spec(layers=2, dtype="f64", **kw):
    return morph.checkpoint.Spec.from_rules("megatron", trainer_tensors(layers=layers, **kw), layers=layers,
                                            dtype=dtype, vocab_multiple=4)
